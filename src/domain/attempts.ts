import { isIP } from "node:net";
import type { TokenBuckets } from "./token-bucket.ts";

/** One attempt under way: say how it ended. */
export interface Attempt {
  /** The credentials were right: the attempt is given back. */
  right(): void;
  /** They were wrong: the attempt stays spent. */
  wrong(): void;
}

/**
 * A limit on failed attempts per key (a client address), counted *before* each attempt is judged,
 * so that concurrent guesses cannot all be judged before any of them counts: of N concurrent
 * guesses, only the allowance is judged. An attempt that turns out right is given back. A request
 * that finds the allowance spent by attempts still being judged waits for them — they may be right
 * and give theirs back — so a client sending many right ones at once is never refused; it is
 * refused only when the allowance is spent by attempts already judged wrong.
 */
export class AttemptLimiter {
  readonly #buckets: TokenBuckets;
  readonly #judging = new Map<string, number>();
  readonly #waiting = new Map<string, (() => void)[]>();

  constructor(buckets: TokenBuckets) {
    this.#buckets = buckets;
  }

  /** Seconds to wait when the key's allowance is spent and nothing is being judged (else 0). */
  refusedFor(key: string): number {
    return (this.#judging.get(key) ?? 0) > 0 ? 0 : this.#buckets.waitSeconds(key);
  }

  /**
   * One attempt for `key`, or the seconds to wait when the allowance is spent. With a `deadline`
   * (`performance.now()`), `{ late }` when the attempts being judged still hold the allowance then:
   * they wait on something slow (the database), and this request has waited as long as it may.
   */
  async begin(key: string, deadline?: number): Promise<Attempt | { waitSeconds: number } | { late: true }> {
    for (;;) {
      const wait = this.#buckets.take(key);
      if (wait === 0) break;
      if ((this.#judging.get(key) ?? 0) === 0) return { waitSeconds: wait };
      const woken = await new Promise<boolean>((resolve) => {
        const waiting = this.#waiting.get(key) ?? [];
        const timer =
          deadline === undefined
            ? undefined
            : setTimeout(
                () => {
                  const still = this.#waiting.get(key) ?? [];
                  const at = still.indexOf(wake);
                  if (at >= 0) still.splice(at, 1);
                  if (still.length === 0) this.#waiting.delete(key);
                  resolve(false);
                },
                Math.max(0, deadline - performance.now()),
              );
        const wake = () => {
          clearTimeout(timer);
          resolve(true);
        };
        waiting.push(wake);
        this.#waiting.set(key, waiting);
      });
      if (!woken) return { late: true };
    }
    this.#judging.set(key, (this.#judging.get(key) ?? 0) + 1);
    let settled = false;
    const settle = (giveBack: boolean) => {
      if (settled) return;
      settled = true;
      if (giveBack) this.#buckets.refund(key);
      const judging = (this.#judging.get(key) ?? 1) - 1;
      if (judging === 0) this.#judging.delete(key);
      else this.#judging.set(key, judging);
      // Everyone waiting looks again: at an allowance given back, or at nothing left being judged.
      const waiting = this.#waiting.get(key);
      this.#waiting.delete(key);
      for (const wake of waiting ?? []) wake();
    };
    return { right: () => settle(true), wrong: () => settle(false) };
  }
}

/**
 * The key a client address is limited under: the address itself for IPv4, its /64 network for
 * IPv6 (one host usually holds a whole /64, and would otherwise get a fresh allowance with each
 * address it picks from it).
 */
export function addressKey(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1] as string;
  if (isIP(address) !== 6) return address;
  const [head = "", tail] = address.toLowerCase().split("::");
  const left = head === "" ? [] : head.split(":");
  const right = tail === undefined || tail === "" ? [] : tail.split(":");
  const groups =
    tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill("0"), ...right];
  return `${groups
    .slice(0, 4)
    .map((group) => group.replace(/^0+(?=.)/, ""))
    .join(":")}::/64`;
}
