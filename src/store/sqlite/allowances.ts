import { TokenBuckets } from "../../domain/token-bucket.ts";
import type { Allowances, BatchAllowance, DockRate } from "../allowances.ts";

/**
 * Allowances in this process's memory, one token bucket per Dock and rate: SQLite's, where one
 * process accepts for every Dock.
 */
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
    // Asked once per message, whichever attempt asks (see BatchAllowance).
    const admitted = new Map<number, number>();
    return {
      take(index, dockId) {
        let wait = admitted.get(index);
        if (wait === undefined) {
          wait = bucketsOfRate.take(dockId);
          admitted.set(index, wait);
        }
        return wait;
      },
    };
  }
}
