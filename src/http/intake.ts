import type { MessageContent } from "../domain/message-options.ts";
import { Refusal } from "../domain/refusal.ts";
import type { Metrics } from "../runtime/metrics.ts";
import type { AcceptResult, MessageRepository } from "../store/messages.ts";

/** Where a message came from, for the `dock_notify_messages_accepted_total` metric. */
export type Source = "ping" | "webhook" | "hook" | "console";

/**
 * The one way a message enters the service, whichever door it used (the send API or the
 * console's test message): durable storage (with the Dock's rate limit, see MessageRepository),
 * its refusals as `Refusal`s (the HTTP edge answers them), and the counters.
 */
export class Intake {
  readonly #messages: MessageRepository;
  readonly #metrics: Metrics;

  constructor(options: { messages: MessageRepository; metrics: Metrics }) {
    this.#messages = options.messages;
    this.#metrics = options.metrics;
  }

  /**
   * Stores the message (committed when this resolves). With `secretKey`, the Dock's key is checked
   * in the same transaction and a wrong one gives `unauthorized` (nothing stored, no rate used).
   * Throws `rate_limited` (with Retry-After) when the Dock is over its rate, `idempotency_conflict`
   * when the key was used for another text.
   */
  async accept(input: {
    dockId: string;
    secretKey?: string;
    /** The hook token, checked in the same transaction as a secret key is. */
    hookToken?: string;
    text: string;
    content?: MessageContent | null;
    idempotencyKey?: string | undefined;
    /** What a repeat must match, when the caller knows better than the text and options (see AcceptInput). */
    requestHash?: string | undefined;
    key?: string | null | undefined;
    /** The key's last message (see AcceptItem.final). */
    final?: boolean | undefined;
    /** Whether the Dock has a callback URL, when the caller authenticated it (else read with the key). */
    watched?: boolean | undefined;
    /** Which credential sends it, and whether it replaces by key only its own messages. */
    sender?: string | null | undefined;
    ownKeysOnly?: boolean | undefined;
    /** When the sender must have its answer (`performance.now()`; see MessageRepository.accept). */
    deadline?: number | undefined;
    source: Source;
  }): Promise<Extract<AcceptResult, { kind: "accepted" | "replaced" | "replayed" | "unauthorized" }>> {
    const result = await this.#messages.accept(input);
    if (result.kind === "refused") throw new Refusal("rate_limited", result.retryAfterSeconds);
    if (result.kind === "conflict") throw new Refusal("idempotency_conflict");
    if (result.kind === "not_your_message") throw new Refusal("not_your_message");
    if (result.kind === "accepted") {
      this.#metrics.messagesAccepted.inc({ endpoint: input.source });
      this.#metrics.deliveriesQueued.inc(result.subscribers);
    }
    if (result.kind === "replaced") this.#metrics.messagesAccepted.inc({ endpoint: input.source });
    return result;
  }

  /** As accept, for a caller that has already authenticated the Dock. */
  async acceptAuthenticated(input: {
    dockId: string;
    text: string;
    idempotencyKey?: string | undefined;
    watched?: boolean | undefined;
    source: Source;
  }): Promise<Extract<AcceptResult, { kind: "accepted" | "replaced" | "replayed" }>> {
    const result = await this.accept(input);
    // Without a key to check, the repository never answers unauthorized.
    if (result.kind === "unauthorized") throw new Error("unreachable: no secret key was checked");
    return result;
  }
}
