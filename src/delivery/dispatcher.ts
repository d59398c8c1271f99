import type { FastifyBaseLogger } from "fastify";
import type { MessageContent } from "../domain/message-options.ts";
import { type RenderedPart, renderNotification } from "../domain/render.ts";
import { scrubToken } from "../runtime/log.ts";
import type { DeliveryMetrics } from "../runtime/metrics.ts";
import type { Leadership } from "../store/db.ts";
import { isOutage, logDatabaseFailure } from "../store/faults.ts";
import { type EditOutcome, type Outbox, type PendingDelivery, URGENT } from "../store/outbox.ts";
import type { SubscriptionRepository } from "../store/subscriptions.ts";
import { answerText, changeAnswer, classify, type Outcome } from "../telegram/answers.ts";
import type { CopySender } from "../telegram/copies.ts";
import { chatKind, type Pacer, type Ticket } from "../telegram/pacer.ts";
import type { TelegramTarget } from "../telegram/target.ts";
import { Campaign } from "./campaign.ts";
import { FairQueue } from "./fair-queue.ts";
import { InFlightLimit } from "./in-flight.ts";
import { PERSIST_FIRST_MS, Settler, type Verdict } from "./settle.ts";
import { PROBE_MAX_MS, TelegramHealth, type TelegramStatus } from "./telegram-health.ts";

export type { TelegramStatus } from "./telegram-health.ts";

/** While urgent copies wait, one send in this many goes to everything else (when any of it may go). */
const ORDINARY_SHARE = 4;

/** The pacer's places for one delivery's Telegram calls: the first taken when it was picked. */
interface TelegramCalls {
  ticket: Ticket | null;
  acquire: () => Promise<Ticket>;
}

export interface DispatcherOptions {
  outbox: Outbox;
  /** For a group that became a supergroup: its subscriptions follow it. */
  subscriptions: SubscriptionRepository;
  pacer: Pacer;
  log: FastifyBaseLogger;
  metrics: DeliveryMetrics;
  /** Give up on a delivery that keeps failing once it is this old. */
  maxAgeMs: number;
  /** How long a claimed delivery may stay `sending` before another attempt may take it. */
  leaseMs: number;
  /**
   * The most sends in flight at once (DELIVERY_CONCURRENCY); below it, as many as `rate` needs
   * through the time sends take (in-flight.ts).
   */
  concurrency: number;
  /** Sends per second the bot may make (TELEGRAM_RATE_LIMIT): what the sends in flight are sized for. */
  rate: number;
  /** Queued deliveries held in memory per Dock. */
  windowPerDock: number;
  /** Safety net: look for work this often even when nobody woke us. */
  sweepMs: number;
  /**
   * The Telegram calls for copies, on the target the dispatcher is started with (the service's:
   * telegram/copies.ts's grammyCopySender; a test's: a fake).
   */
  copies: (telegram: TelegramTarget) => CopySender;
  /** Only the leader dispatches (always this process on SQLite; the lock's holder on PostgreSQL). */
  leadership: Leadership;
  /** Called when a delivery has settled for good (the sender's events may be due). */
  onSettled?: () => void;
  now?: () => number;
}

/**
 * Sends queued deliveries through one paced Telegram client, while this instance leads.
 *
 * Which delivery goes next is the fair queue's choice (fair-queue.ts: round-robin over Docks, then
 * chats, each chat first-in first-out); when it may go, the pacer's (pacer.ts: Telegram's limits)
 * and the breaker's (telegram-health.ts: one probe at a time while Telegram is down). Order: each
 * Dock's messages reach a chat in the order they were accepted (one send per chat at a time, a
 * chat's head waits while it is retried). Durability: a delivery is claimed with a lease before the
 * call and settled after it (store/outbox.ts), so a crash at any moment re-sends at most the sends
 * in flight.
 */
