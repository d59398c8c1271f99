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
   * Other processes may send with the same bot, out of this pacer's sight (several instances on
   * one PostgreSQL database: a standby's bot replies, the leader's deliveries). While they do
   * (`Pacer.othersAlive`), and for a group's window after the last one was seen (what it sent
   * stays in Telegram's windows), each window keeps places back for them: one in a chat's (room
   * for one message of theirs per window, not for a whole conversation; docs/deployment.md says
   * so), a tenth, rounded up, in the bot's. Until this pacer is told, it assumes they do.
   */
  othersSend?: boolean;
}

export const TELEGRAM_LIMITS: Omit<PacerLimits, "globalPerSecond"> = {
  privatePerSecond: 1,
  privateBurst: 3,
  groupPerMinute: 20,
};

export type ChatKind = "private" | "group";

/** A group's window, Telegram's longest: what another process sent is counted that long. */
const GROUP_WINDOW_MS = 60_000;

/** One send's places in the windows it counts against; hand it back with `Pacer.release`. */
export interface Ticket {
  readonly places: readonly { window: Window; place: Place }[];
}

/** A send as a window sees it: on its way until Telegram answered it (or it failed, or it never went). */
interface Place {
  settled: boolean;
}

/**
 * At most `limit` sends in any `windowMs`, counted the way Telegram counts them: when a message
 * *arrives*, some time between our starting the request and our reading its answer. That time can
 * be late, and out of order: a busy event loop on either side (a starved sandbox, a loaded Bot API
 * server) or a slow network can hold one request for seconds while later ones go through. So a
 * send's place is taken when it starts and held until a window's length after its *answer* (for a
 * request that failed without one, after we gave up on it and closed its connection). A new send
 * may start only while fewer than `limit` sends are on their way or were answered less than
 * `windowMs` ago.
 *
 * This holds by construction, however late anything arrives. Take any `windowMs` in which
 * Telegram counted some of our sends, and among them the send `k` that started last. Each other
 * one, `j`, started before `k`, and arrived less than `windowMs` before `k` arrived, so later than
 * `windowMs` before `k` started (nothing arrives before it starts). `j`'s answer came after its
 * arrival: when `k` started, `j` was on its way or had been answered less than `windowMs` before —
 * it held a place. At most `limit - 1` did, so the window holds at most `limit`. The edges agree
 * with Telegram's and the sandbox's (limits.ts): a place comes free exactly `windowMs` after its
 * answer, and an arrival `windowMs` or more before another is outside that one's window. Only
 * durations matter, so the clocks need not agree (the sandbox's is ours anyway). Only a request
 * read from a connection we had already closed could be counted later than we reckon.
 * A request that hangs holds its one place until it is answered or times out, not the whole
 * window. The cost is the round trip: at 30/s with 50 ms round trips, 30 sends per 1.05 s.
 */
class Window {
  readonly #limit: number;
  /** Places kept back for other processes while `reserving` says they send. */
  readonly #reserve: number;
  readonly #reserving: () => boolean;
  readonly windowMs: number;
  /** Sends started and not yet answered. */
  #onTheirWay = 0;
  /** When the sends of the last window were answered, earliest first. */
  readonly #answered: number[] = [];
  /**
   * What a previous process may have sent, as `assumeSent` reckons it (earliest first): a guess,
   * replaced by the next one, while this pacer's own sends stay counted beside it.
   */
  #assumed: number[] = [];
  /** No sending before this time (a `retry_after` from Telegram). */
  pausedUntil = 0;

  constructor(limit: number, windowMs: number, reserve = 0, reserving: () => boolean = () => false) {
    this.#limit = Math.max(1, Math.floor(limit));
    this.#reserve = reserve;
    this.#reserving = reserving;
    this.windowMs = windowMs;
  }

  /** What this pacer may have in the window: Telegram's limit, less the places kept for others. */
  get limit(): number {
    return this.#reserve > 0 && this.#reserving() ? Math.max(1, this.#limit - this.#reserve) : this.#limit;
  }

  /** Forgets answers a whole window old: they no longer hold a place. */
  #forget(now: number): void {
    for (const answers of [this.#answered, this.#assumed]) {
      let old = 0;
      while (old < answers.length && (answers[old] as number) + this.windowMs <= now) old++;
      if (old > 0) answers.splice(0, old);
    }
  }

