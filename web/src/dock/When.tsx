const RELATIVE = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
const STEPS: [Intl.RelativeTimeFormatUnit, number][] = [
  ["second", 60],
  ["minute", 60],
  ["hour", 24],
  ["day", 30],
];

/** "3 minutes ago": close times read better relative; older ones get their date. */
function relative(at: number, now: number): string | null {
  let amount = (at - now) / 1000;
  for (const [unit, size] of STEPS) {
    if (Math.abs(amount) < size) return RELATIVE.format(Math.round(amount), unit);
    amount /= size;
  }
  return null;
}

/** A time as the console shows it, readable by machines too; `relative`: "5 minutes ago" when recent. */
export function When({ at, relative: asRelative = false }: { at: number; relative?: boolean }) {
  const date = new Date(at);
  const full = date.toLocaleString();
  const shown = (asRelative && relative(at, Date.now())) || full;
  return (
    <time dateTime={date.toISOString()} title={shown === full ? undefined : full}>
      {shown}
    </time>
  );
}
