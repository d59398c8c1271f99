import { randomBytes } from "node:crypto";
import { closeSync, linkSync, openSync, renameSync, rmSync, statSync } from "node:fs";
import { backup, DatabaseSync } from "node:sqlite";

/**
 * What `backupSqlite` did: the copy made (its size), or nothing because the target exists and
 * `replace` was not asked for.
 */
export type SqliteBackup = { made: true; pages: number; bytes: number } | { made: false; exists: true };

/**
 * Copies the SQLite database at `source` into a new file `target` with SQLite's online backup API,
 * while the service may be writing to it: the copy is the database as one transaction saw it,
 * whole (a backup copied in steps starts over whenever another connection writes between two
 * steps, and may never end beside a busy service; one step reads a single snapshot, and in WAL mode
 * the service's writers go on meanwhile). The copy is made under a temporary name beside `target`
 * and takes its name at the end, so a failed backup leaves no half file; it is a single file in
 * rollback-journal mode (no -wal or -shm beside it) that `dock-notify serve` opens as it is.
 * Without `replace`, an existing `target` is never touched.
 */
export async function backupSqlite(
  source: string,
  target: string,
  options: { replace: boolean },
): Promise<SqliteBackup> {
  const partial = `${target}.partial-${randomBytes(4).toString("hex")}`;
  try {
    // Like the database itself, readable by its owner only (it holds chat ids and sealed keys).
    closeSync(openSync(partial, "wx", 0o600));
    // Only read; not read-only, which would leave the -wal and -shm files of a stopped service's
    // database behind (the last connection to close removes them). The caller makes sure there is a
    // database at `source`: this would create one.
    const database = new DatabaseSync(source, { timeout: 5000 });
    let pages: number;
    try {
      pages = await backup(database, partial, { rate: 2 ** 31 - 1 });
    } finally {
      database.close();
    }
    const copy = new DatabaseSync(partial);
    try {
      copy.exec("PRAGMA journal_mode = DELETE");
    } finally {
      copy.close();
    }
    if (options.replace) {
      renameSync(partial, target);
    } else {
      // A link fails if the name is taken, even by a file made a moment ago: nothing is overwritten.
      try {
        linkSync(partial, target);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "EEXIST") return { made: false, exists: true };
        throw error;
      }
    }
    return { made: true, pages, bytes: statSync(target).size };
  } finally {
    rmSync(partial, { force: true });
  }
}