  /**
   * When one more send may start, with `ahead` places promised to sends waiting before it (the
   * bot's replies): now, a later time, or Infinity while it waits for a send on its way to be answered.
   */
  readyAt(now: number, ahead = 0): number {
    this.#forget(now);
    const at = Math.max(now, this.pausedUntil);
    const limit = this.limit;
    const held = this.#onTheirWay + this.#answered.length + this.#assumed.length + ahead;
    if (held < limit) return at;
    // The answer that must leave the window for a place to come free: `held - limit` of the
    // earlier ones leave before it.
    const leaving = this.#nthAnswer(held - limit);
    return leaving === undefined ? Number.POSITIVE_INFINITY : Math.max(at, leaving + this.windowMs);
  }

  /** The `n`th earliest answer (from 0), real or assumed; undefined if there are not that many. */
  #nthAnswer(n: number): number | undefined {
    const real = this.#answered;
    const assumed = this.#assumed;
    if (n >= real.length + assumed.length) return undefined;
    let i = 0;
    let j = 0;
    for (;;) {
      const next =
        j >= assumed.length || (i < real.length && (real[i] as number) <= (assumed[j] as number))
          ? (real[i++] as number)
          : (assumed[j++] as number);
      if (i + j > n) return next;
    }
  }

  take(): Place {
    this.#onTheirWay++;
    return { settled: false };
  }

  /** The send was answered (or failed) at `now`: its place is held until a window later. */
  release(place: Place, now: number): void {
    if (place.settled) return;
    place.settled = true;
    this.#onTheirWay--;
    // In time order (a clock set back may give an earlier one).
    let i = this.#answered.length;
    while (i > 0 && (this.#answered[i - 1] as number) > now) i--;
    this.#answered.splice(i, 0, now);
  }

  /** The send never went to Telegram (its claim failed, the delivery was gone): it takes no place. */
  cancel(place: Place): void {
    if (place.settled) return;
    place.settled = true;
    this.#onTheirWay--;
  }

  /**
   * As if `limit` sends had been answered just before `now`, evenly spread over the window (or,
   * `full`, all at `now`): what a previous process may have sent that Telegram still counts. It
   * replaces the previous guess; this pacer's own sends are counted on top.
   */
  assumeSent(now: number, full: boolean): void {
    const limit = this.limit;
    this.#assumed = Array.from({ length: limit }, (_, i) =>
      full ? now : now - ((limit - 1 - i) * this.windowMs) / limit,
    );
  }

  /** Nothing counted in the last window and nothing on its way: indistinguishable from a new window. */
  idle(now: number): boolean {
    this.#forget(now);
    return (
      this.pausedUntil <= now &&
      this.#onTheirWay === 0 &&
      this.#answered.length === 0 &&
      this.#assumed.length === 0
    );
  }
}

/** Who waits for a place: the bot answering a person goes before queued deliveries. */
export type Priority = "reply" | "delivery";

/**
 * Decides when the next message to a chat may go out, for the bot as a whole and for each chat;
 * shared by deliveries and the bot's replies (pacedSends), since Telegram counts them all in the
 * same windows. Every send takes a place (`take`/`acquire`) and hands it back when Telegram
 * answered (`release`); see Window for why the answer matters. The bot's replies go first: while
 * one waits for a place, deliveries leave it that place (in its chat and in the bot's window), so a
 * person waiting for "Subscribed" does not wait behind a backlog — but it still waits for the
 * window, which nothing exceeds.
 */
export class Pacer {
  readonly #limits: PacerLimits;
  readonly #now: () => number;
  readonly #global: Window;
  readonly #chats = new Map<number, Window>();
  readonly #listeners = new Set<() => void>();
  /** The bot's replies waiting for a place, by chat, and how many in all. */
  readonly #replies = new Map<number, number>();
  #repliesWaiting = 0;
  #lastSweep = 0;
  /** Until when places are kept back for other processes (see othersAlive). */
  #othersUntil: number;
  /** Whether othersAlive was called yet. */
  #othersTold = false;
  /** The last cold start: chats first seen within their window of it are assumed to have had the previous process's messages. */
  #coldAt = Number.NEGATIVE_INFINITY;

