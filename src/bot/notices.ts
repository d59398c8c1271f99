import type { FastifyBaseLogger } from "fastify";
import { Api } from "grammy";
import { backoffMs } from "../delivery/retry-policy.ts";
import { scrubToken } from "../runtime/log.ts";
import { type BackgroundWorker, Looks } from "../runtime/worker.ts";
import { logDatabaseFailure } from "../store/faults.ts";
import type { JoinRequestRepository } from "../store/join-requests.ts";
import type { ClaimedNotice, NoticeQueue } from "../store/notices.ts";
import { changeAnswer, classify } from "../telegram/answers.ts";
import { type Pacer, PaceWaitAborted, pacedSends } from "../telegram/pacer.ts";
import type { TelegramTarget } from "../telegram/target.ts";
import { requestCopy } from "./requests.ts";
import { texts } from "./texts.ts";

/** Notices sent at once (each its own chat's turn in the pacer). */
const AT_ONCE = 8;

export interface NoticeSenderOptions {
  notices: NoticeQueue;
  /** Join requests: their copies are rendered from them, and those whose time ran out end here. */
  requests: JoinRequestRepository;
  /** The one pacer of every Telegram call: notices wait their turn with deliveries and replies. */
  pacer: Pacer;
  log: FastifyBaseLogger;
  /** A Telegram call that has not answered by then counts as failed (and is tried again). */
  telegramTimeoutSeconds: number;
  /** How long a notice being sent is reserved: a sender that died leaves it to another after this. */
  leaseMs: number;
  /** A notice that keeps failing is given up once this old (DELIVERY_MAX_AGE_HOURS). */
  maxAgeMs: number;
  /** Look for work this often even when nothing woke us (another instance's notices, retries, expiries). */
  sweepMs: number;
  now?: () => number;
}

/**
 * Sends the bot's notices (store/notices.ts): a join request's copy to each decider (then edits
 * it as the request ends), a request's outcome to the chat that asked, a removal, a deleted Dock.
 * Also ends the join requests whose time ran out. Runs on every instance: claims are conditional,
 * so one notice has one sender at a time. Paced with everything else the bot sends; a `429` waits
 * its `retry_after`, a failure backs off and is tried again until the notice is too old, and a
 * chat that is gone (it blocked the bot, the bot left) is not tried again.
 */
