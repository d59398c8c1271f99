import { Kysely, sql } from "kysely";
import type { Db, DbOptions, Leadership } from "../db.ts";
import { warnings, watchStorage } from "../db.ts";
import type { Database } from "../schema.ts";
import { SqliteThread, sqliteThreadDialect } from "./connection.ts";
import { SERIAL_MESSAGE_LOCKS } from "./message-locks.ts";

/**
 * SQLite: one process owns the file. Its connection lives in a thread of its own
 * (connection.ts, worker.ts), so the disk never holds up the event loop; checkpoints run in another
 * (checkpointer.ts), so they never hold up a commit. Each Dock's allowance is kept in that thread's
 * memory, and the process is always the one leader.
 */
export function openSqlite(path: string, options: DbOptions): Db {
  const warned = warnings();
  const thread = new SqliteThread(
    path,
    {
      synchronous: options.sqliteSynchronous ?? "normal",
      ...(options.sqliteCheckpointRestMs === undefined
        ? {}
        : { checkpointRestMs: options.sqliteCheckpointRestMs }),
    },
    { onWarning: (message) => warned.emit(message) },
  );
  const kysely = new Kysely<Database>({ dialect: sqliteThreadDialect(thread) });
  return {
    kysely,
    shared: false,
    // One connection, one transaction at a time: nothing to order.
    messageLocks: SERIAL_MESSAGE_LOCKS,
    spelling: {
      increasingKey: sql`integer primary key autoincrement`,
      // A rowid key, without AUTOINCREMENT's bookkeeping.
      generatedKey: sql`integer primary key`,
    },
    ...watchStorage((request) => thread.accept(request)),
    batchesAtOnce: 2,
    urgent: (query) => thread.urgent(query),
    leadership: () => new SoleLeadership(),
    // The leader is this process: the dispatcher is woken in process (MessageRepository.onAccepted).
    announce: async () => {},
    onWarning: warned.on,
    // Kysely only destroys a driver it has used: close the thread in any case.
    close: async () => {
      await kysely.destroy();
      await thread.close();
    },
  };
}

/** The only process on the database leads whenever it asks, until it steps down. */
class SoleLeadership implements Leadership {
  readonly contended = false;
  #leader = false;

  get isLeader(): boolean {
    return this.#leader;
  }

  async tryAcquire(): Promise<boolean> {
    this.#leader = true;
    return true;
  }

  async heartbeat(): Promise<void> {}

  async release(): Promise<void> {
    this.#leader = false;
  }

  async others(): Promise<boolean> {
    return false;
  }

  async leave(): Promise<void> {}
}
