import { type Kysely, sql } from "kysely";

/**
 * Each waiting fan-out carries the number of subscribers its message was accepted for, so the
 * queue-depth gauge sums one narrow table instead of looking up every waiting message (at a
 * million waiting messages that join took most of a second per scrape, and on SQLite every
 * accept waited for it).
 */
export function fanoutSubscribers() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .alterTable("fanouts")
        .addColumn("subscribers", "integer", (c) => c.notNull().defaultTo(0))
        .execute();
      await sql`update fanouts set subscribers = (select subscribers from messages where messages.id = fanouts.message_id)`.execute(
        db,
      );
    },
  };
}
