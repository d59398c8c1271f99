import { once } from "node:events";
import { Worker } from "node:worker_threads";
import {
  CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type QueryResult,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from "kysely";
import { threadModule } from "../../files.ts";
import {
  type AcceptBatchRequest,
  type AcceptOutcome,
  fromStoreError,
  type StoreError,
} from "../accept-batch.ts";
import type { CheckpointerOptions, CheckpointerReport } from "./checkpointer.ts";
import type { SqliteOptions } from "./driver.ts";

export type SqliteThreadOptions = Pick<SqliteOptions, "synchronous"> & {
  /** How long the WAL stays all copied and unchanged before the checkpoint thread rests (ms). */
  checkpointRestMs?: number;
};

/**
 * How often the checkpoint thread copies the WAL into the database file, and the WAL's size in
 * pages (4 KiB each) from which it makes the writer wait for the rest so the file can start over.
 */
const CHECKPOINT_INTERVAL_MS = 200;
const CHECKPOINT_RESTART_PAGES = 4000;
/**
 * How long nothing must have been written before the checkpoint thread ends, until the next write
 * starts it again: an idle service then holds one V8 isolate less (~10 MB), and a busy one never
 * pays for a restart (~20 ms of a core, off the event loop).
 */
export const CHECKPOINT_REST_MS = 30_000;

/**
 * The SQLite thread's young generation (V8's nursery for short-lived objects). By default it grows
 * to 16 MB semi-spaces while the service starts (migrations, the first statements) and keeps them;
 * what the thread allocates afterwards (a batch's JSON, its rows) dies young and small. Capped, the
 * idle service holds ~8 MB less, with the same /ping throughput and p99 (bench:ingest, see
 * docs/benchmarks.md). The checkpoint thread allocates next to nothing and needs no cap.
 */
const SQLITE_THREAD_YOUNG_GENERATION_MB = 3;

/** What the service asks the SQLite thread (worker.ts). */
export type ThreadRequest =
  | { id: number; op: "query"; sql: string; parameters: readonly unknown[] }
  // A batch travels as JSON text: copying one string across threads costs a fraction of cloning
  // hundreds of small objects.
  | { id: number; op: "accept"; request: string }
  | { id: number; op: "close" };

export type ThreadReply =
  /** `wrote`: rows changed and committed since the last reply that said so (see worker.ts). */
  { id: number; ok: true; result: unknown; wrote: boolean } | { id: number; ok: false; error: StoreError };

type Request = ThreadRequest extends infer R ? (R extends { id: number } ? Omit<R, "id"> : never) : never;

/**
 * Who may send statements to the thread's one connection. A Kysely connection (a transaction or a
 * single query) holds it alone: its statements must not interleave with anyone's. Message batches
 * share it: each is a whole transaction inside the thread, and the thread runs them one after the
 * other, so the next batch can be on its way while the last one is written. First come, first
 * served: a transaction waiting is not overtaken by later batches.
 */
type Waiting = { batch: boolean; urgent: boolean; enter: () => void; refuse: (error: Error) => void };

class Gate {
  #batches = 0;
  #exclusive = false;
  #shut: Error | null = null;
  readonly #waiting: Waiting[] = [];

  /**
   * `urgent`: one statement that must not wait behind the work queued (see Db.urgent): it goes
   * next, after those urgent ones already waiting, as soon as whoever holds the connection leaves.
   */
  enter(batch: boolean, urgent = false): Promise<void> {
    if (this.#shut) return Promise.reject(this.#shut);
    if (this.#waiting.length === 0 && !this.#exclusive && (batch || this.#batches === 0)) {
      this.#admit(batch);
      return Promise.resolve();
    }
    return new Promise((enter, refuse) => {
      const waiting = { batch, urgent, enter, refuse };
      const place = urgent ? this.#waiting.findIndex((w) => !w.urgent) : -1;
      if (place < 0) this.#waiting.push(waiting);
      else this.#waiting.splice(place, 0, waiting);
    });
  }

  leave(batch: boolean): void {
    if (batch) this.#batches--;
    else this.#exclusive = false;
    while (this.#waiting.length > 0 && !this.#exclusive) {
      const next = this.#waiting[0] as Waiting;
      if (!next.batch && this.#batches > 0) break;
      this.#waiting.shift();
      this.#admit(next.batch);
      next.enter();
    }
  }

  /** From now on nobody enters: those waiting and those who come later are refused with `reason`. */
  shut(reason: Error): void {
    this.#shut ??= reason;
    for (const waiting of this.#waiting.splice(0)) waiting.refuse(this.#shut);
  }

  #admit(batch: boolean): void {
    if (batch) this.#batches++;
    else this.#exclusive = true;
  }
}

/**
 * The SQLite database, open in a thread of its own (worker.ts). `node:sqlite` is
 * synchronous: run on the event loop, every commit, checkpoint and slow query would stop the
 * server from answering anyone meanwhile. Here the event loop only hands over a statement and
 * later receives its rows.
 */
export class SqliteThread {
  readonly #worker: Worker;
  readonly #waiting = new Map<
    number,
    { resolve: (value: unknown) => void; reject: (error: Error) => void }
  >();
  readonly gate = new Gate();
  #nextId = 1;
  #stopped: Error | null = null;
  #closing: Promise<void> | null = null;
  readonly #path: string;
  readonly #onWarning: (message: string) => void;
  /**
   * The checkpoint thread (checkpointer.ts): started after the first statement succeeds; "resting"
   * while it is idle and ended, until the next write (see CHECKPOINT_REST_MS).
   */
  #checkpointer: Worker | "wanted" | "resting" | "none";
  readonly #checkpointRestMs: number;

  /**
   * `onFailure`: the thread stopped on its own (it crashed, or ran out of memory). Nothing more can
   * be stored or read; the default ends the process with the reason, so that a supervisor starts a
   * new one (every message answered 202 is committed and will be found there).
   * `onWarning`: something the operator should know that stops nothing (a checkpoint that failed).
   */
  constructor(
    path: string,
    options: SqliteThreadOptions,
    {
      onFailure = (error) => {
        process.nextTick(() => {
          throw error;
        });
      },
      onWarning = (message) => process.emitWarning(message),
    }: { onFailure?: (error: Error) => void; onWarning?: (message: string) => void } = {},
  ) {
    this.#path = path;
    this.#onWarning = onWarning;
    this.#checkpointRestMs = options.checkpointRestMs ?? CHECKPOINT_REST_MS;
    // An in-memory database has no WAL to copy.
    this.#checkpointer = path === ":memory:" || path === "" ? "none" : "wanted";
    const threadOptions: SqliteOptions = {
      synchronous: options.synchronous,
      checkpoints: this.#checkpointer === "wanted" ? "background" : "on-commit",
    };
    this.#worker = new Worker(threadModule("store/sqlite/worker"), {
      workerData: { path, options: threadOptions },
      resourceLimits: { maxYoungGenerationSizeMb: SQLITE_THREAD_YOUNG_GENERATION_MB },
    });
    // An idle database keeps nobody alive (a CLI command ends when its work is done); a pending
    // request does (see #call).
    this.#worker.unref();
    this.#worker.on("message", (reply: ThreadReply) => {
      const waiting = this.#waiting.get(reply.id);
      if (waiting === undefined) return;
      this.#waiting.delete(reply.id);
      if (this.#waiting.size === 0) this.#worker.unref();
      if (reply.ok && reply.wrote) this.#wrote();
      if (reply.ok) waiting.resolve(reply.result);
      else waiting.reject(fromStoreError(reply.error));
      // The first statement that succeeds shows the file is there, in WAL mode.
      if (reply.ok && this.#checkpointer === "wanted" && !this.#closing) this.#startCheckpointer();
    });
    const failed = (reason: Error) => {
      if (this.#stopped) return;
      this.#stop(reason);
      if (!this.#closing) onFailure(reason);
    };
    this.#worker.on("error", (error) => failed(new Error(`the SQLite thread failed: ${error.message}`)));
    this.#worker.on("exit", (code) => failed(new Error(`the SQLite thread stopped (exit code ${code})`)));
  }

  #startCheckpointer(): void {
    let worker: Worker;
    try {
      worker = new Worker(threadModule("store/sqlite/checkpointer"), {
        workerData: {
          path: this.#path,
          intervalMs: CHECKPOINT_INTERVAL_MS,
          restartPages: CHECKPOINT_RESTART_PAGES,
          restAfterMs: this.#checkpointRestMs,
        } satisfies CheckpointerOptions,
      });
    } catch (error) {
      this.#checkpointer = "none";
      this.#checkpointOnCommit(`could not start: ${(error as Error).message}`);
      return;
    }
    this.#checkpointer = worker;
    worker.unref();
    worker.on("message", (report: CheckpointerReport) => {
      if (report.kind === "failed") {
        this.#onWarning(
          `a SQLite checkpoint failed (tried again every second until it works; the WAL file keeps every commit meanwhile): ${report.message}`,
        );
      } else if (report.kind === "recovered") {
        this.#onWarning(`SQLite checkpoints work again after ${report.failures} failed attempts`);
      } else if (report.kind === "resting") {
        if (this.#checkpointer !== worker) return;
        this.#checkpointer = "resting";
        // A commit between the thread's last look and now, whose reply came before this report,
        // woke nobody: one PASSIVE checkpoint on the writer's own connection, queued behind every
        // statement sent so far, copies it. Commits after it wake the thread (#wrote).
        this.#call({ op: "query", sql: "PRAGMA wal_checkpoint(PASSIVE)", parameters: [] }).catch(() => {});
      } else if (report.kind === "stuck") {
        this.#onWarning(
          `the SQLite WAL file has not been able to start over for ${report.seconds} s (${report.pages} pages): another connection keeps a read transaction open on this database`,
        );
      }
    });
    const lost = (reason: string) => {
      if (this.#checkpointer !== worker) return;
      this.#checkpointer = "none";
      this.#checkpointOnCommit(reason);
    };
    worker.on("error", (error) => lost(`failed: ${error.message}`));
    worker.on("exit", (code) => lost(`stopped (exit code ${code})`));
  }

  /** Whether the checkpoint thread runs, rests until the next write, or there is none (tests, metrics). */
  get checkpoints(): "running" | "resting" | "none" {
    if (typeof this.#checkpointer !== "string") return "running";
    return this.#checkpointer === "wanted" ? "resting" : this.#checkpointer;
  }

  /** A write was committed: the checkpoint thread, if it rests, has work again. */
  #wrote(): void {
    if (this.#checkpointer === "resting" && !this.#closing && !this.#stopped) this.#startCheckpointer();
  }

  /** Without a checkpoint thread: SQLite's default again, so that the WAL cannot grow without bound. */
  #checkpointOnCommit(reason: string): void {
    if (this.#closing || this.#stopped) return;
    this.#onWarning(
      `the SQLite checkpoint thread ${reason}; commits copy the WAL into the database from now on`,
    );
    this.#call({ op: "query", sql: "PRAGMA wal_autocheckpoint = 1000", parameters: [] }).catch(() => {});
  }

  /** The checkpoint thread, if it runs, now no longer this object's: its exit is no loss. */
  #takeCheckpointer(): Worker | null {
    const worker = this.#checkpointer;
    this.#checkpointer = "none";
    return typeof worker === "string" ? null : worker;
  }

  /** Stops the checkpoint thread, if it runs: it closes its connection and ends. */
  async #stopCheckpointer(): Promise<void> {
    const worker = this.#takeCheckpointer();
    if (worker === null) return;
    // An "error" instead of an "exit" ends it too.
    const exited = once(worker, "exit").then(
      () => {},
      () => {},
    );
    worker.postMessage("stop");
    // A checkpoint in progress finishes first (a running SQLite call cannot be interrupted); a
    // thread that still has not ended 10 s later is terminated.
    const timeout = setTimeout(() => void worker.terminate(), 10_000);
    try {
      await exited;
    } finally {
      clearTimeout(timeout);
    }
  }

  #stop(reason: Error): void {
    this.#stopped ??= this.#closing ? new Error("the database is closed") : reason;
    void this.#takeCheckpointer()?.terminate();
    for (const waiting of this.#waiting.values()) waiting.reject(this.#stopped);
    this.#waiting.clear();
    this.gate.shut(this.#stopped);
  }

  #call(request: Request): Promise<unknown> {
    if (this.#stopped) return Promise.reject(this.#stopped);
    const id = this.#nextId++;
    if (this.#waiting.size === 0) this.#worker.ref();
    return new Promise((resolve, reject) => {
      this.#waiting.set(id, { resolve, reject });
      this.#worker.postMessage({ id, ...request });
    });
  }

  /** Runs one statement; the caller has entered the gate. */
  async query<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const result = (await this.#call({ op: "query", sql: query.sql, parameters: query.parameters })) as
      | { rows: R[] }
      | { changes: number; lastInsertRowid: number };
    if ("rows" in result) return { rows: result.rows };
    return {
      numAffectedRows: BigInt(result.changes),
      insertId: BigInt(result.lastInsertRowid),
      rows: [],
    };
  }

  /** Runs one statement ahead of everyone waiting for the connection (Db.urgent). */
  async urgent<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    await this.gate.enter(false, true);
    try {
      return await this.query<R>(query);
    } finally {
      this.gate.leave(false);
    }
  }

  /** Stores a batch of messages in one transaction, in the thread (AcceptBatch). */
  async accept(request: AcceptBatchRequest): Promise<AcceptOutcome[]> {
    if (this.#closing) throw new Error("the database is closed");
    await this.gate.enter(true);
    try {
      return JSON.parse((await this.#call({ op: "accept", request: JSON.stringify(request) })) as string);
    } finally {
      this.gate.leave(true);
    }
  }

  /** Closes the database and ends the thread; waits for statements already sent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      // Statements already sent or waiting their turn run first; whoever comes later is refused.
      const entered = await this.gate.enter(false).then(
        () => true,
        () => false,
      );
      this.gate.shut(new Error("the database is closed"));
      // First, so that the database's last connection (the thread's) copies the WAL in and removes it.
      await this.#stopCheckpointer();
      if (entered) {
        // Another connection may keep the database open (a CLI command beside the service, whose
        // checkpoint thread rests): what this one wrote is copied into the file (and synced) now,
        // not at that connection's next write. The last connection does it by itself on closing.
        await this.#call({ op: "query", sql: "PRAGMA wal_checkpoint(PASSIVE)", parameters: [] }).catch(
          () => {},
        );
        try {
          await this.#call({ op: "close" });
        } catch {
          // Never opened: nothing to close.
        }
      }
      await this.#worker.terminate();
    })();
    return this.#closing;
  }
}

class ThreadConnection implements DatabaseConnection {
  readonly #thread: SqliteThread;

  constructor(thread: SqliteThread) {
    this.#thread = thread;
  }

  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    return this.#thread.query<R>(query);
  }

  async *streamQuery<R>(query: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    const { rows } = await this.executeQuery<R>(query);
    for (const row of rows) yield { rows: [row] };
  }
}

class ThreadDriver implements Driver {
  readonly #thread: SqliteThread;
  readonly #connection: ThreadConnection;

  constructor(thread: SqliteThread) {
    this.#thread = thread;
    this.#connection = new ThreadConnection(thread);
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    await this.#thread.gate.enter(false);
    return this.#connection;
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    // The thread's connection turns this into BEGIN IMMEDIATE (see openSqlite).
    await connection.executeQuery(CompiledQuery.raw("begin"));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw("commit"));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw("rollback"));
  }

  async savepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`savepoint ${quote(name)}`));
  }

  async rollbackToSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`rollback to ${quote(name)}`));
  }

  async releaseSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`release ${quote(name)}`));
  }

  async releaseConnection(): Promise<void> {
    this.#thread.gate.leave(false);
  }

  async destroy(): Promise<void> {
    await this.#thread.close();
  }
}

function quote(identifier: string): string {
  return `"${identifier.replaceAll('"', '""')}"`;
}

/** Kysely's SQLite dialect, with the statements run in the SQLite thread. */
export function sqliteThreadDialect(thread: SqliteThread): Dialect {
  return {
    createAdapter: () => new SqliteAdapter(),
    createDriver: () => new ThreadDriver(thread),
    createIntrospector: (db) => new SqliteIntrospector(db),
    createQueryCompiler: () => new SqliteQueryCompiler(),
  };
}
