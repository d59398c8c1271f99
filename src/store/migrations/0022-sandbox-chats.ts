import { type Kysely, sql } from "kysely";

/**
 * Nothing of the sandbox's reaches a real chat. The sandbox's chats have Telegram-shaped ids
 * (`100000001`, …) that real chats may have too, so once a real bot runs, whatever was meant for a
 * sandbox chat must not be sent, edited or deleted there (SandboxChats, store/sandbox-chats.ts).
 *
 * - `subscriptions.sandbox`: 0, a real chat; 1, a chat of the sandbox (subscribed while the built-in
 *   sandbox played Telegram); 2, a chat of the sandbox whose subscription ended when a real bot
 *   started (what the console's offer of the sandbox's Docks counts as "not carried over"); 3, one
 *   whose subscription had ended before (in the sandbox).
 *   Rows made before this migration are marked 1 when their Dock belongs to one of the sandbox's
 *   people (migration 0020): those were made in the sandbox, bar a real chat that subscribed to such
 *   a Dock after going live, which taking the Dock over removes anyway.
 * - `instance.telegram`: what the last start spoke to, `sandbox` or `bot`; null before this
 *   migration's first start. A start on a real bot after one on the sandbox is going live.
 * - `instance.sandbox_since`: when the sandbox's latest stretch began (its first start after a
 *   real bot's, or this migration's): what was made since is the sandbox's, and going live
 *   forgets it. What came before, from a real bot, stays.
 */
export function sandboxChats() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .alterTable("subscriptions")
        .addColumn("sandbox", "integer", (c) => c.notNull().defaultTo(0))
        .execute();
      await sql`update subscriptions set sandbox = 1 where dock_id in (
        select docks.id from docks join owners on owners.telegram_id = docks.owner_id
        where owners.sandbox = 1)`.execute(db);
      await db.schema.alterTable("instance").addColumn("telegram", "text").execute();
      await db.schema.alterTable("instance").addColumn("sandbox_since", "bigint").execute();
    },
  };
}
