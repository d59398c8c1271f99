/**
 * A request the service turns down by its own rules, with nothing wrong on either side: the Dock
 * is over its rate, an Idempotency-Key was used for another text. Code below the HTTP edge throws
 * one; the edge (src/http/error-boundary.ts) gives each reason its catalogue code and status.
 */
export type RefusalReason = "rate_limited" | "idempotency_conflict" | "not_your_message";

export class Refusal extends Error {
  readonly reason: RefusalReason;
  /** When a try may succeed again, in seconds (the Dock's rate); absent when waiting will not help. */
  readonly retryAfterSeconds: number | undefined;

  constructor(reason: RefusalReason, retryAfterSeconds?: number) {
    super(reason);
    this.name = "Refusal";
    this.reason = reason;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}
