import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import pg from "pg";
import { type App, createApp } from "../src/app.ts";
import { type Config, loadConfig } from "../src/config.ts";
import { type Db, migrate, openDb } from "../src/store/db.ts";

/** Where the PostgreSQL tests create their throwaway databases. */
export const POSTGRES_ADMIN_URL =
  process.env.TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

let postgresReachable: Promise<boolean> | undefined;

/**
 * PostgreSQL is part of the suite: CI starts it and must run these tests. Outside CI a developer
 * without a local server sees the PostgreSQL variants skipped, and told why.
 */
export function hasPostgres(): Promise<boolean> {
  postgresReachable ??= (async () => {
    const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL, connectionTimeoutMillis: 2000 });
    try {
      await client.connect();
      return true;
    } catch (error) {
      if (process.env.CI) throw new Error(`PostgreSQL is required in CI: ${(error as Error).message}`);
      console.warn(`PostgreSQL not reachable at ${POSTGRES_ADMIN_URL}; skipping PostgreSQL variants`);
      return false;
    } finally {
      await client.end().catch(() => {});
    }
  })();
  return postgresReachable;
}

export type DialectName = "sqlite" | "postgres";

export interface TestDatabase {
  url: string;
  dataDir: string;
  drop(): Promise<void>;
}

/** A fresh, empty database of the given dialect: a SQLite file in a temp folder, or a new PG database. */
export async function createTestDatabase(dialect: DialectName): Promise<TestDatabase> {
  const dataDir = mkdtempSync(join(tmpdir(), "dock-notify-test-"));
  if (dialect === "sqlite") {
    return {
      url: `sqlite:${join(dataDir, "test.db")}`,
      dataDir,
      drop: async () => rmSync(dataDir, { recursive: true, force: true }),
    };
  }
  const name = `dock_notify_test_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    dataDir,
    drop: async () => {
      const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Collects every log line the service writes, to assert on (e.g. that secrets never appear). */
export class LogCapture extends Writable {
  readonly lines: string[] = [];
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    this.lines.push(...chunk.toString("utf8").split("\n").filter(Boolean));
    done();
  }
  get text(): string {
    return this.lines.join("\n");
  }
}

export interface RunningService {
  url: string;
  app: App;
  db: Db;
  config: Config;
  logs: LogCapture;
  subscriptions: App["subscriptions"];
  close(): Promise<void>;
}

/** The whole service listening on a random local port, over a fresh database dropped on close. */
export async function startService(
  dialect: DialectName,
  env: Record<string, string> = {},
): Promise<RunningService> {
  const database = await createTestDatabase(dialect);
  const service = await startServiceOver(database, env);
  return {
    ...service,
    close: async () => {
      await service.close();
      await database.drop();
    },
  };
}

/**
 * The whole service over an existing test database, which outlives it: close, then start again
 * over the same database to test a restart. Listens on PORT from `env` (default: a random port);
 * give the same `encryptionKey` to every start that must read the Docks of an earlier one.
 */
export async function startServiceOver(
  database: TestDatabase,
  env: Record<string, string> = {},
  encryptionKey: Buffer = randomBytes(32),
): Promise<RunningService> {
  const config = loadConfig({
    PORT: "0",
    DATABASE_URL: database.url,
    DATA_DIR: database.dataDir,
    LOG_LEVEL: "info",
    ...env,
  });
  const db = openDb(config.databaseUrl, { timeoutMs: config.databaseTimeoutMs });
  await migrate(db);
  const logs = new LogCapture();
  const app = await createApp({ config, db, encryptionKey, logStream: logs });
  await app.server.listen({ port: config.port, host: "127.0.0.1" });
  await app.start();
  const address = app.server.server.address();
  if (typeof address !== "object" || address === null) throw new Error("server did not bind");
  return {
    url: `http://127.0.0.1:${address.port}`,
    app,
    db,
    config,
    logs,
    subscriptions: app.subscriptions,
    close: async () => {
      await app.stop();
      await app.server.close();
      await db.close();
    },
  };
}

/** The dialects a suite runs against: SQLite always, PostgreSQL when reachable (always in CI). */
export async function dialects(): Promise<DialectName[]> {
  return (await hasPostgres()) ? ["sqlite", "postgres"] : ["sqlite"];
}

export function basic(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
}
