import type { Kysely, Transaction } from "kysely";
import { DOCK_ID_PATTERN, newMessageId } from "../domain/ids.ts";
import type { MessageContent } from "../domain/message-options.ts";
import type {
  AcceptBatchRequest,
  AcceptItem,
  AcceptOutcome,
  AcceptResult,
  StoreError,
} from "./accept-types.ts";
import type { Allowances, BatchAllowance } from "./allowances.ts";
import { checkCredentials, checkHookToken, credentialsQuery } from "./credentials.ts";
import type { MessageLocks } from "./db.ts";
import { isOutage } from "./faults.ts";
import { prepare, prepareInsert, type Slots } from "./prepared.ts";
import { escalationSteps, remindSchedule, startEscalation, startReminders } from "./reminder-schedule.ts";
import { reviseMessage } from "./revise.ts";
import { Rollups, Tallies } from "./rollups.ts";
import type { Database } from "./schema.ts";

export type {
  AcceptBatchRequest,
  AcceptItem,
  AcceptOutcome,
  AcceptResult,
  StoreError,
} from "./accept-types.ts";

/** How long an `Idempotency-Key` protects against a repeated send. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

/** At most this many messages share one transaction. */
export const MAX_BATCH = 256;

export function toStoreError(error: unknown): StoreError {
  const e = error as { message?: unknown; code?: unknown; errcode?: unknown };
  return {
    message: typeof e?.message === "string" ? e.message : String(error),
    code: typeof e?.code === "string" ? e.code : undefined,
    errcode: typeof e?.errcode === "number" ? e.errcode : undefined,
  };
}

export function fromStoreError(stored: StoreError): Error {
  return Object.assign(new Error(stored.message), {
    ...(stored.code === undefined ? {} : { code: stored.code }),
    ...(stored.errcode === undefined ? {} : { errcode: stored.errcode }),
  });
}

export function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: string; errcode?: number; message?: string };
  // PostgreSQL: SQLSTATE 23505; node:sqlite: SQLITE_CONSTRAINT_UNIQUE (2067).
  return e?.code === "23505" || e?.errcode === 2067 || /UNIQUE constraint failed/.test(e?.message ?? "");
}

/** What one transaction collects before writing: the rows of its messages and their fan-outs. */
interface Writes {
  credentials: Map<
    string,
    { id: string; name: string; secret_hash: string; watched: number; hook_hash: string | null } | undefined
  >;
  subscribers: Map<string, number>;
  /** Idempotency keys used earlier in this batch (not yet in the table). */
  keyed: Map<string, { messageId: string; subscribers: number; hash: string | null }>;
  /** Keys given to messages earlier in this batch (not yet in the table): their rows, to replace in place. */
  named: Map<string, unknown[]>;
  messages: unknown[][];
  fanouts: unknown[][];
  /** Messages replaced by their key, per Dock (the activity's `changed`). */
  replaced: Tallies;
  /** The keys the batch's messages give, per Dock: looked up together (#holders). */
  keysOf: Map<string, Set<string>>;
  /** The Dock's live messages holding those keys, read the first time one is needed. */
  holders: Map<string, Map<string, Holder>>;
  /** New messages that may ask for reminders (their rows: a later send of the batch may replace them). */
  reminding: unknown[][];
  /** Rows of new messages a later send of the batch resolved (`final`): no reminders, no escalation. */
  resolved: Set<unknown[]>;
}

/** A live message holding a key. */
type Holder = { id: string; subscribers: number; sender: string | null };

/**
 * Stores batches of messages, each batch in one transaction (group commit: a transaction's cost is
 * mostly fixed, so under load one per batch multiplies throughput without weakening the
 * guarantee). Runs wherever the database connection is: in the process for PostgreSQL, in the
 * SQLite thread for SQLite.
 *
 * The cost does not grow with the number of subscribers: a message is queued once (`fanouts`),
 * and the dispatcher creates the per-subscriber deliveries when it gets to the message
 * (Outbox.fanOut).
 */
export class AcceptBatch {
  readonly #kysely: Kysely<Database>;
  readonly #queries: ReturnType<typeof acceptQueries>;
  readonly #allowances: Allowances;
  readonly #locks: MessageLocks;
  readonly #rollups: Rollups;

