import { isOutage } from "./faults.ts";

interface Waiting<I, R> {
  item: I;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

/**
 * Writes that arrive while one is being committed (or `atOnce` are) go together in the next
 * transaction: one commit for many (a group commit). The first write of a quiet moment goes at once, alone; under load the
 * rest wait at most one transaction, and the commits per write fall with the load. Used for the
 * copies' settles (Outbox.sent): at paid broadcast's 1000 copies a second, a commit each would be
 * most of the database's work.
 *
 * A batch that fails because the database is unavailable (or cannot write) fails every write in
 * it, as each alone would have. Any other failure is a row's, not the database's: each write of
 * that batch is then tried alone, so that only its own fails.
 */
export class GroupCommit<I, R> {
  readonly #together: (items: I[]) => Promise<R[]>;
  readonly #alone: (item: I) => Promise<R>;
  readonly #most: number;
  readonly #atOnce: number;
  #waiting: Waiting<I, R>[] = [];
  #committing = 0;

  constructor(options: {
    /** Writes the items in one transaction; a result per item, in order. */
    together: (items: I[]) => Promise<R[]>;
    /** Writes one item in a transaction of its own. */
    alone: (item: I) => Promise<R>;
    /** The most items in one transaction. */
    most: number;
    /** Transactions under way at once (default 1): a write waits only while this many are. */
    atOnce?: number;
  }) {
    this.#together = options.together;
    this.#alone = options.alone;
    this.#most = options.most;
    this.#atOnce = options.atOnce ?? 1;
  }

  /** Writes `item` with whatever else comes meanwhile; resolves to its own result. */
  add(item: I): Promise<R> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ item, resolve, reject });
      if (this.#committing < this.#atOnce) void this.#commit();
    });
  }

  async #commit(): Promise<void> {
    this.#committing++;
    try {
      while (this.#waiting.length > 0) {
        const batch = this.#waiting.splice(0, this.#most);
        await this.#write(batch);
      }
    } finally {
      this.#committing--;
    }
  }

  async #write(batch: Waiting<I, R>[]): Promise<void> {
    let results: R[];
    try {
      results =
        batch.length === 1
          ? [await this.#alone((batch[0] as Waiting<I, R>).item)]
          : await this.#together(batch.map((waiting) => waiting.item));
    } catch (error) {
      if (batch.length === 1 || isOutage(error)) {
        for (const waiting of batch) waiting.reject(error);
        return;
      }
      // Not the database's fault: one item's. Each alone finds out which.
      for (const waiting of batch) await this.#alone(waiting.item).then(waiting.resolve, waiting.reject);
      return;
    }
    for (const [i, waiting] of batch.entries()) waiting.resolve(results[i] as R);
  }
}
