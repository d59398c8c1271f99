import type { Kysely } from "kysely";

/**
 * Copies whose first attempt's outcome is unknown (issue 36, D1). A process that stops between
 * Telegram's answer and the record of it (kill -9, a power cut) leaves its send `sending`; the next
 * dispatcher sends it again, and the chat may hold a copy the service never learnt of.
 *
 * - `deliveries.unknown_attempts`: a copy's attempts whose outcome was never recorded (0: none).
 * - `deliveries.stray_ids`: Telegram messages of the copy from such attempts that the service has
 *   learnt of since (Telegram named one in a press of its Acknowledge button, or the outcome came
 *   after the lease had passed to another attempt), comma-separated; the copy's next edit deletes
 *   them, as does its delete.
 */
export function unknownCopies() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .alterTable("deliveries")
        .addColumn("unknown_attempts", "integer", (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema.alterTable("deliveries").addColumn("stray_ids", "text").execute();
    },
  };
}
