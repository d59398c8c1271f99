/**
 * Token buckets keyed by a string (a client address, a Dock, later a chat), bounded in memory.
 * A bucket that has refilled completely is indistinguishable from a new one, so it is dropped.
 */
export class TokenBuckets {
  readonly capacity: number;
  readonly refillPerSecond: number;
  readonly #buckets = new Map<string, { tokens: number; at: number }>();
  readonly #now: () => number;
  #lastSweep = 0;

  constructor(options: { capacity: number; refillPerSecond: number; now?: () => number }) {
    this.capacity = options.capacity;
    this.refillPerSecond = options.refillPerSecond;
    this.#now = options.now ?? Date.now;
  }

  #level(key: string, now: number): number {
    const bucket = this.#buckets.get(key);
    if (bucket === undefined) return this.capacity;
    return Math.min(this.capacity, bucket.tokens + ((now - bucket.at) / 1000) * this.refillPerSecond);
  }

  /** Seconds until one token is available for `key` (0 when one is available now). */
  waitSeconds(key: string): number {
    const level = this.#level(key, this.#now());
    return level >= 1 ? 0 : (1 - level) / this.refillPerSecond;
  }

  /**
   * Takes `amount` tokens (one by default) if available; otherwise returns the seconds to wait and
   * takes nothing. A cost known only once paid (the time a template takes) is taken at its most
   * beforehand and the rest given back (refund), so concurrent uses cannot outrun the bucket.
   */
  take(key: string, amount = 1): number {
    const now = this.#now();
    this.#sweep(now);
    const level = this.#level(key, now);
    if (level < amount) return (amount - level) / this.refillPerSecond;
    this.#buckets.set(key, { tokens: level - amount, at: now });
    return 0;
  }

  /** Gives back tokens taken for something that turned out not to count, or not so much (up to the capacity). */
  refund(key: string, amount = 1): void {
    const now = this.#now();
    const level = this.#level(key, now);
    if (level >= this.capacity || amount <= 0) return;
    this.#buckets.set(key, { tokens: Math.min(this.capacity, level + amount), at: now });
  }

  get size(): number {
    return this.#buckets.size;
  }

  #sweep(now: number): void {
    if (now - this.#lastSweep < 10_000) return;
    this.#lastSweep = now;
    for (const key of this.#buckets.keys()) {
      if (this.#level(key, now) >= this.capacity) this.#buckets.delete(key);
    }
  }
}

/** Buckets allowing `perMinute` events per key per minute (the whole minute's worth at once); null when 0 (off). */
export function perMinuteBuckets(perMinute: number): TokenBuckets | null {
  return perMinute > 0 ? new TokenBuckets({ capacity: perMinute, refillPerSecond: perMinute / 60 }) : null;
}
