import type { CompiledQuery, Kysely, QueryResult, RawBuilder, Transaction } from "kysely";
import type { AcceptBatchRequest, AcceptOutcome } from "./accept-types.ts";
import { storageFault } from "./faults.ts";
import type { Database } from "./schema.ts";

/**
 * The store's port: what the service needs of a database, whichever it is. Each database has an
 * adapter that provides it — store/sqlite/adapter.ts, store/postgres/adapter.ts — and holds all
 * that is particular to it; everything else in store/ is plain Kysely and works on both. Adding a
 * database is adding an adapter (and a line in store/open.ts).
 */
export interface Db {
  kysely: Kysely<Database>;
  /**
   * Whether several instances of the service may share this database (PostgreSQL). They share the
   * bot too: each Dock's allowance is kept in the database, one dispatcher leads (`leadership`),
   * and an instance's pacer cannot see what the others send.
   */
  shared: boolean;
  /** How this database spells what SQL leaves to each (for the migrations). */
  spelling: SchemaSpelling;
  /**
   * Stores a batch of messages in one transaction, where the connection is (see AcceptBatch).
   * Never wait for one inside a Kysely transaction: with SQLite the batch needs the connection the
   * transaction holds.
   */
  acceptBatch(request: AcceptBatchRequest): Promise<AcceptOutcome[]>;
  /**
   * How many batches to hand over at once. SQLite commits them in the order they were handed
   * over (one connection: while one is written, the next waits its turn in the thread).
   * PostgreSQL writes several at once, each on a connection of its own, and they commit in
   * whatever order they finish: messages handed over together have no order among themselves,
   * and one handed over after another's batch committed comes after it.
   */
  batchesAtOnce: number;
  /**
   * Runs one statement ahead of the work waiting for the database: what Telegram has just done
   * (Outbox.recordParts), which a crash must find on record. SQLite: next on the connection, before
   * every transaction queued for it; PostgreSQL: on a connection of its own, never waiting for a
   * free one in the pool. Never call it inside a Kysely transaction (with SQLite it waits for the
   * connection the transaction holds).
   */
  urgent(query: CompiledQuery): Promise<QueryResult<unknown>>;
  /** Orders a change of a message against the settling of its copies (see MessageLocks). */
  messageLocks: MessageLocks;
  /** Who among the instances sharing this database does the work called `name` (see Leadership). */
  leadership(name: string): Leadership;
  /**
   * Tells the leader (perhaps another instance) that messages were accepted for these Docks; it
   * hears it through `Leadership.tryAcquire`'s `onAnnounced`. Nothing to tell with one process.
   */
  announce(dockIds: string[]): Promise<void>;
  /**
   * Calls `listener` with what went wrong outside any query (an idle PostgreSQL connection closed
   * by the server), for the service's log; with no listener it is a process warning. Returns the
   * function that removes the listener.
   */
  onWarning(listener: (message: string) => void): () => void;
  /**
   * The last time storing messages failed because the database could not write (a full disk,
   * read-only), with the cause; null once a batch was stored again. A small write may still fit
   * where a batch of messages does not, so readiness asks this as well as probing.
   */
  lastStorageFault(): { cause: string; at: number } | null;
  close(): Promise<void>;
}

/**
 * Locks, for one transaction, on a message: taken first thing by every transaction that settles a
 * copy of it (`shared`: any number at once) and by every one that changes it (`exclusive`: alone).
 * So a change either sees a copy settled and queues its edit, or the copy's settle sees the change
 * and converges on it — never neither (store/outbox.ts, `converge`). Copies never wait for each
 * other. Nothing to do on SQLite, whose transactions run one at a time.
 */
export interface MessageLocks {
  shared(tx: Transaction<Database>, messageId: string): Promise<void>;
  exclusive(tx: Transaction<Database>, messageId: string): Promise<void>;
}

/** How a database spells the column types SQL leaves to each. */
export interface SchemaSpelling {
  /** A 64-bit key the database assigns in increasing order and never reuses. */
  increasingKey: RawBuilder<unknown>;
  /** A 64-bit key the database assigns; it may reuse the value of a row deleted at the end. */
  generatedKey: RawBuilder<unknown>;
}

/**
 * One leader among the instances sharing a database, for work that must run exactly once (the
 * dispatcher: Telegram's limits are per bot). With a database one process owns (SQLite) that
 * process is always the leader once it asks.
 */
export interface Leadership {
  readonly isLeader: boolean;
  /**
   * Whether other instances contend for it (PostgreSQL). A leader that fails to take up its work
   * then gives way and waits its turn like the others, instead of retrying ahead of them.
   */
  readonly contended: boolean;
  /**
   * Tries to become the leader; true when this instance leads (now or already). While it leads,
   * `onAnnounced` hears each `Db.announce` (a comma-separated list of Dock IDs), and `onLost` is
   * called if leadership is lost without `release`.
   */
  tryAcquire(onAnnounced: (payload: string) => void, onLost: (error: Error) => void): Promise<boolean>;
  /** A leader checks it still is (its session answers); if not it steps down through `onLost`. */
  heartbeat(onLost: (error: Error) => void): Promise<void>;
  /** Steps down, letting another instance lead at once. */
  release(): Promise<void>;
  /**
   * Whether other instances share the database now: false, true, or undefined when the database
   * could not tell. The first call makes this instance one of them (PostgreSQL: a shared advisory
   * lock held while it runs, told to the leader at once); from then on, a leader hears of a new
   * one through `onJoined` without waiting for its next call. Calls made while one is under way
   * share its answer.
   */
  others(onJoined: () => void): Promise<boolean | undefined>;
  /** Stops being one of the instances (when the service stops). */
  leave(): Promise<void>;
}

export interface DbOptions {
  sqliteSynchronous?: "normal" | "full";
  /** SQLite: how long nothing is written before the checkpoint thread rests (ms; tests shorten it). */
  sqliteCheckpointRestMs?: number;
  poolSize?: number;
  /**
   * PostgreSQL: how long connecting, waiting for a free connection, and each statement may take
   * (ms) before the call fails as the database being unavailable (DATABASE_TIMEOUT_SECONDS); 0 for
   * no bound (migrations, which may rightly take long). SQLite waits for its lock busy_timeout.
   */
  timeoutMs?: number;
}

/** Follows whether batches of messages could be stored (see Db.lastStorageFault); for adapters. */
export function watchStorage(accept: Db["acceptBatch"]) {
  let fault: { cause: string; at: number } | null = null;
  return {
    acceptBatch: (async (request) => {
      try {
        const outcomes = await accept(request);
        fault = null;
        return outcomes;
      } catch (error) {
        const cause = storageFault(error);
        if (cause !== null) fault = { cause, at: Date.now() };
        throw error;
      }
    }) satisfies Db["acceptBatch"],
    lastStorageFault: () => fault,
  };
}

/** Warnings of one database handle: to its listeners, or as a process warning when it has none. */
export function warnings() {
  const listeners = new Set<(message: string) => void>();
  return {
    emit(message: string) {
      if (listeners.size === 0) process.emitWarning(message);
      for (const listener of listeners) listener(message);
    },
    on(listener: (message: string) => void) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
  };
}
