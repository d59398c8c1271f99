import type { DockRepository } from "../../store/docks.ts";
import type { MessageChanges } from "../../store/message-changes.ts";
import type { OutboxViews } from "../../store/outbox-views.ts";
import type { RefusedRequests } from "../../store/refused-requests.ts";
import type { BodyBudget } from "../body-budget.ts";
import type { Intake } from "../intake.ts";
import type { PayloadThread } from "../payload-thread.ts";

/** What the send API is given by app.ts: its stores, its limits, its payload thread. */
export interface SendApiOptions {
  docks: DockRepository;
  intake: Intake;
  views: OutboxViews;
  changes: MessageChanges;
  maxBodyBytes: number;
  /** The integration doors' body limit (tools' payloads are larger than messages). */
  maxInboundBodyBytes: number;
  maxMessageLength: number;
  authFailuresPerMinute: number;
  /**
   * DATABASE_TIMEOUT_SECONDS: a send is answered within it of its body's arrival (plus up to half a
   * second when the database fell silent during the commit), stored or refused with a 503.
   */
  databaseTimeoutMs: number;
  /** Where Docks' templates are rendered and long texts parsed (off the event loop). */
  payloadThread: PayloadThread;
  /** What holds the bodies read before their sender is known (GitHub's signed deliveries). */
  unauthenticatedBodies: BodyBudget;
  /** Where the send doors' refusals are kept for the Docks' consoles. */
  refused: RefusedRequests;
}
