import type { Kysely } from "kysely";
import type { Database } from "./schema.ts";

/**
 * Remembers a Telegram person's name as Telegram shows it (first name, username), creating their
 * row or refreshing it: the console names people by it (the signed-in owner, a Dock's subscribers).
 * `db` may be a transaction.
 */
export async function rememberName(
  db: Kysely<Database>,
  person: { id: number; firstName?: string | undefined; username?: string | undefined },
  now: number,
): Promise<void> {
  const names = { first_name: person.firstName ?? null, username: person.username ?? null };
  await db
    .insertInto("users")
    .values({ telegram_id: person.id, ...names, created_at: now })
    .onConflict((oc) => oc.column("telegram_id").doUpdateSet(names))
    .execute();
}

/**
 * Makes sure a Telegram person has a row (their names unknown until the bot hears from them),
 * keeping the one they have: a Dock's owner, someone the operator lets in. `db` may be a transaction.
 */
export async function knowUser(db: Kysely<Database>, id: number, now: number): Promise<void> {
  await db
    .insertInto("users")
    .values({ telegram_id: id, first_name: null, username: null, created_at: now })
    .onConflict((oc) => oc.column("telegram_id").doNothing())
    .execute();
}
