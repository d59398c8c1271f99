import type { FastifyBaseLogger } from "fastify";
import type { ActivityRepository } from "../store/activity.ts";
import type { DockAudit } from "../store/audit.ts";
import type { EventOutbox } from "../store/events.ts";
import { logDatabaseFailure } from "../store/faults.ts";
import type { JoinRequestRepository } from "../store/join-requests.ts";
import type { LoginTokenRepository } from "../store/login-tokens.ts";
import type { NoticeQueue } from "../store/notices.ts";
import type { Outbox } from "../store/outbox.ts";
import type { OwnerRepository } from "../store/owners.ts";

/**
 * Deletes what is no longer needed, hourly and at start: finished messages (every delivery sent,
 * failed or gone) older than RETENTION_DAYS with the events posted about them, the Docks' audit
 * entries and the join requests that ended that long ago, expired sign-in tokens, the bot's one-off
 * notices sent (or given up on) more than a day ago, and the Docks' daily activity counts older
 * than 400 days (ACTIVITY_DAYS_KEPT, whatever RETENTION_DAYS says: a count holds nothing of a
 * message). Queued work is never pruned.
 */
export interface RetentionOptions {
  outbox: Outbox;
  events: EventOutbox;
  loginTokens: LoginTokenRepository;
  /** Its ended claim links and invitations are pruned with the sign-in tokens. */
  owners?: OwnerRepository;
  activity: ActivityRepository;
  /** The Docks' audit logs, kept as long as the messages. */
  audit?: DockAudit;
  /** The bot's notices: those done for a day are pruned (a join request's copies go with it). */
  notices?: NoticeQueue;
  /** Join requests that ended are pruned with the messages (RETENTION_DAYS). */
  requests?: JoinRequestRepository;
  retentionMs: number;
  log: FastifyBaseLogger;
  intervalMs?: number;
  /** How often the activity counts' rows are summed (default FOLD_INTERVAL_MS; tests set their own). */
  foldIntervalMs?: number;
  now?: () => number;
}

/** How often the activity counts' rows of a day are summed into one. */
export const FOLD_INTERVAL_MS = 30_000;

export class Retention {
  readonly name = "retention";
  readonly #o: RetentionOptions;
  #timer: NodeJS.Timeout | null = null;
  #folding: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;
  #foldRunning: Promise<number> | null = null;

  constructor(options: RetentionOptions) {
    this.#o = options;
  }

  async start(): Promise<void> {
    this.#timer = setInterval(() => void this.prune(), this.#o.intervalMs ?? 60 * 60 * 1000);
    this.#timer.unref();
    // The activity counts are a row per transaction (store/rollups.ts): summed often, so a day
    // stays a few rows for the live stream's every-second read.
    this.#folding = setInterval(() => void this.fold(), this.#o.foldIntervalMs ?? FOLD_INTERVAL_MS);
    this.#folding.unref();
    void this.prune();
  }

  /**
   * Sums the activity counts' rows; a failure (the database away) waits for the next time. A fold
   * still running is not started again: the next tick comes after it.
   */
  async fold(): Promise<number> {
    if (this.#foldRunning !== null) return 0;
    const run = this.#o.activity.fold().catch((error: unknown) => {
      logDatabaseFailure(this.#o.log, error, "folding activity counts failed");
      return 0;
    });
    this.#foldRunning = run;
    try {
      return await run;
    } finally {
      this.#foldRunning = null;
    }
  }

  /** Stops the timers and waits for a pass or a fold under way (the database closes next). */
  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    if (this.#folding) clearInterval(this.#folding);
    await Promise.all([this.#running, this.#foldRunning]);
  }

  /** One pass; returns the number of messages deleted. */
  async prune(): Promise<number> {
    const now = (this.#o.now ?? Date.now)();
    const pass = async () => {
      const messages = this.#o.retentionMs > 0 ? await this.#o.outbox.prune(now - this.#o.retentionMs) : 0;
      const events = this.#o.retentionMs > 0 ? await this.#o.events.prune(now - this.#o.retentionMs) : 0;
      const auditEntries =
        this.#o.retentionMs > 0 ? ((await this.#o.audit?.prune(now - this.#o.retentionMs)) ?? 0) : 0;
      const requests =
        this.#o.retentionMs > 0 ? ((await this.#o.requests?.prune(now - this.#o.retentionMs)) ?? 0) : 0;
      const tokens = await this.#o.loginTokens.prune();
      const ownerLinks = (await this.#o.owners?.prune()) ?? 0;
      const notices = (await this.#o.notices?.prune(now - 24 * 60 * 60 * 1000)) ?? 0;
      const activityDays = await this.#o.activity.prune();
      if (messages + events + auditEntries + requests + tokens + ownerLinks + notices + activityDays > 0) {
        this.#o.log.info(
          {
            messages,
            events,
            auditEntries,
            joinRequests: requests,
            loginTokens: tokens,
            ownerLinks,
            notices,
            activityDays,
          },
          "pruned old records",
        );
      }
      return messages;
    };
    const run = pass().catch((error: unknown) => {
      logDatabaseFailure(this.#o.log, error, "pruning failed");
      return 0;
    });
    this.#running = run.then(() => undefined);
    return run;
  }
}
