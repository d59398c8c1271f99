import {
  Kysely,
  type Migration,
  type MigrationProvider,
  Migrator,
  PostgresDialect,
  type PostgresPool,
  type PostgresPoolClient,
} from "kysely";
import pg from "pg";
import { AcceptBatch, type AcceptBatchRequest, type AcceptOutcome } from "./accept-batch.ts";
import { isDatabaseUnavailable, storageFault } from "./faults.ts";
import { initial } from "./migrations/0001-initial.ts";
import { signInAndBot } from "./migrations/0002-sign-in-and-bot.ts";
import { deliveryQueueIndex } from "./migrations/0003-delivery-queue-index.ts";
import { deferredFanout } from "./migrations/0004-deferred-fanout.ts";
import { fanoutSubscribers } from "./migrations/0005-fanout-subscribers.ts";
import { dockAllowances } from "./migrations/0006-dock-allowances.ts";
import { writeProbes } from "./migrations/0007-write-probes.ts";
import type { Database } from "./schema.ts";
import { SqliteThread, sqliteThreadDialect } from "./sqlite-worker.ts";

export type Dialect = "sqlite" | "postgres";

export interface Db {
  kysely: Kysely<Database>;
  dialect: Dialect;
  /**
   * Stores a batch of messages in one transaction, where the connection is (see AcceptBatch).
   * Batches are committed in the order they were handed over, even while an earlier one is in flight.
   * Never wait for one inside a Kysely transaction: with SQLite the batch needs the connection the
   * transaction holds.
   */
  acceptBatch(request: AcceptBatchRequest): Promise<AcceptOutcome[]>;
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

/** Follows whether batches of messages could be stored (see Db.lastStorageFault). */
function watchStorage(accept: Db["acceptBatch"]) {
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
function warnings() {
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

// 64-bit integers (our millisecond times and Telegram ids) fit safely in a JS number; without this
// pg would hand them back as strings and the repositories would need dialect-specific code.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export interface DbOptions {
  sqliteSynchronous?: "normal" | "full";
  poolSize?: number;
  /**
   * PostgreSQL: how long connecting, waiting for a free connection, and each statement may take
   * (ms) before the call fails as the database being unavailable (DATABASE_TIMEOUT_SECONDS); 0 for
   * no bound (migrations, which may rightly take long). SQLite waits for its lock busy_timeout.
   */
  timeoutMs?: number;
}

/** Opens the database named by DATABASE_URL (`sqlite:<path>` or `postgres://…`). */
export function openDb(url: string, options: DbOptions = {}): Db {
  if (url.startsWith("sqlite:")) {
    // The connection lives in a thread of its own, so the disk never holds up the event loop;
    // checkpoints run in another, so they never hold up a commit.
    const warned = warnings();
    const thread = new SqliteThread(
      url.slice("sqlite:".length),
      { synchronous: options.sqliteSynchronous ?? "normal" },
      { onWarning: (message) => warned.emit(message) },
    );
    const kysely = new Kysely<Database>({ dialect: sqliteThreadDialect(thread) });
    return {
      kysely,
      dialect: "sqlite",
      ...watchStorage((request) => thread.accept(request)),
      onWarning: warned.on,
      // Kysely only destroys a driver it has used: close the thread in any case.
      close: async () => {
        await kysely.destroy();
        await thread.close();
      },
    };
  }
  const timeoutMs = options.timeoutMs ?? 5000;
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize ?? 10,
    // A database that stops answering (down, a partition, a failover moving its address, a server
    // too busy) is an outage within the bound — a 503 with Retry-After, /readyz 503, a scrape's
    // database_up 0 — never a request hanging for as long as the outage lasts. The bound covers
    // connecting and waiting for a free connection; the server cuts off a statement at it; and
    // if its answer has not come a second later, the network lost it and the call fails here.
    ...(timeoutMs > 0
      ? { connectionTimeoutMillis: timeoutMs, statement_timeout: timeoutMs, query_timeout: timeoutMs + 1000 }
      : {}),
    keepAlive: true,
  });
  const warned = warnings();
  // An idle connection can be closed by the server (a restart, a failover, an administrator);
  // the pool replaces it. Without a listener that event would crash the process.
  pool.on("error", (error) => warned.emit(`an idle PostgreSQL connection was closed: ${error.message}`));
  // So can one in use (a terminated backend, a proxy that cuts connections): its query fails with
  // the reason and the pool drops it; the event itself must not crash the process either.
  pool.on("connect", (client) => client.on("error", () => {}));
  const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool: discardingBroken(pool) }) });
  // Several instances may share the database: they share each Dock's allowance through it too.
  const batches = new AcceptBatch(kysely, { sharedAllowances: true });
  // One batch at a time, in order: each Dock's messages are committed in the order they came.
  let last: Promise<unknown> = Promise.resolve();
  return {
    kysely,
    dialect: "postgres",
    ...watchStorage((request) => {
      const run = last.then(() => batches.run(request));
      last = run.catch(() => {});
      return run;
    }),
    onWarning: warned.on,
    close: () => kysely.destroy(),
  };
}

/**
 * The pool as Kysely sees it, with one difference: a connection whose query failed because the
 * database was unavailable is closed when released, not handed to the next caller. After a query
 * timed out on our side the connection still waits for that answer, and would hold up whoever
 * used it next for as long as the network stays silent.
 */
function discardingBroken(pool: pg.Pool): PostgresPool {
  return {
    async connect() {
      const client = await pool.connect();
      let broken = false;
      const query = (sqlOrCursor: unknown, parameters?: ReadonlyArray<unknown>) => {
        // Given up on: what follows (a transaction's ROLLBACK) would only queue behind the lost
        // query and wait out the timeout again.
        if (broken)
          return Promise.reject(new Error("Connection terminated: given up after a database timeout"));
        const result = (client.query as (...args: unknown[]) => unknown)(sqlOrCursor, parameters);
        if (!(result instanceof Promise)) return result;
        return result.catch((error: unknown) => {
          if (isDatabaseUnavailable(error)) broken = true;
          throw error;
        });
      };
      return {
        query: query as PostgresPoolClient["query"],
        release: () => client.release(broken || undefined),
      };
    },
    end: () => pool.end(),
  };
}

function migrations(dialect: Dialect): Record<string, Migration> {
  return {
    "0001-initial": initial(dialect),
    "0002-sign-in-and-bot": signInAndBot(),
    "0003-delivery-queue-index": deliveryQueueIndex(),
    "0004-deferred-fanout": deferredFanout(dialect),
    "0005-fanout-subscribers": fanoutSubscribers(),
    "0006-dock-allowances": dockAllowances(),
    "0007-write-probes": writeProbes(),
  };
}

/**
 * Applies every pending migration (or those up to `to`, for tests of a migration); returns the
 * names applied now. Safe to run concurrently.
 */
export async function migrate(db: Db, options: { to?: string } = {}): Promise<string[]> {
  const provider: MigrationProvider = { getMigrations: async () => migrations(db.dialect) };
  const migrator = new Migrator({ db: db.kysely, provider });
  const { error, results } =
    options.to === undefined ? await migrator.migrateToLatest() : await migrator.migrateTo(options.to);
  if (error) throw error;
  return (results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName);
}
