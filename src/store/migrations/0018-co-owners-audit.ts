import { type Kysely, sql } from "kysely";
import type { SchemaSpelling } from "../db.ts";

/**
 * Co-owners and the audit log (issue 37).
 *
 * `co_owners`: people given a role on one Dock (owner, editor, approver, viewer) beside its own
 * owner (`docks.owner_id`, who keeps the role `owner` without a row). Deleted with the Dock.
 * `co_owners_person` finds a person's shared Docks (their console list, the live stream, whether a
 * closed instance lets them sign in at all).
 *
 * Co-owner invitations are single-use links into the bot like the owner invitations of issue 35,
 * so they are rows of `owner_invites` of kind `co_owner` with the Dock and the role they give
 * (`dock_id`, `dock_role`; null for the other kinds). Deleted with the Dock.
 *
 * `dock_audit`: who did what to a Dock and when, an increasing `id` per entry (the console pages by
 * it, the live stream watches the newest); `actor` is a Telegram user id, null for the operator's
 * command line or the service itself; `detail` is JSON of names and ids, never a secret. No foreign
 * key, like `dock_days` (migration 0011): an entry is written beside many kinds of work, and a
 * Dock's entries are deleted with it (DockRepository.delete). `dock_audit_at`: retention prunes by
 * age.
 */
export function coOwnersAudit(spelling: SchemaSpelling) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable("co_owners")
        .addColumn("dock_id", "text", (c) => c.notNull().references("docks.id").onDelete("cascade"))
        .addColumn("telegram_id", "bigint", (c) => c.notNull())
        .addColumn("role", "text", (c) => c.notNull())
        .addColumn("added_by", "bigint")
        .addColumn("added_at", "bigint", (c) => c.notNull())
        .addPrimaryKeyConstraint("co_owners_pk", ["dock_id", "telegram_id"])
        .execute();
      await db.schema.createIndex("co_owners_person").on("co_owners").column("telegram_id").execute();

      await db.schema
        .alterTable("owner_invites")
        .addColumn("dock_id", "text", (c) => c.references("docks.id").onDelete("cascade"))
        .execute();
      await db.schema.alterTable("owner_invites").addColumn("dock_role", "text").execute();
      await db.schema.createIndex("owner_invites_dock").on("owner_invites").column("dock_id").execute();

      await db.schema
        .createTable("dock_audit")
        .addColumn("id", sql`${spelling.increasingKey}`)
        .addColumn("dock_id", "text", (c) => c.notNull())
        .addColumn("at", "bigint", (c) => c.notNull())
        .addColumn("actor", "bigint")
        .addColumn("action", "text", (c) => c.notNull())
        .addColumn("detail", "text")
        .execute();
      await db.schema.createIndex("dock_audit_dock").on("dock_audit").columns(["dock_id", "id"]).execute();
      await db.schema.createIndex("dock_audit_at").on("dock_audit").column("at").execute();
    },
  };
}
