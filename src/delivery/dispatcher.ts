import { setTimeout as sleep } from "node:timers/promises";
import type { FastifyBaseLogger } from "fastify";
import { Api } from "grammy";
import { renderNotification } from "../domain/render.ts";
import { scrubToken } from "../log.ts";
import type { DeliveryMetrics } from "../metrics.ts";
import type { DeliveryRepository, PendingDelivery } from "../store/deliveries.ts";
import { isDatabaseUnavailable, logDatabaseFailure, storageFault } from "../store/faults.ts";
import type { PgLeadership } from "../store/pg-leadership.ts";
import type { SubscriptionRepository } from "../store/subscriptions.ts";
import type { TelegramTarget } from "../telegram-target.ts";
import { chatKind, type Pacer, type Ticket } from "./pacer.ts";
import { backoffMs, classify, type Outcome } from "./retry-policy.ts";

export interface DispatcherOptions {
  deliveries: DeliveryRepository;
  /** For a group that became a supergroup: its subscriptions follow it. */
  subscriptions: SubscriptionRepository;
  pacer: Pacer;
  log: FastifyBaseLogger;
  metrics: DeliveryMetrics;
  /** Give up on a delivery that keeps failing once it is this old. */
  maxAgeMs: number;
  /** How long a claimed delivery may stay `sending` before another attempt may take it. */
  leaseMs: number;
  /** Sends in flight at once (Telegram answers in ~100 ms; 30/s needs a few in parallel). */
  concurrency: number;
  /** Queued deliveries held in memory per Dock. */
  windowPerDock: number;
  /** Safety net: look for work this often even when nobody woke us. */
  sweepMs: number;
  /** Send with `allow_paid_broadcast` (rates above 30/s). */
  paidBroadcast: boolean;
  /** A Telegram call that has not answered by then counts as failed (and is retried). */
  telegramTimeoutSeconds: number;
  /** With several instances on PostgreSQL: only the holder of this lock dispatches. */
  leadership?: PgLeadership;
  now?: () => number;
}

/** How often a standby instance checks whether the active dispatcher is gone. */
const CAMPAIGN_MS = 5000;

/** Telegram failing this many sends in a row, with none answered between, is down (not one chat's trouble). */
const DOWN_AFTER_FAILURES = 3;
/** While Telegram is down, one send at a time probes it: first after this long, then doubling to the cap. */
const PROBE_FIRST_MS = 250;
const PROBE_MAX_MS = 1000;
/** An outcome the database would not take is written again after this long, doubling to the cap. */
const PERSIST_FIRST_MS = 250;
const PERSIST_MAX_MS = 5000;

/**
 * Telegram as the dispatcher sees it: `up` while it answers (even with an error about one
 * message), `down` after DOWN_AFTER_FAILURES sends in a row failed for Telegram's own reasons
 * (unreachable, no answer, `5xx`).
 */
export interface TelegramStatus {
  state: "up" | "down";
  /** Since when (ms since the epoch). */
  since: number;
  /** The last failure, while down. */
  reason?: string;
}

/** One Dock's queued deliveries in memory: a FIFO per chat, visited round-robin. */
interface DockQueues {
  chats: Map<number, PendingDelivery[]>;
  order: number[];
  cursor: number;
  /** Deliveries of this Dock held in memory. */
  held: number;
  /** The last read filled this Dock's share: the database may hold more. */
  more: boolean;
}

/**
 * Sends queued deliveries through one paced Telegram client.
 *
 * Fairness: Docks are served round-robin, and each Dock's chats round-robin, so a Dock with 10,000
 * subscribers or a flood of messages does not hold back another Dock's single message. Order: each
 * Dock's messages reach a chat in the order they were accepted (one send per chat at a time, a
 * chat's head waits while it is retried). Durability: a delivery is claimed with a lease before the
 * call and settled after it, so a crash at any moment re-sends at most the sends in flight.
 */
