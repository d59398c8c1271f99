import { useCallback, useEffect, useId, useRef, useState } from "react";
import { type ActivityAnswer, api, type Dock } from "../api.ts";
import { useDockVersion, useLiveRead } from "../live.tsx";
import { count } from "../plural.ts";
import type { Guarded } from "./actions.ts";
import { ReadError } from "./ReadError.tsx";
import { ScrollBox } from "./ScrollBox.tsx";

type Day = ActivityAnswer["days"][number];

/** The outcomes the bars stack, bottom up, with their colours (CSS classes) and names. */
const OUTCOMES = [
  { key: "sent", label: "Sent" },
  { key: "retried", label: "Retried" },
  { key: "failed", label: "Failed" },
  { key: "gone", label: "Gone (chat blocked the bot or left)" },
] as const;

/** The chart's width before its box is measured, and the least it is drawn at. */
const DEFAULT_WIDTH = 640;
const MIN_WIDTH = 280;
const HEIGHT = 200;
const TOP = 10;
const BOTTOM = 24;
const LEFT = 36;
/** Room a day's label needs (“Nov 27” at the axis's 11 px), so that labels never overlap. */
const LABEL_WIDTH = 48;

/**
 * The axis's top: a round number at or above `n` whose half is a whole number too (the middle
 * line's label), so no axis reads “2.5 messages”: 2, 4, 10, 20, 40, 100…
 */
function niceCeiling(n: number): number {
  for (let power = 1; ; power *= 10) {
    for (const step of [2, 4, 10]) if (step * power >= n) return step * power;
  }
}

/**
 * The width of an element's box in CSS pixels, followed as it changes: the chart is drawn at the
 * size it is shown, so its labels keep their size on a phone instead of shrinking with the image.
 */
function useWidth(): [(element: Element | null) => void, number] {
  const [width, setWidth] = useState(DEFAULT_WIDTH);
  const observer = useRef<ResizeObserver | null>(null);
  // A callback ref: the figure appears only once the days are read.
  const ref = useCallback((element: Element | null) => {
    observer.current?.disconnect();
    observer.current = null;
    if (element === null) return;
    observer.current = new ResizeObserver(([entry]) => {
      if (entry) setWidth(Math.max(MIN_WIDTH, Math.round(entry.contentRect.width)));
    });
    observer.current.observe(element);
  }, []);
  useEffect(() => () => observer.current?.disconnect(), []);
  return [ref, width];
}

const dayLabel = (day: string, long = false) =>
  new Date(`${day}T00:00:00Z`).toLocaleDateString(undefined, {
    month: "short",
    day: "numeric",
    timeZone: "UTC",
    ...(long ? { weekday: "short" } : {}),
  });

/**
 * Bars of the day's delivery outcomes (sent, retried, failed, gone) with a dot for the messages
 * accepted. An image for eyes; the same numbers in the table below it for everyone else.
 */
function Chart({ days, summary, width }: { days: Day[]; summary: string; width: number }) {
  const top = niceCeiling(
    Math.max(1, ...days.map((d) => Math.max(d.accepted, d.sent + d.retried + d.failed + d.gone))),
  );
  const plot = HEIGHT - TOP - BOTTOM;
  const slot = (width - LEFT) / days.length;
  const bar = Math.max(2, slot * 0.6);
  const y = (n: number) => TOP + plot - (n / top) * plot;
  // Every day's label where there is room, else every 2nd, 5th, 10th… (counted from the last: today's always shows).
  const labelEvery = [1, 2, 5, 10, 15].find((every) => every * slot >= LABEL_WIDTH) ?? 30;
  return (
    <svg
      className="chart"
      viewBox={`0 0 ${width} ${HEIGHT}`}
      width={width}
      height={HEIGHT}
      role="img"
      aria-label={summary}
    >
      {[0, top / 2, top].map((n) => (
        <g key={n}>
          <line className="chart-grid" x1={LEFT} x2={width} y1={y(n)} y2={y(n)} />
          <text className="chart-axis" x={LEFT - 6} y={y(n) + 4} textAnchor="end">
            {n}
          </text>
        </g>
      ))}
      {days.map((d, i) => {
        const x = LEFT + i * slot + (slot - bar) / 2;
        let base = 0;
        return (
          <g key={d.day}>
            {OUTCOMES.map(({ key }) => {
              const n = d[key];
              if (n === 0) return null;
              const rect = (
                <rect
                  key={key}
                  className={`chart-${key}`}
                  x={x}
                  width={bar}
                  y={y(base + n)}
                  height={y(base) - y(base + n)}
                />
              );
              base += n;
              return rect;
            })}
            {d.accepted > 0 && (
              <circle className="chart-accepted" cx={x + bar / 2} cy={y(d.accepted)} r={3.5} />
            )}
            {(days.length - 1 - i) % labelEvery === 0 && (
              <text className="chart-axis" x={x + bar / 2} y={HEIGHT - 6} textAnchor="middle">
                {dayLabel(d.day)}
              </text>
            )}
          </g>
        );
      })}
    </svg>
  );
}

