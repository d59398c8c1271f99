import { type Kysely, sql } from "kysely";
import type { Db } from "./db.ts";
import { DAY_MS, dayOf } from "./rollups.ts";
import type { Database } from "./schema.ts";

/**
 * What a stamp is made of, in its order: the Dock's own row (its fields, key, hook token, template),
 * its subscriptions, its messages and copies (the activity counts), its audit log (the newest
 * entry: every change of its team, who joined through an invitation, is written there), who
 * may join (its invite links, join requests and bans), and its refused requests (the latest).
 */
export const STAMP_PARTS = ["settings", "subscribers", "messages", "audit", "audience", "refused"] as const;
export type StampPart = (typeof STAMP_PARTS)[number];

/**
 * A Dock as the live stream watches it for one person (its owner, or a co-owner: a Dock shared with
 * three people is three of these), and a stamp that changes when anything of it does, its
 * STAMP_PARTS joined by `/` (compared whole; split to say which part moved).
 */
export interface DockStamp {
  id: string;
  personId: number;
  stamp: string;
}

/**
 * For the console's live stream: a stamp per Dock that changes whenever anything the console shows
 * of it changes, read for every Dock of many people (owned or shared with them) in one query. Made
 * of what is already kept (but one part, below): the Dock's row (`updated_at`:
 * edits, rotations, hook token), its subscriptions (the newest `updated_at`: joins, leaves, blocks,
 * removals, a group's new title), its activity counts of today and yesterday (messages accepted
 * and changed, copies settled; counted in the transactions that make them, rollups.ts) and its
 * newest audit entry, so changes made by any process are seen. Two parts are
 * written for the stream's sake: its audience (`docks.audience_at`, moved by audienceChanged with
 * every change of its invite links, join requests and bans): read from those three tables it
 * tripled the stream's read (docs/benchmarks.md, bench:stamps), and such changes are rare; and its
 * refused requests (`docks.refused_at`, moved with each write of them, RefusedRequests), which
 * read from `dock_refusals` made the read a third slower.
 */
export class DockStamps {
  readonly #db: Db;
  readonly #now: () => number;

  constructor(db: Db, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
  }

  /** Every Dock these people own or co-own, once for each of them, with its stamp. */
  async of(personIds: readonly number[]): Promise<DockStamp[]> {
    if (personIds.length === 0) return [];
    // Yesterday too: a count made just before midnight (or by an instance whose clock is a little
    // behind) is still seen; each day that leaves the window changes the stamp once, harmlessly.
    const since = dayOf(this.#now() - DAY_MS);
    const people = [...personIds];
    const db = this.#db.kysely;
    // Who watches which Dock: its owner (docks_owner), its co-owners (co_owners_person). Two index
    // reads joined by UNION ALL, not one OR, which would read every Dock of the instance each tick.
    const watched = db
      .selectFrom("docks")
      .select(["docks.id as dock_id", "docks.owner_id as person"])
      .where("docks.owner_id", "in", people)
      .unionAll(
        db
          .selectFrom("co_owners")
          .select(["co_owners.dock_id as dock_id", "co_owners.telegram_id as person"])
          .where("co_owners.telegram_id", "in", people),
      );
    const rows = await db
      .selectFrom(watched.as("w"))
      .innerJoin("docks", "docks.id", "w.dock_id")
      .select((eb) => [
        "docks.id",
        "w.person",
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
        eb
          .selectFrom("dock_audit")
          .select((a) => a.fn.max("dock_audit.id").as("id"))
          .whereRef("dock_audit.dock_id", "=", "docks.id")
          .as("audited"),
        "docks.audience_at",
        "docks.refused_at",
      ])
      .execute();
    const stamps = rows.map((row) => ({
      id: row.id,
      personId: Number(row.person),
      stamp: `${row.updated_at}/${row.subscribed ?? 0}/${row.counted ?? 0}/${row.audited ?? 0}/${row.audience_at}/${row.refused_at}`,
    }));
    return stamps;
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
