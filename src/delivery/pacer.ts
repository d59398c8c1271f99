import type { Transformer } from "grammy";
/**
 * Telegram's flood limits, kept on our side so that we never hit them: a global rate for the bot,
 * about one message a second per private chat (with a small burst), twenty a minute per group.
 * Each bucket is smaller than Telegram's: that reserve absorbs jitter between when we take a place
 * and when Telegram counts the request (a request held up on its way while a later one is not
 * looks to Telegram like two sent closer together), which is what keeps `429`s at zero in
 * practice. A chat's bucket keeps one message back (a second or more of jitter); the bot's, which
 * refills 30 to 1000 times a second, keeps back GLOBAL_RESERVE_MS worth of messages.
 */
export interface PacerLimits {
  /** Messages per second for the whole bot (30 by default; up to 1000 with paid broadcast). */
  globalPerSecond: number;
  privatePerSecond: number;
  privateBurst: number;
  groupPerMinute: number;
}

/**
 * The bot-wide bucket holds back this long's worth of messages. One message (33 ms at 30/s, 1 ms
 * with paid broadcast) left too little room: on a loaded test machine a run once met a `429`; so
 * did 100 ms (3 messages at 30/s), once, on a CI machine running the whole suite. It costs only the
 * first burst (22 messages at once instead of 30), never the rate.
 */
export const GLOBAL_RESERVE_MS = 250;

export const TELEGRAM_LIMITS: Omit<PacerLimits, "globalPerSecond"> = {
  privatePerSecond: 1,
  privateBurst: 3,
  groupPerMinute: 20,
};

class Bucket {
  readonly capacity: number;
  readonly perMs: number;
  tokens: number;
  at: number;
  /** No sending before this time (a `retry_after` from Telegram). */
  pausedUntil = 0;

  constructor(capacity: number, perSecond: number, now: number, empty = false) {
    this.capacity = Math.max(1, capacity);
    this.perMs = perSecond / 1000;
    this.tokens = empty ? 0 : this.capacity;
    this.at = now;
  }

  #refill(now: number): void {
    this.tokens = Math.min(this.capacity, this.tokens + (now - this.at) * this.perMs);
    this.at = now;
  }

  /** When one token will be available (now or later). */
  readyAt(now: number): number {
    this.#refill(now);
    const tokenAt = this.tokens >= 1 ? now : now + (1 - this.tokens) / this.perMs;
    return Math.max(tokenAt, this.pausedUntil);
  }

  take(now: number): void {
    this.#refill(now);
    this.tokens -= 1;
  }

  full(now: number): boolean {
    this.#refill(now);
    return this.tokens >= this.capacity && this.pausedUntil <= now;
  }
}

export type ChatKind = "private" | "group";

/** Decides when the next message to a chat may go out; shared by deliveries and bot replies. */
export class Pacer {
  readonly #limits: PacerLimits;
  readonly #now: () => number;
  readonly #global: Bucket;
  readonly #chats = new Map<number, Bucket>();
  #lastSweep = 0;
  readonly #coldUntil: number;

  /**
   * `coldStartMs`: Telegram still counts what a previous process sent just before it stopped
   * (a restart, a crash). For this long after start, buckets begin empty instead of full, so the
   * first sends after a restart cannot exceed what Telegram allows.
   */
  constructor(limits: PacerLimits, now: () => number = Date.now, coldStartMs = 3000) {
    this.#limits = limits;
    this.#now = now;
    const start = now();
    this.#coldUntil = start + coldStartMs;
    const reserve = Math.max(1, Math.ceil((limits.globalPerSecond * GLOBAL_RESERVE_MS) / 1000));
    this.#global = new Bucket(
      Math.ceil(limits.globalPerSecond) - reserve,
      limits.globalPerSecond,
      start,
      coldStartMs > 0,
    );
  }

  #chat(chatId: number, kind: ChatKind, now: number): Bucket {
    let bucket = this.#chats.get(chatId);
    if (bucket === undefined) {
      const cold = now < this.#coldUntil;
      bucket =
        kind === "private"
          ? new Bucket(this.#limits.privateBurst - 1, this.#limits.privatePerSecond, now, cold)
          : new Bucket(this.#limits.groupPerMinute - 1, this.#limits.groupPerMinute / 60, now, cold);
      this.#chats.set(chatId, bucket);
    }
    return bucket;
  }

  /** The earliest time (ms) a message to this chat may be sent. */
  readyAt(chatId: number, kind: ChatKind): number {
    const now = this.#now();
    return Math.max(this.#global.readyAt(now), this.#chat(chatId, kind, now).readyAt(now));
  }

  /** Records a send to this chat now. Call only when `readyAt` is not in the future. */
  take(chatId: number, kind: ChatKind): void {
    const now = this.#now();
    this.#global.take(now);
    this.#chat(chatId, kind, now).take(now);
    this.#sweep(now);
  }

  /** Waits until a message to this chat may go, then takes its place. */
  async acquire(chatId: number, kind: ChatKind, signal?: AbortSignal): Promise<void> {
    for (;;) {
      if (signal?.aborted) return;
      const wait = this.readyAt(chatId, kind) - this.#now();
      if (wait <= 0) break;
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          signal?.removeEventListener("abort", done);
          resolve();
        };
        const timer = setTimeout(done, wait);
        signal?.addEventListener("abort", done, { once: true });
      });
    }
    this.take(chatId, kind);
  }

  /** Telegram said `retry_after`: nothing goes to this chat, nor (conservatively) anywhere, until then. */
  pause(chatId: number | null, seconds: number): void {
    const now = this.#now();
    const until = now + seconds * 1000;
    this.#global.pausedUntil = Math.max(this.#global.pausedUntil, until);
    if (chatId !== null) {
      const bucket = this.#chats.get(chatId);
      if (bucket) bucket.pausedUntil = Math.max(bucket.pausedUntil, until);
    }
  }

  /** Forget chats whose buckets are full again (they behave exactly like new ones): bounded memory. */
  #sweep(now: number): void {
    if (now - this.#lastSweep < 60_000) return;
    this.#lastSweep = now;
    for (const [chatId, bucket] of this.#chats) if (bucket.full(now)) this.#chats.delete(chatId);
  }
}

/** Private chats and everything else (groups, supergroups, channels) are paced differently. */
export function chatKind(chatType: string): ChatKind {
  return chatType === "private" ? "private" : "group";
}

/** Bot API methods that count against Telegram's flood limits and so go through the pacer. */
const PACED_METHODS = new Set(["sendMessage", "copyMessage", "forwardMessage", "sendPhoto", "sendDocument"]);

/**
 * A grammY transformer that makes any Api instance (the bot's replies) wait its turn in the same
 * pacer as deliveries, and tells the pacer when Telegram answers `429` anyway. Install it before
 * (inside) auto-retry, so each retry is paced too.
 */
export function pacedSends(pacer: Pacer): Transformer {
  return async (prev, method, payload, signal) => {
    const chatId = (payload as { chat_id?: unknown }).chat_id;
    if (!PACED_METHODS.has(method) || typeof chatId !== "number") return prev(method, payload, signal);
    // Telegram's group and channel ids are negative; people's are positive.
    const kind: ChatKind = chatId > 0 ? "private" : "group";
    await pacer.acquire(chatId, kind, signal as AbortSignal | undefined);
    const result = await prev(method, payload, signal);
    if (!result.ok && result.error_code === 429) pacer.pause(chatId, result.parameters?.retry_after ?? 1);
    return result;
  };
}