export class NoticeSender implements BackgroundWorker {
  readonly name = "notices";
  readonly #o: NoticeSenderOptions;
  readonly #now: () => number;
  #api: Api | null = null;
  #token = "";
  #running = false;
  #sweep: NodeJS.Timeout | null = null;
  #stopListening: (() => void) | null = null;
  readonly #looks = new Looks(
    () => this.#tick(),
    () => this.#running,
  );
  /** Aborted by stop(): notices still waiting for their turn give it up (a send under way finishes). */
  #stopping = new AbortController();
  /** The last look failed (the database away): said once, and once more when it works again. */
  #failing = false;

  constructor(options: NoticeSenderOptions) {
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
    this.#stopListening = this.#o.notices.onQueued(() => this.wake());
    this.#sweep = setInterval(() => this.wake(), this.#o.sweepMs).unref();
    this.wake();
  }

  /**
   * Stops looking for work. Notices waiting for their turn in the pacer (a group's 20 a minute can
   * hold one for most of a minute) are queued again, unsent, for whichever instance runs next;
   * a call already sent is waited for (at most TELEGRAM_TIMEOUT_SECONDS), so its outcome is kept.
   */
  async stop(): Promise<void> {
    this.#running = false;
    this.#stopListening?.();
    if (this.#sweep) clearInterval(this.#sweep);
    this.#stopping.abort();
    await this.#looks.settled();
  }

  /** Look for work now (notices were queued here, or the sweep came round). */
  wake(): void {
    this.#looks.now();
  }

  async #tick(): Promise<void> {
    try {
      await this.#o.requests.expireDue();
      await this.#o.notices.requeueExpired();
      while (this.#running) {
        const due = await this.#o.notices.due(AT_ONCE);
        if (due.length === 0) break;
        await Promise.all(due.map((id) => this.#send(id)));
      }
      if (this.#failing) this.#o.log.info("the bot's notices are sent again");
      this.#failing = false;
    } catch (error) {
      if (!this.#failing)
        logDatabaseFailure(this.#o.log, error, "could not send the bot's notices; trying again shortly");
      this.#failing = true;
    }
  }

  async #send(id: number): Promise<void> {
    const notice = await this.#o.notices.claim(id, this.#now() + this.#o.leaseMs);
    const api = this.#api;
    if (notice === undefined || api === null) return;
    try {
      if (notice.kind === "request_copy") {
        await this.#sendCopy(api, notice);
        return;
      }
      const sent = await api.sendMessage(notice.chatId, this.#text(notice), {
        parse_mode: "HTML",
        link_preview_options: { is_disabled: true },
      });
      await this.#o.notices.done(notice, sent.message_id);
    } catch (error) {
      await this.#failed(notice, error);
    }
  }

  /** A join request's copy: sent the first time, then edited to show the request as it is now. */
  async #sendCopy(api: Api, notice: ClaimedNotice): Promise<void> {
    const request = notice.requestId === null ? undefined : await this.#o.requests.get(notice.requestId);
    // Gone with its Dock: nothing to show.
    if (request === undefined) {
      await this.#o.notices.done(notice);
      return;
    }
    const { text, buttons } = requestCopy(request);
    const options = {
      parse_mode: "HTML" as const,
      link_preview_options: { is_disabled: true },
      ...(buttons === null ? {} : { reply_markup: buttons }),
    };
    if (notice.messageId === null) {
      const sent = await api.sendMessage(notice.chatId, text, options);
      await this.#o.notices.done(notice, sent.message_id);
      return;
    }
    try {
      await api.editMessageText(notice.chatId, notice.messageId, text, options);
    } catch (error) {
      // Already showing it, or the decider deleted the copy: nothing more to do for it.
      if (changeAnswer(error) === null) throw error;
    }
    await this.#o.notices.done(notice);
  }

  /** A one-off notice's text (the Dock's name as it was when the notice was made). */
  #text(notice: ClaimedNotice): string {
    const dock = notice.dockName ?? "";
    const group = notice.chatId < 0;
    switch (notice.kind) {
      case "removed":
        return texts.removed(dock, group);
      case "dock_deleted":
        return texts.dockDeleted(dock);
      default:
        return notice.detail === "approved"
          ? texts.requestApproved(dock, group)
          : notice.detail === "declined"
            ? texts.requestDeclined(dock, group)
            : texts.requestExpired(dock, group);
    }
  }

  async #failed(notice: ClaimedNotice, error: unknown): Promise<void> {
    if (error instanceof PaceWaitAborted) {
      // Never sent: due again at once, for the next instance to send.
      try {
        await this.#o.notices.putBack(notice, "not sent yet: the service stopped while it waited its turn");
      } catch (settleError) {
        logDatabaseFailure(this.#o.log, settleError, "could not record how a bot notice went");
      }
      return;
    }
    const outcome = classify(error, notice.chatId);
    const reason = scrubToken(outcome.reason, this.#token);
    const now = this.#now();
    try {
      if (outcome.kind === "rate_limited") {
        await this.#o.notices.retry(notice, now + outcome.retryAfter * 1000, reason);
      } else if (outcome.kind === "transient" && now - notice.createdAt < this.#o.maxAgeMs) {
        await this.#o.notices.retry(notice, now + backoffMs(notice.attempts), reason);
      } else {
        // The chat is gone (blocked, left, upgraded away), Telegram refuses it, or it is too old.
        await this.#o.notices.failed(notice, reason);
        this.#o.log.info({ notice: notice.id, kind: notice.kind, reason }, "a bot notice was not sent");
      }
    } catch (settleError) {
      logDatabaseFailure(this.#o.log, settleError, "could not record how a bot notice went");
    }
  }
}
