/** Each Dock's allowance: a burst, then so many messages per second. */
export interface DockRate {
  burst: number;
  perSecond: number;
}

/**
 * Where each Dock's allowance is kept while batches of messages are stored (see AcceptBatch): in
 * this process's memory when one process accepts for the Docks (store/sqlite/allowances.ts), leased
 * from the database when several instances share them (store/postgres/allowances.ts).
 */
export interface Allowances {
  /** For one batch of messages, accepted at `now`; `dockIds`: each message's Dock, in order. */
  batch(rate: DockRate, now: number, dockIds: readonly string[]): BatchAllowance;
}

/**
 * One batch's allowance. A message asked about again (its batch failed, and its messages are
 * stored one by one) must neither spend its Dock's allowance twice nor be refused what the first
 * attempt admitted: its answer is remembered. Tokens of messages whose batch then failed for good
 * are not given back: that only ever refuses early.
 */
export interface BatchAllowance {
  /**
   * Gets, before the batch's transaction begins, what takes time to get (PostgreSQL's lease from
   * the shared row): nothing waits on another connection while the transaction is open.
   */
  prepare?(): Promise<void>;
  /** Seconds the message at `index` of the batch must wait (0: admitted, a token taken). */
  take(index: number, dockId: string): number;
  /**
   * After the batch, stored or not: what it got and did not spend goes back, before the batch's
   * senders hear their answers (a sender who tries again at once must find it there).
   */
  finish?(): Promise<void>;
}
