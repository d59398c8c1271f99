import { Kysely, type Migration, type MigrationProvider, Migrator, PostgresDialect } from "kysely";
import pg from "pg";
import { AcceptBatch, type AcceptBatchRequest, type AcceptOutcome } from "./accept-batch.ts";
import { initial } from "./migrations/0001-initial.ts";
import { signInAndBot } from "./migrations/0002-sign-in-and-bot.ts";
import { deliveryQueueIndex } from "./migrations/0003-delivery-queue-index.ts";
import { deferredFanout } from "./migrations/0004-deferred-fanout.ts";
import { fanoutSubscribers } from "./migrations/0005-fanout-subscribers.ts";
import { dockAllowances } from "./migrations/0006-dock-allowances.ts";
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
  close(): Promise<void>;
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

/** Opens the database named by DATABASE_URL (`sqlite:<path>` or `postgres://…`). */
export function openDb(
  url: string,
  options: { sqliteSynchronous?: "normal" | "full"; poolSize?: number } = {},
): Db {
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
      acceptBatch: (request) => thread.accept(request),
      onWarning: warned.on,
      // Kysely only destroys a driver it has used: close the thread in any case.
      close: async () => {
        await kysely.destroy();
        await thread.close();
      },
    };
  }
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize ?? 10,
    // A database host that stops answering (a partition, a failover moving its address) is an
    // outage in 5 s (503, /readyz, a scrape's database_up 0), not a request hanging for minutes.
    connectionTimeoutMillis: 5000,
  });
  // An idle connection can be closed by the server (a restart, a failover, an administrator);
  // the pool replaces it. Without a listener that event would crash the process.
  const warned = warnings();
  pool.on("error", (error) => warned.emit(`an idle PostgreSQL connection was closed: ${error.message}`));
  const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  // Several instances may share the database: they share each Dock's allowance through it too.
  const batches = new AcceptBatch(kysely, { sharedAllowances: true });
  // One batch at a time, in order: each Dock's messages are committed in the order they came.
  let last: Promise<unknown> = Promise.resolve();
  return {
    kysely,
    dialect: "postgres",
    acceptBatch: (request) => {
      const run = last.then(() => batches.run(request));
      last = run.catch(() => {});
      return run;
    },
    onWarning: warned.on,
    close: () => kysely.destroy(),
  };
}

/** Network errors meaning the database server cannot be reached (Node's and pg's). */
const UNREACHABLE = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENOTFOUND",
  "EPIPE",
  "EAI_AGAIN",
]);

/**
 * Whether `error` says the database cannot be used right now (down, restarting, refusing
 * connections, dropped ours, locked for too long), as opposed to a fault in a statement: the first
 * is worth a retry later (503), the second is our bug (500).
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  const e = error as { code?: unknown; errcode?: unknown; message?: unknown; statusCode?: unknown } | null;
  // An HTTP error (Fastify's: a client that hung up mid-body is ECONNRESET too) is not the database's.
  if (e?.statusCode !== undefined) return false;
  const code = typeof e?.code === "string" ? e.code : "";
  const message = typeof e?.message === "string" ? e.message : "";
  // PostgreSQL: connection exceptions (class 08, but not 08P01, a protocol violation: a bug),
  // shutdown or restart (57P01–57P03), too many connections (53300), a database closed to
  // connections (55000 with that text).
  if ((code.startsWith("08") && code !== "08P01") || ["57P01", "57P02", "57P03", "53300"].includes(code)) {
    return true;
  }
  if (code === "55000" && message.includes("not currently accepting connections")) return true;
  if (UNREACHABLE.has(code)) return true;
  // pg: the connection went away under a query, or none could be made in time. (Not "Client was
  // closed and is not queryable": that is our code using a connection it closed.)
  if (
    /^Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/.test(
      message,
    )
  ) {
    return true;
  }
  // SQLite: another process held the write lock past busy_timeout (SQLITE_BUSY).
  return e?.errcode === 5 || /database is locked/.test(message);
}

/**
 * Logs a database operation that failed in the background (the dispatcher, retention): an outage
 * as a warn line with its reason (it passes by itself, and comes back every few seconds while it
 * lasts), anything else as an error with its stack (a bug to trace).
 */
export function logDatabaseFailure(
  log: { warn: (fields: object, message: string) => void; error: (fields: object, message: string) => void },
  error: unknown,
  message: string,
  fields: Record<string, unknown> = {},
): void {
  if (isDatabaseUnavailable(error)) log.warn({ ...fields, reason: (error as Error).message }, message);
  else log.error({ ...fields, err: error }, message);
}

function migrations(dialect: Dialect): Record<string, Migration> {
  return {
    "0001-initial": initial(dialect),
    "0002-sign-in-and-bot": signInAndBot(),
    "0003-delivery-queue-index": deliveryQueueIndex(),
    "0004-deferred-fanout": deferredFanout(dialect),
    "0005-fanout-subscribers": fanoutSubscribers(),
    "0006-dock-allowances": dockAllowances(),
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
