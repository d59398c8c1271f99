import type { FastifyBaseLogger } from "fastify";
import { Api } from "grammy";
import { renderNotification } from "../domain/render.ts";
import type { DeliveryMetrics } from "../metrics.ts";
import { logDatabaseFailure } from "../store/db.ts";
import type { DeliveryRepository, PendingDelivery } from "../store/deliveries.ts";
import type { PgLeadership } from "../store/pg-leadership.ts";
import type { SubscriptionRepository } from "../store/subscriptions.ts";
import type { TelegramTarget } from "../telegram-target.ts";
import { chatKind, type Pacer } from "./pacer.ts";
import { backoffMs, classify } from "./retry-policy.ts";

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
  /** True when this is the only dispatcher (SQLite): `sending` rows at start are from a dead process. */
  soleDispatcher: boolean;
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

  constructor(options: DispatcherOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
  }

  async start(telegram: TelegramTarget): Promise<void> {
    this.#api = new Api(telegram.token, {
      apiRoot: telegram.apiRoot,
      timeoutSeconds: this.#o.telegramTimeoutSeconds,
    });
    this.#running = true;
    if (!this.#o.leadership) {
      await this.#lead();
      return;
    }
    await this.#campaign();
    this.#campaignTimer = setInterval(() => void this.#campaign(), CAMPAIGN_MS);
    this.#campaignTimer.unref();
  }

  /** Standing by: become the active dispatcher when the lock is free (at start, or when the leader is gone). */
  async #campaign(): Promise<void> {
    const leadership = this.#o.leadership as PgLeadership;
    if (!this.#running || leadership.isLeader) return;
    try {
      const acquired = await leadership.tryAcquire(
        // The payload names the Docks that got messages (comma-separated).
        (payload) => this.wake(payload === "" ? undefined : payload.split(",")),
        (error) => {
          // It comes back by itself (the next lock attempt); an operator wants to know, not be paged.
          this.#o.log.warn({ reason: error.message }, "lost the dispatcher lock; standing by");
          this.#abdicate();
        },
      );
      if (acquired && this.#running) {
        this.#o.log.info("this instance is now the active dispatcher");
        await this.#lead();
      }
    } catch (error) {
      logDatabaseFailure(this.#o.log, error, "could not contend for the dispatcher lock");
    }
  }

  async #lead(): Promise<void> {
    let requeued: number;
    try {
      requeued = await this.#o.deliveries.requeueAbandoned(this.#o.soleDispatcher);
    } catch (error) {
      // Holding the lock without dispatching would stall every instance: let it go, try again later.
      logDatabaseFailure(this.#o.log, error, "could not take up dispatching; releasing the lock");
      await this.#o.leadership?.release();
      return;
    }
    if (requeued > 0) this.#o.log.warn({ requeued }, "re-queued deliveries left in flight by a previous run");
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
      if (wanted === "all") await this.#o.deliveries.requeueAbandoned(false);
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
      const next = this.#next();
      if (next.delivery === null) {
        if (next.at !== Number.POSITIVE_INFINITY) {
          this.#timer = setTimeout(() => this.#pump(), Math.max(1, next.at - this.#now()));
        }
        return;
      }
      void this.#send(next.delivery);
    }
  }

  /** The next delivery to send, round-robin over Docks and their chats, or when to look again. */
  #next(): { delivery: PendingDelivery | null; at: number } {
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
          this.#o.pacer.take(chatId, kind);
          return { delivery: head, at: now };
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

  async #send(delivery: PendingDelivery): Promise<void> {
    const api = this.#api as Api;
    const { chatId } = delivery;
    const kind = chatKind(delivery.chatType);
    this.#busyChats.add(chatId);
    this.#inFlight++;
    const sentParts = [...delivery.sentParts];
    try {
      const parts = renderNotification({ name: delivery.dockName, link: delivery.dockLink }, delivery.text);
      // Long enough for every part to time out once: a lease must not expire while we still send.
      const claim = await this.#o.deliveries.claim(delivery.id, this.#o.leaseMs * parts.length);
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
        await this.#o.deliveries.retry(delivery.id, claim.lease, {
          nextAttemptAt: delivery.nextAttemptAt,
          error: "the group became a supergroup",
          countAttempt: false,
          sentParts: delivery.sentParts,
        });
        this.#moveChat(chatId, claim.chatId);
        return;
      }
      let failure: unknown = null;
      try {
        for (let i = sentParts.length; i < parts.length; i++) {
          // The first part's place was taken when this delivery was picked; later parts wait their turn.
          if (i > delivery.sentParts.length) await this.#o.pacer.acquire(chatId, kind);
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
          }
        }
      } catch (error) {
        failure = error;
      }
      if (failure === null) {
        this.#recorded(await this.#o.deliveries.sent(delivery.id, claim.lease, sentParts), delivery);
        this.#o.metrics.outcomes.inc({ outcome: "sent", reason: "ok" });
        this.#o.metrics.acceptToSend.observe((this.#now() - delivery.createdAt) / 1000);
        this.#remove(delivery);
      } else {
        await this.#settleFailure(delivery, failure, sentParts);
      }
    } catch (dbError) {
      // The database refused the claim or the outcome. The row stays as it was (`sending` after a
      // claim); once its lease expires the sweep queues it again, so it is retried, never lost.
      logDatabaseFailure(this.#o.log, dbError, "could not record a delivery outcome", {
        deliveryId: delivery.id,
      });
      this.#remove(delivery);
    } finally {
      this.#busyChats.delete(chatId);
      this.#inFlight--;
      if (this.#inFlight === 0 && this.#idle) this.#idle();
      if (this.#running) this.#pump();
    }
  }

  /** A settling write found the lease gone (expired and claimed again): say so, change nothing. */
  #recorded(written: boolean, delivery: PendingDelivery): void {
    if (!written) {
      this.#o.log.warn({ deliveryId: delivery.id }, "outcome not recorded: the delivery's lease had expired");
    }
  }

  async #settleFailure(delivery: PendingDelivery, error: unknown, sentParts: number[]): Promise<void> {
    const outcome = classify(error, delivery.chatId);
    const now = this.#now();
    const context = {
      deliveryId: delivery.id,
      messageId: delivery.messageId,
      chatId: delivery.chatId,
      reason: outcome.reason,
    };
    switch (outcome.kind) {
      case "rate_limited": {
        this.#o.metrics.tooManyRequests.inc();
        this.#o.pacer.pause(delivery.chatId, outcome.retryAfter);
        delivery.nextAttemptAt = now + outcome.retryAfter * 1000;
        delivery.sentParts = sentParts;
        await this.#o.deliveries.retry(delivery.id, delivery.lease, {
          nextAttemptAt: delivery.nextAttemptAt,
          error: outcome.reason,
          countAttempt: false,
          sentParts,
        });
        this.#o.log.warn(context, "Telegram asked us to slow down");
        return;
      }
      case "gone":
        await this.#o.deliveries.chatGone(delivery.chatId, outcome.reason);
        this.#o.metrics.outcomes.inc({ outcome: "gone", reason: "unreachable" });
        this.#o.log.info(context, "chat unreachable; its subscriptions are now inactive");
        this.#dropChat(delivery.chatId);
        return;
      case "moved": {
        // Not the delivery's fault: no attempt counted, and it goes out again at once, to the new chat.
        delivery.sentParts = sentParts;
        await this.#o.deliveries.retry(delivery.id, delivery.lease, {
          nextAttemptAt: now,
          error: outcome.reason,
          countAttempt: false,
          sentParts,
        });
        // After the retry: the move takes queued deliveries along, this one included.
        await this.#o.subscriptions.moveChat(delivery.chatId, outcome.to);
        this.#o.log.info(
          { ...context, to: outcome.to },
          "group became a supergroup; its subscriptions moved",
        );
        this.#moveChat(delivery.chatId, outcome.to);
        return;
      }
      case "transient":
        if (now - delivery.createdAt >= this.#o.maxAgeMs) break;
        delivery.attempts++;
        delivery.nextAttemptAt = now + backoffMs(delivery.attempts);
        delivery.sentParts = sentParts;
        await this.#o.deliveries.retry(delivery.id, delivery.lease, {
          nextAttemptAt: delivery.nextAttemptAt,
          error: outcome.reason,
          countAttempt: true,
          sentParts,
        });
        this.#o.metrics.outcomes.inc({ outcome: "retried", reason: "transient" });
        this.#o.log.warn({ ...context, attempts: delivery.attempts }, "delivery will be retried");
        return;
      case "permanent":
        break;
    }
    this.#recorded(
      await this.#o.deliveries.failed(delivery.id, delivery.lease, outcome.reason, sentParts),
      delivery,
    );
    this.#o.metrics.outcomes.inc({
      outcome: "failed",
      reason: outcome.kind === "permanent" ? "rejected" : "expired",
    });
    this.#o.log.warn(context, "delivery failed");
    this.#remove(delivery);
  }
}
