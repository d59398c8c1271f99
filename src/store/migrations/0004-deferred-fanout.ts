import { type Kysely, sql } from "kysely";
import type { SchemaSpelling } from "../db.ts";

/**
 * Fan-out deferred to the dispatcher: accepting a message writes the message and one `fanouts`
 * row, whatever the number of subscribers; the dispatcher turns it into one delivery per
 * subscriber when that Dock's queue needs more work. Rows are deleted as they are fanned out, so
 * the table holds only what is waiting.
 */
export function deferredFanout(spelling: SchemaSpelling) {
  // Ids only order the rows present: a key that may reuse freed values will do.
  const key = spelling.generatedKey;
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable("fanouts")
        .addColumn("id", sql`${key}`)
        .addColumn("message_id", "text", (c) => c.notNull().references("messages.id").onDelete("cascade"))
        .addColumn("dock_id", "text", (c) => c.notNull())
        .addColumn("created_at", "bigint", (c) => c.notNull())
        .execute();
      await db.schema.createIndex("fanouts_dock").on("fanouts").columns(["dock_id", "id"]).execute();
      // For a message's status, and for the cascade when a message is deleted.
      await db.schema.createIndex("fanouts_message").on("fanouts").column("message_id").execute();
      // Who a waiting message reaches is decided when it is fanned out: subscriptions active since
      // before it was accepted. (No message waits yet, so any earlier time serves existing rows.)
      await db.schema
        .alterTable("subscriptions")
        .addColumn("active_since", "bigint", (c) => c.notNull().defaultTo(0))
        .execute();
      await sql`update subscriptions set active_since = created_at`.execute(db);
    },
  };
}