  constructor(limits: PacerLimits, now: () => number = Date.now) {
    this.#limits = limits;
    this.#now = now;
    const global = Math.ceil(limits.globalPerSecond);
    this.#othersUntil = limits.othersSend ? Number.POSITIVE_INFINITY : Number.NEGATIVE_INFINITY;
    this.#global = new Window(global, 1000, Math.ceil(global / 10), this.#reserving);
  }

  /**
   * Whether other processes share the bot now (instances on the same PostgreSQL database, each a
   * member while it runs). Places are kept back for them at once when they come; when they are
   * gone, for a group's window more (what they sent is still counted by Telegram) — unless this
   * is the first word since this pacer began: then nothing says anyone sent, beyond what a cold
   * start assumes of every chat anyway.
   */
  othersAlive(alive: boolean): void {
    if (!this.#limits.othersSend) return;
    const now = this.#now();
    if (alive) this.#othersUntil = Number.POSITIVE_INFINITY;
    else if (!this.#othersTold) this.#othersUntil = Number.NEGATIVE_INFINITY;
    else if (this.#othersUntil === Number.POSITIVE_INFINITY) this.#othersUntil = now + GROUP_WINDOW_MS;
    this.#othersTold = true;
    // Places may have come free.
    if (!alive) this.#told();
  }

  /** Whether the windows keep places back for other processes now (see othersAlive). */
  readonly #reserving = (): boolean => this.#now() < this.#othersUntil;

  /**
   * Starting to send after another process may have (a restart, a crash, a leadership takeover):
   * Telegram still counts what that one sent just before it stopped. The bot's window is taken as
   * full for a second (nothing goes out in the first second); each chat as having had a steady
   * stream until now (its first message waits its share of the window: until 1 s after the cold
   * start in a private chat, 3 s in a group). This pacer's own sends (the bot's replies of a
   * standby that now leads) still count on top.
   */
  coldStart(): void {
    const now = this.#now();
    this.#global.assumeSent(now, true);
    for (const window of this.#chats.values()) window.assumeSent(now, false);
    this.#coldAt = now;
  }

  #chat(chatId: number, kind: ChatKind, now: number): Window {
    let window = this.#chats.get(chatId);
    if (window === undefined) {
      const { privateBurst, privatePerSecond, groupPerMinute } = this.#limits;
      window =
        kind === "private"
          ? new Window(privateBurst, (privateBurst / privatePerSecond) * 1000, 1, this.#reserving)
          : new Window(groupPerMinute, GROUP_WINDOW_MS, 1, this.#reserving);
      if (now < this.#coldAt + window.windowMs) window.assumeSent(this.#coldAt, false);
      this.#chats.set(chatId, window);
    }
    return window;
  }

  /**
   * The earliest time (ms) a message to this chat may be sent: later while the bot's replies wait
   * (a `delivery` leaves them their places), sooner if a send on its way is answered first;
   * Infinity when only such an answer can free a place.
   */
  readyAt(chatId: number, kind: ChatKind, priority: Priority = "delivery"): number {
    const now = this.#now();
    const reply = priority === "reply";
    return Math.max(
      this.#global.readyAt(now, reply ? 0 : this.#repliesWaiting),
      this.#chat(chatId, kind, now).readyAt(now, reply ? 0 : (this.#replies.get(chatId) ?? 0)),
    );
  }

  /**
   * The earliest time (ms) a delivery to any chat may be sent, as far as the bot's own window says
   * (each chat's may say later): while it is in the future, no chat needs to be asked.
   */
  botReadyAt(): number {
    return this.#global.readyAt(this.#now(), this.#repliesWaiting);
  }

  /** Records a send to this chat starting now. Call only when `readyAt` is not in the future. */
  take(chatId: number, kind: ChatKind): Ticket {
    const now = this.#now();
    this.#sweep(now);
    const chat = this.#chat(chatId, kind, now);
    return {
      places: [
        { window: this.#global, place: this.#global.take() },
        { window: chat, place: chat.take() },
      ],
    };
  }

  /** Telegram answered the send (or it failed, or timed out): its places count from now. */
  release(ticket: Ticket): void {
    const now = this.#now();
    for (const { window, place } of ticket.places) window.release(place, now);
    this.#told();
  }

  /** The place was taken but nothing went to Telegram: it is given back as if never taken. */
  cancel(ticket: Ticket): void {
    for (const { window, place } of ticket.places) window.cancel(place);
    this.#told();
  }

  #told(): void {
    for (const listener of this.#listeners) listener();
  }

  /** Calls `listener` whenever a place may have come free (a send answered or given back, a reply no longer waiting). */
  onRelease(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Waits until a message to this chat may go, then takes its place; null if `signal` aborted the
   * wait. A `reply` goes before the deliveries waiting with it.
   */
  async acquire(
    chatId: number,
    kind: ChatKind,
    options: { signal?: AbortSignal; priority?: Priority } = {},
  ): Promise<Ticket | null> {
    const { signal, priority = "delivery" } = options;
    const reply = priority === "reply";
    let waiting = false;
    try {
      for (;;) {
        if (signal?.aborted) return null;
        const wait = this.readyAt(chatId, kind, priority) - this.#now();
        if (wait <= 0) break;
        if (reply && !waiting) {
          waiting = true;
          this.#replies.set(chatId, (this.#replies.get(chatId) ?? 0) + 1);
          this.#repliesWaiting++;
        }
        await new Promise<void>((resolve) => {
          const done = () => {
            if (timer !== undefined) clearTimeout(timer);
            stopListening();
            signal?.removeEventListener("abort", done);
            resolve();
          };
          // Infinity: only an answer (below) can free a place.
          const timer = Number.isFinite(wait) ? setTimeout(done, wait) : undefined;
          // A send answered early frees its place early: look again then.
          const stopListening = this.onRelease(done);
          signal?.addEventListener("abort", done, { once: true });
        });
      }
      return this.take(chatId, kind);
    } finally {
      if (waiting) {
        const left = (this.#replies.get(chatId) ?? 1) - 1;
        if (left > 0) this.#replies.set(chatId, left);
        else this.#replies.delete(chatId);
        this.#repliesWaiting--;
        // The places kept for this reply are the deliveries' again (it took one, or gave up).
        this.#told();
      }
    }
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

/**
 * Bot API methods that count against Telegram's flood limits and so go through the pacer: every
 * message the bot sends into a chat, and every edit or delete of one (Telegram, and the sandbox,
 * count those as messages). Not `answerCallbackQuery`: it puts nothing in the chat, Telegram
 * counts it apart, and a button's spinner must stop at once.
 */
const PACED_METHODS = new Set([
  "sendMessage",
  "copyMessage",
  "forwardMessage",
  "sendPhoto",
  "sendDocument",
  "editMessageText",
  "editMessageCaption",
  "editMessageMedia",
  "editMessageReplyMarkup",
  "deleteMessage",
]);

/** A call given up while it waited for its turn (its signal, or its sender stopping): never sent. */
export class PaceWaitAborted extends Error {
  override name = "PaceWaitAborted";
  constructor(method: string) {
    super(`${method} was not sent: its wait for a turn was given up`);
  }
}

/**
 * A grammY transformer that makes any Api instance (the bot's replies) wait its turn in the same
 * pacer as deliveries, ahead of them, and tells the pacer when Telegram answers `429` anyway.
 * Install it before (inside) auto-retry, so each retry is paced too. `stopping` ends the waits of
 * a sender that is stopping (PaceWaitAborted) without aborting a call already sent: its answer is
 * still awaited, so its outcome is known.
 */
export function pacedSends(pacer: Pacer, stopping?: AbortSignal): Transformer {
  return async (prev, method, payload, signal) => {
    const chatId = (payload as { chat_id?: unknown }).chat_id;
    if (!PACED_METHODS.has(method) || typeof chatId !== "number") return prev(method, payload, signal);
    // Telegram's group and channel ids are negative; people's are positive.
    const kind: ChatKind = chatId > 0 ? "private" : "group";
    const signals = [signal as AbortSignal | undefined, stopping].filter((s) => s !== undefined);
    const ticket = await pacer.acquire(chatId, kind, {
      priority: "reply",
      ...(signals.length === 0
        ? {}
        : { signal: signals.length === 1 ? signals[0] : AbortSignal.any(signals) }),
    });
    // Given up before its turn came: sending it now would break the pace.
    if (ticket === null) throw new PaceWaitAborted(method);
    try {
      const result = await prev(method, payload, signal);
      if (!result.ok && result.error_code === 429) pacer.pause(chatId, result.parameters?.retry_after ?? 1);
      return result;
    } finally {
      pacer.release(ticket);
    }
  };
}
