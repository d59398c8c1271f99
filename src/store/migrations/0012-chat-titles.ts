import type { Kysely } from "kysely";

/**
 * The titles of the groups, supergroups and channels the bot is in, so the console names a
 * subscribed group ("Ops room") instead of its number. One row per chat, not per subscription: a
 * title belongs to the chat, is learnt before any subscription (the bot being added) and changes
 * for all its Docks at once. Private chats are named by `users`. Chats subscribed before this
 * migration have no row until the bot next hears from them (the console then falls back to the id).
 */
export function chatTitles() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable("chats")
        .addColumn("chat_id", "bigint", (c) => c.primaryKey())
        .addColumn("title", "text", (c) => c.notNull())
        .addColumn("updated_at", "bigint", (c) => c.notNull())
        .execute();
    },
  };
}
