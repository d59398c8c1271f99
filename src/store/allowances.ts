import type { Transaction } from "kysely";
import type { Database } from "./schema.ts";

/** Each Dock's allowance: a burst, then so many messages per second. */
export interface DockRate {
  burst: number;
  perSecond: number;
}

/**
 * Where each Dock's allowance is kept while batches of messages are stored (see AcceptBatch): in
 * this process's memory when one process accepts for the Docks (store/sqlite/allowances.ts), in
 * the database when several instances share them (store/postgres/allowances.ts).
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
