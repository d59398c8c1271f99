import type { Transformer } from "grammy";

/**
 * Telegram's flood limits, as sliding windows: at most `limit` messages in any `windowMs`. For the
 * bot as a whole TELEGRAM_RATE_LIMIT a second (30 by default; up to 1000 with paid broadcast), for
 * a private chat 3 in any 3 seconds (one a second, with a short burst), for a group 20 a minute.
 */
export interface PacerLimits {
  /** Messages per second for the whole bot. */
  globalPerSecond: number;
  /** A private chat: at most `privateBurst` messages in any `privateBurst / privatePerSecond` seconds. */
  privatePerSecond: number;
  privateBurst: number;
  groupPerMinute: number;
  /**
   * Other processes send with the same bot, out of this pacer's sight (several instances on one
   * PostgreSQL database: the standbys' bot replies). Each window then keeps places back for them:
   * one in a chat's, a tenth in the bot's.
   */
  othersSend?: boolean;
}

export const TELEGRAM_LIMITS: Omit<PacerLimits, "globalPerSecond"> = {
  privatePerSecond: 1,
  privateBurst: 3,
  groupPerMinute: 20,
};

export type ChatKind = "private" | "group";

/** One send's places in the windows it counts against; hand it back with `Pacer.release`. */
export interface Ticket {
  readonly places: readonly { window: Window; place: Place }[];
}

/**
 * A send as a window sees it: when it started, and when Telegram answered (null: not yet).
 */
interface Place {
  start: number;
  end: number | null;
}

/**
 * How long after it was sent a message is taken to have reached Telegram at the latest, when its
 * answer is slower than that: the request is on its way at once, only the answer is late. Without
 * this bound one hung request would hold every later send up until it times out.
 */
export const ARRIVAL_BOUND_MS = 2000;

/** The latest time the send can have been counted by Telegram: its answer, or the bound. */
function counted(place: Place): number {
  return place.end ?? place.start + ARRIVAL_BOUND_MS;
}

/**
 * At most `limit` sends in any `windowMs`, counted the way Telegram can count them. Telegram counts
 * a message when it arrives, some time between our sending it and its answer; a send held up on its
 * way (a busy event loop, a slow network) can arrive after a later one. So a send's place is held
 * until a window's length after its *answer* (or ARRIVAL_BOUND_MS after it was sent, if the answer
 * is slower): a new send may start only once the send `limit` places back — and every send before
 * it — was counted at least `windowMs` ago. Then no window of `windowMs` can hold more than `limit`
 * arrivals, whatever the delays: a hard cap, not a rate with a burst on top. The cost is the round
 * trip: at 30/s with 50 ms round trips, 30 sends per 1.05 s.
 */
class Window {
  readonly limit: number;
  readonly windowMs: number;
  /** The last `limit` sends, oldest first. */
  readonly #places: Place[] = [];
  /** The latest time any older send can have been counted. */
  #departedCounted = Number.NEGATIVE_INFINITY;
  /** No sending before this time (a `retry_after` from Telegram). */
  pausedUntil = 0;

  constructor(limit: number, windowMs: number) {
    this.limit = Math.max(1, Math.floor(limit));
    this.windowMs = windowMs;
  }

