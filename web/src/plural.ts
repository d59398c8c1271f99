/** A count with its noun, singular for exactly one: "1 Dock", "2 Docks", "0 messages". */
export function count(n: number, singular: string, plural = `${singular}s`): string {
  return `${n} ${n === 1 ? singular : plural}`;
}
