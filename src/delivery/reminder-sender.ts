import type { FastifyBaseLogger } from "fastify";
import type { MessageContent } from "../domain/message-options.ts";
import { renderReminder } from "../domain/render.ts";
import { scrubToken } from "../runtime/log.ts";
import { type BackgroundWorker, Looks } from "../runtime/worker.ts";
import type { DueStep, Escalations } from "../store/escalations.ts";
import { isOutage, logDatabaseFailure } from "../store/faults.ts";
import type { ClaimedReminder, ReminderStore } from "../store/reminders.ts";
import { changeAnswer, classify } from "../telegram/answers.ts";
import type { CopySender } from "../telegram/copies.ts";
import { chatKind, type Pacer, type Ticket } from "../telegram/pacer.ts";
import type { TelegramTarget } from "../telegram/target.ts";
import { backoffMs } from "./retry-policy.ts";

/** Reminders sent (or cleaned up) at once, each its own chat's turn in the pacer. */
const AT_ONCE = 8;
/** Messages whose rounds (or escalation steps) are taken per look. */
const ROUNDS_AT_ONCE = 50;

/** What adding an escalation step's message came to (the caller adds it as a send to its Dock). */
export type Escalated =
  | { kind: "added"; messageId: string; subscribers: number }
  | { kind: "later"; retryAfterSeconds: number }
  | { kind: "failed"; reason: string };

export interface ReminderSenderOptions {
  reminders: ReminderStore;
  escalations: Escalations;
  /** Adds a step's message to its Dock (idempotent per message, run and step: see store/escalations.ts). */
  escalate: (step: DueStep) => Promise<Escalated>;
  /** Records a step taken (MessageChanges.recordStep). */
  recordStep: (
    step: DueStep,
    escalatedId: string | null,
    subscribers: number,
    note: string | null,
  ) => Promise<boolean>;
  /** The one pacer of every Telegram call: reminders wait their turn with everything else. */
  pacer: Pacer;
  /** Telegram's calls (telegram/copies.ts's grammyCopySender), made in the places the pacer gives. */
  copies: (telegram: TelegramTarget) => CopySender;
  log: FastifyBaseLogger;
  /** How long a reminder being sent is reserved: a sender that died leaves it to another after this. */
  leaseMs: number;
  /** A reminder that keeps failing is given up once this old (DELIVERY_MAX_AGE_HOURS). */
  maxAgeMs: number;
  /** Look for work at least this often (another instance's messages, retries). */
  sweepMs: number;
  /** A round, a step or an end queued an event for the sender. */
  onEvent?: () => void;
  now?: () => number;
}

/**
 * Runs the reminders of unacknowledged messages and their escalations (store/reminders.ts,
 * store/escalations.ts): queues each message's rounds and takes its escalation's steps when due,
 * sends each reminder as a reply with sound to its copy, and deletes the reminders that the next
 * one replaced or that an acknowledgement made pointless. Runs on every instance: a round is taken
 * under the message's lock and each reminder is claimed with a lease, so each has one sender.
 *
 * Paced with everything else the bot sends, ahead of a backlog of deliveries (as the bot's replies
 * are): a reminder is what someone must see. Its place in the pacer is taken before it is claimed,
 * so a long wait (a group's 20 a minute, a `429`) never outlasts its lease; up to AT_ONCE at a
 * time, each in its own chat's turn, so a slow chat holds up no other.
 */
