import { type Kysely, sql } from "kysely";
import type { SchemaSpelling } from "../db.ts";

/** Milliseconds in a day: a day number is a time divided by this, the same in every dialect. */
const DAY_MS = 86_400_000;

/**
 * Each Dock's activity per UTC day (`dock_days`), counted as it happens so that a chart of 7 or 30
 * days reads at most 30 rows instead of every message (see store/rollups.ts): messages accepted,
 * and copies sent, retried, failed and gone. `changed` counts what the chart does not show but the
 * console's live stream watches: changes of messages (edits, replacements, deletions,
 * acknowledgements) and the settling of their edits and deletes in the chats.
 *
 * Rows are only ever inserted where things happen (one per Dock and transaction), never updated in
 * place: an upsert would lock the day's row until its transaction ends, and every copy's settle
 * would wait for the others' (see store/rollups.ts). `id` orders them for folding, which sums a
 * day's rows into one now and then; readers sum a day's rows.
 *
 * `dock_id` is no foreign key on purpose: checking one would take a share lock on the Dock's row in
 * every settle (after its delivery's row), and deleting a Dock (its row, then its deliveries')
 * would deadlock with them on PostgreSQL. A Dock's rows are deleted with it (DockRepository), and
 * a count a settle adds meanwhile is pruned with the old days (ActivityRepository.prune).
 *
 * `subscriptions_dock_updated`: the live stream asks, every second, when a Dock's subscriptions
 * last changed; one index seek per Dock instead of reading each subscription.
 *
 * What is already in the database is counted once here, by day: messages accepted, and copies
 * that ended sent, failed or gone on the day of their last change (how many were retried on the
 * way was never kept).
 */
export function activityRollups(spelling: SchemaSpelling) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      let table = db.schema
        .createTable("dock_days")
        .addColumn("id", sql`${spelling.increasingKey}`)
        .addColumn("dock_id", "text", (c) => c.notNull())
        .addColumn("day", "text", (c) => c.notNull());
      for (const name of ["accepted", "sent", "retried", "failed", "gone", "changed"]) {
        table = table.addColumn(name, "integer", (c) => c.notNull().defaultTo(0));
      }
      await table.execute();
      await db.schema.createIndex("dock_days_dock_day").on("dock_days").columns(["dock_id", "day"]).execute();
      await db.schema
        .createIndex("subscriptions_dock_updated")
        .on("subscriptions")
        .columns(["dock_id", "updated_at"])
        .execute();

      // Grouped by day number in SQL (integer division, the same in both dialects): the rows read
      // back are one per Dock and day, whatever the number of messages. The divisor is a literal:
      // as a parameter PostgreSQL would not see the same expression in SELECT and GROUP BY.
      const day = sql.lit(DAY_MS);
      const days = new Map<string, Record<string, number>>();
      const add = (dockId: string, dayNumber: unknown, column: string, n: unknown) => {
        const key = `${dockId}\n${new Date(Number(dayNumber) * DAY_MS).toISOString().slice(0, 10)}`;
        const row = days.get(key) ?? {};
        row[column] = (row[column] ?? 0) + Number(n);
        days.set(key, row);
      };
      const accepted = await sql<{ dock_id: string; d: unknown; n: unknown }>`
        select dock_id, created_at / ${day} as d, count(*) as n
        from messages group by dock_id, created_at / ${day}`.execute(db);
      for (const row of accepted.rows) add(row.dock_id, row.d, "accepted", row.n);
      const settled = await sql<{ dock_id: string; d: unknown; state: string; n: unknown }>`
        select dock_id, updated_at / ${day} as d, state, count(*) as n
        from deliveries where kind = 'send' and state in ('sent', 'failed', 'gone')
        group by dock_id, updated_at / ${day}, state`.execute(db);
      for (const row of settled.rows) add(row.dock_id, row.d, row.state, row.n);
      for (const [key, counts] of days) {
        const [dockId, date] = key.split("\n");
        await sql`insert into dock_days (dock_id, day, accepted, sent, failed, gone)
          values (${dockId}, ${date}, ${counts.accepted ?? 0}, ${counts.sent ?? 0}, ${counts.failed ?? 0}, ${counts.gone ?? 0})`.execute(
          db,
        );
      }
    },
  };
}
