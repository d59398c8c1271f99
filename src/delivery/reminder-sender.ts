import type { FastifyBaseLogger } from "fastify";
import { Api } from "grammy";
import type { MessageContent } from "../domain/message-options.ts";
import { renderReminder } from "../domain/render.ts";
import { scrubToken } from "../runtime/log.ts";
import type { BackgroundWorker } from "../runtime/worker.ts";
import { logDatabaseFailure } from "../store/faults.ts";
import type { ClaimedReminder, ReminderStore } from "../store/reminders.ts";
import { changeAnswer, classify } from "../telegram/answers.ts";
import { type Pacer, PaceWaitAborted, pacedSends } from "../telegram/pacer.ts";
import type { TelegramTarget } from "../telegram/target.ts";
import { backoffMs } from "./retry-policy.ts";

/** Reminders sent (or cleaned up) at once, each its own chat's turn in the pacer. */
const AT_ONCE = 8;
/** Messages whose rounds are queued per look. */
const ROUNDS_AT_ONCE = 50;

export interface ReminderSenderOptions {
  reminders: ReminderStore;
  /** The one pacer of every Telegram call: reminders wait their turn with everything else. */
  pacer: Pacer;
  log: FastifyBaseLogger;
  /** A Telegram call that has not answered by then counts as failed (and is tried again). */
  telegramTimeoutSeconds: number;
  /** How long a reminder being sent is reserved: a sender that died leaves it to another after this. */
  leaseMs: number;
  /** A cleanup that keeps failing is given up once its reminder is this old (DELIVERY_MAX_AGE_HOURS). */
  maxAgeMs: number;
  /** Look for work at least this often (another instance's messages, retries). */
  sweepMs: number;
  /** A round was queued or the reminders of a message ended (the sender's events may be waiting). */
  onRound?: () => void;
  now?: () => number;
}

/**
 * Runs the reminders of unacknowledged messages (store/reminders.ts): queues each message's rounds
 * when they are due, sends each reminder as a reply with sound to its copy, and deletes the
 * reminders that the next one replaced or that an acknowledgement made pointless. Runs on every
 * instance: a round is taken under the message's lock and the reminders are claimed with leases,
 * so each round and each reminder has one sender. Paced with everything else the bot sends, ahead
 * of a backlog of deliveries (as the bot's replies are): a reminder is what someone must see.
 */
export class ReminderSender implements BackgroundWorker {
  readonly name = "reminders";
  readonly #o: ReminderSenderOptions;
  readonly #now: () => number;
  #api: Api | null = null;
  #token = "";
  #running = false;
  #sweep: NodeJS.Timeout | null = null;
  #timer: NodeJS.Timeout | null = null;
  #ticking: Promise<void> | null = null;
  #stopping = new AbortController();
  #again = false;
  #failing = false;

  constructor(options: ReminderSenderOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
  }