  /**
   * `allowances`: where each Dock's allowance is kept (this process, or the shared database);
   * `locks`: the database's message locks (a send with a key may change a message).
   */
  constructor(
    kysely: Kysely<Database>,
    allowances: Allowances,
    locks: MessageLocks,
    /** Batches' INSERTs in a few fixed sizes (prepareInsert's `chunked`): where statements are kept. */
    options: { chunkedInserts: boolean },
  ) {
    this.#kysely = kysely;
    this.#queries = acceptQueries(kysely, options.chunkedInserts);
    this.#allowances = allowances;
    this.#locks = locks;
    this.#rollups = new Rollups(kysely);
  }

  /** One outcome per item, in order. Never throws for one message's trouble. */
  async run({ items, now, dockRate }: AcceptBatchRequest): Promise<AcceptOutcome[]> {
    const rate = dockRate === null || dockRate.burst <= 0 ? null : dockRate;
    const allowance =
      rate === null
        ? null
        : this.#allowances.batch(
            rate,
            now,
            items.map((item) => item.dockId),
          );
    const entries = items.map((item, index) => ({ item, index }));
    let outage = false;
    try {
      try {
        await allowance?.prepare?.();
      } catch (error) {
        // Unavailable: the senders are told to try again. Anything else (a named statement gone
        // stale, its connection dropped for it): once more, on another connection.
        outage = isOutage(error);
        if (outage) throw error;
        await allowance?.prepare?.();
      }
      try {
        return await this.#kysely.transaction().execute((tx) => this.#store(tx, entries, allowance, now));
      } catch (error) {
        // The database is down, silent or full: every message would meet the same, one by one (a
        // batch of 256 each waiting out a connection timeout would hang its senders for minutes).
        // The whole batch fails at once, and its senders are told to try again.
        outage = isOutage(error);
        if (outage) throw error;
        // One message's failure must not fail its neighbours: store each on its own.
        const outcomes: AcceptOutcome[] = [];
        for (const entry of entries) outcomes.push(await this.#alone(entry, allowance, now));
        return outcomes;
      }
    } finally {
      // Unavailable: the tokens go back when they can (the senders' prompt 503 does not wait on a
      // database that is not answering).
      if (outage) void allowance?.finish?.();
      else await allowance?.finish?.();
    }
  }

