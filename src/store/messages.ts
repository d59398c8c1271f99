import type { Transaction } from "kysely";
import { DOCK_ID_PATTERN, newMessageId } from "../domain/ids.ts";
import { sha256Hex } from "../domain/secrets.ts";
import type { Db } from "./db.ts";
import { checkCredentials, credentialsQuery } from "./docks.ts";
import { prepare, type Slots } from "./prepared.ts";
import type { Database } from "./schema.ts";

/** How long an `Idempotency-Key` protects against a repeated send. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

export type AcceptResult =
  | { kind: "accepted"; messageId: string; subscribers: number }
  | { kind: "replayed"; messageId: string; subscribers: number }
  | { kind: "conflict" }
  | { kind: "unauthorized" }
  | { kind: "refused"; retryAfterSeconds: number };

export interface AcceptInput {
  dockId: string;
  text: string;
  idempotencyKey?: string | undefined;
  /**
   * The Dock's secret key as the client presented it: checked in the transaction that stores
   * the message (one read less per message than checking it beforehand). Omitted when the caller
   * has already authenticated the Dock.
   */
  secretKey?: string | undefined;
  /** Asked once the Dock is authenticated, before storing: seconds to wait (refused), or 0. */
  admit?: (() => number) | undefined;
}

/** At most this many messages share one transaction. */
const MAX_BATCH = 256;

interface Pending {
  input: AcceptInput;
  hash: string | null;
  resolve: (result: AcceptResult) => void;
  reject: (error: unknown) => void;
}

/** Accepted messages, queued for fan-out to their Dock's subscribers. */
export class MessageRepository {
  readonly #db: Db;
  readonly #now: () => number;
  readonly #pending: Pending[] = [];
  readonly #listeners = new Set<(dockIds: string[]) => void>();
  #flushing = false;

  readonly #queries: ReturnType<typeof acceptQueries>;

  constructor(db: Db, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
    this.#queries = acceptQueries(db);
  }

  /**
   * Stores the message, queued for the Dock's active subscribers. When this resolves the message
   * is committed: a crash afterwards cannot lose it. The cost does not grow with the number of
   * subscribers: the message is queued once (`fanouts`), and the dispatcher creates the
   * per-subscriber deliveries when it gets to the message (DeliveryRepository.fanOut), for the
   * subscribers active when it was accepted and still active then.
   *
   * Group commit: messages that arrive while a transaction is being written wait and are then
   * committed together in the next one. A transaction's cost is mostly fixed (its pages, its WAL
   * write), so under load this multiplies throughput without weakening the guarantee.
   */
  accept(input: AcceptInput): Promise<AcceptResult> {
    const hash = input.idempotencyKey === undefined ? null : sha256Hex(input.text);
    // Asked once per request: a batch that fails is retried message by message, and the retry
    // must neither spend the Dock's allowance again nor refuse what the first attempt admitted.
    const { admit } = input;
    let admitted: number | undefined;
    const admitOnce = admit && (() => (admitted ??= admit()));
    return new Promise((resolve, reject) => {
      this.#pending.push({ input: { ...input, admit: admitOnce }, hash, resolve, reject });
      if (!this.#flushing) {
        this.#flushing = true;
        setImmediate(() => void this.#flush());
      }
    });
  }

  async #flush(): Promise<void> {
    while (this.#pending.length > 0) {
      const batch = this.#pending.splice(0, MAX_BATCH);
      let results: AcceptResult[];
      try {
        results = await this.#db.kysely.transaction().execute(async (tx) => {
          const out: AcceptResult[] = [];
          const subscriberCounts = new Map<string, number>();
          for (const item of batch) {
            out.push(await this.#acceptIn(tx, item.input, item.hash, subscriberCounts));
          }
          return out;
        });
      } catch {
        // One message's failure must not fail its neighbours: commit each on its own.
        await Promise.all(batch.map((item) => this.#acceptAlone(item)));
        continue;
      }
      // Outside the try: once committed, nothing here may send the batch down the retry path.
      for (const [i, item] of batch.entries()) item.resolve(results[i] as AcceptResult);
      // Only Docks that got a message: a refused request's dock_id is whatever a stranger typed.
      const docks = batch.filter((_, i) => results[i]?.kind === "accepted").map((item) => item.input.dockId);
      if (docks.length > 0) this.#notify([...new Set(docks)]);
    }
    this.#flushing = false;
  }

  async #acceptAlone(item: Pending): Promise<void> {
    const once = () =>
      this.#db.kysely.transaction().execute((tx) => this.#acceptIn(tx, item.input, item.hash, new Map()));
    let result: AcceptResult;
    try {
      result = await once();
    } catch (error) {
      // Two requests with the same key raced (another instance committed first): a replay.
      if (item.input.idempotencyKey !== undefined && isUniqueViolation(error)) {
        await once().then(item.resolve, item.reject);
      } else {
        item.reject(error);
      }
      return;
    }
    item.resolve(result);
    if (result.kind === "accepted") this.#notify([item.input.dockId]);
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

  async #acceptIn(
    tx: Transaction<Database>,
    input: AcceptInput,
    hash: string | null,
    subscriberCounts: Map<string, number>,
  ): Promise<AcceptResult> {
    const now = this.#now();
    const q = this.#queries;
    if (input.secretKey !== undefined) {
      // Anything that cannot be a Dock ID never reaches the database.
      const row = DOCK_ID_PATTERN.test(input.dockId)
        ? (await tx.executeQuery(q.credentials({ id: input.dockId }))).rows[0]
        : undefined;
      if (!checkCredentials(row, input.secretKey)) return { kind: "unauthorized" } as const;
    }
    const wait = input.admit?.() ?? 0;
    if (wait > 0) return { kind: "refused", retryAfterSeconds: wait } as const;
    if (input.idempotencyKey !== undefined) {
      const { rows } = await tx.executeQuery(
        q.byIdempotencyKey({ dockId: input.dockId, key: input.idempotencyKey }),
      );
      const earlier = rows[0];
      if (earlier && earlier.created_at > now - IDEMPOTENCY_WINDOW_MS) {
        if (earlier.request_hash !== hash) return { kind: "conflict" } as const;
        return { kind: "replayed", messageId: earlier.id, subscribers: earlier.subscribers } as const;
      }
      // The window has passed: the key is free again.
      if (earlier) await tx.executeQuery(q.releaseIdempotencyKey({ id: earlier.id }));
    }

    const messageId = newMessageId(now);
    // Every message of a batch to the same Dock sees the same subscribers: count them once.
    let subscribers = subscriberCounts.get(input.dockId);
    if (subscribers === undefined) {
      const { rows } = await tx.executeQuery(q.countSubscribers({ dockId: input.dockId }));
      subscribers = Number(rows[0]?.n ?? 0);
      subscriberCounts.set(input.dockId, subscribers);
    }
    await tx.executeQuery(
      q.insertMessage({
        id: messageId,
        dockId: input.dockId,
        text: input.text,
        subscribers,
        key: input.idempotencyKey ?? null,
        hash,
        now,
      }),
    );
    // One row, however many subscribers: the dispatcher fans it out as the Dock's queue drains.
    if (subscribers > 0) {
      await tx.executeQuery(q.queueFanout({ messageId, dockId: input.dockId, now }));
    }
    return { kind: "accepted", messageId, subscribers } as const;
  }

