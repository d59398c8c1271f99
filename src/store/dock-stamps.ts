import { type Kysely, sql } from "kysely";
import type { Db } from "./db.ts";
import { DAY_MS, dayOf } from "./rollups.ts";
import type { Database } from "./schema.ts";

/**
 * What a stamp is made of, in its order: the Dock's own row (its fields, key, hook token, template),
 * its subscriptions, its messages and copies (the activity counts), and who may join (its invite
 * links, join requests and bans).
 */
export const STAMP_PARTS = ["settings", "subscribers", "messages", "audience"] as const;
export type StampPart = (typeof STAMP_PARTS)[number];

/**
 * A Dock as the live stream watches it: whose it is, and a stamp that changes when anything of it
 * does, its STAMP_PARTS joined by `/` (compared whole; split to say which part moved).
 */
export interface DockStamp {
  id: string;
  ownerId: number;
  stamp: string;
}

/**
 * For the console's live stream: a stamp per Dock that changes whenever anything the console shows
 * of it changes, read for every Dock of many owners in one query. Made of what is already kept:
 * the Dock's row (`updated_at`: edits, rotations, hook token), its subscriptions (the newest
 * `updated_at`: joins, leaves, blocks, removals, a group's new title) and its activity counts of
 * today and yesterday (messages accepted and changed, copies settled; counted in the transactions
 * that make them, rollups.ts), so changes made by any process are seen. One part is written for
 * the stream's sake, its audience (`docks.audience_at`, moved by audienceChanged with every change
 * of its invite links, join requests and bans): read from those three tables it tripled the
 * stream's read (docs/benchmarks.md, bench:stamps), and such changes are rare.
 */
export class DockStamps {
  readonly #db: Db;
  readonly #now: () => number;

  constructor(db: Db, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
  }

  /** Every Dock of these owners, with its stamp. */
  async of(ownerIds: readonly number[]): Promise<DockStamp[]> {
    if (ownerIds.length === 0) return [];
    // Yesterday too: a count made just before midnight (or by an instance whose clock is a little
    // behind) is still seen; each day that leaves the window changes the stamp once, harmlessly.
    const since = dayOf(this.#now() - DAY_MS);
    const rows = await this.#db.kysely
      .selectFrom("docks")
      .select((eb) => [
        "docks.id",
        "docks.owner_id",
        "docks.updated_at",
        eb
          .selectFrom("subscriptions")
          .select((s) => s.fn.max("subscriptions.updated_at").as("at"))
          .whereRef("subscriptions.dock_id", "=", "docks.id")
          .as("subscribed"),
        eb
          .selectFrom("dock_days")
          .select(sql<number>`sum(accepted + sent + retried + failed + gone + changed)`.as("n"))
          .whereRef("dock_days.dock_id", "=", "docks.id")
          .where("dock_days.day", ">=", since)
          .as("counted"),
        "docks.audience_at",
      ])
      .where("docks.owner_id", "in", [...ownerIds])
      .execute();
    return rows.map((row) => ({
      id: row.id,
      ownerId: Number(row.owner_id),
      stamp: `${row.updated_at}/${row.subscribed ?? 0}/${row.counted ?? 0}/${row.audience_at}`,
    }));
  }
}

/**
 * The Dock's audience changed (an invite link made, used or revoked; a join request made, decided
 * or expired; a ban or an unban): its stamp's `audience` part moves, in `db`, the transaction of
 * the change. Always forward, even twice in a millisecond, so no change goes untold.
 */
export async function audienceChanged(db: Kysely<Database>, dockId: string, now: number): Promise<void> {
  await db
    .updateTable("docks")
    .set((eb) => ({
      audience_at: eb
        .case()
        .when("audience_at", ">=", now)
        .then(eb("audience_at", "+", 1))
        .else(now)
        .end(),
    }))
    .where("id", "=", dockId)
    .execute();
}