export class Dispatcher {
  readonly name = "delivery";
  readonly #o: DispatcherOptions;
  readonly #now: () => number;
  #copies: CopySender | null = null;
  #token = "";
  readonly #queue: FairQueue<PendingDelivery>;
  /**
   * The urgent lane: copies of urgent messages, read and sent ahead of everything in #queue, of
   * every Dock (in a chat, ahead of its earlier ordinary messages still waiting).
   */
  readonly #urgent: FairQueue<PendingDelivery>;
  /** Per Dock, the highest delivery id loaded so far: the next refill reads only what is newer. */
  readonly #cursors = new Map<string, number>();
  readonly #busyChats = new Set<number>();
  #inFlight = 0;
  /** Deliveries picked so far: every ORDINARY_SHARE-th turn is the ordinary lane's. */
  #picks = 0;
  readonly #inFlightLimit: InFlightLimit;
  #running = false;
  #timer: NodeJS.Timeout | null = null;
  #sweep: NodeJS.Timeout | null = null;
  #refilling: Promise<void> | null = null;
  /** Docks to look at in the next refill ("all": every Dock with queued deliveries). */
  #wanted: Set<string> | "all" = new Set();
  /** Docks whose urgent messages to look for in the next refill (besides every Dock's, with "all"). */
  #wantedUrgent = new Set<string>();
  /** Per Dock with urgent copies still unread in the database: the last urgent id read. */
  readonly #urgentReadUpTo = new Map<string, number>();
  #idle: (() => void) | null = null;
  /** Deliveries with a send (or its outcome's write) under way: never re-queued behind our back. */
  readonly #inFlightIds = new Set<number>();
  readonly #telegram: TelegramHealth;
  #stopPacerListener: (() => void) | null = null;
  readonly #campaign: Campaign;
  readonly #settler: Settler;