/**
 * The Dock's last 7 or 30 days: messages accepted and what became of their copies, from the
 * service's daily counts (UTC days). Follows the live stream.
 */
export function ActivityTab({ dock, guarded }: { dock: Dock; guarded: Guarded }) {
  const id = useId();
  const [figure, width] = useWidth();
  const version = useDockVersion(dock.id);
  const [span, setSpan] = useState<7 | 30>(7);
  const read = useLiveRead(
    async () =>
      (await guarded(() => api<ActivityAnswer>("GET", `/docks/${dock.id}/activity?days=${span}`))).days,
    `${dock.id} ${span} ${version}`,
  );
  // While another period is read, the one shown stays (no flash of "Loading…").
  const days = read.value;

  const total = (key: keyof Omit<Day, "day">) => days?.reduce((sum, d) => sum + d[key], 0) ?? 0;
  const summary = `Last ${span} days: ${count(total("accepted"), "message")} accepted; copies ${total("sent")} sent, ${total("retried")} retried, ${total("failed")} failed, ${total("gone")} gone.`;

  return (
    <section aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Activity</h2>
      <fieldset className="span">
        <legend className="offscreen">Period</legend>
        {([7, 30] as const).map((n) => (
          <label key={n}>
            <input type="radio" name={`${id}-span`} checked={span === n} onChange={() => setSpan(n)} /> Last{" "}
            {n} days
          </label>
        ))}
      </fieldset>
      <ReadError error={read.error} />
      {days === null ? (
        <p className="muted">Loading…</p>
      ) : (
        <>
          <dl className="headline">
            <div>
              <dt>Accepted</dt>
              <dd data-testid="activity-accepted">{total("accepted")}</dd>
            </div>
            <div>
              <dt>Sent</dt>
              <dd data-testid="activity-sent">{total("sent")}</dd>
            </div>
            <div>
              <dt>Retried</dt>
              <dd>{total("retried")}</dd>
            </div>
            <div>
              <dt>Failed</dt>
              <dd className={total("failed") > 0 ? "state-failed" : undefined}>{total("failed")}</dd>
            </div>
            <div>
              <dt>Gone</dt>
              <dd>{total("gone")}</dd>
            </div>
          </dl>
          <figure className="chart-figure" ref={figure}>
            <Chart days={days} summary={summary} width={width} />
            <figcaption className="chart-legend small">
              <span>
                <span className="swatch chart-accepted-swatch" aria-hidden="true" /> Accepted (dot)
              </span>
              {OUTCOMES.map(({ key, label }) => (
                <span key={key}>
                  <span className={`swatch chart-${key}`} aria-hidden="true" /> {label}
                </span>
              ))}
            </figcaption>
          </figure>
          <details>
            <summary>The numbers, day by day</summary>
            <ScrollBox label="Activity by day">
              <table className="activity-table">
                <thead>
                  <tr>
                    <th scope="col">Day (UTC)</th>
                    <th scope="col">Accepted</th>
                    {OUTCOMES.map(({ key, label }) => (
                      <th key={key} scope="col">
                        {label.split(" ")[0]}
                      </th>
                    ))}
                  </tr>
                </thead>
                <tbody>
                  {[...days].reverse().map((d) => (
                    <tr key={d.day}>
                      <th scope="row">{dayLabel(d.day, true)}</th>
                      <td>{d.accepted}</td>
                      {OUTCOMES.map(({ key }) => (
                        <td key={key}>{d[key]}</td>
                      ))}
                    </tr>
                  ))}
                </tbody>
              </table>
            </ScrollBox>
          </details>
        </>
      )}
    </section>
  );
}
