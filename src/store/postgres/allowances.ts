import { type Kysely, sql } from "kysely";
import type { Allowances, BatchAllowance, DockRate } from "../allowances.ts";
import type { Database } from "../schema.ts";

/**
 * How long tokens leased by this instance stay usable here; what is left then goes back to the
 * Dock's row with the next lease (or the next batch's sweep).
 */
export const LEASE_MS = 1000;

/**
 * A lease asks for at least this long a stretch of the Dock's rate: a Dock allowed 1,000
 * messages a second leases 50 at a time, one allowed 1 a second leases what a batch needs.
 */
const LEASE_SECONDS = 0.05;

/**
 * Each Dock's allowance kept in the database (`dock_allowances`), shared by every instance that
 * accepts messages for the Dock, and leased out of it: an instance takes a few tokens at a time
 * from the Dock's row in one statement of its own (the row locked for that statement only, never
 * for a batch's transaction) and spends them from memory.
 *
 * Accuracy across instances: never more than the burst plus the rate over any stretch of time, as
 * with one bucket — every token spent anywhere was taken from the row. An instance can refuse while
 * another still holds leased tokens: at most LEASE_SECONDS of the rate (or a batch's messages for
 * the Dock), for at most LEASE_MS. Tokens taken for messages whose transaction then failed are
 * not given back (the messages are stored one by one and keep their answers, as in SQLite's
 * LocalAllowances); those of an instance that stops before giving them back are lost: both only
 * refuse early, by a lease at most, never admit too much.
 */
export class LeasedAllowances implements Allowances {
  readonly #kysely: Kysely<Database>;
  /** This instance's tokens per Dock and rate, and until when they may be spent. */
  readonly #leases = new Map<string, Lease>();
  /** A lease being asked for, per Dock and rate: a second batch waits for it rather than asking too. */
  readonly #asking = new Map<string, Promise<void>>();
  #sweptAt = 0;

  /** `kysely`: the pool (a lease runs apart from the batch's transaction, and commits at once). */
  constructor(kysely: Kysely<Database>) {
    this.#kysely = kysely;
  }

  batch(rate: DockRate, now: number, dockIds: readonly string[]): BatchAllowance {
    this.#sweep(now, rate);
    const rateKey = `${rate.burst}/${rate.perSecond}`;
    // Asked once per message, whichever attempt asks (see BatchAllowance).
    const admitted = new Map<number, number>();
    return {
      take: (index, dockId) => {
        const known = admitted.get(index);
        if (known !== undefined) return known;
        const key = `${rateKey}\n${dockId}`;
        const local = this.#fromMemory(key, now);
        if (local !== undefined) {
          admitted.set(index, local);
          return local;
        }
        // The batch's messages for this Dock from here on: what it will most likely spend.
        let wanted = 0;
        for (let i = index; i < dockIds.length; i++) if (dockIds[i] === dockId) wanted++;
        return this.#lease(key, dockId, rate, now, wanted).then((wait) => {
          admitted.set(index, wait);
          return wait;
        });
      },
    };
  }

  /**
   * 0: a token leased earlier and still good at `now` was spent; seconds to wait: the row had none
   * left when asked a moment ago; undefined: ask the row.
   */
  #fromMemory(key: string, now: number): number | undefined {
    const lease = this.#leases.get(key);
    if (lease === undefined) return undefined;
    if (lease.until > now && lease.tokens >= 1) {
      lease.tokens -= 1;
      return 0;
    }
    if (now < lease.dryUntil) return (lease.refillAt - now) / 1000;
    return undefined;
  }

  /**
   * Leases tokens for the Dock (at least `wanted`, when the row has them) and spends one: 0, or
   * the seconds until the Dock has a token again. One lease per Dock at a time; a batch that finds
   * one under way waits for it and spends from it.
   */
  async #lease(key: string, dockId: string, rate: DockRate, now: number, wanted: number): Promise<number> {
    // Twice at most: a lease granted and spent at once by another batch of this instance is asked again.
    for (let round = 0; round < 2; round++) {
      const under = this.#asking.get(key);
      if (under !== undefined) {
        await under.catch(() => {});
        const local = this.#fromMemory(key, now);
        if (local !== undefined) return local;
        continue;
      }
      const asking = this.#ask(key, dockId, rate, now, wanted);
      this.#asking.set(key, asking);
      try {
        await asking;
      } finally {
        this.#asking.delete(key);
      }
      const local = this.#fromMemory(key, now);
      if (local !== undefined) return local;
    }
    return 1 / rate.perSecond;
  }

  async #ask(key: string, dockId: string, rate: DockRate, now: number, wanted: number): Promise<void> {
    const held = this.#leases.get(key);
    // Leftovers of an expired lease go back to the row with this one.
    const giveBack = held !== undefined && held.until <= now ? held.tokens : 0;
    // Not spent by another batch meanwhile (one whose clock still finds them good).
    if (held !== undefined && giveBack > 0) held.tokens = 0;
    const want = Math.min(
      Math.max(wanted, Math.ceil(rate.perSecond * LEASE_SECONDS), 1),
      Math.max(1, Math.floor(rate.burst)),
    );
    const answer = await leaseFromRow(this.#kysely, dockId, rate, now, want, giveBack);
    // Deleted meanwhile (or never there, for a sender the caller authenticated): the message
    // fails as its insert would have, alone (AcceptBatch).
    if (answer === undefined) throw new Error("the Dock does not exist: no allowance to lease");
    const lease = this.#leases.get(key) ?? { tokens: 0, until: 0, dryUntil: 0, refillAt: 0 };
    this.#leases.set(key, lease);
    if (answer.granted < 1) {
      lease.refillAt = now + ((1 - answer.level) / rate.perSecond) * 1000;
      // Asked again a lease's time later at the latest: another instance may give tokens back.
      lease.dryUntil = Math.min(lease.refillAt, now + LEASE_MS);
      return;
    }
    if (lease.until <= now) lease.tokens = 0;
    lease.tokens += answer.granted;
    lease.until = now + LEASE_MS;
    lease.dryUntil = 0;
  }

  /**
   * Gives back what expired leases left (not awaited; at most once per LEASE_MS), so a Dock this
   * instance stopped hearing from is whole again for the others.
   */
  #sweep(now: number, rate: DockRate): void {
    if (now - this.#sweptAt < LEASE_MS) return;
    this.#sweptAt = now;
    const rateKey = `${rate.burst}/${rate.perSecond}`;
    for (const [key, lease] of this.#leases) {
      if (lease.until > now || now < lease.dryUntil) continue;
      this.#leases.delete(key);
      const [ofRate, dockId] = key.split("\n") as [string, string];
      if (lease.tokens < 1 || ofRate !== rateKey || this.#asking.has(key)) continue;
      void giveBack(this.#kysely, dockId, rate, now, lease.tokens).catch(() => {
        // Lost: the Dock refuses a little early until it refills, never admits too much.
      });
    }
  }
}

