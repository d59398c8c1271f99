import type { FastifyBaseLogger } from "fastify";
import type { CallbackTargets } from "../domain/callback-target.ts";
import { SIGNATURE_HEADER, signEvent } from "../domain/event-signature.ts";
import { decryptSecret } from "../domain/secrets.ts";
import type { BackgroundWorker } from "../runtime/worker.ts";
import type { EventOutbox } from "../store/events.ts";
import { logDatabaseFailure } from "../store/faults.ts";
import { type HostResolver, type PostOutcome, postCallback, systemResolver } from "./callback-post.ts";
import { backoffMs } from "./retry-policy.ts";

/** The least time between two looks for work (see wake). */
const WAKE_GAP_MS = 250;

/**
 * Posts in flight at once, by default. A post is a socket waiting on a receiver, cheap; enough
 * of them that a few receivers that hang leave room for everyone else.
 */
export const EVENT_POSTS_AT_ONCE = 16;

export interface EventSenderOptions {
  events: EventOutbox;
  /** Opens the Docks' sealed signing secrets, which sign the events. */
  encryptionKey: Buffer;
  log: FastifyBaseLogger;
  /** Give up on an event its receiver keeps refusing once it is this old. */
  maxAgeMs: number;
  /** A receiver that has not answered by then counts as failed (and is tried again). */
  timeoutMs: number;
  /**
   * Posts in flight at once. Docks whose receiver failed an event (one waits for another try)
   * share at most half of them, so working receivers always have the other half.
   */
  concurrency: number;
  /** Which addresses a callback may reach (CALLBACK_ALLOWED_NETWORKS). */
  targets: CallbackTargets;
  /** Resolves callback hosts; the system's resolver when omitted (tests give their own names). */
  resolve?: HostResolver;
  /** Look for work this often even when nothing woke us (another instance's events, retries). */
  sweepMs: number;
  userAgent: string;
  now?: () => number;
}

/** What an event's last error says when a receiver at an internal address did not take it. */
export const INTERNAL_FAILURE =
  "not taken by the receiver (an address in CALLBACK_ALLOWED_NETWORKS: the reason is only in the service's log)";

/**
 * Why a post failed, as the log says it (for the operator): fixed phrases only, never an error's
 * own message, which may quote the URL (and a token in it). Null: the receiver took the event.
 */
function failureOf(outcome: PostOutcome): string | null {
  switch (outcome.kind) {
    case "answered":
      return outcome.status >= 200 && outcome.status < 300 ? null : `HTTP ${outcome.status}`;
    case "timeout":
      return "no answer in time";
    case "unreachable":
      return outcome.code === null ? "the request failed" : `could not connect (${outcome.code})`;
    case "refused":
      return `callback address ${outcome.address} is not allowed (${outcome.reason}); see CALLBACK_ALLOWED_NETWORKS`;
    case "stopped":
      return "the service stopped before the receiver answered";
  }
}

/**
 * Why a post failed, as the event's last error says it (for the Dock's owner, through the API
 * and the console). For a public receiver, the log's phrase: an HTTP status, a connection error,
 * a timeout — nothing a scan of the internet would not tell. For an internal address the operator
 * allowed, one phrase whatever happened, so that a Dock's owner cannot tell a closed port from a
 * filtered one or from another service there. For a host name resolving to a refused address, the
 * reason without the address (an internal name's address is not the owner's to learn).
 */
function lastErrorOf(outcome: PostOutcome, failure: string): string {
  if (outcome.kind === "refused") {
    return outcome.named
      ? `the callback URL's host resolves to an address that is not allowed (${outcome.reason}); see CALLBACK_ALLOWED_NETWORKS`
      : failure;
  }
  if (outcome.kind !== "stopped" && outcome.internal) return INTERNAL_FAILURE;
  return failure;
}

/**
 * Posts the events of the callback outbox (store/events.ts) to each Dock's callback URL, signed
 * with its signing secret (domain/event-signature.ts); retries with backoff until the receiver answers
 * 2xx or the event is older than `maxAgeMs`. Also notices messages that have settled and queues
 * their `message.delivered`/`message.failed` (EventOutbox.reportSettled). Runs on every instance:
 * claims are conditional, so two never post the same event at once.
 *
 * Fair between Docks: one post per Dock at a time, Docks taken in turn, and Docks whose receiver
 * fails share at most half the posts in flight — four receivers that hang must not hold up every
 * other Dock's events (they did, for minutes, when the oldest due events went first).
 */
export class EventSender implements BackgroundWorker {
  readonly name = "events";
  readonly #o: EventSenderOptions;
  readonly #now: () => number;
  #running = false;
  /** Aborts the posts in flight when the sender stops. */
  #stopping = new AbortController();
  #sweep: NodeJS.Timeout | null = null;
  #soon: NodeJS.Timeout | null = null;
  #ticking: Promise<void> | null = null;
  #again = false;
  readonly #inFlight = new Set<Promise<void>>();
  /** The Docks with a post in flight: one each. */
  readonly #busyDocks = new Set<string>();
  /** Posts in flight to Docks whose receiver failed, at most #failingShare. */
  #failingInFlight = 0;
  readonly #failingShare: number;
  /** The last Dock given a post: the turn goes on after it. */
  #lastDock = "";
  #lastTick = Number.NEGATIVE_INFINITY;

  constructor(options: EventSenderOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#failingShare = Math.max(1, Math.floor(options.concurrency / 2));
  }

  async start(): Promise<void> {
    this.#running = true;
    this.#stopping = new AbortController();
    this.#sweep = setInterval(() => this.wake(), this.#o.sweepMs);
    this.#sweep.unref();
    this.wake();
  }

