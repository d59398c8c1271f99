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
  close(): Promise<void>;
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
    // The connection lives in a thread of its own, so the disk never holds up the event loop.
    const thread = new SqliteThread(url.slice("sqlite:".length), {
      synchronous: options.sqliteSynchronous ?? "normal",
    });
    const kysely = new Kysely<Database>({ dialect: sqliteThreadDialect(thread) });
    return {
      kysely,
      dialect: "sqlite",
      acceptBatch: (request) => thread.accept(request),
      // Kysely only destroys a driver it has used: close the thread in any case.
      close: async () => {
        await kysely.destroy();
        await thread.close();
      },
    };
  }
  const pool = new pg.Pool({ connectionString: url, max: options.poolSize ?? 10 });
  // An idle connection can be closed by the server (a restart, a failover, an administrator);
  // the pool replaces it. Without a listener that event would crash the process.
  pool.on("error", (error) =>
    process.emitWarning(`an idle PostgreSQL connection was closed: ${error.message}`),
  );
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
    close: () => kysely.destroy(),
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