export class Dispatcher {
  readonly name = "delivery";
  readonly #o: DispatcherOptions;
  readonly #now: () => number;
  #api: Api | null = null;
  #token = "";
  readonly #docks = new Map<string, DockQueues>();
  #dockOrder: string[] = [];
  #dockCursor = 0;
  readonly #known = new Set<number>();
  /** Per Dock, the highest delivery id loaded so far: the next refill reads only what is newer. */
  readonly #cursors = new Map<string, number>();
  readonly #busyChats = new Set<number>();
  #inFlight = 0;
  #running = false;
  #timer: NodeJS.Timeout | null = null;
  #sweep: NodeJS.Timeout | null = null;
  #campaignTimer: NodeJS.Timeout | null = null;
  #refilling: Promise<void> | null = null;
  /** Docks to look at in the next refill ("all": every Dock with queued deliveries). */
  #wanted: Set<string> | "all" = new Set();
  #idle: (() => void) | null = null;
  /** Deliveries with a send (or its outcome's write) under way: never re-queued behind our back. */
  readonly #inFlightIds = new Set<number>();
  #telegram: TelegramStatus;
  /** Sends failed in a row for Telegram's reasons, and when the first of them failed. */
  #failures = 0;
  #outageStart = 0;
  /** While Telegram is down: when the next probe may go, the delay after that, one in flight. */
  #probeAt = 0;
  #probeDelay = PROBE_FIRST_MS;
  #probing = false;
  #stopPacerListener: (() => void) | null = null;
  /** Taking up dispatching failed this many times in a row (SQLite: retried with backoff). */
  #leadAttempts = 0;
  #leadRetry: NodeJS.Timeout | null = null;

  constructor(options: DispatcherOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#telegram = { state: "up", since: this.#now() };
  }