export class ReminderSender implements BackgroundWorker {
  readonly name = "reminders";
  readonly #o: ReminderSenderOptions;
  readonly #now: () => number;
  #api: CopySender | null = null;
  #token = "";
  #running = false;
  #sweep: NodeJS.Timeout | null = null;
  #timer: NodeJS.Timeout | null = null;
  readonly #looks = new Looks(
    () => this.#tick(),
    () => this.#running,
  );
  #stopping = new AbortController();
  #failing = false;
  /** Reminders being worked on here, by id, and their chats. */
  readonly #working = new Map<number, Promise<void>>();
  readonly #chats = new Set<number>();

  constructor(options: ReminderSenderOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
  }

  async start(telegram: TelegramTarget): Promise<void> {
    this.#token = telegram.token;
    this.#api = this.#o.copies(telegram);
    this.#stopping = new AbortController();
    this.#running = true;
    this.#sweep = setInterval(() => this.wake(), this.#o.sweepMs).unref();
    this.wake();
  }

  /** Stops looking for work; calls already sent are waited for, so their outcomes are kept. */
  async stop(): Promise<void> {
    this.#running = false;
    if (this.#sweep) clearInterval(this.#sweep);
    if (this.#timer) clearTimeout(this.#timer);
    this.#stopping.abort();
    await this.#looks.settled();
    await Promise.all(this.#working.values());
  }

  /** Look for work now (a message was acknowledged, resolved or deleted; the sweep came round). */
  wake(): void {
    this.#looks.now();
  }

  async #tick(): Promise<void> {
    try {
      // Idle, this is all a look costs: one statement.
      const next = await this.#o.reminders.nextDue();
      if (next === null || next > this.#now()) {
        this.#schedule(next);
        return;
      }
      let events = false;
      for (const messageId of await this.#o.reminders.dueRounds(ROUNDS_AT_ONCE)) {
        if (!this.#running) return;
        if ((await this.#o.reminders.round(messageId)).kind !== "none") events = true;
      }
      for (const messageId of await this.#o.escalations.due(ROUNDS_AT_ONCE)) {
        if (!this.#running) return;
        if (await this.#step(messageId)) events = true;
      }
      if (events) this.#o.onEvent?.();
      if (this.#working.size < AT_ONCE) {
        for (const work of await this.#o.reminders.due(AT_ONCE * 4)) {
          if (!this.#running || this.#working.size >= AT_ONCE) break;
          // One at a time per chat: a chat waiting for its turn holds up only itself.
          if (this.#working.has(work.id) || this.#chats.has(work.chatId)) continue;
          this.#chats.add(work.chatId);
          const done = this.#work(work.id, work.chatId)
            .catch((error: unknown) => logDatabaseFailure(this.#o.log, error, "a reminder's work failed"))
            .finally(() => {
              this.#working.delete(work.id);
              this.#chats.delete(work.chatId);
              this.wake();
            });
          this.#working.set(work.id, done);
        }
      }
      if (this.#running) this.#schedule(await this.#o.reminders.nextDue());
      if (this.#failing) this.#o.log.info("reminders are sent again");
      this.#failing = false;
    } catch (error) {
      if (!this.#failing)
        logDatabaseFailure(this.#o.log, error, "could not send reminders; trying again shortly");
      this.#failing = true;
    }
  }

  /** Wakes when the next round, step or retry is due (`next`), if before the next sweep. */
  #schedule(next: number | null): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    if (next === null || !this.#running) return;
    let wait = next - this.#now();
    if (wait >= this.#o.sweepMs) return;
    if (wait <= 0) {
      // Due already, yet not taken up: what waits behind work under way here (its end wakes us),
      // or a chat's second reminder. Not a loop on it: looked at again shortly.
      if (this.#working.size > 0) return;
      wait = 100;
    }
    this.#timer = setTimeout(() => this.wake(), wait + 5).unref();
  }

  /** Takes the message's escalation step, if due; true when one was recorded. */
  async #step(messageId: string): Promise<boolean> {
    const due = await this.#o.escalations.next(messageId);
    if (due === undefined) return false;
    let outcome: Escalated;
    if (!due.allowed) {
      outcome = {
        kind: "failed",
        reason: "the sending Dock's owner is no longer an owner or editor of that Dock",
      };
    } else {
      try {
        outcome = await this.#o.escalate(due);
      } catch (error) {
        if (isOutage(error)) throw error;
        outcome = { kind: "failed", reason: error instanceof Error ? error.message : String(error) };
      }
    }
    if (outcome.kind === "later") {
      await this.#o.escalations.later(due, this.#now() + outcome.retryAfterSeconds * 1000);
      return false;
    }
    if (outcome.kind === "failed") {
      this.#o.log.warn(
        { messageId, step: due.step + 1, reason: outcome.reason },
        "an escalation step failed",
      );
      return this.#o.recordStep(due, null, 0, outcome.reason);
    }
    return this.#o.recordStep(due, outcome.messageId, outcome.subscribers, null);
  }

  /** One reminder's work: its turn in the pacer, then its claim, then its call. */
  async #work(id: number, chatId: number): Promise<void> {
    const api = this.#api;
    if (api === null) return;
    const ticket = await this.#o.pacer.acquire(chatId, chatKind(chatId > 0 ? "private" : "group"), {
      priority: "reply",
      signal: this.#stopping.signal,
    });
    if (ticket === null) return;
    let reminder: ClaimedReminder | undefined;
    try {
      reminder = await this.#o.reminders.claim(id, this.#now() + this.#o.leaseMs);
    } catch (error) {
      this.#o.pacer.cancel(ticket);
      logDatabaseFailure(this.#o.log, error, "could not claim a reminder");
      return;
    }
    if (reminder === undefined) {
      this.#o.pacer.cancel(ticket);
      return;
    }
    try {
      if (reminder.cleanup) await this.#cleanup(api, reminder, ticket);
      else await this.#send(api, reminder, ticket);
    } catch (error) {
      // A fault of ours (a message that will not render): the place goes back; the row is taken
      // up again when its lease ends.
      this.#o.pacer.cancel(ticket);
      throw error;
    }
  }

  /** A Telegram call in the place `ticket` holds (released when it is answered). */
  async #call<T>(ticket: Ticket, chatId: number, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      const outcome = classify(error, chatId);
      if (outcome.kind === "rate_limited") this.#o.pacer.pause(chatId, outcome.retryAfter);
      throw error;
    } finally {
      this.#o.pacer.release(ticket);
    }
  }

  async #send(api: CopySender, reminder: ClaimedReminder, ticket: Ticket): Promise<void> {
    if (reminder.over) {
      // Acknowledged, resolved or deleted since it was queued, or the chat left: not sent.
      this.#o.pacer.cancel(ticket);
      await this.#o.reminders
        .settle(reminder, { state: "gone", error: "not needed any more" })
        .catch((error: unknown) => logDatabaseFailure(this.#o.log, error, "could not record a reminder"));
      return;
    }
    const content = reminder.content === null ? null : (JSON.parse(reminder.content) as MessageContent);
    const part = renderReminder(reminder.kind, reminder.round, reminder.text, content, reminder.messageId);
    let sentId: number;
    try {
      sentId = await this.#call(ticket, reminder.chatId, () =>
        api.send(reminder.chatId, {
          ...part,
          ...(reminder.replyTo === null
            ? {}
            : { reply_parameters: { message_id: reminder.replyTo, allow_sending_without_reply: true } }),
        }),
      );
    } catch (error) {
      await this.#failed(reminder, error);
      return;
    }
    let recorded = false;
    try {
      recorded = await this.#o.reminders.sent(reminder, sentId);
    } catch (error) {
      logDatabaseFailure(this.#o.log, error, "could not record a reminder sent; deleting it");
    }
    // Sent, but not on record (its lease passed on, or the database failed): a reminder nobody
    // would ever delete, with live buttons. It goes now; the one on record is sent by its holder.
    if (!recorded) await this.#deleteUnrecorded(api, reminder.chatId, sentId);
  }

  async #deleteUnrecorded(api: CopySender, chatId: number, messageId: number): Promise<void> {
    const ticket = await this.#o.pacer.acquire(chatId, chatKind(chatId > 0 ? "private" : "group"), {
      priority: "reply",
      signal: this.#stopping.signal,
    });
    if (ticket === null) return;
    await this.#call(ticket, chatId, () => api.delete(chatId, messageId)).catch(() => {});
  }

  /** Deletes a reminder that another replaced or that is no longer needed; gone already is as good. */
  async #cleanup(api: CopySender, reminder: ClaimedReminder, ticket: Ticket): Promise<void> {
    const chatId = reminder.chatId;
    let again: { at: number; error: string } | null = null;
    if (reminder.telegramMessageId === null) this.#o.pacer.cancel(ticket);
    else {
      try {
        const id = reminder.telegramMessageId;
        await this.#call(ticket, chatId, () => api.delete(chatId, id));
      } catch (error) {
        const outcome = classify(error, chatId);
        const giveUp =
          changeAnswer(error) !== null ||
          outcome.kind === "gone" ||
          outcome.kind === "permanent" ||
          this.#now() - reminder.createdAt > this.#o.maxAgeMs;
        if (!giveUp) {
          const wait =
            outcome.kind === "rate_limited" ? outcome.retryAfter * 1000 : backoffMs(reminder.attempts);
          again = { at: this.#now() + wait, error: scrubToken(outcome.reason, this.#token) };
        }
      }
    }
    await this.#o.reminders
      .cleaned(reminder, again)
      .catch((error: unknown) =>
        logDatabaseFailure(this.#o.log, error, "could not record a reminder's cleanup"),
      );
  }

  async #failed(reminder: ClaimedReminder, error: unknown): Promise<void> {
    const outcome = classify(error, reminder.chatId);
    const reason = scrubToken(outcome.reason, this.#token);
    const now = this.#now();
    try {
      if (outcome.kind === "rate_limited") {
        await this.#o.reminders.settle(reminder, {
          state: "queued",
          error: reason,
          at: now + outcome.retryAfter * 1000,
        });
      } else if (outcome.kind === "transient" && now - reminder.createdAt < this.#o.maxAgeMs) {
        // Tried again until the next round takes its place, the reminders end, or it is too old.
        await this.#o.reminders.settle(reminder, {
          state: "queued",
          error: reason,
          at: now + backoffMs(reminder.attempts),
        });
      } else {
        await this.#o.reminders.settle(reminder, {
          state: outcome.kind === "gone" || outcome.kind === "moved" ? "gone" : "failed",
          error: reason,
        });
        this.#o.log.info({ reminder: reminder.id, reason }, "a reminder was not sent");
      }
    } catch (settleError) {
      logDatabaseFailure(this.#o.log, settleError, "could not record how a reminder went");
    }
  }
}
