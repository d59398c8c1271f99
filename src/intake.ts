import { TokenBuckets } from "./domain/token-bucket.ts";
import { ApiError } from "./http/errors.ts";
import type { Metrics } from "./metrics.ts";
import type { AcceptResult, MessageRepository } from "./store/messages.ts";

/** Where a message came from, for the `dock_notify_messages_accepted_total` metric. */
export type Source = "ping" | "webhook" | "console";

/**
 * The one way a message enters the service, whichever door it used (the send API or the
 * console's test message): the Dock's rate limit, durable storage, and the counters.
 */
export class Intake {
  readonly #messages: MessageRepository;
  readonly #metrics: Metrics;
  readonly #dockRate: TokenBuckets | null;

  constructor(options: {
    messages: MessageRepository;
    metrics: Metrics;
    dockRateBurst: number;
    dockRatePerSecond: number;
  }) {
    this.#messages = options.messages;
    this.#metrics = options.metrics;
    this.#dockRate =
      options.dockRateBurst > 0
        ? new TokenBuckets({ capacity: options.dockRateBurst, refillPerSecond: options.dockRatePerSecond })
        : null;
  }

  /**
   * Stores the message (committed when this resolves). Throws `rate_limited` (with Retry-After)
   * when the Dock is over its rate, `idempotency_conflict` when the key was used for another text.
   */
  async accept(input: {
    dockId: string;
    text: string;
    idempotencyKey?: string | undefined;
    source: Source;
  }): Promise<Exclude<AcceptResult, { kind: "conflict" }>> {
    const wait = this.#dockRate?.take(input.dockId) ?? 0;
    if (wait > 0) throw ApiError.retryAfter("rate_limited", wait);
    const result = await this.#messages.accept(input);
    if (result.kind === "conflict") throw new ApiError("idempotency_conflict");
    if (result.kind === "accepted") {
      this.#metrics.messagesAccepted.inc({ endpoint: input.source });
      this.#metrics.deliveriesQueued.inc(result.subscribers);
    }
    return result;
  }
}
