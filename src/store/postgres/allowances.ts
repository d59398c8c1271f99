import { sql, type Transaction } from "kysely";
import type { Allowances, BatchAllowance, DockRate, TransactionAllowance } from "../allowances.ts";
import type { Database } from "../schema.ts";

/**
 * Each Dock's allowance kept in the database (`dock_allowances`), shared by every instance that
 * accepts messages for the Dock. A transaction reads and locks a Dock's row the first time it
 * takes from it and writes the tokens back before committing, so a transaction that fails gives
 * back what it took (and the batch's messages, stored again one by one, take afresh).
 */
export class SharedAllowances implements Allowances {
  batch(rate: DockRate, now: number): BatchAllowance {
    return { transaction: (tx) => new SharedTransaction(tx, rate, now) };
  }
}

class SharedTransaction implements TransactionAllowance {
  readonly #tx: Transaction<Database>;
  readonly #rate: DockRate;
  readonly #now: number;
  /** The Docks read (and locked) by this transaction: the tokens left, and whether any were taken. */
  readonly #read = new Map<string, { tokens: number; taken: boolean }>();

  constructor(tx: Transaction<Database>, rate: DockRate, now: number) {
    this.#tx = tx;
    this.#rate = rate;
    this.#now = now;
  }

  /**
   * The first time in a transaction the row is refilled and locked (an upsert, so two instances
   * meeting a Dock for the first time cannot both start from a full burst). Clocks of instances
   * may disagree a little: the refill never runs backwards. Two instances' batches locking the
   * same two Docks in opposite orders can deadlock: PostgreSQL then fails one of the
   * transactions, and its messages are stored one by one (see AcceptBatch.run).
   */
  async take(_index: number, dockId: string): Promise<number> {
    const rate = this.#rate;
    let allowance = this.#read.get(dockId);
    if (allowance === undefined) {
      const perMs = rate.perSecond / 1000;
      const now = this.#now;
      const row = await this.#tx
        .insertInto("dock_allowances")
        .values({ dock_id: dockId, tokens: rate.burst, at: now })
        .onConflict((conflict) =>
          conflict.column("dock_id").doUpdateSet({
            tokens: sql<number>`least(${rate.burst}::double precision, dock_allowances.tokens + greatest(0, ${now}::bigint - dock_allowances.at) * ${perMs}::double precision)`,
            at: sql<number>`greatest(dock_allowances.at, ${now}::bigint)`,
          }),
        )
        .returning("tokens")
        .executeTakeFirstOrThrow();
      allowance = { tokens: Number(row.tokens), taken: false };
      this.#read.set(dockId, allowance);
    }
    if (allowance.tokens < 1) return (1 - allowance.tokens) / rate.perSecond;
    allowance.tokens -= 1;
    allowance.taken = true;
    return 0;
  }

  async settle(): Promise<void> {
    for (const [dockId, allowance] of this.#read) {
      if (!allowance.taken) continue;
      await this.#tx
        .updateTable("dock_allowances")
        .set({ tokens: allowance.tokens })
        .where("dock_id", "=", dockId)
        .execute();
    }
  }
}