  async #alone(entry: Entry, allowance: BatchAllowance | null, now: number): Promise<AcceptOutcome> {
    const once = async () =>
      (
        await this.#kysely.transaction().execute((tx) => this.#store(tx, [entry], allowance, now))
      )[0] as AcceptResult;
    try {
      return await once();
    } catch (error) {
      // Two requests with the same idempotency key raced (another instance committed first): a
      // replay. Two with the same message key: the second replaces what the first stored.
      const keyed = entry.item.idempotencyKey !== null || (entry.item.key ?? null) !== null;
      if (keyed && isUniqueViolation(error)) {
        try {
          return await once();
        } catch (again) {
          return { kind: "failed", error: toStoreError(again) };
        }
      }
      return { kind: "failed", error: toStoreError(error) };
    }
  }

  async #store(tx: Transaction<Database>, entries: Entry[], allowance: BatchAllowance | null, now: number) {
    const writes: Writes = {
      credentials: new Map(),
      subscribers: new Map(),
      keyed: new Map(),
      named: new Map(),
      messages: [],
      fanouts: [],
      replaced: new Tallies(),
      keysOf: new Map(),
      holders: new Map(),
      reminding: [],
      resolved: new Set(),
    };
    for (const { item } of entries) {
      if (item.key == null) continue;
      const keys = writes.keysOf.get(item.dockId) ?? new Set<string>();
      keys.add(item.key);
      writes.keysOf.set(item.dockId, keys);
    }
    const admit: Admit = (index, dockId) => allowance?.take(index, dockId) ?? 0;
    const results: AcceptResult[] = [];
    for (const entry of entries) results.push(await this.#accept(tx, entry, admit, now, writes));
    const q = this.#queries;
    // A statement or a few per table for the whole batch (prepareInsert); the fan-outs keep the
    // order of acceptance.
    for (const query of q.insertMessages(writes.messages)) await tx.executeQuery(query);
    for (const query of q.insertFanouts(writes.fanouts)) await tx.executeQuery(query);
    // Reminders until acknowledged (store/reminders.ts): the rare message that asks, as it is now.
    for (const row of writes.reminding) {
      if (writes.resolved.has(row)) continue;
      const schedule = remindSchedule(row[7] as string | null);
      if (schedule !== null && (row[3] as number) > 0)
        await startReminders(tx, row[0] as string, schedule, now);
      const steps = escalationSteps(row[7] as string | null);
      if (steps.length > 0) await startEscalation(tx, row[0] as string, steps, now);
    }
    // The day's activity, last (rollups.ts): one inserted row per Dock of the batch, however many messages.
    const counts = writes.replaced;
    for (const row of writes.messages) counts.count(row[1] as string, "accepted");
    await this.#rollups.add(tx, now, counts);
    return results;
  }

  async #accept(
    tx: Transaction<Database>,
    { item, index }: Entry,
    admit: Admit,
    now: number,
    writes: Writes,
  ): Promise<AcceptResult> {
    const q = this.#queries;
    let watched = item.watched ?? false;
    const hookToken = item.hookToken ?? null;
    if (item.secretKey !== null || hookToken !== null) {
      // Read once per Dock and batch; every message's key is still checked (in constant time).
      let row = writes.credentials.get(item.dockId);
      if (!writes.credentials.has(item.dockId)) {
        // Anything that cannot be a Dock ID never reaches the database.
        row = DOCK_ID_PATTERN.test(item.dockId)
          ? (await tx.executeQuery(q.credentials({ id: item.dockId }))).rows[0]
          : undefined;
        writes.credentials.set(item.dockId, row);
      }
      const dock =
        item.secretKey !== null
          ? checkCredentials(row, item.secretKey)
          : checkHookToken(row, hookToken as string);
      if (dock === undefined) return { kind: "unauthorized" };
      watched = dock.watched;
    }
    const keyed = item.idempotencyKey === null ? null : `${item.dockId}\n${item.idempotencyKey}`;
    if (keyed !== null && item.idempotencyKey !== null) {
      const sameBatch = writes.keyed.get(keyed);
      const given = { dockId: item.dockId, key: item.idempotencyKey };
      // A key used for a message, or else for a send that replaced one (replays); only requests
      // that carry a key look.
      const earlier =
        sameBatch === undefined
          ? ((await tx.executeQuery(q.byIdempotencyKey(given))).rows[0] ?? (await replayOf(tx, given, now)))
          : {
              id: sameBatch.messageId,
              subscribers: sameBatch.subscribers,
              request_hash: sameBatch.hash,
              created_at: now,
            };
      if (earlier && earlier.created_at > now - IDEMPOTENCY_WINDOW_MS) {
        if (earlier.request_hash !== item.hash) return { kind: "conflict" };
        return {
          kind: "replayed",
          messageId: earlier.id,
          subscribers: earlier.subscribers,
          ...("replaced" in earlier
            ? { replaced: earlier.replaced as { revision: number; edits: number } }
            : {}),
        };
      }
      // The window has passed: the key is free again.
      if (earlier) await tx.executeQuery(q.releaseIdempotencyKey({ id: earlier.id }));
    }

    // Taken only once the Dock is authenticated (a stranger cannot spend a Dock's allowance) and
    // only for a message to store: a replay or a conflict sends nothing, so it costs nothing.
    const wait = admit(index, item.dockId);
    if (wait > 0) return { kind: "refused", retryAfterSeconds: wait };

    if (item.key != null) {
      const replaced = await this.#replace(tx, item, now, writes);
      if (replaced?.kind === "not_your_message") return replaced;
      if (replaced !== undefined) {
        if (keyed !== null && item.idempotencyKey !== null) {
          // The message row holds its first send's key: this send's is kept beside it.
          await tx
            .insertInto("replays")
            .values({
              dock_id: item.dockId,
              idempotency_key: item.idempotencyKey,
              message_id: replaced.messageId,
              subscribers: replaced.subscribers,
              request_hash: item.hash,
              created_at: now,
              revision: replaced.revision,
              edits: replaced.edits,
            })
            .execute();
          writes.keyed.set(keyed, {
            messageId: replaced.messageId,
            subscribers: replaced.subscribers,
            hash: item.hash,
          });
        }
        return replaced;
      }
    }

    const messageId = newMessageId(now);
    // Every message of a batch to the same Dock sees the same subscribers: count them once.
    let subscribers = writes.subscribers.get(item.dockId);
    if (subscribers === undefined) {
      const { rows } = await tx.executeQuery(q.countSubscribers({ dockId: item.dockId, now }));
      subscribers = Number(rows[0]?.n ?? 0);
      writes.subscribers.set(item.dockId, subscribers);
    }
    const row = [
      messageId,
      item.dockId,
      item.text,
      subscribers,
      item.idempotencyKey,
      item.hash,
      now,
      item.content,
      item.final ? null : (item.key ?? null),
      watched ? 1 : 0,
      item.sender ?? null,
    ];
    writes.messages.push(row);
    if (item.key != null && !item.final) writes.named.set(`${item.dockId}\n${item.key}`, row);
    // One row, however many subscribers: the dispatcher fans it out as the Dock's queue drains.
    if (subscribers > 0) writes.fanouts.push([messageId, item.dockId, now, subscribers, item.urgent ? 1 : 0]);
    // Escalation too when nobody is subscribed: then nobody can take it here.
    if (
      !item.final &&
      ((subscribers > 0 && item.content?.includes('"remind_every"')) || item.content?.includes('"escalate"'))
    )
      writes.reminding.push(row);
    if (keyed !== null) writes.keyed.set(keyed, { messageId, subscribers, hash: item.hash });
    return { kind: "accepted", messageId, subscribers };
  }

  /**
   * The Dock's live messages holding any key this batch's messages give, by key: one statement per
   * Dock and batch (its key list padded to a few fixed lengths, so its forms stay few), not one
   * per keyed message — on PostgreSQL each is a round trip inside the transaction, and an
   * integration's every message has a key. Kept up to date as the batch replaces them.
   */
  async #holders(tx: Transaction<Database>, dockId: string, writes: Writes): Promise<Map<string, Holder>> {
    let holders = writes.holders.get(dockId);
    if (holders !== undefined) return holders;
    holders = new Map();
    writes.holders.set(dockId, holders);
    const keys = [...(writes.keysOf.get(dockId) ?? [])];
    for (let from = 0; from < keys.length; from += MAX_KEYS_LOOKED_UP) {
      const some = keys.slice(from, from + MAX_KEYS_LOOKED_UP);
      const padded = paddedLength(some.length);
      while (some.length < padded) some.push(some[0] as string);
      const rows = await tx
        .selectFrom("messages")
        .select(["id", "subscribers", "sender", "key"])
        .where("dock_id", "=", dockId)
        .where("key", "in", some)
        .where("deleted_at", "is", null)
        .execute();
      for (const row of rows)
        holders.set(row.key as string, { id: row.id, subscribers: row.subscribers, sender: row.sender });
    }
    return holders;
  }

  /**
   * A send with a key the Dock's live message already holds: that message takes the new text and
   * content (an edit of every copy) instead of a new message being added. Undefined: no such message.
   */
  async #replace(
    tx: Transaction<Database>,
    item: AcceptItem,
    now: number,
    writes: Writes,
  ): Promise<Extract<AcceptResult, { kind: "replaced" | "not_your_message" }> | undefined> {
    const pending = writes.named.get(`${item.dockId}\n${item.key}`);
    const mine = (sender: unknown) => !item.ownKeysOnly || sender === (item.sender ?? null);
    if (pending !== undefined) {
      if (!mine(pending[10])) return { kind: "not_your_message" };
      // Added earlier in this very batch: it is written with the last text given.
      pending[2] = item.text;
      pending[7] = item.content;
      // Its reminders and escalation are decided by its last form (after the batch's inserts).
      if (!writes.reminding.includes(pending)) writes.reminding.push(pending);
      if (item.final) {
        pending[8] = null;
        writes.resolved.add(pending);
        writes.named.delete(`${item.dockId}\n${item.key}`);
      }
      return {
        kind: "replaced",
        messageId: pending[0] as string,
        subscribers: pending[3] as number,
        revision: 1,
        edits: 0,
      };
    }
    const holders = await this.#holders(tx, item.dockId, writes);
    const held = holders.get(item.key as string);
    if (held === undefined) return undefined;
    if (!mine(held.sender)) return { kind: "not_your_message" };
    const revised = await reviseMessage(
      tx,
      {
        messageId: held.id,
        revision: null,
        text: item.text,
        content: item.content,
        // Sent again asking for an acknowledgement (an alert firing anew): the last one is over.
        resetAck: item.content !== null && (JSON.parse(item.content) as MessageContent).options.ack === true,
        releaseKey: item.final === true,
        heldKey: item.key as string,
      },
      now,
      this.#locks,
    );
    // Deleted since the read, or its key let go by another send since (the key is free again):
    // this send starts a new message.
    if (revised === undefined || item.final) holders.delete(item.key as string);
    if (revised === undefined) return undefined;
    writes.replaced.count(item.dockId, "changed");
    return {
      kind: "replaced",
      messageId: held.id,
      subscribers: held.subscribers,
      revision: revised.revision,
      edits: revised.edits,
    };
  }
}