  /** When one more send may start: now or later (sooner, if a send in flight is answered first). */
  readyAt(now: number): number {
    const at = Math.max(now, this.pausedUntil, this.#departedCounted + this.windowMs);
    if (this.#places.length < this.limit) return at;
    return Math.max(at, counted(this.#places[0] as Place) + this.windowMs);
  }

  take(now: number): Place {
    const place: Place = { start: now, end: null };
    this.#places.push(place);
    if (this.#places.length > this.limit) {
      // Left the last `limit`: from now on only the latest time it can have been counted matters
      // (its answer if it has one; if not, the bound — a later answer cannot make it earlier).
      const departed = this.#places.shift() as Place;
      this.#departedCounted = Math.max(this.#departedCounted, counted(departed));
    }
    return place;
  }

  release(place: Place, now: number): void {
    if (place.end === null) place.end = Math.min(now, place.start + ARRIVAL_BOUND_MS);
  }

  /** The send never went to Telegram (its claim failed, the delivery was gone): it takes no place. */
  cancel(place: Place): void {
    const index = this.#places.indexOf(place);
    if (index >= 0) this.#places.splice(index, 1);
  }

  /**
   * As if `limit` sends had been answered just before `now`, evenly spread over the window (or,
   * `full`, all at `now`): what a previous process may have sent that Telegram still counts.
   */
  assumeSent(now: number, full: boolean): void {
    for (const place of this.#places) this.#departedCounted = Math.max(this.#departedCounted, counted(place));
    this.#places.length = 0;
    for (let i = this.limit - 1; i >= 0; i--) {
      const at = full ? now : now - (i * this.windowMs) / this.limit;
      this.#places.push({ start: at, end: at });
    }
  }

  /** Nothing counted in the last window and nothing in flight: indistinguishable from a new window. */
  idle(now: number): boolean {
    return (
      this.pausedUntil <= now &&
      this.#departedCounted + this.windowMs <= now &&
      this.#places.every((p) => p.end !== null && p.end + this.windowMs <= now)
    );
  }
}

/**
 * Decides when the next message to a chat may go out, for the bot as a whole and for each chat;
 * shared by deliveries and the bot's replies. Every send takes a place (`take`/`acquire`) and
 * hands it back when Telegram answered (`release`); see Window for why the answer matters.
 */
export class Pacer {
  readonly #limits: PacerLimits;
  readonly #now: () => number;
  readonly #global: Window;
  readonly #chats = new Map<number, Window>();
  readonly #listeners = new Set<() => void>();
  #lastSweep = 0;
  /** The last cold start: chats first seen within their window of it are assumed to have had the previous process's messages. */
  #coldAt = Number.NEGATIVE_INFINITY;

  constructor(limits: PacerLimits, now: () => number = Date.now) {
    this.#limits = limits;
    this.#now = now;
    const global = Math.ceil(limits.globalPerSecond);
    this.#global = new Window(limits.othersSend ? global - Math.ceil(global / 10) : global, 1000);
  }

  /**
   * Starting to send after another process may have (a restart, a crash, a leadership takeover):
   * Telegram still counts what that one sent just before it stopped. The bot's window is taken as
   * full for a second (nothing goes out in the first second); each chat as having had a steady
   * stream until now (its first message waits its share of the window: until 1 s after the cold
   * start in a private chat, 3 s in a group).
   */
  coldStart(): void {
    const now = this.#now();
    this.#global.assumeSent(now, true);
    this.#chats.clear();
    this.#coldAt = now;
  }

  #chat(chatId: number, kind: ChatKind, now: number): Window {
    let window = this.#chats.get(chatId);
    if (window === undefined) {
      const { privateBurst, privatePerSecond, groupPerMinute, othersSend } = this.#limits;
      const reserve = othersSend ? 1 : 0;
      window =
        kind === "private"
          ? new Window(privateBurst - reserve, (privateBurst / privatePerSecond) * 1000)
          : new Window(groupPerMinute - reserve, 60_000);
      if (now < this.#coldAt + window.windowMs) window.assumeSent(this.#coldAt, false);
      this.#chats.set(chatId, window);
    }
    return window;
  }

  /** The earliest time (ms) a message to this chat may be sent (sooner if a send in flight is answered). */
  readyAt(chatId: number, kind: ChatKind): number {
    const now = this.#now();
    return Math.max(this.#global.readyAt(now), this.#chat(chatId, kind, now).readyAt(now));
  }

  /** Records a send to this chat starting now. Call only when `readyAt` is not in the future. */
  take(chatId: number, kind: ChatKind): Ticket {
    const now = this.#now();
    this.#sweep(now);
    const chat = this.#chat(chatId, kind, now);
    return {
      places: [
        { window: this.#global, place: this.#global.take(now) },
        { window: chat, place: chat.take(now) },
      ],
    };
  }

  /** Telegram answered the send (or it failed, or timed out): its places count from now. */
  release(ticket: Ticket): void {
    const now = this.#now();
    for (const { window, place } of ticket.places) window.release(place, now);
    for (const listener of this.#listeners) listener();
  }

  /** The place was taken but nothing went to Telegram: it is given back as if never taken. */
  cancel(ticket: Ticket): void {
    for (const { window, place } of ticket.places) window.cancel(place);
    for (const listener of this.#listeners) listener();
  }

  /** Calls `listener` whenever a send is answered (a place may have come free). */
  onRelease(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Waits until a message to this chat may go, then takes its place; null if `signal` aborted the wait. */
  async acquire(chatId: number, kind: ChatKind, signal?: AbortSignal): Promise<Ticket | null> {
    for (;;) {
      if (signal?.aborted) return null;
      const wait = this.readyAt(chatId, kind) - this.#now();
      if (wait <= 0) break;
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          stopListening();
          signal?.removeEventListener("abort", done);
          resolve();
        };
        const timer = setTimeout(done, wait);
        // A send answered early frees its place early: look again then.
        const stopListening = this.onRelease(done);
        signal?.addEventListener("abort", done, { once: true });
      });
    }
    return this.take(chatId, kind);
  }

  /** Telegram said `retry_after`: nothing goes to this chat, nor (conservatively) anywhere, until then. */
  pause(chatId: number | null, seconds: number): void {
    const until = this.#now() + seconds * 1000;
    this.#global.pausedUntil = Math.max(this.#global.pausedUntil, until);
    if (chatId !== null) {
      const window = this.#chats.get(chatId);
      if (window) window.pausedUntil = Math.max(window.pausedUntil, until);
    }
  }

  /** Forget chats whose windows are idle (they behave exactly like new ones): bounded memory. */
  #sweep(now: number): void {
    if (now - this.#lastSweep < 60_000) return;
    this.#lastSweep = now;
    for (const [chatId, window] of this.#chats) if (window.idle(now)) this.#chats.delete(chatId);
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
    const ticket = await pacer.acquire(chatId, kind, signal as AbortSignal | undefined);
    try {
      const result = await prev(method, payload, signal);
      if (!result.ok && result.error_code === 429) pacer.pause(chatId, result.parameters?.retry_after ?? 1);
      return result;
    } finally {
      if (ticket !== null) pacer.release(ticket);
    }
  };
}
