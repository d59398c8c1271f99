import { type Kysely, sql } from "kysely";
import type { SchemaSpelling } from "../db.ts";

/** Users, Docks, subscriptions, and the outbox: messages and one delivery per subscriber. */
export function initial(spelling: SchemaSpelling) {
  // The one difference between the databases in the schema: how an increasing key is spelled.
  const serial = spelling.increasingKey;
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable("users")
        .addColumn("telegram_id", "bigint", (c) => c.primaryKey())
        .addColumn("first_name", "text")
        .addColumn("username", "text")
        .addColumn("created_at", "bigint", (c) => c.notNull())
        .execute();

      await db.schema
        .createTable("docks")
        .addColumn("id", "text", (c) => c.primaryKey())
        .addColumn("owner_id", "bigint", (c) => c.notNull().references("users.telegram_id"))
        .addColumn("name", "text", (c) => c.notNull())
        .addColumn("link", "text")
        .addColumn("description", "text")
        .addColumn("secret_hash", "text", (c) => c.notNull().unique())
        .addColumn("secret_sealed", "text", (c) => c.notNull())
        .addColumn("created_at", "bigint", (c) => c.notNull())
        .addColumn("updated_at", "bigint", (c) => c.notNull())
        .execute();
      await db.schema.createIndex("docks_owner").on("docks").columns(["owner_id", "created_at"]).execute();

      await db.schema
        .createTable("subscriptions")
        .addColumn("id", sql`${serial}`)
        .addColumn("dock_id", "text", (c) => c.notNull().references("docks.id").onDelete("cascade"))
        .addColumn("chat_id", "bigint", (c) => c.notNull())
        .addColumn("chat_type", "text", (c) => c.notNull())
        .addColumn("state", "text", (c) => c.notNull())
        .addColumn("created_at", "bigint", (c) => c.notNull())
        .addColumn("updated_at", "bigint", (c) => c.notNull())
        .addUniqueConstraint("subscriptions_dock_chat", ["dock_id", "chat_id"])
        .execute();
      await db.schema.createIndex("subscriptions_chat").on("subscriptions").column("chat_id").execute();

      await db.schema
        .createTable("messages")
        .addColumn("id", "text", (c) => c.primaryKey())
        .addColumn("dock_id", "text", (c) => c.notNull().references("docks.id").onDelete("cascade"))
        .addColumn("text", "text", (c) => c.notNull())
        .addColumn("subscribers", "integer", (c) => c.notNull())
        .addColumn("idempotency_key", "text")
        .addColumn("request_hash", "text")
        .addColumn("created_at", "bigint", (c) => c.notNull())
        .execute();
      // Partial: most messages carry no key and need no entry in this index.
      await db.schema
        .createIndex("messages_dock_idempotency")
        .on("messages")
        .columns(["dock_id", "idempotency_key"])
        .unique()
        .where(sql.ref("idempotency_key"), "is not", null)
        .execute();
      await db.schema
        .createIndex("messages_created")
        .on("messages")
        .columns(["dock_id", "created_at"])
        .execute();

      await db.schema
        .createTable("deliveries")
        .addColumn("id", sql`${serial}`)
        .addColumn("message_id", "text", (c) => c.notNull().references("messages.id").onDelete("cascade"))
        .addColumn("dock_id", "text", (c) => c.notNull())
        .addColumn("chat_id", "bigint", (c) => c.notNull())
        .addColumn("state", "text", (c) => c.notNull())
        .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
        .addColumn("next_attempt_at", "bigint", (c) => c.notNull())
        .addColumn("lease_until", "bigint")
        .addColumn("last_error", "text")
        .addColumn("telegram_message_ids", "text")
        .addColumn("created_at", "bigint", (c) => c.notNull())
        .addColumn("updated_at", "bigint", (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex("deliveries_due")
        .on("deliveries")
        .columns(["state", "next_attempt_at"])
        .execute();
      await db.schema.createIndex("deliveries_message").on("deliveries").column("message_id").execute();
    },
  };
}
