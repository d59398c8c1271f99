import { type Kysely, sql } from "kysely";
import type { SchemaSpelling } from "../db.ts";

/**
 * Living notifications: a message can be edited, replaced by its key, deleted and acknowledged,
 * and its sender told (signed events to the Dock's callback URL).
 *
 * - `messages.revision` counts the message's changes (an edit, a replace, an acknowledgement); a
 *   copy in a chat shows the revision in its delivery's `revision`, and is edited until it shows
 *   the message's. `key`: the sender's name for the message, unique per Dock among messages not
 *   deleted. `report_pending`: the Dock had a callback URL when the message was accepted and the
 *   message has not been reported delivered or failed yet (a small partial index: only those).
 * - `deliveries.kind`: `send` (a copy, as before), `edit` or `delete` (work on the copy
 *   `target_id`, queued behind it in its chat). `outcome`: what an edit or delete came to.
 * - `events`: the callback outbox, one row per event, retried until the receiver takes it.
 * - `replays`: the Idempotency-Keys of sends that replaced a message.
 */
export function livingNotifications(spelling: SchemaSpelling) {
  const serial = spelling.increasingKey;
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema.alterTable("messages").addColumn("key", "text").execute();
      await db.schema
        .alterTable("messages")
        .addColumn("revision", "integer", (c) => c.notNull().defaultTo(1))
        .execute();
      await db.schema.alterTable("messages").addColumn("revised_at", "bigint").execute();
      await db.schema.alterTable("messages").addColumn("deleted_at", "bigint").execute();
      await db.schema.alterTable("messages").addColumn("acked_by", "bigint").execute();
      await db.schema.alterTable("messages").addColumn("acked_name", "text").execute();
      await db.schema.alterTable("messages").addColumn("acked_at", "bigint").execute();
      await db.schema
        .alterTable("messages")
        .addColumn("report_pending", "integer", (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .createIndex("messages_dock_key")
        .on("messages")
        .columns(["dock_id", "key"])
        .unique()
        .where(sql<boolean>`key is not null and deleted_at is null`)
        .execute();
      await db.schema
        .createIndex("messages_report_pending")
        .on("messages")
        .column("id")
        .where(sql.ref("report_pending"), "=", 1)
        .execute();

      await db.schema
        .alterTable("deliveries")
        .addColumn("kind", "text", (c) => c.notNull().defaultTo("send"))
        .execute();
      await db.schema.alterTable("deliveries").addColumn("target_id", "bigint").execute();
      await db.schema.alterTable("deliveries").addColumn("revision", "integer").execute();
      await db.schema.alterTable("deliveries").addColumn("outcome", "text").execute();
      await db.schema
        .createIndex("deliveries_target")
        .on("deliveries")
        .column("target_id")
        .where(sql.ref("target_id"), "is not", null)
        .execute();

      // A change of a message waits to be fanned out to its copies like a new message.
      await db.schema
        .alterTable("fanouts")
        .addColumn("kind", "text", (c) => c.notNull().defaultTo("send"))
        .execute();

      await db.schema.alterTable("docks").addColumn("callback_url", "text").execute();

      // The Idempotency-Keys of sends that replaced a message by its key (the message row keeps
      // its first send's), so that a retried replacement is a replay too.
      await db.schema
        .createTable("replays")
        .addColumn("dock_id", "text", (c) => c.notNull().references("docks.id").onDelete("cascade"))
        .addColumn("idempotency_key", "text", (c) => c.notNull())
        .addColumn("message_id", "text", (c) => c.notNull().references("messages.id").onDelete("cascade"))
        .addColumn("subscribers", "integer", (c) => c.notNull())
        .addColumn("request_hash", "text")
        .addColumn("created_at", "bigint", (c) => c.notNull())
        .addColumn("revision", "integer", (c) => c.notNull())
        .addColumn("edits", "integer", (c) => c.notNull())
        .addPrimaryKeyConstraint("replays_key", ["dock_id", "idempotency_key"])
        .execute();
      await db.schema.createIndex("replays_message").on("replays").column("message_id").execute();

      await db.schema
        .createTable("events")
        .addColumn("id", sql`${serial}`)
        .addColumn("dock_id", "text", (c) => c.notNull().references("docks.id").onDelete("cascade"))
        .addColumn("message_id", "text", (c) => c.notNull())
        .addColumn("type", "text", (c) => c.notNull())
        .addColumn("payload", "text", (c) => c.notNull())
        .addColumn("state", "text", (c) => c.notNull())
        .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
        .addColumn("next_attempt_at", "bigint", (c) => c.notNull())
        .addColumn("lease_until", "bigint")
        .addColumn("last_error", "text")
        .addColumn("created_at", "bigint", (c) => c.notNull())
        .addColumn("updated_at", "bigint", (c) => c.notNull())
        .execute();
      await db.schema.createIndex("events_due").on("events").columns(["state", "next_attempt_at"]).execute();
      await db.schema.createIndex("events_message").on("events").columns(["message_id", "id"]).execute();
    },
  };
}
