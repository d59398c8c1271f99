/**
 * The SQLite thread: owns the database connection and runs every statement the service sends it
 * (see SqliteThread in connection.ts), one at a time, in the order they arrive. Writing to disk
 * (a commit, a checkpoint, an fsync with synchronous=FULL) never holds up the event loop that
 * answers HTTP requests.
 */
import { parentPort, workerData } from "node:worker_threads";
import { Kysely, SqliteDialect } from "kysely";
import { AcceptBatch, toStoreError } from "../accept-batch.ts";
import type { Database } from "../schema.ts";
import { LocalAllowances } from "./allowances.ts";
import type { ThreadReply, ThreadRequest } from "./connection.ts";
import { openSqlite, type SqliteOptions } from "./driver.ts";
import { SERIAL_MESSAGE_LOCKS } from "./message-locks.ts";

const port = parentPort;
if (port === null) throw new Error("store/sqlite/worker.ts runs as a worker thread");
const { path, options } = workerData as { path: string; options: SqliteOptions };

// A database that cannot be opened answers every request with the reason.
let opened: { database: ReturnType<typeof openSqlite>; accept: AcceptBatch } | null = null;
let openError: unknown = null;
try {
  const database = openSqlite(path, options);
  const kysely = new Kysely<Database>({ dialect: new SqliteDialect({ database }) });
  opened = {
    database,
    accept: new AcceptBatch(kysely, new LocalAllowances(), SERIAL_MESSAGE_LOCKS, { chunkedInserts: true }),
  };
} catch (error) {
  openError = error;
}

/**
 * Whether rows changed and were committed since the last time this said so: the WAL then holds
 * pages the checkpoint thread must copy, which wakes it if it rests (SqliteThread). Counted by
 * SQLite's total_changes(), which sees every INSERT, UPDATE and DELETE (with RETURNING too), said
 * once the transaction has ended. A schema change counts no rows; only migrations make them, at
 * start, when the checkpoint thread runs anyway.
 */
let changesSeen = 0;
let uncommitted = false;
function committedWrite(): boolean {
  if (opened === null) return false;
  const { totalChanges, inTransaction } = opened.database.writes();
  if (totalChanges !== changesSeen) {
    changesSeen = totalChanges;
    uncommitted = true;
  }
  if (!uncommitted || inTransaction) return false;
  uncommitted = false;
  return true;
}

async function handle(request: ThreadRequest): Promise<unknown> {
  if (opened === null) throw openError;
  switch (request.op) {
    case "query": {
      const statement = opened.database.prepare(request.sql);
      if (statement.reader) return { rows: statement.all(request.parameters) };
      const { changes, lastInsertRowid } = statement.run(request.parameters);
      return { changes: Number(changes), lastInsertRowid: Number(lastInsertRowid) };
    }
    case "accept":
      return JSON.stringify(await opened.accept.run(JSON.parse(request.request)));
    case "close":
      opened.database.close();
      opened = null;
      openError = new Error("the database is closed");
      return null;
  }
}

// Requests are handled strictly one after another (a handler may await, as AcceptBatch does).
let queue: Promise<void> = Promise.resolve();
port.on("message", (request: ThreadRequest) => {
  queue = queue.then(async () => {
    let reply: ThreadReply;
    try {
      const result = await handle(request);
      reply = { id: request.id, ok: true, result, wrote: committedWrite() };
    } catch (error) {
      reply = { id: request.id, ok: false, error: toStoreError(error) };
    }
    port.postMessage(reply);
    if (request.op === "close") port.close();
  });
});
