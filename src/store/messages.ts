import type { MessageContent } from "../domain/message-options.ts";
import { sha256Hex } from "../domain/secrets.ts";
import { type AcceptItem, type AcceptResult, fromStoreError, MAX_BATCH } from "./accept-batch.ts";
import type { DockRate } from "./allowances.ts";
import type { Db } from "./db.ts";
import { deadlinePassed, isOutage } from "./faults.ts";
import { URGENT } from "./outbox.ts";

export { type AcceptResult, IDEMPOTENCY_WINDOW_MS } from "./accept-batch.ts";

export interface AcceptInput {
  dockId: string;
  text: string;
  /** How the message is shown beyond its text; null or omitted for plain text. */
  content?: MessageContent | null;
  idempotencyKey?: string | undefined;
  /**
   * What a repeat with the same idempotency key must have sent, when the caller knows it better
   * than the text and options: a signed delivery's body digest (a template changed between the
   * two still makes the same message of it, as far as a repeat is concerned).
   */
  requestHash?: string | undefined;
  /** The sender's key for the message: a live message of the Dock with the same key is replaced. */
  key?: string | null | undefined;
  /** The key's last message: the message holding it takes this one and lets the key go (AcceptItem.final). */
  final?: boolean | undefined;
  /** Whether the Dock has a callback URL; omitted: read with the secret key (which must be given then). */
  watched?: boolean | undefined;
  /**
   * The Dock's secret key as the client presented it: checked in the transaction that stores
   * the message. Omitted when the caller has already authenticated the Dock.
   */
  secretKey?: string | undefined;
  /** The Dock's hook token as presented: checked in the storing transaction (AcceptItem.hookToken). */
  hookToken?: string | undefined;
  /** Which credential sends it (AcceptItem.sender); omitted: the secret key. */
  sender?: string | null | undefined;
  /** The sender replaces by key only its own messages (AcceptItem.ownKeysOnly). */
  ownKeysOnly?: boolean | undefined;
  /**
   * When the sender must have its answer (`performance.now()`): a message still waiting for its
   * batch then is refused as the database being unavailable, and never stored; one being written
   * is given up then by PostgreSQL (see store/postgres/adapter.ts), finished by SQLite's thread.
   * Omitted: the repository's `timeoutMs` from now.
   */
  deadline?: number | undefined;
}

interface Pending {
  item: AcceptItem;
  /** performance.now() by which it is stored or refused (Infinity: no deadline). */
  deadline: number;
  resolve: (result: AcceptResult) => void;
  reject: (error: unknown) => void;
}

/** Accepted messages, queued for fan-out to their Dock's subscribers. */
export class MessageRepository {
  readonly #db: Db;
  readonly #now: () => number;
  readonly #dockRate: DockRate | null;
  readonly #pending: Pending[] = [];
  readonly #listeners = new Set<(dockIds: string[]) => void>();
  readonly #timeoutMs: number;
  #inFlight = 0;
  #scheduled = false;
  /** The timer that refuses messages still waiting at their deadline, and when it fires. */
  #expiry: { timer: NodeJS.Timeout; at: number } | null = null;

  /**
   * `dockRate`: each Dock's allowance, spent only by messages whose secret key matched;
   * `timeoutMs`: how long a message may take to be stored when its sender gives no deadline
   * (DATABASE_TIMEOUT_SECONDS; 0 or absent: as long as it takes).
   */
  constructor(
    db: Db,
    now: () => number = Date.now,
    options: { dockRate?: DockRate | null; timeoutMs?: number } = {},
  ) {
    this.#db = db;
    this.#now = now;
    this.#dockRate = options.dockRate ?? null;
    this.#timeoutMs = options.timeoutMs ?? 0;
  }

