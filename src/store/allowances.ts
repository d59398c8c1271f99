import type { Transaction } from "kysely";
import { TokenBuckets } from "../domain/token-bucket.ts";
import type { Database } from "./schema.ts";

/** Each Dock's allowance: a burst, then so many messages per second. */
export interface DockRate {
  burst: number;
  perSecond: number;
}

/**
 * Where each Dock's allowance is kept while batches of messages are stored (see AcceptBatch): in
 * this process's memory when one process accepts for the Docks (SQLite), in the database when
 * several instances share them (store/postgres/allowances.ts).
 */
export interface Allowances {
  /** For one batch of messages, accepted at `now`. */
  batch(rate: DockRate, now: number): BatchAllowance;
}

export interface BatchAllowance {
  /**
   * For one transaction that stores the batch, or one of its messages when the batch is stored
   * one by one after a failure. In memory, a message asked about again in a later transaction must
   * neither spend its Dock's allowance twice nor be refused what an earlier attempt admitted (its
   * answer is remembered). A shared allowance needs no such care: the failed transaction gave back
   * what it took, and the message takes afresh.
   */
  transaction(tx: Transaction<Database>): TransactionAllowance;
}

export interface TransactionAllowance {
  /** Seconds the message at `index` of the batch must wait (0: admitted, a token taken). */
  take(index: number, dockId: string): number | Promise<number>;
  /** Records what was taken, in the transaction, before it commits. */
  settle(): Promise<void>;
}

/** Allowances in this process's memory: one token bucket per Dock and rate. */
export class LocalAllowances implements Allowances {
  readonly #rates = new Map<string, TokenBuckets>();

  batch(rate: DockRate): BatchAllowance {
    const key = `${rate.burst}/${rate.perSecond}`;
    let buckets = this.#rates.get(key);
    if (buckets === undefined) {
      buckets = new TokenBuckets({ capacity: rate.burst, refillPerSecond: rate.perSecond });
      this.#rates.set(key, buckets);
    }
    const bucketsOfRate = buckets;
    // Asked once per message, whichever transaction asks (see BatchAllowance.transaction).
    const admitted = new Map<number, number>();
    const round: TransactionAllowance = {
      take(index, dockId) {
        let wait = admitted.get(index);
        if (wait === undefined) {
          wait = bucketsOfRate.take(dockId);
          admitted.set(index, wait);
        }
        return wait;
      },
      settle: async () => {},
    };
    return { transaction: () => round };
  }
}
