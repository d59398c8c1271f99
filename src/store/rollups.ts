import type { Kysely, Transaction } from "kysely";
import { prepare, type Slots } from "./prepared.ts";
import type { Database, DeliveryKind } from "./schema.ts";

/*
 * Each Dock's activity per UTC day (`dock_days`, migration 0011), counted where it happens, in the
 * transaction that makes it happen: so a count is exactly what was committed, on every database,
 * with no scan of messages to chart a month. Used where messages are accepted (accept-batch.ts,
 * also in SQLite's thread: this module needs nothing else), where copies settle (outbox.ts) and
 * where messages change (message-changes.ts).
 *
 * A count is a row of its own, inserted: one per Dock and transaction. Adding to the day's row
 * instead would lock it until the transaction ends (PostgreSQL), and every copy's settle, every
 * accept of the Dock, would wait for the others' (living-notifications.test.ts checks copies'
 * settles never wait for each other). Readers sum a day's rows; `ActivityRepository.fold` sums
 * them into one now and then, so there are never many.
 */

/** What is counted per Dock and day. */
export const ACTIVITY_COUNTS = ["accepted", "sent", "retried", "failed", "gone", "changed"] as const;
export type ActivityCount = (typeof ACTIVITY_COUNTS)[number];
export type Tally = Partial<Record<ActivityCount, number>>;

/** Milliseconds in a (UTC) day. */
export const DAY_MS = 86_400_000;

/** A time's UTC day, as `dock_days.day` keeps it: YYYY-MM-DD. */
export function dayOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** The counts a delivery's state change adds to. */
export type SettledCount = Extract<ActivityCount, "sent" | "retried" | "failed" | "gone">;

/** Counts per Dock, collected over a transaction's writes and added at its end (`Rollups.add`). */
export class Tallies {
  readonly #byDock = new Map<string, Tally>();

  count(dockId: string, what: ActivityCount, n = 1): this {
    if (n <= 0) return this;
    const tally = this.#byDock.get(dockId) ?? {};
    tally[what] = (tally[what] ?? 0) + n;
    this.#byDock.set(dockId, tally);
    return this;
  }

  /**
   * Deliveries that reached `state` (rows a statement changed, with their Dock and kind): copies
   * (`send`) count under the state, an edit's or a delete's settling as `changed`.
   */
  settled(rows: Iterable<{ dock_id: string; kind: DeliveryKind }>, state: SettledCount): this {
    for (const row of rows) this.count(row.dock_id, row.kind === "send" ? state : "changed");
    return this;
  }

  /** In Dock ID order, so that a transaction's writes are always made in the same order. */
  sorted(): [string, Tally][] {
    return [...this.#byDock].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  }
}

type Row = { dock_id: string; day: string } & Record<ActivityCount, number>;

/** Writes tallies into `dock_days`: one inserted row per Dock, compiled once (see prepare). */
export class Rollups {
  readonly #insert;

  constructor(kysely: Kysely<Database>) {
    this.#insert = prepare((p: Slots<Row>) =>
      kysely.insertInto("dock_days").values({
        dock_id: p.dock_id,
        day: p.day,
        accepted: p.accepted,
        sent: p.sent,
        retried: p.retried,
        failed: p.failed,
        gone: p.gone,
        changed: p.changed,
      }),
    );
  }

  /** Adds the tallies to the day of `at`, in `tx`. */
  async add(tx: Transaction<Database>, at: number, tallies: Tallies): Promise<void> {
    const day = dayOf(at);
    for (const [dockId, tally] of tallies.sorted()) {
      await tx.executeQuery(
        this.#insert({
          dock_id: dockId,
          day,
          accepted: tally.accepted ?? 0,
          sent: tally.sent ?? 0,
          retried: tally.retried ?? 0,
          failed: tally.failed ?? 0,
          gone: tally.gone ?? 0,
          changed: tally.changed ?? 0,
        }),
      );
    }
  }
}