  constructor(options: DispatcherOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#telegram = new TelegramHealth(this.#now);
    this.#queue = new FairQueue(options.windowPerDock);
    this.#urgent = new FairQueue(options.windowPerDock);
    this.#inFlightLimit = new InFlightLimit({ rate: options.rate, cap: options.concurrency });
    this.#campaign = new Campaign({
      leadership: options.leadership,
      log: options.log,
      lead: () => this.#lead(),
      lost: () => this.#abdicate(),
      // The payload names the Docks that got messages (comma-separated).
      announced: (payload) => this.wake(payload === "" ? undefined : payload.split(",")),
      // Places kept back in Telegram's windows for other instances' bot replies only while there are any.
      others: (alive) => this.#o.pacer.othersAlive(alive),
    });
    this.#settler = new Settler({
      outbox: options.outbox,
      subscriptions: options.subscriptions,
      log: options.log,
      metrics: options.metrics,
      maxAgeMs: options.maxAgeMs,
      running: () => this.#running,
      now: this.#now,
    });
  }

  /** Whether Telegram answers the sends (see TelegramStatus). */
  telegramStatus(): TelegramStatus {
    return this.#telegram.status();
  }

  async start(telegram: TelegramTarget): Promise<void> {
    this.#token = telegram.token;
    this.#copies = this.#o.copies(telegram);
    this.#running = true;
    // A send answered elsewhere (a bot reply) may free the place the next delivery waits for.
    this.#stopPacerListener = this.#o.pacer.onRelease(() => {
      if (this.#leading()) this.#pump();
    });
    await this.#campaign.start();
  }

  /**
   * This instance now leads (campaign.ts): take up dispatching. A throw gives the lead back, to
   * be tried again later.
   */
  async #lead(): Promise<void> {
    // This dispatcher is now the only one (SQLite's single process, or the holder of the lock):
    // whatever is still `sending` was left by a process that is gone. It goes out again at once,
    // before its chats' later messages, instead of after its lease runs out.
    const requeued = await this.#o.outbox.requeueAbandoned(true, this.#inFlightIds);
    this.#o.log.info("this instance is now the active dispatcher");
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
    this.#queue.clear();
    this.#urgent.clear();
    this.#urgentReadUpTo.clear();
    this.#cursors.clear();
  }

  #leading(): boolean {
    return this.#running && this.#campaign.leading;
  }

  /** Stops taking new work and resolves once the sends in flight have settled. */
  async stop(): Promise<void> {
    this.#running = false;
    this.#stopPacerListener?.();
    await this.#campaign.stop();
    if (this.#sweep) clearInterval(this.#sweep);
    if (this.#timer) clearTimeout(this.#timer);
    await this.#refilling;
    if (this.#inFlight > 0) await new Promise<void>((resolve) => (this.#idle = resolve));
    await this.#campaign.release();
  }

  /**
   * Look for work now: for the given Docks (new messages were accepted for them; `!<Dock ID>`: an
   * urgent one, see URGENT), or for every Dock with queued deliveries (the sweep, a start, a
   * running-low queue).
   */
  wake(dockIds?: Iterable<string>): void {
    if (!this.#leading()) return;
    if (dockIds === undefined) this.#wanted = "all";
    for (const named of dockIds ?? []) {
      const urgent = named.startsWith(URGENT);
      const id = urgent ? named.slice(URGENT.length) : named;
      if (urgent) this.#wantedUrgent.add(id);
      else if (this.#wanted !== "all") this.#wanted.add(id);
    }
    if (this.#refilling) return;
    const wanted = this.#wanted;
    const urgent = this.#wantedUrgent;
    this.#wanted = new Set();
    this.#wantedUrgent = new Set();
    this.#refilling = this.#refill(wanted, urgent).finally(() => {
      this.#refilling = null;
      if (this.#wanted === "all" || this.#wanted.size > 0 || this.#wantedUrgent.size > 0) this.wake([]);
    });
  }

  async #refill(wanted: Set<string> | "all", wantedUrgent: Set<string>): Promise<void> {
    try {
      // Leases that expired: a send whose outcome could not be recorded, or a dead instance's.
      if (wanted === "all") await this.#o.outbox.requeueAbandoned(false, this.#inFlightIds);
      const docks = wanted === "all" ? await this.#o.outbox.queuedDocks() : wanted;
      // The urgent lane first: what the Docks hold of it, whatever waits in front (announced by
      // URGENT; at a sweep, every Dock that has any).
      const urgent = wanted === "all" ? await this.#o.outbox.urgentDocks() : wantedUrgent;
      for (const dockId of urgent) await this.#refillUrgent(dockId);
      for (const dockId of docks) {
        const held = this.#queue.held(dockId);
        if (held >= this.#o.windowPerDock / 2) {
          // Enough in memory for now; look again once it runs low.
          this.#queue.setMore(dockId, true);
          continue;
        }
        // A wake for new messages reads on from the cursor. The sweep reads from the start of the
        // Dock's queue: a row can become queued below the cursor (a claim that failed, a retry that
        // settled after a leadership change, on PostgreSQL a transaction that committed after a
        // later one), and the sweep is what finds it. Rows already held are skipped (#known).
        const from = wanted === "all" ? 0 : (this.#cursors.get(dockId) ?? 0);
        const limit = wanted === "all" ? this.#o.windowPerDock : this.#o.windowPerDock - held;
        let rows = await this.#o.outbox.queuedFor(dockId, from, limit);
        let more = rows.length === limit;
        if (!more) {
          // The queue is short: fan out the Dock's next waiting messages into deliveries.
          const fanned = await this.#o.outbox.fanOut(dockId, limit - rows.length);
          if (fanned.queued > 0) {
            const after = Math.max(from, rows.at(-1)?.id ?? 0, this.#cursors.get(dockId) ?? 0);
            rows = rows.concat(await this.#o.outbox.queuedFor(dockId, after, limit - rows.length));
          }
          more = fanned.more || rows.length === limit;
        }
        for (const row of rows) {
          // Urgent copies are the urgent lane's to hold (each lane keeps its window); one it has
          // not read yet gets it to look.
          if (!row.urgent) this.#queue.hold(row);
          else if (!this.#urgent.has(row.id)) this.#wantedUrgent.add(dockId);
        }
        // Messages still wait but nothing is held to trigger the next read (their subscribers
        // had all left): look again.
        if (!this.#queue.setMore(dockId, more) && more && this.#wanted !== "all") this.#wanted.add(dockId);
        const last = rows.at(-1);
        if (last && last.id > (this.#cursors.get(dockId) ?? 0)) this.#cursors.set(dockId, last.id);
      }
    } catch (error) {
      logDatabaseFailure(this.#o.log, error, "could not read the delivery queue");
      return;
    }
    this.#pump();
  }

  /**
   * The Dock's urgent messages: fanned out ahead of the rest of its waiting messages, and their
   * copies held in the urgent lane (those already held are skipped).
   */
  async #refillUrgent(dockId: string): Promise<void> {
    const room = this.#o.windowPerDock - this.#urgent.held(dockId);
    if (room <= 0) return;
    const fanned = await this.#o.outbox.fanOut(dockId, room, true);
    const rows = await this.#o.outbox.queuedFor(dockId, 0, this.#o.windowPerDock, true);
    for (const row of rows) this.#urgent.hold(row);
    // More than fits: read again once the lane runs low (#remove); more waiting but nothing held
    // to trigger that read (their subscribers had all left): look again now.
    const more = fanned.more || rows.length === this.#o.windowPerDock;
    if (!this.#urgent.setMore(dockId, more) && more) this.#wantedUrgent.add(dockId);
    // Urgent copies left unread: nothing of the Dock's queued after the last one read may go yet
    // (a later message would reach a chat before the urgent one still in the database).
    const last = rows.at(-1)?.id ?? 0;
    if (more) this.#urgentReadUpTo.set(dockId, Math.max(last, this.#urgentReadUpTo.get(dockId) ?? 0));
    else this.#urgentReadUpTo.delete(dockId);
  }

  /** Starts every send that may go now; arms a timer for the earliest one that may go later. */
  #pump(): void {
    if (this.#timer) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    while (this.#leading() && this.#inFlight < this.#inFlightLimit.value) {
      // Telegram is down: one send at a time finds out whether it is back.
      const wait = this.#telegram.probeWait();
      if (wait === null) return;
      if (wait > 0) {
        this.#timer = setTimeout(() => this.#pump(), wait);
        return;
      }
      const next = this.#next();
      if (next.delivery === null) {
        // Down with nothing at all to send: ask Telegram who the bot is, so that its coming back
        // is noticed (and shown) without a message to carry the question. With deliveries held
        // but not due yet (paced), the next of them is the probe: getMe answering proves nothing
        // about sending.
        if (this.#telegram.down && this.#queue.empty && this.#urgent.empty) {
          void this.#probeIdle();
          return;
        }
        if (Number.isFinite(next.at)) {
          this.#timer = setTimeout(() => this.#pump(), Math.max(1, next.at - this.#now()));
        }
        return;
      }
      const probe = this.#telegram.down;
      if (probe) this.#telegram.probeStarted();
      void this.#send(next.delivery, next.ticket, probe);
    }
  }

  /** The next delivery to send (the fair queue's choice, when the pacer lets it), or when to look again. */
  #next(): { delivery: PendingDelivery; ticket: Ticket } | { delivery: null; at: number } {
    // The bot's window full (paid broadcast's 1000 places taken, say): no chat may go, and asking
    // each of hundreds whenever a place comes free would be most of the dispatcher's work.
    const bot = this.#o.pacer.botReadyAt();
    if (bot > this.#now()) return { delivery: null, at: bot };
    const now = this.#now();
    const busy = (chatId: number) => this.#busyChats.has(chatId);
    const readyAt = (head: PendingDelivery) =>
      Math.max(head.nextAttemptAt, this.#o.pacer.readyAt(head.chatId, chatKind(head.chatType)));
    // The urgent lane first, but a big urgent broadcast leaves every ORDINARY_SHARE-th send to the
    // rest (another Dock's message is not held back for minutes); the rest whenever none of the
    // urgent lane may go now. In a chat, nothing ordinary overtakes an urgent copy still held
    // (waiting out a retry, say), nor one still unread (#urgentReadUpTo).
    const ordinaryBusy = (chatId: number) => busy(chatId) || this.#urgent.holdsChat(chatId);
    const ordinaryReadyAt = (head: PendingDelivery) => {
      const upTo = this.#urgentReadUpTo.get(head.dockId);
      return upTo !== undefined && head.id > upTo ? Number.POSITIVE_INFINITY : readyAt(head);
    };
    const ordinaryTurn = ++this.#picks % ORDINARY_SHARE === 0;
    let next: ReturnType<FairQueue<PendingDelivery>["next"]> = {
      delivery: null,
      at: Number.POSITIVE_INFINITY,
    };
    if (ordinaryTurn) next = this.#queue.next(now, ordinaryBusy, ordinaryReadyAt);
    if (next.delivery === null && !this.#urgent.empty) {
      const urgent = this.#urgent.next(now, busy, readyAt);
      next = urgent.delivery === null ? { delivery: null, at: Math.min(next.at, urgent.at) } : urgent;
    }
    if (next.delivery === null && !ordinaryTurn) {
      const ordinary = this.#queue.next(now, ordinaryBusy, ordinaryReadyAt);
      next = ordinary.delivery === null ? { delivery: null, at: Math.min(next.at, ordinary.at) } : ordinary;
    }
    if (next.delivery === null) return next;
    const { chatId, chatType } = next.delivery;
    return { delivery: next.delivery, ticket: this.#o.pacer.take(chatId, chatKind(chatType)) };
  }

  /** The lane a delivery is held in: the urgent one, or the rest. */
  #laneOf(delivery: PendingDelivery): FairQueue<PendingDelivery> {
    return delivery.urgent ? this.#urgent : this.#queue;
  }

  /** Lets a delivery go from memory; reads more of its Dock (in its lane) when it runs low. */
  #remove(delivery: PendingDelivery): void {
    if (this.#laneOf(delivery).remove(delivery)) {
      this.wake([delivery.urgent ? `${URGENT}${delivery.dockId}` : delivery.dockId]);
    }
  }

  /** Drops everything in memory for a chat that has become unreachable. */
  #dropChat(chatId: number): void {
    const low = [
      ...this.#urgent.dropChat(chatId).map((dockId) => `${URGENT}${dockId}`),
      ...this.#queue.dropChat(chatId),
    ];
    if (low.length > 0) this.wake(low);
  }

  /** A group became a supergroup (`from` → `to`): the deliveries held for it wait under the new id. */
  #moveChat(from: number, to: number): void {
    for (const lane of [this.#urgent, this.#queue])
      lane.moveChat(from, to, (delivery) => {
        delivery.chatType = "supergroup";
      });
  }

  /** While Telegram is down and no delivery is due: a probe that sends nothing (getMe). */
  async #probeIdle(): Promise<void> {
    this.#telegram.probeStarted();
    try {
      await (this.#copies as CopySender).probe();
      this.#telegramAnswered();
    } catch (error) {
      const outcome = this.#classify(error, 0);
      if (outcome.kind === "transient") this.#telegramFailed(outcome.reason);
      else this.#telegramAnswered();
    } finally {
      this.#telegram.probeEnded();
      if (this.#running) this.#pump();
    }
  }

  /**
   * One delivery: claim it, send its parts, record the outcome. `ticket`: the pacer's place taken
   * for its first part. The chat is busy until the outcome is written, however long the database
   * takes to accept it, so that none of the chat's later messages can overtake this one.
   */
  async #send(delivery: PendingDelivery, ticket: Ticket, probe: boolean): Promise<void> {
    const { chatId } = delivery;
    const kind = chatKind(delivery.chatType);
    this.#busyChats.add(chatId);
    this.#inFlight++;
    this.#inFlightIds.add(delivery.id);
    const progress = [...delivery.sentParts];
    const calls: TelegramCalls = {
      ticket,
      acquire: async () => {
        // The first call's place was taken when this delivery was picked; later calls wait their turn.
        // Without an abort signal the wait always ends with a place.
        const taken = calls.ticket ?? ((await this.#o.pacer.acquire(chatId, kind)) as Ticket);
        calls.ticket = null;
        return taken;
      },
    };
    try {
      let parts = this.#render(delivery);
      // Long enough for every call to time out once: a lease must not expire while we still call.
      // An edit may edit, send and delete as many parts as there are (plus the old ones).
      const estimate = delivery.kind === "send" ? parts.length : 2 * parts.length + 2;
      const lease = this.#now() + this.#o.leaseMs * estimate;
      let claim: Awaited<ReturnType<Outbox["claim"]>>;
      try {
        claim = await this.#o.outbox.claim(delivery.id, lease, delivery.lostLeases ?? []);
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
        this.#o.onSettled?.();
        return;
      }
      delivery.lease = claim.lease;
      if (claim.chatId !== chatId) {
        // The bot moved the chat (a group became a supergroup) after this row was read: hand the
        // claim back and let the chat's deliveries go, in order, under the new id.
        await this.#settler.handBack(delivery, "the group became a supergroup");
        this.#apply(delivery, { kind: "chat_moved", to: claim.chatId });
        return;
      }
      if (claim.revision !== delivery.revision) {
        // The message changed since it was read: the copy shows it as it is now.
        const now = await this.#o.outbox.messageNow(delivery.messageId);
        if (now !== undefined) {
          Object.assign(delivery, now);
          parts = this.#render(delivery);
        }
      }
      const revision = delivery.revision;
      let verdict: Verdict;
      try {
        if (delivery.kind === "send") {
          // A copy resumed after some parts went out shows in those the revision they were recorded
          // with; another, or none, is recorded as unknown (0), so that converging edits it.
          const resumed = delivery.sentParts.length > 0;
          const shown = !resumed || delivery.partsRevision === revision ? revision : 0;
          // An interrupted attempt that had recorded every part of this very rendering lost nothing.
          const resolved =
            delivery.unknownAttempts > 0 && resumed && shown === revision && progress.length >= parts.length;
          await this.#sendParts(delivery, parts, 0, progress, calls, shown);
          this.#telegramAnswered();
          verdict = await this.#settler.sent(delivery, progress, shown, resolved);
        } else if (delivery.kind === "edit") {
          const result = await this.#edit(delivery, parts, progress, calls);
          this.#telegramAnswered();
          verdict = await this.#settler.edited(delivery, { ...result, revision });
        } else {
          const { strays, ...result } = await this.#deleteCopy(delivery, calls);
          this.#telegramAnswered();
          verdict = await this.#settler.deletedCopy(delivery, result, strays);
        }
      } catch (failure) {
        const outcome = this.#classify(failure, delivery.chatId);
        if (outcome.kind === "transient") this.#telegramFailed(outcome.reason);
        else this.#telegramAnswered();
        if (outcome.kind === "rate_limited") this.#o.pacer.pause(delivery.chatId, outcome.retryAfter);
        verdict = await this.#settler.failed(delivery, outcome, progress, this.#telegram.down);
      }
      this.#apply(delivery, verdict);
      if (verdict.kind !== "again") this.#o.onSettled?.();
    } catch (error) {
      // Not an outage (those are waited out above): a bug. The row stays as it was (`sending`
      // after a claim); once its lease expires the sweep queues it again, so it is retried, never lost.
      logDatabaseFailure(this.#o.log, error, "could not record a delivery outcome", {
        deliveryId: delivery.id,
      });
      this.#remove(delivery);
    } finally {
      // A place taken for a call that never went (the claim failed, the row was gone) is given back.
      if (calls.ticket !== null) this.#o.pacer.cancel(calls.ticket);
      // A probe that ended without an answer either way (a database fault) is tried again later.
      if (probe) this.#telegram.probeEnded();
      this.#inFlightIds.delete(delivery.id);
      this.#busyChats.delete(chatId);
      this.#inFlight--;
      if (this.#inFlight === 0 && this.#idle) this.#idle();
      if (this.#running) this.#pump();
    }
  }

  /** The delivery's message as Telegram messages (domain/render.ts). */
  #render(delivery: PendingDelivery): RenderedPart[] {
    return renderNotification(
      { name: delivery.dockName, link: delivery.dockLink },
      delivery.text,
      delivery.content === null ? null : (JSON.parse(delivery.content) as MessageContent),
      { messageId: delivery.messageId, acked: delivery.acked },
    );
  }

  /**
   * One Telegram call, paced: its place is taken (the first was taken when the delivery was
   * picked), the call made, the latency observed and the place released.
   */
  async #call<T>(calls: TelegramCalls, call: (copies: CopySender) => Promise<T>): Promise<T> {
    const ticket = await calls.acquire();
    const started = performance.now();
    try {
      return await call(this.#copies as CopySender);
    } finally {
      const took = performance.now() - started;
      this.#o.metrics.telegramLatency.observe(took / 1000);
      this.#inFlightLimit.observe(took);
      this.#o.pacer.release(ticket);
    }
  }

  /**
   * Sends `parts` from `progress.length` on (those before went out already), adding each id to
   * `progress`. `record`: the revision the parts show, to put each id on record as soon as Telegram
   * answers (Settler.partsSent); null: not recorded until the outcome is.
   */
  async #sendParts(
    delivery: PendingDelivery,
    parts: RenderedPart[],
    offset: number,
    progress: number[],
    calls: TelegramCalls,
    record: number | null = null,
  ): Promise<void> {
    for (let i = progress.length - offset; i < parts.length; i++) {
      const part = parts[i] as RenderedPart;
      progress.push(await this.#call(calls, (copies) => copies.send(delivery.chatId, part)));
      if (record !== null) await this.#settler.partsSent(delivery, progress, record);
    }
  }

  /**
   * Edits a copy into `parts`: each of its messages edited in place, parts it lacks sent after it,
   * parts it no longer needs deleted. `progress`: the parts already sent by an earlier attempt of
   * this edit (not sent twice). A copy Telegram can no longer edit (the person deleted it; too old)
   * is sent anew instead, and the outcome says so.
   */
  async #edit(
    delivery: PendingDelivery,
    parts: RenderedPart[],
    progress: number[],
    calls: TelegramCalls,
  ): Promise<{ telegramIds: number[]; outcome: EditOutcome; note: string | null; strays: number[] }> {
    const copy = delivery.targetId === null ? undefined : await this.#o.outbox.copy(delivery.targetId);
    const strays = copy?.strays ?? [];
    const edited = await this.#editCopy(delivery, copy?.telegramIds ?? [], parts, progress, calls);
    // Then the copy's strays (messages of attempts whose outcome was unknown, that Telegram named
    // since) go, where Telegram lets them; one it will not delete shows what the copy's last part
    // shows (with its buttons), so that no stale Acknowledge button stays. A copy's own message is
    // never removed: a press may have named it a stray before its send or edit was recorded
    // (Outbox.sent and Outbox.edited then drop it from the strays).
    const own = new Set([...(copy?.telegramIds ?? []), ...edited.telegramIds]);
    for (const id of strays) {
      if (own.has(id)) continue;
      try {
        await this.#call(calls, (copies) => copies.delete(delivery.chatId, id));
      } catch (error) {
        const answer = changeAnswer(error);
        if (answer === null) throw error;
        if (answer !== "cannot_delete") continue;
        const last = parts.at(-1) as RenderedPart;
        try {
          await this.#call(calls, (copies) => copies.edit(delivery.chatId, id, last));
        } catch (failure) {
          if (changeAnswer(failure) === null) throw failure;
        }
      }
    }
    return { ...edited, strays };
  }

  /** The edit of a copy's own messages (see #edit). */
  async #editCopy(
    delivery: PendingDelivery,
    old: number[],
    parts: RenderedPart[],
    progress: number[],
    calls: TelegramCalls,
  ): Promise<{ telegramIds: number[]; outcome: EditOutcome; note: string | null }> {
    let changed = false;
    for (let i = 0; i < Math.min(parts.length, old.length); i++) {
      const part = parts[i] as RenderedPart;
      try {
        await this.#call(calls, (copies) => copies.edit(delivery.chatId, old[i] as number, part));
        changed = true;
      } catch (error) {
        const answer = changeAnswer(error);
        if (answer === "not_modified") continue;
        if (answer !== "not_found" && answer !== "cannot_edit") throw error;
        // Sent anew, whole. What is left of the old copy goes first, where Telegram lets it (a part
        // already edited would otherwise stand above the new copy; one it cannot delete stays).
        for (const id of old) {
          if (id === old[i]) continue;
          try {
            await this.#call(calls, (copies) => copies.delete(delivery.chatId, id));
          } catch (failure) {
            if (changeAnswer(failure) === null) throw failure;
          }
        }
        const fresh: number[] = [];
        await this.#sendParts(delivery, parts, 0, fresh, calls);
        const reason = answerText(error);
        return { telegramIds: fresh, outcome: "resent", note: `could not be edited (${reason}); sent anew` };
      }
    }
    // More parts than before: the extra ones follow (those an earlier attempt sent are in progress).
    if (parts.length > old.length) {
      await this.#sendParts(delivery, parts.slice(old.length), 0, progress, calls, 0);
      changed = true;
    }
    // Fewer: the parts left over go.
    for (const id of old.slice(parts.length)) {
      try {
        await this.#call(calls, (copies) => copies.delete(delivery.chatId, id));
      } catch (error) {
        if (changeAnswer(error) === null) throw error;
      }
      changed = true;
    }
    return {
      telegramIds: [...old.slice(0, parts.length), ...progress].slice(0, parts.length),
      outcome: changed ? "edited" : "unchanged",
      note: null,
    };
  }

  /** Deletes every Telegram message of a copy, its strays included (returned: they leave its record). */
  async #deleteCopy(
    delivery: PendingDelivery,
    calls: TelegramCalls,
  ): Promise<
    ({ outcome: "deleted" | "already_deleted" } | { outcome: "not_deleted"; error: string }) & {
      strays: number[];
    }
  > {
    const copy = delivery.targetId === null ? undefined : await this.#o.outbox.copy(delivery.targetId);
    const strays = copy?.strays ?? [];
    let deleted = 0;
    let refused: string | null = null;
    for (const id of [...(copy?.telegramIds ?? []), ...strays]) {
      try {
        await this.#call(calls, (copies) => copies.delete(delivery.chatId, id));
        deleted++;
      } catch (error) {
        const answer = changeAnswer(error);
        if (answer === "not_found") continue;
        if (answer === null || answer === "not_modified") throw error;
        refused = `400 ${answerText(error)}`;
      }
    }
    if (refused !== null) return { outcome: "not_deleted", error: refused, strays };
    return { outcome: deleted > 0 ? "deleted" : "already_deleted", strays };
  }

  /** What becomes of a delivery in memory once its outcome is on record (settle.ts). */
  #apply(delivery: PendingDelivery, verdict: Verdict): void {
    switch (verdict.kind) {
      case "done":
        this.#remove(delivery);
        return;
      case "again":
        this.#keep(delivery);
        return;
      case "chat_gone":
        this.#dropChat(delivery.chatId);
        return;
      case "chat_moved":
        this.#moveChat(delivery.chatId, verdict.to);
        this.#keep(delivery);
        return;
    }
  }

  /**
   * A delivery that goes back to the queue for another try: normally still held, in its place. If
   * this dispatcher lost the lock and took it back while the delivery was in flight, the queue in
   * memory was rebuilt without it (its row was `sending`): it goes back in, before its chat's later
   * messages.
   */
  #keep(delivery: PendingDelivery): void {
    const lane = this.#laneOf(delivery);
    if (this.#leading() && !lane.has(delivery.id)) lane.hold(delivery);
  }

  /**
   * What to do after a failed call, its reason cleaned of the bot token and of URLs' secrets: the
   * reason is logged, stored as the delivery's last error (which GET /messages/:id shows the
   * Dock's holder) and shown in /readyz. The CopySender's errors are clean already; a failure of
   * our own between the calls (recording Telegram's ids) is not the port's, and is cleaned here.
   */
  #classify(error: unknown, chatId: number): Outcome {
    const outcome = classify(error, chatId);
    return { ...outcome, reason: scrubToken(outcome.reason, this.#token) };
  }

  /** Telegram answered a send (with a message or an error about it): it is up. */
  #telegramAnswered(): void {
    const outage = this.#telegram.answered();
    if (outage === null) return;
    const now = this.#now();
    // Deliveries that sat out a backoff for this outage go now, at the pacer's rate, in their
    // chats' order; the rest of the queue never stopped being due.
    let woken = 0;
    for (const delivery of [...this.#urgent.all(), ...this.#queue.all()]) {
      if (delivery.waitedForTelegram !== undefined && delivery.waitedForTelegram >= outage.failingSince) {
        delivery.nextAttemptAt = Math.min(delivery.nextAttemptAt, now);
        delete delivery.waitedForTelegram;
        woken++;
      }
    }
    this.#o.log.info(
      { downSeconds: Math.round((now - outage.downSince) / 1000), woken },
      "Telegram answers again; deliveries resume",
    );
  }

  /** A send failed for Telegram's own reasons; enough of them in a row and Telegram is down. */
  #telegramFailed(reason: string): void {
    if (!this.#telegram.failed(reason)) return;
    this.#o.log.warn(
      { reason, probeEveryMs: PROBE_MAX_MS },
      "Telegram is not answering; deliveries wait, and one send at a time checks whether it is back",
    );
  }
}
