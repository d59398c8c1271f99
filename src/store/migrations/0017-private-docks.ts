import type { Kysely } from "kysely";

/**
 * Private Docks (issue 37): `docks.visibility` says who may subscribe (`open`, the default and
 * every existing Dock's: nothing changes for them; `invite`; `approval`).
 *
 * `dock_invites`: a Dock's invite links, modelled on Telegram's ChatInviteLink — a name, who made
 * it, an optional expiry and use limit, the uses so far, whether it asks the owner (`approval`),
 * and when it was revoked (a revoked link stays listed: who joined through it is still told). The
 * token in the link is kept sealed with the server's key (the console shows the link again) and
 * found by its SHA-256. `subscriptions.invite_id`: the link a chat joined through, if any.
 */
export function privateDocks() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .alterTable("docks")
        .addColumn("visibility", "text", (c) => c.notNull().defaultTo("open"))
        .execute();

      await db.schema
        .createTable("dock_invites")
        .addColumn("id", "text", (c) => c.primaryKey())
        .addColumn("dock_id", "text", (c) => c.notNull().references("docks.id").onDelete("cascade"))
        .addColumn("token_hash", "text", (c) => c.notNull().unique())
        .addColumn("token_sealed", "text", (c) => c.notNull())
        .addColumn("name", "text")
        .addColumn("created_by", "bigint")
        .addColumn("created_at", "bigint", (c) => c.notNull())
        .addColumn("expires_at", "bigint")
        .addColumn("usage_limit", "integer")
        .addColumn("uses", "integer", (c) => c.notNull().defaultTo(0))
        .addColumn("approval", "integer", (c) => c.notNull().defaultTo(0))
        .addColumn("revoked_at", "bigint")
        .addColumn("updated_at", "bigint", (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex("dock_invites_dock")
        .on("dock_invites")
        .columns(["dock_id", "created_at"])
        .execute();
      await db.schema.alterTable("subscriptions").addColumn("invite_id", "text").execute();
    },
  };
}
