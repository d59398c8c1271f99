import { Kysely, PostgresDialect, type PostgresPool, type PostgresPoolClient, sql } from "kysely";
import pg from "pg";
import { AcceptBatch } from "../accept-batch.ts";
import type { Db, DbOptions, MessageLocks } from "../db.ts";
import { warnings, watchStorage } from "../db.ts";
import { isDatabaseUnavailable } from "../faults.ts";
import type { Database } from "../schema.ts";
import { SharedAllowances } from "./allowances.ts";
import { ACCEPTED_CHANNEL, PgLeadership } from "./leadership.ts";

// 64-bit integers (our millisecond times and Telegram ids) fit safely in a JS number; without this
// pg would hand them back as strings and the repositories would need code of their own for it.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

/**
 * PostgreSQL: several instances may share the database. They share each Dock's allowance through
 * it (allowances.ts), one of them dispatches (leadership.ts, an advisory lock), and the others tell
 * it of accepted messages with NOTIFY.
 */
export function openPostgres(url: string, options: DbOptions): Db {
  const timeoutMs = options.timeoutMs ?? 5000;
  const warned = warnings();
  const kysely = new Kysely<Database>({
    dialect: new PostgresDialect({
      pool: discardingBroken(pool(url, options.poolSize ?? 10, timeoutMs, warned)),
    }),
  });
  // Db.urgent's connections, apart from the pool: a send's Telegram ids never wait for the
  // transactions that fill it (an accept storm, settles queued behind a Dock's hot row of activity).
  // Their commits do not wait for the WAL to reach the disk either (synchronous_commit off): what
  // they write must outlive this process, which a commit in the server's memory does; should the
  // server itself crash within the WAL writer's delay, the record is lost and the copy is sent
  // again, as it was before the record existed.
  const urgent = new Kysely<Database>({
    dialect: new PostgresDialect({
      pool: discardingBroken(
        pool(url, URGENT_CONNECTIONS, timeoutMs, warned, "set synchronous_commit to off"),
      ),
    }),
  });
  const messageLocks = advisoryMessageLocks();
  const batches = new AcceptBatch(kysely, new SharedAllowances(), messageLocks);
  // One batch at a time, in order: each Dock's messages are committed in the order they came.
  let last: Promise<unknown> = Promise.resolve();
  return {
    kysely,
    shared: true,
    messageLocks,
    spelling: { increasingKey: sql`bigserial primary key`, generatedKey: sql`bigserial primary key` },
    ...watchStorage((request) => {
      const run = last.then(() => batches.run(request));
      last = run.catch(() => {});
      return run;
    }),
    urgent: (query) => urgent.executeQuery(query),
    leadership: (name) => new PgLeadership(url, name, timeoutMs > 0 ? timeoutMs : 5000),
    announce: async (dockIds) => {
      await sql`select pg_notify(${ACCEPTED_CHANNEL}, ${dockIds.join(",")})`.execute(kysely);
    },
    onWarning: warned.on,
    close: async () => {
      await Promise.all([kysely.destroy(), urgent.destroy()]);
    },
  };
}

/**
 * A pool of at most `max` connections to `url`, bounded in time by `timeoutMs` (0: no bound);
 * `setting`: a statement each connection runs first (a SET, which a pooler in session mode keeps,
 * where it may drop a startup parameter).
 */
function pool(
  url: string,
  max: number,
  timeoutMs: number,
  warned: ReturnType<typeof warnings>,
  setting?: string,
): pg.Pool {
  const created = new pg.Pool({
    connectionString: url,
    max,
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
  // An idle connection can be closed by the server (a restart, a failover, an administrator);
  // the pool replaces it. Without a listener that event would crash the process.
  created.on("error", (error) => warned.emit(`an idle PostgreSQL connection was closed: ${error.message}`));
  // So can one in use (a terminated backend, a proxy that cuts connections): its query fails with
  // the reason and the pool drops it; the event itself must not crash the process either.
  created.on("connect", (client) => {
    client.on("error", () => {});
    // Queued ahead of the connection's first query; should it fail, so does that query.
    if (setting !== undefined) client.query(setting).catch(() => {});
  });
  return created;
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

/**
 * MessageLocks as transaction-level advisory locks, keyed by a hash of the message ID in the
 * two-integer key space (which never meets the single-key locks of leadership.ts). A hash shared by
 * two messages only makes one wait for the other, briefly.
 */
function advisoryMessageLocks(): MessageLocks {
  return {
    shared: async (tx, messageId) => {
      await sql`select pg_advisory_xact_lock_shared(${sql.lit(MESSAGE_LOCK_CLASS)}, hashtext(${messageId}))`.execute(
        tx,
      );
    },
    exclusive: async (tx, messageId) => {
      await sql`select pg_advisory_xact_lock(${sql.lit(MESSAGE_LOCK_CLASS)}, hashtext(${messageId}))`.execute(
        tx,
      );
    },
  };
}

/**
 * Connections for Db.urgent (opened as needed, closed after 10 s idle). On a starved machine one
 * alone made the records of the sends in flight wait for each other behind a server process the
 * scheduler had set aside (bench:settle-window beside stress-ng: p99 595 ms against 315 ms with 4).
 */
const URGENT_CONNECTIONS = 4;

/** The first key of every message lock: "dn" (Dock Notify). */
const MESSAGE_LOCK_CLASS = 0x646e;