  /**
   * Stores the message, queued for the Dock's active subscribers. When this resolves the message
   * is committed: a crash afterwards cannot lose it. `refused` when the Dock is over its rate,
   * `unauthorized` when a secret key was given and is not the Dock's (nothing stored, no allowance
   * spent), `conflict` when the idempotency key was used for another text.
   *
   * Group commit: messages that arrive while a batch is being written wait and are then committed
   * together in the next one (see AcceptBatch), which runs where the database connection is: for
   * SQLite in its own thread, so the disk never holds up the event loop.
   *
   * A message still waiting for its batch at its deadline is refused then (the database is
   * unavailable: a 503) and never handed over, so it is not stored later behind its sender's back.
   * PostgreSQL's adapter answers a batch under way by the deadline too (see AcceptInput.deadline).
   */
  accept(input: AcceptInput): Promise<AcceptResult> {
    const idempotencyKey = input.idempotencyKey ?? null;
    const content = input.content ? JSON.stringify(input.content) : null;
    // What the sender sent, not what we made of it: a retry must replay even after an upgrade
    // parses Markdown differently. A plain message hashes as it always has.
    let sent = input.content ? `${input.text}\u0000${JSON.stringify(input.content.options)}` : input.text;
    if (input.key) sent += `\u0000key\u0000${input.key}${input.final ? "\u0000final" : ""}`;
    const item: AcceptItem = {
      dockId: input.dockId,
      text: input.text,
      content,
      urgent: input.content?.options.priority === "urgent",
      idempotencyKey,
      key: input.key ?? null,
      final: input.final === true,
      watched: input.watched ?? null,
      hash: idempotencyKey === null ? null : (input.requestHash ?? sha256Hex(sent)),
      secretKey: input.secretKey ?? null,
      hookToken: input.hookToken ?? null,
      sender: input.sender ?? null,
      ownKeysOnly: input.ownKeysOnly === true,
    };
    const deadline =
      input.deadline ??
      (this.#timeoutMs > 0 ? performance.now() + this.#timeoutMs : Number.POSITIVE_INFINITY);
    return new Promise((resolve, reject) => {
      this.#pending.push({ item, deadline, resolve, reject });
      this.#schedule();
      this.#watch(deadline);
    });
  }

  /** Wakes at `deadline` (unless already awake for an earlier one) to refuse who has waited too long. */
  #watch(deadline: number): void {
    if (deadline === Number.POSITIVE_INFINITY || (this.#expiry !== null && this.#expiry.at <= deadline))
      return;
    if (this.#expiry !== null) clearTimeout(this.#expiry.timer);
    const timer = setTimeout(
      () => {
        this.#expiry = null;
        this.#refuseLate();
        let next = Number.POSITIVE_INFINITY;
        for (const pending of this.#pending) next = Math.min(next, pending.deadline);
        this.#watch(next);
      },
      Math.max(0, deadline - performance.now()),
    );
    // Whoever waits holds a request open: the timer need not keep the process alive too.
    timer.unref();
    this.#expiry = { timer, at: deadline };
  }

  /** Refuses the messages still waiting at their deadline: they are never handed over. */
  #refuseLate(): void {
    const now = performance.now();
    if (!this.#pending.some((pending) => pending.deadline <= now)) return;
    const late = this.#pending.filter((pending) => pending.deadline <= now);
    const waiting = this.#pending.filter((pending) => pending.deadline > now);
    this.#pending.splice(0, this.#pending.length, ...waiting);
    const error = deadlinePassed("waited for the messages before it to be stored");
    for (const pending of late) pending.reject(error);
  }

  /**
   * Hands what is waiting to the database as one batch, once this turn of the event loop has
   * gathered what arrived. Up to the database's `batchesAtOnce` at a time: while one is written,
   * the next is already on its way.
   */
  #schedule(): void {
    if (this.#scheduled || this.#inFlight >= this.#db.batchesAtOnce || this.#pending.length === 0) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.#refuseLate();
      while (this.#inFlight < this.#db.batchesAtOnce && this.#pending.length > 0) {
        this.#inFlight++;
        void this.#write(this.#pending.splice(0, MAX_BATCH)).finally(() => {
          this.#inFlight--;
          this.#schedule();
        });
      }
    });
  }

  async #write(batch: Pending[]): Promise<void> {
    let outcomes: Awaited<ReturnType<Db["acceptBatch"]>>;
    try {
      const deadline = Math.min(...batch.map((pending) => pending.deadline));
      outcomes = await this.#db.acceptBatch({
        items: batch.map((pending) => pending.item),
        now: this.#now(),
        dockRate: this.#dockRate,
        ...(deadline === Number.POSITIVE_INFINITY ? {} : { deadline }),
      });
    } catch (error) {
      // No answer from the database (unreachable, given up at the deadline, or its thread
      // stopped): nobody gets a 202 for it. (Given up, it was not committed, unless its COMMIT's
      // answer was what got lost: see store/postgres/adapter.ts.)
      for (const pending of batch) pending.reject(error);
      // Those who came while it failed would only wait as long again for the same answer: they
      // get it now (a prompt 503). Whoever comes next tries again.
      if (isOutage(error)) {
        for (const pending of this.#pending.splice(0)) pending.reject(error);
      }
      return;
    }
    const docks = new Set<string>();
    for (const [i, pending] of batch.entries()) {
      const outcome = outcomes[i];
      if (outcome === undefined) pending.reject(new Error("no outcome for a message of the batch"));
      else if (outcome.kind === "failed") pending.reject(fromStoreError(outcome.error));
      else pending.resolve(outcome);
      // Only Docks that got a message: a refused request's dock_id is whatever a stranger typed.
      if (outcome?.kind === "accepted" || outcome?.kind === "replaced") docks.add(pending.item.dockId);
      if (outcome?.kind === "accepted" && pending.item.urgent) docks.add(`${URGENT}${pending.item.dockId}`);
    }
    if (docks.size > 0) this.#notify([...docks]);
  }

  /** Calls `listener` after each commit of new messages (the dispatcher wakes on it). */
  onAccepted(listener: (dockIds: string[]) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #notify(dockIds: string[]): void {
    for (const listener of this.#listeners) {
      try {
        listener(dockIds);
      } catch {
        // A listener's trouble is its own: the messages are committed either way.
      }
    }
  }

  async get(id: string) {
    return this.#db.kysely.selectFrom("messages").selectAll().where("id", "=", id).executeTakeFirst();
  }
}
