import type { FastifyBaseLogger } from "fastify";
import type { EventOutbox } from "../store/events.ts";
import { logDatabaseFailure } from "../store/faults.ts";
import type { LoginTokenRepository } from "../store/login-tokens.ts";
import type { Outbox } from "../store/outbox.ts";

/**
 * Deletes what is no longer needed, hourly and at start: finished messages (every delivery sent,
 * failed or gone) older than RETENTION_DAYS with the events posted about them, and expired
 * sign-in tokens. Queued work is never pruned.
 */
export interface RetentionOptions {
  outbox: Outbox;
  events: EventOutbox;
  loginTokens: LoginTokenRepository;
  retentionMs: number;
  log: FastifyBaseLogger;
  intervalMs?: number;
  now?: () => number;
}

export class Retention {
  readonly name = "retention";
  readonly #o: RetentionOptions;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;

  constructor(options: RetentionOptions) {
    this.#o = options;
  }

  async start(): Promise<void> {
    this.#timer = setInterval(() => void this.prune(), this.#o.intervalMs ?? 60 * 60 * 1000);
    this.#timer.unref();
    void this.prune();
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    await this.#running;
  }

  /** One pass; returns the number of messages deleted. */
  async prune(): Promise<number> {
    const now = (this.#o.now ?? Date.now)();
    const pass = async () => {
      const messages = this.#o.retentionMs > 0 ? await this.#o.outbox.prune(now - this.#o.retentionMs) : 0;
      const events = this.#o.retentionMs > 0 ? await this.#o.events.prune(now - this.#o.retentionMs) : 0;
      const tokens = await this.#o.loginTokens.prune();
      if (messages + events + tokens > 0) {
        this.#o.log.info({ messages, events, loginTokens: tokens }, "pruned old records");
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
