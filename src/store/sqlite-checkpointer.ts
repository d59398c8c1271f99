/**
 * The checkpoint thread: copies the SQLite write-ahead log back into the database file on a
 * connection of its own, so that the SQLite thread's commits never wait for it.
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
 * the bulk) and lets the next commit start the file over, so the WAL stays bounded.
 */

import { DatabaseSync } from "node:sqlite";
import { parentPort, workerData } from "node:worker_threads";

export interface CheckpointerOptions {
  path: string;
  intervalMs: number;
  restartPages: number;
}

/** What the thread tells its owner. */
export type CheckpointerReport = { kind: "failed"; message: string } | { kind: "stopped" };

/** One checkpoint's answer (SQLite's `PRAGMA wal_checkpoint`): WAL pages, and how many are copied. */
interface CheckpointRow {
  busy: number;
  log: number;
  checkpointed: number;
}

const port = parentPort;
if (port === null) throw new Error("sqlite-checkpointer.ts runs as a worker thread");
const { path, intervalMs, restartPages } = workerData as CheckpointerOptions;

let db: DatabaseSync | null = null;
let failures = 0;

function checkpoint(): void {
  if (db === null) {
    // Opened on the first tick: by then the SQLite thread has created the file and set WAL mode.
    db = new DatabaseSync(path);
    // Only RESTART waits (for the writer's transaction in progress); the writer waits for a
    // RESTART the same way (its own busy_timeout).
    db.exec("PRAGMA busy_timeout = 5000");
  }
  const passive = db.prepare("PRAGMA wal_checkpoint(PASSIVE)").get() as unknown as CheckpointRow;
  if (passive.log >= restartPages) db.prepare("PRAGMA wal_checkpoint(RESTART)").get();
}

const timer = setInterval(() => {
  try {
    checkpoint();
    failures = 0;
  } catch (error) {
    // A checkpoint that cannot run now (the disk is full, another process holds a lock past the
    // timeout) is tried again at the next tick; the WAL keeps every commit meanwhile. Said once per
    // run of failures.
    if (failures++ === 0)
      port.postMessage({ kind: "failed", message: (error as Error).message } satisfies CheckpointerReport);
  }
}, intervalMs);

port.on("message", (message: "stop") => {
  if (message !== "stop") return;
  clearInterval(timer);
  try {
    db?.close();
  } finally {
    db = null;
    port.postMessage({ kind: "stopped" } satisfies CheckpointerReport);
    port.close();
  }
});