  async start(telegram: TelegramTarget): Promise<void> {
    this.#token = telegram.token;
    const api = new Api(telegram.token, {
      apiRoot: telegram.apiRoot,
      timeoutSeconds: this.#o.telegramTimeoutSeconds,
    });
    this.#stopping = new AbortController();
    api.config.use(pacedSends(this.#o.pacer, this.#stopping.signal));
    this.#api = api;
    this.#running = true;
    this.#sweep = setInterval(() => this.wake(), this.#o.sweepMs).unref();
    this.wake();
  }

  /** Stops looking for work; a call already sent is waited for, so its outcome is kept. */
  async stop(): Promise<void> {
    this.#running = false;
    if (this.#sweep) clearInterval(this.#sweep);
    if (this.#timer) clearTimeout(this.#timer);
    this.#stopping.abort();
    await this.#ticking;
  }

  /** Look for work now (a message was acknowledged, resolved or deleted; the sweep came round). */
  wake(): void {
    if (!this.#running) return;
    if (this.#ticking !== null) {
      this.#again = true;
      return;
    }
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
      let rounds = false;
      while (this.#running) {
        const due = await this.#o.reminders.dueRounds(ROUNDS_AT_ONCE);
        for (const messageId of due) {
          const round = await this.#o.reminders.round(messageId);
          if (round.kind !== "none") rounds = true;
        }
        if (due.length < ROUNDS_AT_ONCE) break;
      }
      if (rounds) this.#o.onRound?.();
      while (this.#running) {
        const due = await this.#o.reminders.due(AT_ONCE);
        if (due.length === 0) break;
        await Promise.all(due.map((id) => this.#work(id)));
      }
      if (this.#running) await this.#schedule();
      if (this.#failing) this.#o.log.info("reminders are sent again");
      this.#failing = false;
    } catch (error) {
      if (!this.#failing)
        logDatabaseFailure(this.#o.log, error, "could not send reminders; trying again shortly");
      this.#failing = true;
    }
  }

  /** Wakes when the next round or retry is due, if before the next sweep. */
  async #schedule(): Promise<void> {
    const next = await this.#o.reminders.nextDue();
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    if (next === null) return;
    const wait = next - this.#now();
    if (wait >= this.#o.sweepMs) return;
    this.#timer = setTimeout(() => this.wake(), Math.max(0, wait) + 5).unref();
  }

  async #work(id: number): Promise<void> {
    const reminder = await this.#o.reminders.claim(id, this.#now() + this.#o.leaseMs);
    const api = this.#api;
    if (reminder === undefined || api === null) return;
    if (reminder.cleanup) {
      await this.#cleanup(api, reminder);
      return;
    }
    try {
      if (reminder.over) {
        // Acknowledged, resolved or deleted since it was queued, or the chat left: not sent.
        await this.#o.reminders.settle(reminder, { state: "gone", error: "not needed any more" });
        return;
      }
      const content = reminder.content === null ? null : (JSON.parse(reminder.content) as MessageContent);
      const { text, ...options } = renderReminder(
        reminder.kind,
        reminder.round,
        reminder.text,
        content,
        reminder.messageId,
      );
      const sent = await api.sendMessage(reminder.chatId, text, {
        ...options,
        ...(reminder.replyTo === null
          ? {}
          : { reply_parameters: { message_id: reminder.replyTo, allow_sending_without_reply: true } }),
      });
      await this.#o.reminders.sent(reminder, sent.message_id);
    } catch (error) {
      await this.#failed(reminder, error);
    }
  }

  /** Deletes a reminder that another replaced or that is no longer needed; gone already is as good. */
  async #cleanup(api: Api, reminder: ClaimedReminder): Promise<void> {
    try {
      try {
        if (reminder.telegramMessageId !== null)
          await api.deleteMessage(reminder.chatId, reminder.telegramMessageId);
      } catch (error) {
        if (error instanceof PaceWaitAborted) throw error;
        const answer = changeAnswer(error);
        const outcome = classify(error, reminder.chatId);
        const giveUp =
          answer !== null ||
          outcome.kind === "gone" ||
          outcome.kind === "permanent" ||
          this.#now() - reminder.createdAt > this.#o.maxAgeMs;
        if (!giveUp) {
          const at =
            this.#now() +
            (outcome.kind === "rate_limited" ? outcome.retryAfter * 1000 : backoffMs(reminder.attempts));
          await this.#o.reminders.cleaned(reminder, { at, error: scrubToken(outcome.reason, this.#token) });
          return;
        }
      }
      await this.#o.reminders.cleaned(reminder, null);
    } catch (error) {
      if (error instanceof PaceWaitAborted) {
        await this.#o.reminders
          .cleaned(reminder, { at: this.#now(), error: "the service stopped while it waited its turn" })
          .catch(() => {});
        return;
      }
      logDatabaseFailure(this.#o.log, error, "could not record a reminder's cleanup");
    }
  }

  async #failed(reminder: ClaimedReminder, error: unknown): Promise<void> {
    try {
      if (error instanceof PaceWaitAborted) {
        // Never sent: due again at once, for whichever instance runs next.
        await this.#o.reminders.settle(reminder, {
          state: "queued",
          error: "not sent yet: the service stopped while it waited its turn",
        });
        return;
      }
      const outcome = classify(error, reminder.chatId);
      const reason = scrubToken(outcome.reason, this.#token);
      const now = this.#now();
      if (outcome.kind === "rate_limited") {
        await this.#o.reminders.settle(reminder, {
          state: "queued",
          error: reason,
          at: now + outcome.retryAfter * 1000,
        });
      } else if (outcome.kind === "transient") {
        // Tried again until the next round takes its place (or the reminders end).
        await this.#o.reminders.settle(reminder, {
          state: "queued",
          error: reason,
          at: now + backoffMs(reminder.attempts),
        });
      } else {
        await this.#o.reminders.settle(reminder, {
          state: outcome.kind === "permanent" ? "failed" : "gone",
          error: reason,
        });
        this.#o.log.info({ reminder: reminder.id, reason }, "a reminder was not sent");
      }
    } catch (settleError) {
      logDatabaseFailure(this.#o.log, settleError, "could not record how a reminder went");
    }
  }
}