type Entry = { item: AcceptItem; index: number };

/**
 * The send that replaced a message under this idempotency key, within the window (an expired one
 * is removed: the key is free again).
 */
async function replayOf(
  tx: Transaction<Database>,
  given: { dockId: string; key: string },
  now: number,
): Promise<
  | {
      id: string;
      subscribers: number;
      request_hash: string | null;
      created_at: number;
      replaced: { revision: number; edits: number };
    }
  | undefined
> {
  const row = await tx
    .selectFrom("replays")
    .select(["message_id", "subscribers", "request_hash", "created_at", "revision", "edits"])
    .where("dock_id", "=", given.dockId)
    .where("idempotency_key", "=", given.key)
    .executeTakeFirst();
  if (row === undefined) return undefined;
  if (row.created_at <= now - IDEMPOTENCY_WINDOW_MS) {
    await tx
      .deleteFrom("replays")
      .where("dock_id", "=", given.dockId)
      .where("idempotency_key", "=", given.key)
      .execute();
    return undefined;
  }
  return {
    id: row.message_id,
    subscribers: row.subscribers,
    request_hash: row.request_hash,
    created_at: row.created_at,
    replaced: { revision: row.revision, edits: row.edits },
  };
}

/** Keys looked up by one statement, at most (SQLite takes up to 32,766 parameters, PostgreSQL 65,535). */
const MAX_KEYS_LOOKED_UP = 256;

