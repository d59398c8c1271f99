import type { Kysely } from "kysely";
import type { Database } from "./schema.ts";

/**
 * A chat as the console names it: a group's title, or a person's name with their @username; null
 * when the service knows neither (a person who never used the console, a group not heard from).
 */
export function chatName(
  title: string | null,
  firstName: string | null,
  username: string | null,
): string | null {
  if (title) return title;
  if (firstName && username) return `${firstName} (@${username})`;
  return firstName || (username ? `@${username}` : null);
}

/**
 * Remembers a group's, supergroup's or channel's title as the bot last saw it, creating its row
 * or replacing the old title: the console names subscribed groups by it. An empty title (Telegram
 * never sends one) is ignored rather than erasing a good one. `db` may be a transaction. True when
 * the title is new or changed.
 */
export async function rememberTitle(
  db: Kysely<Database>,
  chatId: number,
  title: string | undefined,
  now: number,
): Promise<boolean> {
  const clean = title?.trim();
  if (clean === undefined || clean === "") return false;
  // Every membership update repeats the title: most change nothing, and write nothing.
  const known = await db.selectFrom("chats").select("title").where("chat_id", "=", chatId).executeTakeFirst();
  if (known?.title === clean) return false;
  await db
    .insertInto("chats")
    .values({ chat_id: chatId, title: clean, updated_at: now })
    .onConflict((oc) => oc.column("chat_id").doUpdateSet({ title: clean, updated_at: now }))
    .execute();
  return true;
}

/**
 * A group that became a supergroup keeps its title under the new id, unless the bot already
 * heard the new chat's own. `db` is the transaction that moves the chat's subscriptions.
 */
export async function followTitle(
  db: Kysely<Database>,
  from: number,
  to: number,
  now: number,
): Promise<void> {
  const old = await db.selectFrom("chats").select("title").where("chat_id", "=", from).executeTakeFirst();
  if (old === undefined) return;
  await db
    .insertInto("chats")
    .values({ chat_id: to, title: old.title, updated_at: now })
    .onConflict((oc) => oc.column("chat_id").doNothing())
    .execute();
}
