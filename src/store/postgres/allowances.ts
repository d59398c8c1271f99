import { type Kysely, sql } from "kysely";
import { DOCK_ID_PATTERN } from "../../domain/ids.ts";
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
 * accepts messages for the Dock, and leased out of it: before a batch's transaction begins, the
 * instance reserves for it as many tokens as it has messages for the Dock, from what it leased
 * earlier or else from the row — a few at a time, in one statement of its own (the row locked for
 * that statement only, never for a batch's transaction, and no second connection asked for while
 * one is held). The batch's messages spend them as their keys prove right; what is left is the
 * instance's again.
 *
 * Accuracy across instances: never more than the burst plus the rate over any stretch of time, as
 * with one bucket — every token spent anywhere was taken from the row. An instance can refuse while
 * another still holds leased tokens: at most LEASE_SECONDS of the rate or a batch's messages for
 * the Dock, until that instance's next batch after LEASE_MS gives them back. Tokens of messages
 * whose batch then failed, and those of an instance that stops, are not given back: all of these
 * only refuse early, never admit too much.
 */
export class LeasedAllowances implements Allowances {
  readonly #kysely: Kysely<Database>;
  /** This instance's tokens per Dock and rate, and until when they may be spent. */
  readonly #leases = new Map<string, Lease>();
  /** A lease being asked for, per Dock and rate: a second batch waits for it rather than asking too. */
  readonly #asking = new Map<string, Promise<void>>();
  #sweptAt = Number.NEGATIVE_INFINITY;

  /** `kysely`: the pool (a lease runs apart from the batch's transaction, and commits at once). */
  constructor(kysely: Kysely<Database>) {
    this.#kysely = kysely;
  }

  batch(rate: DockRate, now: number, dockIds: readonly string[]): BatchAllowance {
    this.#sweep(now);
    const rateKey = `${rate.burst}/${rate.perSecond}`;
    const needs = new Map<string, number>();
    for (const dockId of dockIds) needs.set(dockId, (needs.get(dockId) ?? 0) + 1);
    /** What the batch holds per Dock: tokens reserved for it, and what a message beyond them is told. */
    const reserved = new Map<string, Reservation>();
    // Asked once per message, whichever attempt asks (see BatchAllowance).
    const admitted = new Map<number, number>();
    return {
      prepare: async () => {
        for (const [dockId, need] of needs) {
          // Asked again after a failure: what was reserved stays.
          if (reserved.has(dockId)) continue;
          // Anything that cannot be a Dock ID never reaches the database (its key is refused unread).
          const reservation = DOCK_ID_PATTERN.test(dockId)
            ? await this.#reserve(`${rateKey}\n${dockId}`, dockId, rate, now, need)
            : { tokens: 0, wait: 1, missing: true };
          reserved.set(dockId, reservation);
        }
      },
      take: (index, dockId) => {
        const known = admitted.get(index);
        if (known !== undefined) return known;
        const reservation = reserved.get(dockId);
        if (reservation === undefined) throw new Error("the batch's allowance was not prepared");
        // Deleted meanwhile (or never there, for a sender the caller authenticated): the message
        // fails as its insert would have, alone (AcceptBatch).
        if (reservation.missing) throw new Error("the Dock does not exist: no allowance to lease");
        let wait = reservation.wait;
        if (reservation.tokens >= 1) {
          reservation.tokens -= 1;
          wait = 0;
        }
        admitted.set(index, wait);
        return wait;
      },
      finish: async () => {
        // What the batch did not spend (wrong keys, replays, a failed batch) goes straight back to
        // the row, capped at the burst there: kept here, it could outlive its lease while the row
        // refilled (a slow batch), and be spent beside a full burst. Awaited: a sender told "wrong
        // key" who sends again at once with the right one must find the token back (a round trip
        // only for batches that left some unspent).
        const unspent: Returned[] = [];
        for (const [dockId, reservation] of reserved) {
          if (reservation.tokens >= 1) unspent.push({ dockId, rate, tokens: reservation.tokens });
          reservation.tokens = 0;
        }
        await this.#giveBack(unspent, now);
      },
    };
  }

