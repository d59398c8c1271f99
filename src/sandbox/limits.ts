import { TokenBuckets } from "../domain/token-bucket.ts";

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

/** Decides whether the bot may send one more message now, and if not, how long to wait. */
export class SendLimiter {
  enabled: boolean;
  readonly #global: TokenBuckets;
  readonly #paid: TokenBuckets;
  readonly #private: TokenBuckets;
  readonly #group: TokenBuckets;

  constructor(options: { enabled: boolean; now: () => number }) {
    const { now } = options;
    this.enabled = options.enabled;
    this.#global = new TokenBuckets({
      capacity: SEND_LIMITS.globalPerSecond,
      refillPerSecond: SEND_LIMITS.globalPerSecond,
      now,
    });
    this.#paid = new TokenBuckets({
      capacity: SEND_LIMITS.paidBroadcastPerSecond,
      refillPerSecond: SEND_LIMITS.paidBroadcastPerSecond,
      now,
    });
    this.#private = new TokenBuckets({
      capacity: SEND_LIMITS.privateChatBurst,
      refillPerSecond: SEND_LIMITS.privateChatPerSecond,
      now,
    });
    this.#group = new TokenBuckets({
      capacity: SEND_LIMITS.groupPerMinute,
      refillPerSecond: SEND_LIMITS.groupPerMinute / 60,
      now,
    });
  }

  /**
   * Takes one message's allowance from the chat and the bot as a whole; when either is exhausted
   * takes nothing and returns `retry_after`, whole seconds as Telegram reports them.
   */
  take(chatId: number, isPrivate: boolean, paidBroadcast: boolean): number {
    if (!this.enabled) return 0;
    const overall = paidBroadcast ? this.#paid : this.#global;
    const chat = isPrivate ? this.#private : this.#group;
    const key = String(chatId);
    const wait = Math.max(overall.waitSeconds("bot"), chat.waitSeconds(key));
    if (wait > 0) return Math.max(1, Math.ceil(wait));
    overall.take("bot");
    chat.take(key);
    return 0;
  }
}
