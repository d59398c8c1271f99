/**
 * The checkpoint thread: copies the SQLite write-ahead log back into the database file on a
 * connection of its own, so that the SQLite thread's commits (almost) never wait for it.
 *
 * With SQLite's default, the commit that takes the WAL past 1,000 pages runs the checkpoint itself:
 * it copies the pages and `fsync`s the WAL and the database before the next batch of messages can
 * be stored, and every request waiting for that batch waits too (the tail of the latency at a
 * steady load). Here the writer's automatic checkpoints are off (`wal_autocheckpoint = 0`, see
 * SqliteThread) and this thread runs a PASSIVE checkpoint every `intervalMs`, beside the writer:
 * PASSIVE never takes the write lock. Under a steady load the writer always has appended a few
 * pages more by the time a checkpoint ends, and SQLite starts the WAL file over only once all of it
 * is copied; when the WAL holds `restartPages` pages or more, a RESTART checkpoint waits for the
 * writer's transaction in progress, copies what is left (little: the PASSIVE one just before did
 * the bulk) and lets the next commit start the file over, so the WAL stays bounded. Commits wait for
 * that copy (a few milliseconds), never for a reader: see RESTART_WAIT_MS.
 *
 * An idle service needs no checkpoints: once the WAL is all copied and has not changed for
 * `restAfterMs`, the thread says it rests and ends (its V8 isolate is ~10 MB of an idle service's
 * memory); the owner starts a new one at the next write (SqliteThread).
 */

import { DatabaseSync, type StatementSync } from "node:sqlite";
import { parentPort, workerData } from "node:worker_threads";

export interface CheckpointerOptions {
  path: string;
  intervalMs: number;
  restartPages: number;
  /** The thread ends once the WAL has been all copied and unchanged for this long. */
  restAfterMs: number;
}

/** What the thread tells its owner. */
export type CheckpointerReport =
  | { kind: "failed"; message: string }
  /** Checkpoints work again after failing (space was freed). */
  | { kind: "recovered"; failures: number }
  /** The WAL has not been able to start over for `seconds`: a reader keeps its old pages in use. */
  | { kind: "stuck"; pages: number; seconds: number }
  /** Nothing to copy for a while: the thread ends. */
  | { kind: "resting" };

/** One checkpoint's answer (SQLite's `PRAGMA wal_checkpoint`): WAL pages, and how many are copied. */
interface CheckpointRow {
  busy: number;
  log: number;
  checkpointed: number;
}

const port = parentPort;
if (port === null) throw new Error("store/sqlite/checkpointer.ts runs as a worker thread");
const { path, intervalMs, restartPages, restAfterMs } = workerData as CheckpointerOptions;

/**
 * How long a RESTART may hold the write lock waiting (for the writer's transaction in progress, then
 * for readers of older pages to finish). A reader outside the service (a `sqlite3` shell in a
 * transaction, a backup) can keep old pages in use for minutes: the RESTART then gives up after
 * this long instead of holding up every commit meanwhile.
 */
const RESTART_WAIT_MS = 20;
/** After a RESTART that had to give up, the next one is tried this much later. */
const RESTART_BACKOFF_MS = 5_000;
/** The owner is told when the WAL could not start over for this long. */
const STUCK_AFTER_MS = 60_000;
/** While checkpoints fail (a full disk), they are tried this often instead of every interval. */
const FAILING_INTERVAL_MS = 1000;

/** The connection and its two statements, prepared once. */
let db: { connection: DatabaseSync; passive: StatementSync; restart: StatementSync } | null = null;
let failures = 0;
let nextRestart = 0;
/** Since when RESTART checkpoints have been giving up, and whether the owner was told. */
let stuckSince: number | null = null;
let toldStuck = false;
/** The WAL's size at the last checkpoint, and since when it has been that size. */
let lastLog = -1;
let unchangedSince = Date.now();

function report(message: CheckpointerReport): void {
  port?.postMessage(message);
}

/** The WAL is below the RESTART mark, or started over: nothing is stuck. */
function unstuck(): void {
  stuckSince = null;
  toldStuck = false;
}

/** Runs one round of checkpoints; true when the WAL is all copied and has been quiet long enough to rest. */
function checkpoint(): boolean {
  if (db === null) {
    // Opened on the first tick: by then the SQLite thread has created the file and set WAL mode.
    const connection = new DatabaseSync(path);
    // Only RESTART waits (PASSIVE never does). The writer waits for a RESTART the same way, with
    // its own busy_timeout.
    connection.exec(`PRAGMA busy_timeout = ${RESTART_WAIT_MS}`);
    db = {
      connection,
      passive: connection.prepare("PRAGMA wal_checkpoint(PASSIVE)"),
      restart: connection.prepare("PRAGMA wal_checkpoint(RESTART)"),
    };
  }
  const passive = db.passive.get() as unknown as CheckpointRow;
  const now = Date.now();
  if (passive.log !== lastLog) {
    lastLog = passive.log;
    unchangedSince = now;
  } else if (passive.checkpointed === passive.log && now - unchangedSince >= restAfterMs) {
    return true;
  }
  if (passive.log < restartPages) {
    unstuck();
    return false;
  }
  if (now < nextRestart) return false;
  const restart = db.restart.get() as unknown as CheckpointRow;
  if (restart.busy === 0) {
    unstuck();
    return false;
  }
  nextRestart = now + RESTART_BACKOFF_MS;
  stuckSince ??= now;
  if (!toldStuck && now - stuckSince >= STUCK_AFTER_MS) {
    toldStuck = true;
    report({ kind: "stuck", pages: restart.log, seconds: Math.round((now - stuckSince) / 1000) });
  }
  return false;
}

let timer: NodeJS.Timeout | null = null;

function tick(): void {
  try {
    if (checkpoint()) {
      report({ kind: "resting" });
      end();
      return;
    }
    if (failures > 0) report({ kind: "recovered", failures });
    failures = 0;
  } catch (error) {
    // A checkpoint that cannot run now (the disk is full, a lock held past the timeout) is tried
    // again later, for as long as it takes: the WAL keeps every commit meanwhile, and checkpoints
    // go on by themselves once space is freed. Said once per run of failures, and when it ends.
    failures++;
    if (failures === 1) report({ kind: "failed", message: (error as Error).message });
    // The connection may be the trouble (its file handles): a fresh one at the next try.
    if (failures % 10 === 0) closeQuietly();
  }
  timer = setTimeout(tick, failures > 0 ? FAILING_INTERVAL_MS : intervalMs);
}
timer = setTimeout(tick, intervalMs);

function closeQuietly(): void {
  try {
    db?.connection.close();
  } catch {
    // Nothing more to do with it.
  }
  db = null;
}

function end(): void {
  if (timer !== null) clearTimeout(timer);
  closeQuietly();
  port?.close();
}

port.on("message", (message: "stop") => {
  if (message === "stop") end();
});
