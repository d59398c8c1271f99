import { type Kysely, sql } from "kysely";
import type { SchemaSpelling } from "../db.ts";

/**
 * Private Docks (issue 37): `docks.visibility` says who may subscribe (`open`, the default and
 * every existing Dock's: nothing changes for them; `invite`; `approval`). `docks.audience_at`
 * moves whenever the Dock's invite links, join requests or bans change: the console's live stream
 * reads it with the Dock's row every second, where reading the three tables tripled the read
 * (docs/benchmarks.md, bench:stamps).
 *
 * `dock_invites`: a Dock's invite links, modelled on Telegram's ChatInviteLink — a name, who made
 * it, an optional expiry and use limit, the uses so far, whether it asks the owner (`approval`),
 * and when it was revoked (a revoked link stays listed: who joined through it is still told). The
 * token in the link is kept sealed with the server's key (the console shows the link again) and
 * found by its SHA-256. `subscriptions.invite_id`: the link a chat joined through, if any.
 *
 * `join_requests`: a chat asking to join (an `approval` Dock, or a link that asks): who asked,
 * through which link, a group's member count, until when it waits, and how it ended (approved,
 * declined, expired; by whom, when). At most one per Dock × chat: a new request replaces one that
 * ended, and retention deletes those ended RETENTION_DAYS ago. `dock_bans`: chats a Dock's owner banned from asking (or joining) again.
 *
 * `bot_notices`: what the bot has to tell someone outside a conversation, durably (a crash loses
 * none, any instance may send them): a join request's copy in each decider's chat (sent, then
 * edited as the request ends: `message_id` is the copy, `version` counts the request's changes so
 * that one made while its copy is being sent is not lost), and one-off texts — a request's outcome
 * to the requester, a removal, a deleted Dock. Claimed with a lease and retried like deliveries.
 */
export function privateDocks(spelling: SchemaSpelling) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .alterTable("docks")
        .addColumn("visibility", "text", (c) => c.notNull().defaultTo("open"))
        .execute();
      await db.schema
        .alterTable("docks")
        .addColumn("audience_at", "bigint", (c) => c.notNull().defaultTo(0))
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

      await db.schema
        .createTable("join_requests")
        .addColumn("id", "text", (c) => c.primaryKey())
        .addColumn("dock_id", "text", (c) => c.notNull().references("docks.id").onDelete("cascade"))
        .addColumn("chat_id", "bigint", (c) => c.notNull())
        .addColumn("chat_type", "text", (c) => c.notNull())
        .addColumn("user_id", "bigint", (c) => c.notNull())
        .addColumn("invite_id", "text")
        .addColumn("member_count", "integer")
        .addColumn("state", "text", (c) => c.notNull())
        .addColumn("created_at", "bigint", (c) => c.notNull())
        .addColumn("expires_at", "bigint", (c) => c.notNull())
        .addColumn("decided_by", "bigint")
        .addColumn("decided_at", "bigint")
        .addColumn("updated_at", "bigint", (c) => c.notNull())
        .addUniqueConstraint("join_requests_dock_chat", ["dock_id", "chat_id"])
        .execute();
      await db.schema
        .createIndex("join_requests_due")
        .on("join_requests")
        .columns(["state", "expires_at"])
        .execute();

      await db.schema
        .createTable("dock_bans")
        .addColumn("dock_id", "text", (c) => c.notNull().references("docks.id").onDelete("cascade"))
        .addColumn("chat_id", "bigint", (c) => c.notNull())
        .addColumn("banned_by", "bigint")
        .addColumn("banned_at", "bigint", (c) => c.notNull())
        .addPrimaryKeyConstraint("dock_bans_key", ["dock_id", "chat_id"])
        .execute();

      await db.schema
        .createTable("bot_notices")
        .addColumn("id", sql`${spelling.increasingKey}`)
        .addColumn("chat_id", "bigint", (c) => c.notNull())
        .addColumn("kind", "text", (c) => c.notNull())
        .addColumn("request_id", "text", (c) => c.references("join_requests.id").onDelete("cascade"))
        .addColumn("dock_name", "text")
        .addColumn("detail", "text")
        .addColumn("message_id", "bigint")
        .addColumn("version", "integer", (c) => c.notNull().defaultTo(0))
        .addColumn("state", "text", (c) => c.notNull())
        .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
        .addColumn("next_attempt_at", "bigint", (c) => c.notNull())
        .addColumn("lease_until", "bigint")
        .addColumn("last_error", "text")
        .addColumn("created_at", "bigint", (c) => c.notNull())
        .addColumn("updated_at", "bigint", (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex("bot_notices_due")
        .on("bot_notices")
        .columns(["state", "next_attempt_at"])
        .execute();
      await db.schema.createIndex("bot_notices_request").on("bot_notices").column("request_id").execute();
    },
  };
}