/** The length a key list is padded to: 1, 2, 4, 8 … MAX_KEYS_LOOKED_UP. */
function paddedLength(count: number): number {
  return Math.min(MAX_KEYS_LOOKED_UP, 2 ** Math.ceil(Math.log2(Math.max(1, count))));
}

/** Seconds the message must wait for its Dock's allowance (0: admitted, a token taken). */
type Admit = (index: number, dockId: string) => number;

/** The statements every accepted message runs, compiled once (see prepare). */
function acceptQueries(kysely: Kysely<Database>, chunked: boolean) {
  return {
    credentials: credentialsQuery(kysely),
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
    // The audience the fan-out will reach (Outbox.fanOut): active, and subscribed by
    // the time the message was accepted.
    countSubscribers: prepare((p: Slots<{ dockId: string; now: number }>) =>
      kysely
        .selectFrom("subscriptions")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("dock_id", "=", p.dockId)
        .where("state", "=", "active")
        .where("active_since", "<=", p.now),
    ),
    insertMessages: prepareInsert(
      kysely,
      "messages",
      [
        "id",
        "dock_id",
        "text",
        "subscribers",
        "idempotency_key",
        "request_hash",
        "created_at",
        "content",
        "key",
        "report_pending",
        "sender",
      ],
      chunked,
    ),
    insertFanouts: prepareInsert(
      kysely,
      "fanouts",
      ["message_id", "dock_id", "created_at", "subscribers", "urgent"],
      chunked,
    ),
  };
}
