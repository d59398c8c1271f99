import { closeSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";
import { DatabaseSync, type StatementSync } from "node:sqlite";
import type { SqliteDatabase, SqliteStatement } from "kysely";

/**
 * Adapts Node's built-in `node:sqlite` (no native build step) to the better-sqlite3-shaped interface
 * that Kysely's SqliteDialect expects. This file is the only SQLite-specific I/O in the project.
 */
class Statement implements SqliteStatement {
  readonly #statement: StatementSync;
  readonly reader: boolean;

  constructor(statement: StatementSync) {
    this.#statement = statement;
    this.reader = statement.columns().length > 0;
  }

  all(parameters: ReadonlyArray<unknown>): unknown[] {
    return this.#statement.all(...(parameters as never[]));
  }

  run(parameters: ReadonlyArray<unknown>): { changes: number | bigint; lastInsertRowid: number | bigint } {
    return this.#statement.run(...(parameters as never[]));
  }

  iterate(parameters: ReadonlyArray<unknown>): IterableIterator<unknown> {
    return this.#statement.iterate(...(parameters as never[]));
  }
}

/**
 * ROLLBACK of a transaction SQLite has already rolled back by itself: it does so on SQLITE_FULL and
 * some I/O errors, and the ROLLBACK that follows would fail with "cannot rollback - no transaction
 * is active", an error that would replace the one that says what went wrong (the disk is full).
 */
class Rollback implements SqliteStatement {
  readonly reader = false;
  readonly #db: DatabaseSync;

  constructor(db: DatabaseSync) {
    this.#db = db;
  }

  all(): unknown[] {
    this.run();
    return [];
  }

  run(): { changes: number; lastInsertRowid: number } {
    if (this.#db.isTransaction) this.#db.exec("rollback");
    return { changes: 0, lastInsertRowid: 0 };
  }

  iterate(): IterableIterator<unknown> {
    this.run();
    return [][Symbol.iterator]();
  }
}

export interface SqliteOptions {
  synchronous: "normal" | "full";
  /**
   * `on-commit`: SQLite's default, the commit that takes the WAL past 1,000 pages copies it into the
   * database. `background`: never on this connection; another one does it (checkpointer.ts).
   */
  checkpoints: "on-commit" | "background";
}

/** Opens (creating the file and its folder if needed) a SQLite database in WAL mode. */
/** A connection as Kysely drives it, and what the SQLite thread reads of its writes. */
export interface SqliteConnection extends SqliteDatabase {
  /** Rows changed since the connection opened (SQLite's total_changes()), and whether a transaction is open. */
  writes(): { totalChanges: number; inTransaction: boolean };
}

export function openSqlite(path: string, options: SqliteOptions): SqliteConnection {
  if (path !== ":memory:") {
    // The database holds people's chat ids and the Docks' sealed keys: readable by the service's
    // user only. SQLite gives its -wal and -shm files the database file's mode.
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    closeSync(openSync(path, "a", 0o600));
  }
  const db = new DatabaseSync(path);
  // WAL lets readers proceed during a write; busy_timeout makes a second process (the CLI while
  // the server runs) wait for the lock instead of failing at once.
  // Kysely prepares every query it runs; preparing is a large share of a small query's cost, and
  // the service runs the same few statements over and over, so prepared statements are reused.
  const statements = new Map<string, Statement>();
  /**
   * Statements kept prepared: the service runs a few hundred (the multi-row INSERTs in 20 sizes
   * per table, see prepareInsert); preparing one again costs tens of microseconds.
   */
  const MAX_STATEMENTS = 400;
  const rollback = new Rollback(db);
  // busy_timeout first: switching to WAL takes a lock too, and another connection opening the same
  // file at that moment (the CLI while the service starts) would otherwise fail at once.
  db.exec(`
    PRAGMA busy_timeout = 5000;
    PRAGMA journal_mode = WAL;
    PRAGMA synchronous = ${options.synchronous === "full" ? "FULL" : "NORMAL"};
    PRAGMA foreign_keys = ON;
    PRAGMA wal_autocheckpoint = ${options.checkpoints === "background" ? 0 : 1000};
  `);
  const totalChanges = db.prepare("select total_changes() as n");
  return {
    writes: () => ({
      totalChanges: Number((totalChanges.get() as { n: number | bigint }).n),
      inTransaction: db.isTransaction,
    }),
    close: () => db.close(),
    prepare: (query: string) => {
      // Every transaction we run writes. A deferred BEGIN takes the write lock only at the first
      // write, and if another process (the CLI, a second connection) committed since this
      // transaction's first read, SQLite answers SQLITE_BUSY at once instead of waiting. BEGIN
      // IMMEDIATE takes the lock up front, so busy_timeout makes it wait its turn.
      if (query === "rollback") return rollback;
      const sql = query === "begin" ? "begin immediate" : query;
      let statement = statements.get(sql);
      if (statement === undefined) {
        // The least recently used statement goes when the cache is full (a Map keeps insertion
        // order; a hit moves its statement to the end): an `in` list of each length is a statement
        // of its own, so the statements seen grow with the load, and each holds SQLite's memory
        // and its SQL in this thread's heap (bench:soak: this thread's heap grew through a
        // ten-minute run while the cache took up to 2,000).
        if (statements.size >= MAX_STATEMENTS) statements.delete(statements.keys().next().value as string);
        statement = new Statement(db.prepare(sql));
      } else statements.delete(sql);
      statements.set(sql, statement);
      return statement;
    },
  };
}
