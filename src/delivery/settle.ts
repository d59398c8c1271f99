import { setTimeout as sleep } from "node:timers/promises";
import type { FastifyBaseLogger } from "fastify";
import type { DeliveryMetrics } from "../runtime/metrics.ts";
import { isOutage, logDatabaseFailure } from "../store/faults.ts";
import type { EditOutcome, Outbox, PendingDelivery } from "../store/outbox.ts";
import type { SubscriptionRepository } from "../store/subscriptions.ts";
import type { Outcome } from "../telegram/answers.ts";
import { backoffMs } from "./retry-policy.ts";

/** An outcome the database would not take is written again after this long, doubling to the cap. */
export const PERSIST_FIRST_MS = 250;
const PERSIST_MAX_MS = 5000;

/** How a settling write ended: written, refused (the lease was gone), or abandoned as the service stopped. */
export type Recorded = "written" | "refused" | "abandoned";

/** What becomes of a delivery in the dispatcher's memory once its outcome is on record. */
export type Verdict =
  /** Done (sent, failed): it leaves the queue. */
  | { kind: "done" }
  /** Back in its place for another try (a retry, a 429). */
  | { kind: "again" }
  /** Its chat cannot be reached: every delivery held for the chat leaves. */
  | { kind: "chat_gone" }
  /** Its chat has a new id: the chat's deliveries wait under it, this one first. */
  | { kind: "chat_moved"; to: number };

export interface SettlerOptions {
  outbox: Outbox;
  /** For a group that became a supergroup: its subscriptions follow it. */
  subscriptions: SubscriptionRepository;
  log: FastifyBaseLogger;
  metrics: DeliveryMetrics;
  /** Give up on a delivery that keeps failing once it is this old. */
  maxAgeMs: number;
  /** Whether the service still runs: a write is retried until it is stored or the service stops. */
  running: () => boolean;
  now: () => number;
}

/**
 * Records how each send ended, in the outbox (the states are store/outbox.ts's), with the
 * metrics and the log line that go with it, and says what becomes of the delivery in memory.
 * The dispatcher decides what to send and when; this decides what an answer means for the row.
 */
export class Settler {
  readonly #o: SettlerOptions;

  constructor(options: SettlerOptions) {
    this.#o = options;
  }

