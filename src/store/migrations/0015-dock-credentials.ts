import type { Kysely } from "kysely";

/**
 * Named credentials of a Dock beside its secret key (issue 35, review D1): `dock_credentials`,
 * each with a scope (`send` or `manage`), found by the SHA-256 of its secret (never stored
 * itself: shown once), with the first characters kept to tell them apart, and when it was last
 * used (written at most once a minute). `messages.sender` says which credential sent a message
 * (its id, `hook` for the hook URL, null for the secret key or the console): a send-only
 * credential, and the hook URL, replace by key only the messages they sent.
 */
export function dockCredentials() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable("dock_credentials")
        .addColumn("id", "text", (c) => c.primaryKey())
        .addColumn("dock_id", "text", (c) => c.notNull().references("docks.id").onDelete("cascade"))
        .addColumn("name", "text", (c) => c.notNull())
        .addColumn("scope", "text", (c) => c.notNull())
        .addColumn("secret_hash", "text", (c) => c.notNull().unique())
        .addColumn("prefix", "text", (c) => c.notNull())
        .addColumn("created_at", "bigint", (c) => c.notNull())
        .addColumn("last_used_at", "bigint")
        .execute();
      await db.schema.createIndex("dock_credentials_dock").on("dock_credentials").column("dock_id").execute();
      await db.schema.alterTable("messages").addColumn("sender", "text").execute();
    },
  };
}