  /** Whether Telegram answers the sends (see TelegramStatus). */
  telegramStatus(): TelegramStatus {
    return { ...this.#telegram };
  }

  async start(telegram: TelegramTarget): Promise<void> {
    this.#token = telegram.token;
    this.#api = new Api(telegram.token, {
      apiRoot: telegram.apiRoot,
      timeoutSeconds: this.#o.telegramTimeoutSeconds,
    });
    this.#running = true;
    // A send answered elsewhere (a bot reply) may free the place the next delivery waits for.
    this.#stopPacerListener = this.#o.pacer.onRelease(() => {
      if (this.#leading()) this.#pump();
    });
    if (!this.#o.leadership) {
      await this.#lead();
      return;
    }
    await this.#campaign();
    this.#campaignTimer = setInterval(() => void this.#campaign(), CAMPAIGN_MS);
    this.#campaignTimer.unref();
  }

  /**
   * Standing by: become the active dispatcher when the lock is free (at start, or when the leader
   * is gone). Leading: check that the lock's session still answers, or step down.
   */
  async #campaign(): Promise<void> {
    const leadership = this.#o.leadership as PgLeadership;
    if (!this.#running) return;
    const lost = (error: Error) => {
      // It comes back by itself (the next lock attempt); an operator wants to know, not be paged.
      this.#o.log.warn({ reason: error.message }, "lost the dispatcher lock; standing by");
      this.#abdicate();
    };
    if (leadership.isLeader) {
      await leadership.heartbeat(lost);
      return;
    }
    try {
      const acquired = await leadership.tryAcquire(
        // The payload names the Docks that got messages (comma-separated).
        (payload) => this.wake(payload === "" ? undefined : payload.split(",")),
        lost,
      );
      if (acquired && this.#running) {
        this.#o.log.info("this instance is now the active dispatcher");
        await this.#lead();
      } else if (acquired) {
        // Won while stopping: let the others have it at once.
        await leadership.release();
      }
    } catch (error) {
      logDatabaseFailure(this.#o.log, error, "could not contend for the dispatcher lock");
    }
  }

  async #lead(): Promise<void> {
    let requeued: number;
    try {
      // This dispatcher is now the only one (SQLite's single process, or the holder of the lock):
      // whatever is still `sending` was left by a process that is gone. It goes out again at once,
      // before its chats' later messages, instead of after its lease runs out.
      requeued = await this.#o.deliveries.requeueAbandoned(true, this.#inFlightIds);
    } catch (error) {
      if (this.#o.leadership) {
        // Holding the lock without dispatching would stall every instance: let it go, try again later.
        logDatabaseFailure(this.#o.log, error, "could not take up dispatching; releasing the lock");
        await this.#o.leadership.release();
        return;
      }
      // The only dispatcher (SQLite): try again until the database lets it (a full disk, a lock).
      this.#leadAttempts++;
      const delay = Math.min(PROBE_MAX_MS * 30, PERSIST_FIRST_MS * 2 ** this.#leadAttempts);
      logDatabaseFailure(this.#o.log, error, "could not take up dispatching; trying again", {
        retryInMs: delay,
      });
      if (this.#running) this.#leadRetry = setTimeout(() => void this.#lead(), delay);
      return;
    }
    this.#leadAttempts = 0;
    // The lock may have been lost while the statement ran.
    if (!this.#leading()) return;
    if (requeued > 0) this.#o.log.warn({ requeued }, "re-queued deliveries left in flight by a previous run");
    // Telegram still counts what the previous dispatcher sent in its last moments.
    this.#o.pacer.coldStart();
    this.#sweep = setInterval(() => this.wake(), this.#o.sweepMs);
    this.#sweep.unref();
    this.wake();
  }

  /** No longer the leader: forget the in-memory queue (the next leader reads it from the database). */
  #abdicate(): void {
    if (this.#sweep) clearInterval(this.#sweep);
    if (this.#timer) clearTimeout(this.#timer);
    this.#docks.clear();
    this.#dockOrder = [];
    this.#known.clear();
    this.#cursors.clear();
  }

  #leading(): boolean {
    return this.#running && (this.#o.leadership?.isLeader ?? true);
  }

  /** Stops taking new work and resolves once the sends in flight have settled. */
  async stop(): Promise<void> {
    this.#running = false;
    this.#stopPacerListener?.();
    if (this.#leadRetry) clearTimeout(this.#leadRetry);
    if (this.#campaignTimer) clearInterval(this.#campaignTimer);
    if (this.#sweep) clearInterval(this.#sweep);
    if (this.#timer) clearTimeout(this.#timer);
    await this.#refilling;
    if (this.#inFlight > 0) await new Promise<void>((resolve) => (this.#idle = resolve));
    await this.#o.leadership?.release();
  }

  /**
   * Look for work now: for the given Docks (new messages were accepted for them), or for every
   * Dock with queued deliveries (the sweep, a start, a running-low queue).
   */
  wake(dockIds?: Iterable<string>): void {
    if (!this.#leading()) return;
    if (dockIds === undefined) this.#wanted = "all";
    else if (this.#wanted !== "all") for (const id of dockIds) this.#wanted.add(id);
    if (this.#refilling) return;
    const wanted = this.#wanted;
    this.#wanted = new Set();
    this.#refilling = this.#refill(wanted).finally(() => {
      this.#refilling = null;
      if (this.#wanted === "all" || this.#wanted.size > 0) this.wake([]);
    });
  }

  async #refill(wanted: Set<string> | "all"): Promise<void> {
    try {
      // Leases that expired: a send whose outcome could not be recorded, or a dead instance's.
      if (wanted === "all") await this.#o.deliveries.requeueAbandoned(false, this.#inFlightIds);
      for (const dockId of wanted === "all" ? await this.#o.deliveries.queuedDocks() : wanted) {
        const held = this.#docks.get(dockId)?.held ?? 0;
        if (held >= this.#o.windowPerDock / 2) {
          // Enough in memory for now; look again once it runs low.
          const dock = this.#docks.get(dockId);
          if (dock) dock.more = true;
          continue;
        }
        // A wake for new messages reads on from the cursor. The sweep reads from the start of the
        // Dock's queue: a row can become queued below the cursor (a claim that failed, a retry that
        // settled after a leadership change, on PostgreSQL a transaction that committed after a
        // later one), and the sweep is what finds it. Rows already held are skipped (#known).
        const from = wanted === "all" ? 0 : (this.#cursors.get(dockId) ?? 0);
        const limit = wanted === "all" ? this.#o.windowPerDock : this.#o.windowPerDock - held;
        let rows = await this.#o.deliveries.queuedFor(dockId, from, limit);
        let more = rows.length === limit;
        if (!more) {
          // The queue is short: fan out the Dock's next waiting messages into deliveries.
          const fanned = await this.#o.deliveries.fanOut(dockId, limit - rows.length);
          if (fanned.queued > 0) {
            const after = Math.max(from, rows.at(-1)?.id ?? 0, this.#cursors.get(dockId) ?? 0);
            rows = rows.concat(await this.#o.deliveries.queuedFor(dockId, after, limit - rows.length));
          }
          more = fanned.more || rows.length === limit;
        }
        for (const row of rows) this.#hold(row);
        const dock = this.#docks.get(dockId);
        if (dock) dock.more = more;
        // Messages still wait but nothing is held to trigger the next read (their subscribers
        // had all left): look again.
        else if (more && this.#wanted !== "all") this.#wanted.add(dockId);
        const last = rows.at(-1);
        if (last && last.id > (this.#cursors.get(dockId) ?? 0)) this.#cursors.set(dockId, last.id);
      }
    } catch (error) {
      logDatabaseFailure(this.#o.log, error, "could not read the delivery queue");
      return;
    }
    this.#pump();
  }

  #hold(row: PendingDelivery): void {
    if (this.#known.has(row.id)) return;
    this.#known.add(row.id);
    let dock = this.#docks.get(row.dockId);
    if (!dock) {
      dock = { chats: new Map(), order: [], cursor: 0, held: 0, more: false };
      this.#docks.set(row.dockId, dock);
      this.#dockOrder.push(row.dockId);
    }
    let queue = dock.chats.get(row.chatId);
    if (!queue) {
      queue = [];
      dock.chats.set(row.chatId, queue);
      dock.order.push(row.chatId);
    }
    // In id order: a row found again by the sweep may be older than those already held.
    let at = queue.length;
    while (at > 0 && (queue[at - 1] as PendingDelivery).id > row.id) at--;
    queue.splice(at, 0, row);
    dock.held++;
  }

  /** Starts every send that may go now; arms a timer for the earliest one that may go later. */
  #pump(): void {
    if (this.#timer) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    while (this.#leading() && this.#inFlight < this.#o.concurrency) {
      // Telegram is down: one send at a time finds out whether it is back.
      if (this.#telegram.state === "down") {
        if (this.#probing) return;
        const wait = this.#probeAt - this.#now();
        if (wait > 0) {
          this.#timer = setTimeout(() => this.#pump(), wait);
          return;
        }
      }
      const next = this.#next();
      if (next.delivery === null) {
        // Down with nothing at all to send: ask Telegram who the bot is, so that its coming back
        // is noticed (and shown) without a message to carry the question. With deliveries held
        // but not due yet (paced), the next of them is the probe: getMe answering proves nothing
        // about sending.
        if (this.#telegram.state === "down" && this.#docks.size === 0) {
          void this.#probeIdle();
          return;
        }
        if (Number.isFinite(next.at)) {
          this.#timer = setTimeout(() => this.#pump(), Math.max(1, next.at - this.#now()));
        }
        return;
      }
      const probe = this.#telegram.state === "down";
      if (probe) this.#probing = true;
      void this.#send(next.delivery, next.ticket, probe);
    }
  }

  /** The next delivery to send, round-robin over Docks and their chats, or when to look again. */
  #next(): { delivery: PendingDelivery; ticket: Ticket } | { delivery: null; at: number } {
    const now = this.#now();
    let earliest = Number.POSITIVE_INFINITY;
    for (let d = 0; d < this.#dockOrder.length; d++) {
      const dockIndex = (this.#dockCursor + d) % this.#dockOrder.length;
      const dock = this.#docks.get(this.#dockOrder[dockIndex] as string) as DockQueues;
      for (let c = 0; c < dock.order.length; c++) {
        const chatIndex = (dock.cursor + c) % dock.order.length;
        const chatId = dock.order[chatIndex] as number;
        if (this.#busyChats.has(chatId)) continue;
        const head = dock.chats.get(chatId)?.[0];
        if (!head) continue;
        const kind = chatKind(head.chatType);
        const at = Math.max(head.nextAttemptAt, this.#o.pacer.readyAt(chatId, kind));
        if (at <= now) {
          dock.cursor = chatIndex + 1;
          this.#dockCursor = dockIndex + 1;
          return { delivery: head, ticket: this.#o.pacer.take(chatId, kind) };
        }
        earliest = Math.min(earliest, at);
      }
    }
    return { delivery: null, at: earliest };
  }

  #remove(delivery: PendingDelivery): void {
    this.#known.delete(delivery.id);
    const dock = this.#docks.get(delivery.dockId);
    const queue = dock?.chats.get(delivery.chatId);
    if (!dock || !queue) return;
    const index = queue.indexOf(delivery);
    if (index >= 0) {
      queue.splice(index, 1);
      dock.held--;
    }
    if (queue.length === 0) {
      dock.chats.delete(delivery.chatId);
      dock.order = dock.order.filter((id) => id !== delivery.chatId);
    }
    if (dock.chats.size === 0) {
      this.#docks.delete(delivery.dockId);
      this.#dockOrder = this.#dockOrder.filter((id) => id !== delivery.dockId);
    }
    // Running low, and the database holds more of this Dock: fetch them.
    if (dock.more && dock.held < this.#o.windowPerDock / 2) {
      dock.more = false;
      this.wake([delivery.dockId]);
    }
  }

  /** Drops everything in memory for a chat that has become unreachable. */
  #dropChat(chatId: number): void {
    for (const dock of [...this.#docks.values()]) {
      // A copy: #remove changes the chat's queue while we walk it.
      for (const delivery of [...(dock.chats.get(chatId) ?? [])]) this.#remove(delivery);
    }
  }

  /**
   * A group became a supergroup (`from` → `to`): the deliveries held for it wait under the new id,
   * merged in id order with any the new chat already has, so each Dock's order holds.
   */
  #moveChat(from: number, to: number): void {
    for (const dock of this.#docks.values()) {
      const moving = dock.chats.get(from);
      if (moving === undefined) continue;
      for (const delivery of moving) {
        delivery.chatId = to;
        delivery.chatType = "supergroup";
      }
      const existing = dock.chats.get(to);
      dock.chats.delete(from);
      dock.chats.set(
        to,
        [...(existing ?? []), ...moving].sort((a, b) => a.id - b.id),
      );
      dock.order =
        existing === undefined
          ? dock.order.map((id) => (id === from ? to : id))
          : dock.order.filter((id) => id !== from);
    }
  }

  /** While Telegram is down and no delivery is due: a probe that sends nothing (getMe). */
  async #probeIdle(): Promise<void> {
    this.#probing = true;
    try {
      await (this.#api as Api).getMe();
      this.#telegramAnswered();
    } catch (error) {
      const outcome = this.#classify(error, 0);
      if (outcome.kind === "transient") this.#telegramFailed(outcome.reason);
      else this.#telegramAnswered();
    } finally {
      this.#probing = false;
      if (this.#telegram.state === "down" && this.#probeAt <= this.#now()) {
        this.#probeAt = this.#now() + this.#probeDelay;
      }
      if (this.#running) this.#pump();
    }
  }

  /**
   * One delivery: claim it, send its parts, record the outcome. `ticket`: the pacer's place taken
   * for its first part. The chat is busy until the outcome is written, however long the database
   * takes to accept it, so that none of the chat's later messages can overtake this one.
   */
  async #send(delivery: PendingDelivery, ticket: Ticket, probe: boolean): Promise<void> {
    const api = this.#api as Api;
    const { chatId } = delivery;
    const kind = chatKind(delivery.chatType);
    this.#busyChats.add(chatId);
    this.#inFlight++;
    this.#inFlightIds.add(delivery.id);
    const sentParts = [...delivery.sentParts];
    let pending: Ticket | null = ticket;
    let answered = false;
    try {
      const parts = renderNotification({ name: delivery.dockName, link: delivery.dockLink }, delivery.text);
      // Long enough for every part to time out once: a lease must not expire while we still send.
      const lease = this.#now() + this.#o.leaseMs * parts.length;
      let claim: Awaited<ReturnType<DispatcherOptions["deliveries"]["claim"]>>;
      try {
        claim = await this.#o.deliveries.claim(delivery.id, lease, delivery.lostLeases ?? []);
      } catch (error) {
        if (!isOutage(error)) throw error;
        // Whether the claim was written is unknown: the delivery stays at the head of its chat and
        // is claimed again later, under any of the leases whose claims may have been written.
        delivery.lostLeases = [...(delivery.lostLeases ?? []), lease];
        delivery.nextAttemptAt = Math.max(delivery.nextAttemptAt, this.#now() + PERSIST_FIRST_MS * 4);
        logDatabaseFailure(this.#o.log, error, "could not claim a delivery; it keeps its place", {
          deliveryId: delivery.id,
        });
        return;
      }
      delete delivery.lostLeases;
      if (claim.status !== "claimed") {
        if (claim.status === "unsubscribed") {
          this.#o.metrics.outcomes.inc({ outcome: "gone", reason: "unsubscribed" });
        }
        this.#remove(delivery);
        return;
      }
      delivery.lease = claim.lease;
      if (claim.chatId !== chatId) {
        // The bot moved the chat (a group became a supergroup) after this row was read: hand the
        // claim back and let the chat's deliveries go, in order, under the new id.
        await this.#persist(delivery, () =>
          this.#o.deliveries.retry(delivery.id, claim.lease, {
            nextAttemptAt: delivery.nextAttemptAt,
            error: "the group became a supergroup",
            countAttempt: false,
            sentParts: delivery.sentParts,
          }),
        );
        this.#moveChat(chatId, claim.chatId);
        this.#keep(delivery);
        return;
      }
      let failure: unknown = null;
      try {
        for (let i = sentParts.length; i < parts.length; i++) {
          // The first part's place was taken when this delivery was picked; later parts wait their turn.
          pending ??= await this.#o.pacer.acquire(chatId, kind);
          const part = parts[i] as (typeof parts)[number];
          const started = performance.now();
          try {
            const message = await api.sendMessage(chatId, part.text, {
              entities: part.entities,
              ...(part.reply_markup ? { reply_markup: part.reply_markup } : {}),
              ...(this.#o.paidBroadcast ? { allow_paid_broadcast: true } : {}),
            });
            sentParts.push(message.message_id);
          } finally {
            this.#o.metrics.telegramLatency.observe((performance.now() - started) / 1000);
            if (pending !== null) this.#o.pacer.release(pending);
            pending = null;
          }
        }
      } catch (error) {
        failure = error;
      }
      if (failure === null) {
        answered = true;
        this.#telegramAnswered();
        this.#recorded(
          await this.#persist(delivery, () => this.#o.deliveries.sent(delivery.id, claim.lease, sentParts)),
          delivery,
        );
        this.#o.metrics.outcomes.inc({ outcome: "sent", reason: "ok" });
        this.#o.metrics.acceptToSend.observe((this.#now() - delivery.createdAt) / 1000);
        this.#remove(delivery);
      } else {
        answered = await this.#settleFailure(delivery, failure, sentParts);
      }
    } catch (error) {
      // Not an outage (those are waited out above): a bug. The row stays as it was (`sending`
      // after a claim); once its lease expires the sweep queues it again, so it is retried, never lost.
      logDatabaseFailure(this.#o.log, error, "could not record a delivery outcome", {
        deliveryId: delivery.id,
      });
      this.#remove(delivery);
    } finally {
      // A place taken for a send that never went (the claim failed, the row was gone) is given back.
      if (pending !== null) this.#o.pacer.cancel(pending);
      if (probe) {
        this.#probing = false;
        // A probe that ended without an answer either way (a database fault) is tried again later.
        if (!answered && this.#telegram.state === "down" && this.#probeAt <= this.#now()) {
          this.#probeAt = this.#now() + this.#probeDelay;
        }
      }
      this.#inFlightIds.delete(delivery.id);
      this.#busyChats.delete(chatId);
      this.#inFlight--;
      if (this.#inFlight === 0 && this.#idle) this.#idle();
      if (this.#running) this.#pump();
    }
  }

  /**
   * Writes a delivery's outcome (or another change of its row), again and again while the
   * database is down or full: Telegram has already acted, and the chat's next message must not go
   * before this one is on record. Gives up only when the service stops (the next start re-queues
   * the row: at worst one duplicate). Anything but an outage is thrown.
   */
  async #persist(delivery: PendingDelivery, write: () => Promise<unknown>): Promise<Recorded> {
    for (let delay = PERSIST_FIRST_MS, told = false; ; delay = Math.min(PERSIST_MAX_MS, delay * 2)) {
      try {
        const written = await write();
        if (told) this.#o.log.info({ deliveryId: delivery.id }, "delivery outcome recorded after all");
        return written === false ? "refused" : "written";
      } catch (error) {
        if (!isOutage(error)) throw error;
        if (!told) {
          logDatabaseFailure(this.#o.log, error, "could not record a delivery outcome; trying again", {
            deliveryId: delivery.id,
          });
          told = true;
        }
        // Even after losing the lock (to the same outage): the row stays this process's until the
        // next leader re-queues it, and if that is this process again, it waits for this write.
        if (!this.#running) return "abandoned";
        await sleep(delay);
      }
    }
  }

  /**
   * A delivery that goes back to the queue for another try: normally still held, in its place. If
   * this dispatcher lost the lock and took it back while the delivery was in flight, the queue in
   * memory was rebuilt without it (its row was `sending`): it goes back in, before its chat's later
   * messages.
   */
  #keep(delivery: PendingDelivery): void {
    if (this.#leading() && !this.#known.has(delivery.id)) this.#hold(delivery);
  }

  /**
   * What to do after a failed call, its reason cleaned of the bot token: the reason is logged,
   * stored as the delivery's last error (which GET /messages/:id shows the Dock's holder) and shown
   * in /readyz, and a Bot API server may echo the request's path in its error text.
   */
  #classify(error: unknown, chatId: number): Outcome {
    const outcome = classify(error, chatId);
    return { ...outcome, reason: scrubToken(outcome.reason, this.#token) };
  }

  /** Telegram answered a send (with a message or an error about it): it is up. */
  #telegramAnswered(): void {
    this.#failures = 0;
    this.#probeDelay = PROBE_FIRST_MS;
    if (this.#telegram.state === "up") return;
    const now = this.#now();
    // Deliveries that sat out a backoff for this outage go now, at the pacer's rate, in their
    // chats' order; the rest of the queue never stopped being due.
    let woken = 0;
    for (const dock of this.#docks.values()) {
      for (const queue of dock.chats.values()) {
        for (const delivery of queue) {
          if (delivery.waitedForTelegram !== undefined && delivery.waitedForTelegram >= this.#outageStart) {
            delivery.nextAttemptAt = Math.min(delivery.nextAttemptAt, now);
            delete delivery.waitedForTelegram;
            woken++;
          }
        }
      }
    }
    this.#o.log.info(
      { downSeconds: Math.round((now - this.#telegram.since) / 1000), woken },
      "Telegram answers again; deliveries resume",
    );
    this.#telegram = { state: "up", since: now };
  }

  /** A send failed for Telegram's own reasons; enough of them in a row and Telegram is down. */
  #telegramFailed(reason: string): void {
    const now = this.#now();
    if (this.#failures === 0) this.#outageStart = now;
    this.#failures++;
    if (this.#telegram.state === "down") {
      // A probe failed: the next one waits longer.
      this.#probeDelay = Math.min(PROBE_MAX_MS, this.#probeDelay * 2);
      this.#probeAt = now + this.#probeDelay;
      this.#telegram.reason = reason;
      return;
    }
    if (this.#failures < DOWN_AFTER_FAILURES) return;
    this.#telegram = { state: "down", since: now, reason };
    this.#probeDelay = PROBE_FIRST_MS;
    this.#probeAt = now + this.#probeDelay;
    this.#o.log.warn(
      { reason, probeEveryMs: PROBE_MAX_MS },
      "Telegram is not answering; deliveries wait, and one send at a time checks whether it is back",
    );
  }

  /** A settling write that did not land: say why (the row is sent again later: at worst a duplicate). */
  #recorded(recorded: Recorded, delivery: PendingDelivery): void {
    if (recorded === "refused") {
      this.#o.log.warn({ deliveryId: delivery.id }, "outcome not recorded: the delivery's lease had expired");
    } else if (recorded === "abandoned") {
      this.#o.log.warn(
        { deliveryId: delivery.id },
        "outcome not recorded: the database was unavailable as the service stopped; the next start sends it again",
      );
    }
  }

  /** Records a failed send's outcome; true when Telegram answered it (as opposed to not at all). */
  async #settleFailure(delivery: PendingDelivery, error: unknown, sentParts: number[]): Promise<boolean> {
    const outcome = this.#classify(error, delivery.chatId);
    const now = this.#now();
    const context = {
      deliveryId: delivery.id,
      messageId: delivery.messageId,
      chatId: delivery.chatId,
      reason: outcome.reason,
    };
    if (outcome.kind === "transient") this.#telegramFailed(outcome.reason);
    else this.#telegramAnswered();
    switch (outcome.kind) {
      case "rate_limited": {
        this.#o.metrics.tooManyRequests.inc();
        this.#o.pacer.pause(delivery.chatId, outcome.retryAfter);
        delivery.nextAttemptAt = now + outcome.retryAfter * 1000;
        delivery.sentParts = sentParts;
        await this.#persist(delivery, () =>
          this.#o.deliveries.retry(delivery.id, delivery.lease, {
            nextAttemptAt: delivery.nextAttemptAt,
            error: outcome.reason,
            countAttempt: false,
            sentParts,
          }),
        );
        this.#o.log.warn(context, "Telegram asked us to slow down");
        this.#keep(delivery);
        return true;
      }
      case "gone":
        await this.#persist(delivery, () => this.#o.deliveries.chatGone(delivery.chatId, outcome.reason));
        this.#o.metrics.outcomes.inc({ outcome: "gone", reason: "unreachable" });
        this.#o.log.info(context, "chat unreachable; its subscriptions are now inactive");
        this.#dropChat(delivery.chatId);
        return true;
      case "moved": {
        // Not the delivery's fault: no attempt counted, and it goes out again at once, to the new chat.
        delivery.sentParts = sentParts;
        await this.#persist(delivery, () =>
          this.#o.deliveries.retry(delivery.id, delivery.lease, {
            nextAttemptAt: now,
            error: outcome.reason,
            countAttempt: false,
            sentParts,
          }),
        );
        // After the retry: the move takes queued deliveries along, this one included.
        await this.#persist(delivery, () => this.#o.subscriptions.moveChat(delivery.chatId, outcome.to));
        this.#o.log.info(
          { ...context, to: outcome.to },
          "group became a supergroup; its subscriptions moved",
        );
        this.#moveChat(delivery.chatId, outcome.to);
        this.#keep(delivery);
        return true;
      }
      case "transient": {
        if (now - delivery.createdAt >= this.#o.maxAgeMs) break;
        delivery.attempts++;
        // While Telegram is down the probes decide when to try again (and wake this one the
        // moment it answers); a failure of its own backs off.
        const down = this.#telegram.state === "down";
        delivery.nextAttemptAt = down ? now : now + backoffMs(delivery.attempts);
        delivery.waitedForTelegram = now;
        delivery.sentParts = sentParts;
        await this.#persist(delivery, () =>
          this.#o.deliveries.retry(delivery.id, delivery.lease, {
            nextAttemptAt: delivery.nextAttemptAt,
            error: outcome.reason,
            countAttempt: true,
            sentParts,
          }),
        );
        this.#o.metrics.outcomes.inc({ outcome: "retried", reason: "transient" });
        // While down, the outage is one story (its start and end), not a line per delivery.
        if (down) this.#o.log.debug({ ...context, attempts: delivery.attempts }, "delivery will be retried");
        else this.#o.log.warn({ ...context, attempts: delivery.attempts }, "delivery will be retried");
        this.#keep(delivery);
        return false;
      }
      case "permanent":
        break;
    }
    this.#recorded(
      await this.#persist(delivery, () =>
        this.#o.deliveries.failed(delivery.id, delivery.lease, outcome.reason, sentParts),
      ),
      delivery,
    );
    this.#o.metrics.outcomes.inc({
      outcome: "failed",
      reason: outcome.kind === "permanent" ? "rejected" : "expired",
    });
    this.#o.log.warn(context, "delivery failed");
    this.#remove(delivery);
    return outcome.kind !== "transient";
  }
}

/** How a settling write ended: written, refused (the lease was gone), or abandoned as the service stopped. */
type Recorded = "written" | "refused" | "abandoned";

/** A database fault of the surroundings (down, unreachable, full, read-only): waited out, not a bug. */
function isOutage(error: unknown): boolean {
  return isDatabaseUnavailable(error) || storageFault(error) !== null;
}