  /**
   * Writes a delivery's outcome (or another change of its row), again and again while the
   * database is down or full: Telegram has already acted, and the chat's next message must not go
   * before this one is on record. Gives up only when the service stops (the next start re-queues
   * the row: at worst one duplicate). Anything but an outage is thrown.
   */
  async persist(delivery: PendingDelivery, write: () => Promise<unknown>): Promise<Recorded> {
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
        if (!this.#o.running()) return "abandoned";
        await sleep(delay);
      }
    }
  }

  /**
   * Telegram took parts of the delivery (`sentParts`, all of them so far, showing `revision`):
   * their ids are written at once, ahead of the outcome (Outbox.recordParts), so that a crash
   * before the settle commits resumes after them instead of sending them again. Not waited out
   * when the database fails: the settle that follows keeps trying, and says so.
   */
  async partsSent(delivery: PendingDelivery, sentParts: number[], revision: number): Promise<void> {
    try {
      await this.#o.outbox.recordParts(delivery, sentParts, revision);
    } catch (error) {
      if (!isOutage(error)) throw error;
    }
  }

  /**
   * Every part reached the chat, showing the message's `revision`. `resolved`: an interrupted
   * attempt had recorded every part (see Outbox.sent). An outcome that came too late to be recorded
   * (another attempt holds the copy now, and may send it again) leaves its ids as the copy's strays.
   */
  async sent(
    delivery: PendingDelivery,
    sentParts: number[],
    revision: number,
    resolved = false,
  ): Promise<Verdict> {
    const recorded = await this.persist(delivery, () =>
      this.#o.outbox.sent(delivery, sentParts, revision, resolved),
    );
    this.#recorded(recorded, delivery);
    if (recorded === "refused") {
      await this.persist(delivery, () => this.#o.outbox.straysOf(delivery, sentParts));
    }
    this.#o.metrics.outcomes.inc({ outcome: "sent", reason: "ok" });
    this.#o.metrics.acceptToSend.observe((this.#o.now() - delivery.createdAt) / 1000);
    return { kind: "done" };
  }

  /** An edit is done: the copy shows `revision` (see Outbox.edited). */
  async edited(
    delivery: PendingDelivery,
    result: {
      telegramIds: number[];
      revision: number;
      outcome: EditOutcome;
      note: string | null;
      strays: number[];
    },
  ): Promise<Verdict> {
    const edit = { ...delivery, targetId: delivery.targetId as number };
    this.#recorded(await this.persist(delivery, () => this.#o.outbox.edited(edit, result)), delivery);
    this.#o.metrics.outcomes.inc({ outcome: "edited", reason: result.outcome });
    if (result.outcome === "resent") {
      this.#o.log.info(
        {
          deliveryId: delivery.id,
          messageId: delivery.messageId,
          chatId: delivery.chatId,
          reason: result.note,
        },
        "a copy could not be edited; sent anew",
      );
    }
    return { kind: "done" };
  }

  /** A delete is done, or Telegram would not delete the copy (see Outbox.deletedCopy). */
  async deletedCopy(
    delivery: PendingDelivery,
    result: { outcome: "deleted" | "already_deleted" } | { outcome: "not_deleted"; error: string },
    strays: number[],
  ): Promise<Verdict> {
    this.#recorded(
      await this.persist(delivery, () => this.#o.outbox.deletedCopy(delivery, result, strays)),
      delivery,
    );
    this.#o.metrics.outcomes.inc({ outcome: "deleted", reason: result.outcome });
    if (result.outcome === "not_deleted") {
      this.#o.log.info(
        {
          deliveryId: delivery.id,
          messageId: delivery.messageId,
          chatId: delivery.chatId,
          reason: result.error,
        },
        "Telegram would not delete a copy",
      );
    }
    return { kind: "done" };
  }

  /**
   * A failed send, classified (telegram/answers.ts). `telegramDown`: Telegram counts as down (the
   * breaker, after this failure): a retry then waits for the probes, not a backoff of its own.
   */
  async failed(
    delivery: PendingDelivery,
    outcome: Outcome,
    sentParts: number[],
    telegramDown: boolean,
  ): Promise<Verdict> {
    const now = this.#o.now();
    const context = {
      deliveryId: delivery.id,
      messageId: delivery.messageId,
      chatId: delivery.chatId,
      reason: outcome.reason,
    };
    switch (outcome.kind) {
      case "rate_limited": {
        this.#o.metrics.tooManyRequests.inc();
        delivery.nextAttemptAt = now + outcome.retryAfter * 1000;
        delivery.sentParts = sentParts;
        await this.#retry(delivery, {
          nextAttemptAt: delivery.nextAttemptAt,
          error: outcome.reason,
          count: false,
        });
        this.#o.log.warn(context, "Telegram asked us to slow down");
        return { kind: "again" };
      }
      case "gone":
        await this.persist(delivery, () => this.#o.outbox.chatGone(delivery.chatId, outcome.reason));
        this.#o.metrics.outcomes.inc({ outcome: "gone", reason: "unreachable" });
        this.#o.log.info(context, "chat unreachable; its subscriptions are now inactive");
        return { kind: "chat_gone" };
      case "moved": {
        // Not the delivery's fault: no attempt counted, and it goes out again at once, to the new chat.
        delivery.sentParts = sentParts;
        await this.#retry(delivery, { nextAttemptAt: now, error: outcome.reason, count: false });
        // After the retry: the move takes queued deliveries along, this one included.
        await this.persist(delivery, () => this.#o.subscriptions.moveChat(delivery.chatId, outcome.to));
        this.#o.log.info(
          { ...context, to: outcome.to },
          "group became a supergroup; its subscriptions moved",
        );
        return { kind: "chat_moved", to: outcome.to };
      }
      case "transient": {
        if (now - delivery.createdAt >= this.#o.maxAgeMs) break;
        delivery.attempts++;
        // While Telegram is down the probes decide when to try again (and wake this one the
        // moment it answers); a failure of its own backs off.
        delivery.nextAttemptAt = telegramDown ? now : now + backoffMs(delivery.attempts);
        delivery.waitedForTelegram = now;
        delivery.sentParts = sentParts;
        await this.#retry(delivery, {
          nextAttemptAt: delivery.nextAttemptAt,
          error: outcome.reason,
          count: true,
        });
        this.#o.metrics.outcomes.inc({ outcome: "retried", reason: "transient" });
        // While down, the outage is one story (its start and end), not a line per delivery.
        if (telegramDown) {
          this.#o.log.debug({ ...context, attempts: delivery.attempts }, "delivery will be retried");
        } else this.#o.log.warn({ ...context, attempts: delivery.attempts }, "delivery will be retried");
        return { kind: "again" };
      }
      case "permanent":
        break;
    }
    this.#recorded(
      await this.persist(delivery, () =>
        this.#o.outbox.failed(delivery.id, delivery.lease, outcome.reason, sentParts),
      ),
      delivery,
    );
    this.#o.metrics.outcomes.inc({
      outcome: "failed",
      reason: outcome.kind === "permanent" ? "rejected" : "expired",
    });
    this.#o.log.warn(context, "delivery failed");
    return { kind: "done" };
  }

  /**
   * The chat moved (a group became a supergroup) after the row was read: the claim is handed back,
   * no attempt counted, and the delivery goes out under the new id.
   */
  async handBack(delivery: PendingDelivery, error: string): Promise<void> {
    await this.#retry(delivery, { nextAttemptAt: delivery.nextAttemptAt, error, count: false, tried: false });
  }

  async #retry(
    delivery: PendingDelivery,
    retry: { nextAttemptAt: number; error: string; count: boolean; tried?: boolean },
  ): Promise<void> {
    await this.persist(delivery, () =>
      this.#o.outbox.retry(delivery.id, delivery.lease, {
        nextAttemptAt: retry.nextAttemptAt,
        error: retry.error,
        countAttempt: retry.count,
        sentParts: delivery.sentParts,
        ...(retry.tried === false ? { tried: false } : {}),
      }),
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
}