  async stop(): Promise<void> {
    this.#running = false;
    if (this.#sweep) clearInterval(this.#sweep);
    if (this.#soon) clearTimeout(this.#soon);
    await this.#ticking;
    // Posts under way end now and are queued again for the next start (at least once).
    this.#stopping.abort();
    await Promise.all(this.#inFlight);
  }

  /**
   * Look for work (a delivery settled, an acknowledgement was recorded): now, or once WAKE_GAP_MS
   * has passed since the last look — a broadcast settles copies by the thousand, and each look is
   * a few statements on the connection the sends share.
   */
  wake(): void {
    if (!this.#running) return;
    const wait = this.#lastTick + WAKE_GAP_MS - this.#now();
    if (wait > 0) {
      if (this.#soon === null) {
        this.#soon = setTimeout(() => {
          this.#soon = null;
          this.wake();
        }, wait);
        this.#soon.unref();
      }
      return;
    }
    if (this.#ticking) {
      this.#again = true;
      return;
    }
    this.#lastTick = this.#now();
    this.#ticking = this.#tick().finally(() => {
      this.#ticking = null;
      if (this.#again) {
        this.#again = false;
        this.wake();
      }
    });
  }

  async #tick(): Promise<void> {
    try {
      await this.#o.events.requeueExpired();
      await this.#o.events.reportAllSettled();
      // Docks in turn, each Dock's oldest due event; a second look when failing Docks filled
      // their share and working ones may still be waiting.
      for (const workingOnly of [false, true]) {
        const room = this.#o.concurrency - this.#inFlight.size;
        if (!this.#running || room <= 0) break;
        const due = await this.#o.events.dueByDock({
          limit: room,
          after: this.#lastDock,
          busy: [...this.#busyDocks],
          workingOnly: workingOnly || this.#failingInFlight >= this.#failingShare,
        });
        let skipped = false;
        for (const { id, dockId, failing } of due) {
          if (!this.#running || this.#inFlight.size >= this.#o.concurrency) break;
          if (this.#busyDocks.has(dockId)) continue;
          if (failing && this.#failingInFlight >= this.#failingShare) {
            skipped = true;
            continue;
          }
          this.#start(id, dockId, failing);
        }
        if (!skipped) break;
      }
      // A retry due before the next sweep is taken when it is due.
      const next = await this.#o.events.nextDue();
      if (next !== null && next - this.#now() < this.#o.sweepMs) {
        if (this.#soon) clearTimeout(this.#soon);
        this.#soon = setTimeout(
          () => {
            this.#soon = null;
            this.wake();
          },
          Math.max(10, next - this.#now()),
        );
        this.#soon.unref();
      }
    } catch (error) {
      logDatabaseFailure(this.#o.log, error, "could not read the callback events; trying again shortly");
    }
  }

  #start(id: number, dockId: string, failing: boolean): void {
    this.#busyDocks.add(dockId);
    this.#lastDock = dockId;
    if (failing) this.#failingInFlight++;
    const post = this.#post(id).finally(() => {
      this.#inFlight.delete(post);
      this.#busyDocks.delete(dockId);
      if (failing) this.#failingInFlight--;
      this.wake();
    });
    this.#inFlight.add(post);
  }

  async #post(id: number): Promise<void> {
    const lease = this.#now() + this.#o.timeoutMs * 2;
    let event: Awaited<ReturnType<EventOutbox["claim"]>>;
    try {
      event = await this.#o.events.claim(id, lease);
    } catch (error) {
      logDatabaseFailure(this.#o.log, error, "could not claim a callback event");
      return;
    }
    if (event === undefined) return;
    const context = { eventId: event.id, dockId: event.dockId, type: event.type, attempts: event.attempts };
    if (event.callbackUrl === null) {
      await this.#settle(() => this.#o.events.failed(event, "the Dock has no callback URL any more"));
      return;
    }
    let outcome: PostOutcome;
    try {
      const secret = decryptSecret(event.signingSealed, this.#o.encryptionKey);
      const body = event.payload;
      outcome = await postCallback({
        url: event.callbackUrl,
        body,
        timeoutMs: this.#o.timeoutMs,
        targets: this.#o.targets,
        resolve: this.#o.resolve ?? systemResolver,
        stop: this.#stopping.signal,
        headers: {
          "content-type": "application/json",
          "user-agent": this.#o.userAgent,
          "dock-event": event.type,
          [SIGNATURE_HEADER]: signEvent(secret, Math.floor(this.#now() / 1000), body),
        },
      });
    } catch {
      // A URL stored before it was checked as it is now, or a key that no longer opens.
      outcome = { kind: "unreachable", code: null, internal: false };
    }
    const failure = failureOf(outcome);
    if (failure === null) {
      await this.#settle(() => this.#o.events.sent(event));
      this.#o.log.debug(context, "event posted");
      return;
    }
    const lastError = lastErrorOf(outcome, failure);
    if (outcome.kind === "stopped") {
      await this.#settle(() => this.#o.events.retry(event, this.#now(), lastError));
      return;
    }
    if (this.#now() - event.createdAt >= this.#o.maxAgeMs) {
      await this.#settle(() => this.#o.events.failed(event, lastError));
      this.#o.log.warn({ ...context, reason: failure }, "gave up on a callback event");
      return;
    }
    const at = this.#now() + backoffMs(event.attempts);
    await this.#settle(() => this.#o.events.retry(event, at, lastError));
    this.#o.log.info({ ...context, reason: failure }, "callback event will be retried");
  }

  async #settle(write: () => Promise<unknown>): Promise<void> {
    try {
      await write();
    } catch (error) {
      // Its lease expires and it is posted again: at-least-once, like deliveries.
      logDatabaseFailure(this.#o.log, error, "could not record a callback event's outcome");
    }
  }
}