interface Lease {
  tokens: number;
  /** The tokens may be spent until then (ms, the batches' clock). */
  until: number;
  /** The row had no whole token when last asked: not asked again before then (LEASE_MS at most). */
  dryUntil: number;
  /** When the row refills to a whole token, as last asked (what a refused message is told). */
  refillAt: number;
}

/**
 * Takes up to `want` whole tokens from the Dock's row in one statement (refilled to `now` first,
 * with `giveBack` tokens returned): the tokens granted and the row's level before. The row is
 * created full on the Dock's first message. Undefined: the Dock does not exist (no row was read
 * nor made, twice: the first time another instance may have been creating it).
 *
 * `cur` locks the row; a concurrent lease waits and then reads the row as that one left it, so two
 * leases never grant the same token. Clocks of instances may disagree a little: the refill never
 * runs backwards.
 */
async function leaseFromRow(
  kysely: Kysely<Database>,
  dockId: string,
  rate: DockRate,
  now: number,
  want: number,
  giveBack: number,
): Promise<{ granted: number; level: number } | undefined> {
  for (let attempt = 0; attempt < 2; attempt++) {
    const { rows } = await sql<{ granted: number; level: number }>`
      with cur as (
        select tokens, at from dock_allowances where dock_id = ${dockId} for update
      ), refilled as (
        select least(${rate.burst}::double precision,
                     cur.tokens + greatest(0, ${now}::bigint - cur.at) * ${rate.perSecond / 1000}::double precision
                       + ${giveBack}::double precision) as level,
               greatest(cur.at, ${now}::bigint) as at
        from cur
      ), taken as (
        update dock_allowances set tokens = refilled.level - least(${want}::integer, floor(refilled.level)), at = refilled.at
        from refilled where dock_allowances.dock_id = ${dockId}
        returning least(${want}::integer, floor(refilled.level)) as granted, refilled.level as level
      ), created as (
        insert into dock_allowances (dock_id, tokens, at)
        select ${dockId}, ${rate.burst}::double precision - least(${want}::integer, floor(${rate.burst}::double precision)), ${now}::bigint
        from docks where id = ${dockId} and not exists (select 1 from cur)
        on conflict (dock_id) do nothing
        returning least(${want}::integer, floor(${rate.burst}::double precision)) as granted,
                  ${rate.burst}::double precision as level
      )
      select granted, level from taken union all select granted, level from created`.execute(kysely);
    const row = rows[0];
    if (row !== undefined) return { granted: Number(row.granted), level: Number(row.level) };
  }
  return undefined;
}

/** Returns leased tokens not spent to the Dock's row (up to the burst). */
async function giveBack(
  kysely: Kysely<Database>,
  dockId: string,
  rate: DockRate,
  now: number,
  tokens: number,
): Promise<void> {
  await sql`
    update dock_allowances
    set tokens = least(${rate.burst}::double precision,
                       tokens + greatest(0, ${now}::bigint - at) * ${rate.perSecond / 1000}::double precision
                         + ${tokens}::double precision),
        at = greatest(at, ${now}::bigint)
    where dock_id = ${dockId}`.execute(kysely);
}
