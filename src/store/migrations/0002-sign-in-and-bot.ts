import type { Kysely } from "kysely";

/** Console sign-in (login tokens confirmed in the bot, sessions) and the bot's conversation state. */
export function signInAndBot() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable("login_tokens")
        // SHA-256 of the token: a copy of the database does not let anyone sign in.
        .addColumn("token_hash", "text", (c) => c.primaryKey())
        .addColumn("created_at", "bigint", (c) => c.notNull())
        .addColumn("expires_at", "bigint", (c) => c.notNull())
        .addColumn("confirmed_by", "bigint")
        .addColumn("confirmed_at", "bigint")
        .addColumn("consumed_at", "bigint")
        .execute();
      await db.schema.createIndex("login_tokens_expiry").on("login_tokens").column("expires_at").execute();

      await db.schema
        .createTable("sessions")
        .addColumn("token_hash", "text", (c) => c.primaryKey())
        .addColumn("user_id", "bigint", (c) => c.notNull().references("users.telegram_id"))
        .addColumn("created_at", "bigint", (c) => c.notNull())
        .addColumn("expires_at", "bigint", (c) => c.notNull())
        .addColumn("last_seen_at", "bigint", (c) => c.notNull())
        .addColumn("revoked_at", "bigint")
        .execute();
      await db.schema.createIndex("sessions_user").on("sessions").column("user_id").execute();

      await db.schema
        .createTable("bot_states")
        .addColumn("chat_id", "bigint", (c) => c.notNull())
        .addColumn("user_id", "bigint", (c) => c.notNull())
        .addColumn("state", "text", (c) => c.notNull())
        .addColumn("data", "text")
        .addColumn("expires_at", "bigint", (c) => c.notNull())
        .addPrimaryKeyConstraint("bot_states_pk", ["chat_id", "user_id"])
        .execute();
    },
  };
}