  async get(id: string) {
    return this.#db.kysely.selectFrom("messages").selectAll().where("id", "=", id).executeTakeFirst();
  }
}

function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: string; errcode?: number; message?: string };
  // PostgreSQL: SQLSTATE 23505; node:sqlite: SQLITE_CONSTRAINT_UNIQUE (2067).
  return e?.code === "23505" || e?.errcode === 2067 || /UNIQUE constraint failed/.test(e?.message ?? "");
}

/** The statements every accepted message runs, compiled once (see prepare). */
function acceptQueries(db: Db) {
  const { kysely } = db;
  return {
    credentials: credentialsQuery(db),
    byIdempotencyKey: prepare((p: Slots<{ dockId: string; key: string }>) =>
      kysely
        .selectFrom("messages")
        .select(["id", "subscribers", "request_hash", "created_at"])
        .where("dock_id", "=", p.dockId)
        .where("idempotency_key", "=", p.key),
    ),
    releaseIdempotencyKey: prepare((p: Slots<{ id: string }>) =>
      kysely.updateTable("messages").set({ idempotency_key: null }).where("id", "=", p.id),
    ),
    countSubscribers: prepare((p: Slots<{ dockId: string }>) =>
      kysely
        .selectFrom("subscriptions")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("dock_id", "=", p.dockId)
        .where("state", "=", "active"),
    ),
    insertMessage: prepare(
      (
        p: Slots<{
          id: string;
          dockId: string;
          text: string;
          subscribers: number;
          key: string | null;
          hash: string | null;
          now: number;
        }>,
      ) =>
        kysely.insertInto("messages").values({
          id: p.id,
          dock_id: p.dockId,
          text: p.text,
          subscribers: p.subscribers,
          idempotency_key: p.key,
          request_hash: p.hash,
          created_at: p.now,
        }),
    ),
    queueFanout: prepare((p: Slots<{ messageId: string; dockId: string; now: number }>) =>
      kysely.insertInto("fanouts").values({ message_id: p.messageId, dock_id: p.dockId, created_at: p.now }),
    ),
  };
}
