/**
 * Telegram's flood limits for one bot, as documented in its FAQ: about 30 messages per second
 * overall (1000 with `allow_paid_broadcast`), one per second per private chat with a short burst,
 * 20 per minute per group. Values here are the sandbox's reading of those; docs/sandbox.md lists them.
 */
export const SEND_LIMITS = {
  globalPerSecond: 30,
  paidBroadcastPerSecond: 1000,
  privateChatBurst: 3,
  privateChatPerSecond: 1,
  groupPerMinute: 20,
} as const;

/**
 * Each key's arrivals in the last `windowMs`, at most `limit` of them: a strict sliding window.
 * A token bucket would let a sender that was quiet for a while go over the rate (its burst on top
 * of the rate); here no window of `windowMs` ever holds more than `limit` messages, so a sender
 * that bursts is caught.
 */
class SlidingWindows {
  readonly limit: number;
  readonly windowMs: number;
  readonly #arrivals = new Map<string, number[]>();
  #lastSweep = 0;

  constructor(limit: number, windowMs: number) {
    this.limit = limit;
    this.windowMs = windowMs;
  }

  /** The key's arrivals still inside the window ending now (older ones are dropped). */
  #recent(key: string, now: number): number[] {
    const arrivals = this.#arrivals.get(key) ?? [];
    let expired = 0;
    while (expired < arrivals.length && (arrivals[expired] as number) <= now - this.windowMs) expired++;
    if (expired > 0) arrivals.splice(0, expired);
    return arrivals;
  }

  /** Milliseconds until one more message fits (0: it fits now). */
  waitMs(key: string, now: number): number {
    const arrivals = this.#recent(key, now);
    if (arrivals.length < this.limit) return 0;
    return (arrivals[arrivals.length - this.limit] as number) + this.windowMs - now;
  }

  /** Records an arrival; returns how many the window ending now holds. */
  add(key: string, now: number): number {
    this.#sweep(now);
    const arrivals = this.#recent(key, now);
    arrivals.push(now);
    if (arrivals.length > Math.max(this.limit, 1)) arrivals.splice(0, arrivals.length - this.limit);
    this.#arrivals.set(key, arrivals);
    return arrivals.length;
  }

  #sweep(now: number): void {
    if (now - this.#lastSweep < 60_000) return;
    this.#lastSweep = now;
    for (const key of [...this.#arrivals.keys()]) {
      if (this.#recent(key, now).length === 0) this.#arrivals.delete(key);
    }
  }
}

/** Decides whether the bot may send one more message now, and if not, how long to wait. */
export class SendLimiter {
  enabled: boolean;
  readonly #now: () => number;
  readonly #global = new SlidingWindows(SEND_LIMITS.globalPerSecond, 1000);
  readonly #paid = new SlidingWindows(SEND_LIMITS.paidBroadcastPerSecond, 1000);
  readonly #private = new SlidingWindows(
    SEND_LIMITS.privateChatBurst,
    (SEND_LIMITS.privateChatBurst / SEND_LIMITS.privateChatPerSecond) * 1000,
  );
  readonly #group = new SlidingWindows(SEND_LIMITS.groupPerMinute, 60_000);
  /** Every message of the last second, limits on or off, for the peak rate (see `peak`). */
  readonly #lastSecond = new SlidingWindows(100_000, 1000);
  /** The most messages the bot got in any one second since the counters were reset. */
  peak = 0;

  constructor(options: { enabled: boolean; now: () => number }) {
    this.enabled = options.enabled;
    this.#now = options.now;
  }

  /**
   * Takes one message's place in the chat's and the bot's windows; when either is full takes
   * nothing and returns `retry_after`, whole seconds as Telegram reports them (at least 1).
   */
  take(chatId: number, isPrivate: boolean, paidBroadcast: boolean): number {
    const now = this.#now();
    const overall = paidBroadcast ? this.#paid : this.#global;
    const chat = isPrivate ? this.#private : this.#group;
    const key = String(chatId);
    if (this.enabled) {
      const wait = Math.max(overall.waitMs("bot", now), chat.waitMs(key, now));
      if (wait > 0) return Math.max(1, Math.ceil(wait / 1000));
      overall.add("bot", now);
      chat.add(key, now);
    }
    this.peak = Math.max(this.peak, this.#lastSecond.add("bot", now));
    return 0;
  }
}
