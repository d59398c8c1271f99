import type { DockRate } from "./allowances.ts";

/*
 * What a batch of accepted messages is made of and answers: plain data (a batch may be stored in
 * another thread, SQLite's), apart from AcceptBatch so that the store's port (db.ts) can name it
 * without depending on how batches are stored.
 */

export type AcceptResult =
  | { kind: "accepted"; messageId: string; subscribers: number }
  /** The Dock's message with the same key was edited instead (it is now `revision`). */
  | { kind: "replaced"; messageId: string; subscribers: number; revision: number; edits: number }
  /** A repeated send (its Idempotency-Key): the first answer, `replaced` when that replaced a message. */
  | {
      kind: "replayed";
      messageId: string;
      subscribers: number;
      replaced?: { revision: number; edits: number };
    }
  | { kind: "conflict" }
  /** The key is held by a message another sender sent, and this sender may replace only its own. */
  | { kind: "not_your_message" }
  | { kind: "unauthorized" }
  | { kind: "refused"; retryAfterSeconds: number };

/**
 * One message to store. Plain data: a batch may be stored in another thread (SQLite's, see
 * store/sqlite/worker.ts), so nothing here is a function or a class.
 */
export interface AcceptItem {
  dockId: string;
  text: string;
  /** JSON of the message's MessageContent, or null for plain text. */
  content: string | null;
  /** Sent with priority `urgent`: its copies go ahead of everything else waiting (the urgent lane). */
  urgent?: boolean;
  idempotencyKey: string | null;
  /** The sender's key: a message of the Dock that holds it is edited instead of a new one added. */
  key?: string | null;
  /**
   * The key's last message (an alert group resolved): the message that holds the key is replaced
   * and lets the key go, so the next send with it starts a new message (Telegram notifies of new
   * messages, never of edits). When no message holds the key, stored without one.
   */
  final?: boolean;
  /**
   * Whether the Dock has a callback URL (its messages' outcomes are reported); null: read with the
   * credentials, in the batch (/ping).
   */
  watched?: boolean | null;
  /**
   * SHA-256 of the text and options when there is an idempotency key: a replay must carry the
   * same message.
   */
  hash: string | null;
  /**
   * The Dock's secret key as the client presented it, checked in the transaction that stores the
   * message (one read less per message than checking it beforehand); null when the caller has
   * already authenticated the Dock.
   */
  secretKey: string | null;
  /**
   * The Dock's hook token as the client presented it, checked in the storing transaction as the
   * secret key is (a send door took it on a hint, VerifiedKeys); null otherwise.
   */
  hookToken?: string | null;
  /** Which credential sends it (messages.sender: a credential's id, `hook`, null: the secret key). */
  sender?: string | null;
  /** The sender may replace by key only the messages it sent (a send credential, the hook URL). */
  ownKeysOnly?: boolean;
}

export interface AcceptBatchRequest {
  items: AcceptItem[];
  /** The messages' acceptance time (milliseconds since the epoch). */
  now: number;
  /** null: no limit. */
  dockRate: DockRate | null;
  /**
   * When the first of its senders must have their answer (`performance.now()` of this process):
   * PostgreSQL gives the batch up by then, committed or not at all (store/postgres/adapter.ts).
   * Absent: no deadline. SQLite's thread does not look at it (its clock is another).
   */
  deadline?: number;
}

/** A database error as it can cross a thread: what callers look at (unique violations, messages). */
export interface StoreError {
  message: string;
  code?: string | undefined;
  errcode?: number | undefined;
}

/** A message's result, or the error that kept it from being stored (its neighbours are unaffected). */
export type AcceptOutcome = AcceptResult | { kind: "failed"; error: StoreError };