  /**
   * Up to `need` tokens for one batch, from this instance's lease and else from the row; fewer
   * only when the row has run dry (then the wait it tells), never because another batch of this
   * instance took a lease first (it asks again). No statement while the row is known dry.
   */
  async #reserve(
    key: string,
    dockId: string,
    rate: DockRate,
    now: number,
    need: number,
  ): Promise<Reservation> {
    let tokens = this.#fromLease(key, now, need);
    try {
      while (tokens < need) {
        const lease = this.#leases.get(key);
        if (lease?.missing) return { tokens, wait: 1, missing: true };
        if (lease !== undefined && now < lease.dryUntil) {
          return { tokens, wait: Math.max(0, lease.refillAt - now) / 1000, missing: false };
        }
        const under = this.#asking.get(key);
        if (under !== undefined) await under.catch(() => {});
        else {
          const asking = this.#ask(key, dockId, rate, now, need - tokens);
          this.#asking.set(key, asking);
          try {
            await asking;
          } finally {
            this.#asking.delete(key);
          }
        }
        // A lease granted something (taken here, or by a batch quicker to it: then asked again),
        // or left the lease dry or missing, which the next turn answers.
        tokens += this.#fromLease(key, now, need - tokens);
      }
    } catch (error) {
      await this.#giveBack([{ dockId, rate, tokens }], now);
      throw error;
    }
    return { tokens, wait: 0, missing: false };
  }

  /** Takes up to `count` tokens of this instance's lease, if still good at `now`. */
  #fromLease(key: string, now: number, count: number): number {
    const lease = this.#leases.get(key);
    if (lease === undefined || lease.until <= now) return 0;
    const taken = Math.min(count, Math.floor(lease.tokens));
    lease.tokens -= taken;
    return taken;
  }

  async #ask(key: string, dockId: string, rate: DockRate, now: number, wanted: number): Promise<void> {
    const held = this.#leases.get(key);
    // Leftovers of an expired lease go back to the row with this one (and no batch spends them meanwhile).
    const giveBack = held !== undefined && held.until <= now ? held.tokens : 0;
    if (held !== undefined && giveBack > 0) held.tokens = 0;
    const want = Math.min(
      Math.max(wanted, Math.ceil(rate.perSecond * LEASE_SECONDS), 1),
      Math.max(1, Math.floor(rate.burst)),
    );
    const answer = await leaseFromRow(this.#kysely, dockId, rate, now, want, giveBack);
    const lease = this.#leases.get(key) ?? { ...EMPTY, dockId, rate };
    this.#leases.set(key, lease);
    if (answer === undefined) {
      lease.missing = true;
      return;
    }
    lease.missing = false;
    if (answer.granted < 1) {
      // A millisecond at least, so that whoever waits on this answer takes it and stops asking
      // (a level a rounding short of a whole token would refill "now" and be asked again at once).
      lease.refillAt = Math.max(now + 1, now + ((1 - answer.level) / rate.perSecond) * 1000);
      // Asked again a lease's time later at the latest: another instance may give tokens back.
      lease.dryUntil = Math.min(lease.refillAt, now + LEASE_MS);
      return;
    }
    lease.tokens += answer.granted;
    lease.until = now + LEASE_MS;
    lease.dryUntil = 0;
  }

  /**
   * Gives back what expired leases left, all in one statement (not awaited; at most once per
   * LEASE_MS, or when the clock went back), so that a Dock this instance stopped hearing from is
   * whole again for the others. An instance that receives nothing more keeps its leftovers until
   * its next batch, or loses them when it stops: the Dock only refuses early meanwhile.
   */
  #sweep(now: number): void {
    if (now >= this.#sweptAt && now - this.#sweptAt < LEASE_MS) return;
    this.#sweptAt = now;
    const returned: Returned[] = [];
    for (const [key, lease] of this.#leases) {
      if (lease.until > now || now < lease.dryUntil || this.#asking.has(key)) continue;
      this.#leases.delete(key);
      if (lease.tokens >= 1) returned.push(lease);
    }
    void this.#giveBack(returned, now);
  }

  /**
   * Tokens back to their Docks' rows (the sweep does not wait for it). Lost on failure: those Docks
   * only refuse early.
   */
  async #giveBack(returned: Returned[], now: number): Promise<void> {
    const some = returned.filter((back) => back.tokens >= 1);
    if (some.length === 0) return;
    await giveBack(this.#kysely, some, now).catch(() => {});
  }
}

/** Tokens one batch holds for a Dock. */
interface Reservation {
  tokens: number;
  /** Seconds a message beyond them waits (the row ran dry). */
  wait: number;
  /** The Dock does not exist. */
  missing: boolean;
}

interface Lease {
  dockId: string;
  rate: DockRate;
  tokens: number;
  /** The tokens may be spent until then (ms, the batches' clock). */
  until: number;
  /** The row had no whole token when last asked: not asked again before then (LEASE_MS at most). */
  dryUntil: number;
  /** When the row refills to a whole token, as last asked (what a refused message is told). */
  refillAt: number;
  /** The row could not be read nor made: the Dock does not exist. */
  missing: boolean;
}

const EMPTY = { tokens: 0, until: 0, dryUntil: 0, refillAt: 0, missing: false };

/** Tokens going back to a Dock's row. */
type Returned = { dockId: string; rate: DockRate; tokens: number };

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

/**
 * Returns leased tokens not spent to their Docks' rows (each up to its burst), in one statement,
 * locking the rows in the order of their Dock IDs (as no two instances then wait for each other).
 */
async function giveBack(kysely: Kysely<Database>, leases: Returned[], now: number): Promise<void> {
  await sql`
    with back as (
      select * from unnest(${leases.map((l) => l.dockId)}::text[], ${leases.map((l) => l.tokens)}::double precision[],
                           ${leases.map((l) => l.rate.burst)}::double precision[],
                           ${leases.map((l) => l.rate.perSecond / 1000)}::double precision[])
        as b(dock_id, tokens, burst, per_ms)
    ), locked as (
      select dock_allowances.dock_id from dock_allowances join back using (dock_id)
      order by dock_allowances.dock_id for update of dock_allowances
    )
    update dock_allowances
    set tokens = least(back.burst,
                       dock_allowances.tokens
                         + greatest(0, ${now}::bigint - dock_allowances.at) * back.per_ms + back.tokens),
        at = greatest(dock_allowances.at, ${now}::bigint)
    from back
    where dock_allowances.dock_id = back.dock_id
      and dock_allowances.dock_id in (select dock_id from locked)`.execute(kysely);
}
