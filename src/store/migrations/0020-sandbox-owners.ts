import type { Kysely } from "kysely";

/**
 * Going live without losing anything (issue 38). The sandbox's people have Telegram-shaped ids
 * (`100000001`, …) that real people may have too, so a row of `owners` made while the sandbox played
 * Telegram must not let anyone in once a real bot runs, and the Docks of those people are the ones
 * the first administrator is offered.
 *
 * - `owners.sandbox`: 1 when the row was made while the built-in sandbox played Telegram (a Dock
 *   made for, or given to, one of its people); 0 otherwise. On a real bot such a row lets nobody in.
 *   Rows made before this migration count as 0: whether they came from the sandbox cannot be told
 *   (`dock-notify docks transfer` hands their Docks over).
 * - `instance.sandbox_offer_dismissed_at`: when an administrator dismissed the console's offer to
 *   take over the sandbox's Docks; null: not dismissed.
 */
export function sandboxOwners() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .alterTable("owners")
        .addColumn("sandbox", "integer", (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema.alterTable("instance").addColumn("sandbox_offer_dismissed_at", "bigint").execute();
    },
  };
}
