import { AsyncLocalStorage } from "node:async_hooks";
import { createHash } from "node:crypto";
import { Kysely, PostgresDialect, type PostgresPool, type PostgresPoolClient, sql } from "kysely";
import pg from "pg";
import { AcceptBatch } from "../accept-batch.ts";
import type { Db, DbOptions, MessageLocks } from "../db.ts";
import { warnings, watchStorage } from "../db.ts";
import { deadlinePassed, isDatabaseUnavailable } from "../faults.ts";
import type { Database } from "../schema.ts";
import { LeasedAllowances } from "./allowances.ts";
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
  const poolSize = options.poolSize ?? 10;
  const warned = warnings();
  const deadlines = new AsyncLocalStorage<number>();
  const kysely = new Kysely<Database>({
    dialect: new PostgresDialect({
      pool: boundedPool(pool(url, poolSize, timeoutMs, warned), deadlines),
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
      pool: boundedPool(
        pool(url, URGENT_CONNECTIONS, timeoutMs, warned, "set synchronous_commit to off"),
        deadlines,
      ),
    }),
  });
  const messageLocks = advisoryMessageLocks();
  // A few fixed sizes of the batch's INSERTs, so the statements named on each connection stay few.
  const batches = new AcceptBatch(kysely, new LeasedAllowances(kysely), messageLocks, {
    chunkedInserts: true,
  });
  return {
    kysely,
    shared: true,
    messageLocks,
    spelling: { increasingKey: sql`bigserial primary key`, generatedKey: sql`bigserial primary key` },
    // Each batch is given up at its deadline, whatever the database does (see boundedPool).
    ...watchStorage((request) =>
      request.deadline === undefined
        ? batches.run(request)
        : deadlines.run(request.deadline, () => batches.run(request)),
    ),
    // Each batch holds a connection for its transaction (its allowance leased before, on one
    // connection at a time): at most half the pool, so the dispatcher's work and the console still
    // find connections under a storm of sends.
    batchesAtOnce: Math.max(1, Math.min(MAX_BATCHES_AT_ONCE, Math.floor(poolSize / 2))),
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
 * Batches of messages written at once, at most. Each waits for round trips far more than for
 * either side's CPU; more than a few only queue for the server's processes on a small machine.
 */
const MAX_BATCHES_AT_ONCE = 4;

/** How long after its deadline a batch waits for its COMMIT's answer (DATABASE_TIMEOUT_SECONDS + 1 s is the promise). */
const COMMIT_ANSWER_MS = 500;

/**
 * The longest the server lets a batch's transaction sit silent before it ends the session (and so
 * rolls the transaction back): long enough for the pauses between a batch's statements on a busy
 * machine. Half the time left when the transaction begins, when that is less.
 */
const MAX_FENCE_MS = 1000;

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
 * The pool as Kysely sees it, with two differences.
 *
 * A connection whose query failed because the database was unavailable is closed (its socket
 * destroyed) when released, not handed to the next caller: after a query timed out on our side
 * the connection still waits for that answer, and would hold up whoever used it next for as long
 * as the network stays silent.
 *
 * Work done under a deadline (`deadlines`: a batch of accepted messages, whose senders are owed an
 * answer by then) is given up at it, whatever the database does — connecting, waiting for a free
 * connection, each statement — and is then certainly not committed, with one exception. So that
 * a batch given up on stays given up on, its transaction tells the server to end the session
 * after a "fence" of silence (`idle_in_transaction_session_timeout`: MAX_FENCE_MS, or half the
 * time left), and COMMIT is sent only while at least the fence is left: a COMMIT held up in a
 * frozen network and delivered when it thaws finds the transaction rolled back, and one the
 * server does run, it runs before the deadline (the server's silence began before our last answer
 * arrived). The exception: the COMMIT ran but its answer is not back COMMIT_ANSWER_MS after the
 * deadline (the network failed during those milliseconds, or the server took that long to
 * commit). Its senders are answered 503 then, and their messages are stored: a retry with the
 * same Idempotency-Key is answered as the first send.
 */
function boundedPool(pool: pg.Pool, deadlines: AsyncLocalStorage<number>): PostgresPool {
  return {
    async connect() {
      // The deadline of the work this connection is for (Kysely takes one per transaction).
      const deadline = deadlines.getStore();
      const client = deadline === undefined ? await pool.connect() : await connectBy(pool, deadline);
      let broken: Error | null = null;
      let fenceMs = 0;
      const query = (sqlOrCursor: unknown, parameters?: ReadonlyArray<unknown>) => {
        // Given up: what follows (a transaction's ROLLBACK) would only queue behind the lost
        // query and wait out the timeout again.
        if (broken) return Promise.reject(broken);
        const giveUp = (error: Error) => {
          broken = error;
          return Promise.reject(error);
        };
        let request: unknown = sqlOrCursor;
        if (deadline !== undefined && typeof sqlOrCursor === "string") {
          const now = performance.now();
          let text = sqlOrCursor;
          if (sqlOrCursor === "begin") {
            fenceMs = Math.min(MAX_FENCE_MS, Math.floor((deadline - now) / 2));
            if (fenceMs < 1) return giveUp(deadlinePassed("too late to begin"));
            text = `begin; set local idle_in_transaction_session_timeout = ${fenceMs}`;
          }
          if (sqlOrCursor === "commit" && now + fenceMs > deadline)
            return giveUp(deadlinePassed("too late to commit"));
          const left = (sqlOrCursor === "commit" ? deadline + COMMIT_ANSWER_MS : deadline) - now;
          if (left <= 0) return giveUp(deadlinePassed("a statement"));
          request = {
            text,
            values: parameters,
            query_timeout: Math.ceil(left),
            ...(parameters !== undefined && parameters.length > 0 ? statementName(text) : {}),
          };
        }
        const result = (client.query as (...args: unknown[]) => unknown)(
          request,
          request === sqlOrCursor ? parameters : undefined,
        );
        if (!(result instanceof Promise)) return result;
        return result.then(
          // `begin; set local …` answers twice: Kysely reads nothing of a BEGIN's answer.
          (answer: unknown) => (Array.isArray(answer) ? answer[0] : answer),
          (error: unknown) => {
            // pg's own timer, set above to the deadline: the deadline passed, and says so (the
            // same error as a batch refused while it waited, whichever timer fires first).
            const passed =
              request !== sqlOrCursor && error instanceof Error && /^Query read timeout/.test(error.message)
                ? deadlinePassed(sqlOrCursor === "commit" ? "a commit's answer" : "a statement")
                : error;
            if (isDatabaseUnavailable(passed) || isStaleStatement(passed)) broken = passed as Error;
            throw passed;
          },
        );
      };
      return {
        query: query as PostgresPoolClient["query"],
        release: () => {
          // Closed at once: a polite goodbye would wait for the silent server (and the pool
          // makes no new connection for its waiters until the old one is gone).
          if (broken) (client as unknown as { connection?: Socketed }).connection?.stream?.destroy();
          client.release(broken ? true : undefined);
        },
      };
    },
    end: () => pool.end(),
  };
}

/**
 * A named statement the server can no longer run as prepared (a migration by a newer instance
 * changed what it returns: "cached plan must not change result type", SQLSTATE 0A000) or has
 * lost (26000): the connection is dropped with its statements, and the next one prepares afresh.
 */
function isStaleStatement(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return code === "0A000" || code === "26000";
}

/** Names given to statements so far (statementName), by their text. */
const names = new Map<string, string>();

/** Statements named, at most: each connection keeps each it has run (a few KB apiece in the server). */
const MAX_NAMED = 200;

/**
 * A name for a statement of the accept path (those run under a deadline: the batches' and their
 * leases'), so that each connection parses and plans it once and then only binds and runs it:
 * `/ping` went from about 15 % to 21.6 % of the bare route (bench:ingest on PostgreSQL,
 * docs/benchmarks.md). The text names the statement (a digest of it), so no two texts ever share a name.
 * Statements beyond MAX_NAMED go unnamed, as everything else does. They are all index lookups and
 * inserts, for which the server's generic plan is the plan; and they name their columns, so a
 * migration adding a column never changes what a named one returns.
 */
function statementName(text: string): { name: string } | Record<string, never> {
  let name = names.get(text);
  if (name === undefined) {
    if (names.size >= MAX_NAMED) return {};
    name = `dn_${createHash("sha256").update(text).digest("hex").slice(0, 24)}`;
    names.set(text, name);
  }
  return { name };
}

/** The part of pg's client that holds the socket (pg-pool closes a timed-out connection the same way). */
type Socketed = { stream?: { destroy(): void } };

/** A connection from the pool by `deadline`; one that comes later goes back to the pool unused. */
async function connectBy(pool: pg.Pool, deadline: number): Promise<pg.PoolClient> {
  if (deadline <= performance.now()) throw deadlinePassed("waiting for a connection");
  const connecting = pool.connect();
  try {
    return await byDeadline(connecting, deadline, "waiting for a connection");
  } catch (error) {
    connecting.then(
      (client) => client.release(),
      () => {},
    );
    throw error;
  }
}

/** `promise`, or the database's deadline error at `deadline` (`performance.now()`) if that comes first. */
function byDeadline<T>(promise: Promise<T>, deadline: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(deadlinePassed(what)), Math.max(0, deadline - performance.now()));
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
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

/** The first key of every message lock: "dn" (Dock Notify). */
const MESSAGE_LOCK_CLASS = 0x646e;

/**
 * Connections for Db.urgent (opened as needed, closed after 10 s idle). On a starved machine one
 * alone made the records of the sends in flight wait for each other behind a server process the
 * scheduler had set aside (bench:settle-window beside stress-ng: p99 595 ms against 315 ms with 4).
 */
const URGENT_CONNECTIONS = 4;
