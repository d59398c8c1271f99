import type { Db, DbOptions } from "./db.ts";

export type { Db, DbOptions } from "./db.ts";
export { migrate, pendingMigrations } from "./migrations/index.ts";

/**
 * Opens the database named by DATABASE_URL (`sqlite:<path>` or `postgres://…`). Only the adapter
 * in use is loaded: a SQLite service never loads the PostgreSQL client, nor the other way round.
 */
export async function openDb(url: string, options: DbOptions = {}): Promise<Db> {
  if (url.startsWith("sqlite:")) {
    const { openSqlite } = await import("./sqlite/adapter.ts");
    return openSqlite(url.slice("sqlite:".length), options);
  }
  const { openPostgres } = await import("./postgres/adapter.ts");
  return openPostgres(url, options);
}

/**
 * A consistent copy of a SQLite database file made while the service may be writing to it (see
 * store/sqlite/backup.ts); PostgreSQL is backed up with its own tools (pg_dump).
 */
export async function backupSqliteFile(source: string, target: string, options: { replace: boolean }) {
  const { backupSqlite } = await import("./sqlite/backup.ts");
  return backupSqlite(source, target, options);
}
