import { createHash, randomBytes } from "node:crypto";
import {
  copyFileSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import pg from "pg";
import { migrate, openDb } from "../../src/store/open.ts";

/**
 * Test databases that start at the latest schema are copies of a template migrated once, instead
 * of each running every migration: a PostgreSQL database made with `CREATE DATABASE … TEMPLATE`,
 * a SQLite file copied. A template is named by a hash of the migrations, so a changed migration
 * gets a new one; the global setup drops the old ones.
 */

/** Where the PostgreSQL tests create their throwaway databases. */
export const POSTGRES_ADMIN_URL =
  process.env.TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

const STORE = join(import.meta.dirname, "..", "..", "src", "store");
const PREFIX = "dock_notify_template_";
const SQLITE_PREFIX = "dock-notify-template-";
/** First key of the advisory locks by which a test run says it uses a template (the second: its hash). */
const LOCK_SPACE = 0x646e7470;

/** Every file of every `migrations` folder under src/store, wherever the adapters keep them. */
function migrationFiles(folder: string, inMigrations = false): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return migrationFiles(path, inMigrations || entry.name === "migrations");
    return inMigrations ? [path] : [];
  });
}

/** A hash of the migrations' sources (16 hex digits). */
function migrationsHash(): string {
  const files = migrationFiles(STORE).sort();
  if (files.length === 0) throw new Error(`no migrations found under ${STORE}`);
  const hash = createHash("sha256");
  for (const file of files) {
    hash.update(relative(STORE, file)).update("\0").update(readFileSync(file)).update("\0");
  }
  return hash.digest("hex").slice(0, 16);
}

function lockKey(hash: string): number {
  return Number.parseInt(hash.slice(0, 8), 16) | 0;
}

const code = (error: unknown) => (error as { code?: string }).code;

async function withAdmin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

function postgresUrl(name: string): string {
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

async function migrated(url: string): Promise<void> {
  const db = await openDb(url, { timeoutMs: 0 });
  try {
    await migrate(db);
  } finally {
    await db.close();
  }
}

/**
 * The PostgreSQL template for the current migrations, built if it is missing. Safe to call from
 * several processes at once: each builds under a name of its own and renames it into place; the
 * first rename wins (the others get `duplicate_database` and drop theirs), so a template under its
 * final name is always complete. Nobody may connect to it (`allow_connections false`), so no
 * session of ours can make a `CREATE DATABASE … TEMPLATE` fail as "being accessed by other users".
 */
async function ensurePostgresTemplate(): Promise<string> {
  const name = `${PREFIX}${migrationsHash()}`;
  return withAdmin(async (admin) => {
    const found = await admin.query("select 1 from pg_database where datname = $1", [name]);
    if (found.rowCount) return name;
    const building = `${name}_build_${randomBytes(4).toString("hex")}`;
    await admin.query(`create database ${building}`);
    try {
      await migrated(postgresUrl(building));
      await admin.query(`alter database ${building} with is_template true allow_connections false`);
      await admin.query(`alter database ${building} rename to ${name}`);
    } catch (error) {
      await admin.query(`alter database ${building} with is_template false`);
      await admin.query(`drop database ${building} with (force)`);
      if (code(error) !== "42P04") throw error; // duplicate_database: another process was first
    }
    return name;
  });
}

/** The SQLite template for the current migrations (a file in the temp folder), built if missing. */
async function ensureSqliteTemplate(): Promise<string> {
  const path = join(tmpdir(), `${SQLITE_PREFIX}${migrationsHash()}.db`);
  if (existsSync(path)) return path;
  const building = mkdtempSync(join(tmpdir(), SQLITE_PREFIX));
  try {
    // Closing checkpoints the WAL into the file and removes it: the file alone is the database.
    await migrated(`sqlite:${join(building, "template.db")}`);
    renameSync(join(building, "template.db"), path);
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
  return path;
}

/** Once per process (per test file: Vitest isolates modules), forgotten when it fails. */
function memo(build: () => Promise<string>) {
  let value: Promise<string> | undefined;
  return {
    get(): Promise<string> {
      value ??= build().catch((error: unknown) => {
        value = undefined;
        throw error;
      });
      return value;
    },
    forget(): void {
      value = undefined;
    },
  };
}

const postgresTemplate = memo(ensurePostgresTemplate);
const sqliteTemplate = memo(ensureSqliteTemplate);

/**
 * Creates PostgreSQL database `name`: empty, or (`migrated`) a copy of the migrated template.
 * Retries while the template is briefly in use (PostgreSQL's autovacuum may visit it), and builds
 * it again should a run on other migrations have dropped it meanwhile.
 */
export async function createPostgresDatabase(name: string, migrated: boolean): Promise<void> {
  await withAdmin(async (admin) => {
    if (!migrated) {
      await admin.query(`create database ${name}`);
      return;
    }
    for (let attempt = 1; ; attempt++) {
      try {
        await admin.query(`create database ${name} template ${await postgresTemplate.get()}`);
        return;
      } catch (error) {
        // object_in_use: "source database is being accessed by other users";
        // invalid_catalog_name: the template is gone.
        if (attempt >= 20 || !["55006", "3D000"].includes(code(error) ?? "")) throw error;
        if (code(error) === "3D000") postgresTemplate.forget();
        await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
      }
    }
  });
}

/** Copies the migrated SQLite template to `path` (building it again should it have been removed). */
export async function copySqliteTemplate(path: string): Promise<void> {
  try {
    copyFileSync(await sqliteTemplate.get(), path);
  } catch (error) {
    if (code(error) !== "ENOENT") throw error;
    sqliteTemplate.forget();
    copyFileSync(await sqliteTemplate.get(), path);
  }
}

/**
 * Vitest global setup: builds the templates before the workers start (they would otherwise all
 * build them at once), and drops the templates of other migrations that no test run still uses.
 * A run says it uses its PostgreSQL template by holding a shared advisory lock while it runs.
 */
export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  const hash = migrationsHash();
  for (const file of readdirSync(tmpdir())) {
    if (file.startsWith(SQLITE_PREFIX) && file.endsWith(".db") && !file.includes(hash)) {
      rmSync(join(tmpdir(), file), { force: true });
    }
  }
  await sqliteTemplate.get();

  const holder = new pg.Client({ connectionString: POSTGRES_ADMIN_URL, connectionTimeoutMillis: 2000 });
  try {
    await holder.connect();
  } catch {
    await holder.end().catch(() => {});
    return undefined; // no PostgreSQL here: the tests say so (harness.ts, hasPostgres)
  }
  // Said before building, so that a run on other migrations never drops this run's build.
  await holder.query("select pg_advisory_lock_shared($1, $2)", [LOCK_SPACE, lockKey(hash)]);
  const current = await postgresTemplate.get();
  const others = await holder.query<{ datname: string }>(
    "select datname from pg_database where datname like $1 and datname not like $2",
    [`${PREFIX}%`, `${current}%`],
  );
  for (const { datname } of others.rows) {
    const key = lockKey(datname.slice(PREFIX.length));
    const free = await holder.query("select pg_try_advisory_lock($1, $2) as free", [LOCK_SPACE, key]);
    if (!free.rows[0].free) continue;
    try {
      await holder.query(`alter database ${datname} with is_template false`);
      await holder.query(`drop database ${datname} with (force)`);
    } catch (error) {
      if (code(error) !== "3D000") throw error; // dropped meanwhile by another run
    } finally {
      await holder.query("select pg_advisory_unlock($1, $2)", [LOCK_SPACE, key]);
    }
  }
  return async () => {
    await holder.end();
  };
}
