import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { sql } from "kysely";
import pg from "pg";
import { type App, createApp } from "../../src/app.ts";
import type { HostResolver } from "../../src/delivery/callback-post.ts";
import { openMigratedDb } from "../../src/main.ts";
import { type Config, loadConfig } from "../../src/runtime/config.ts";
import { AUDIT_PAGE, type AuditLine, type DockAudit } from "../../src/store/audit.ts";
import { type Db, migrate, openDb } from "../../src/store/open.ts";
import type { PacerLimits } from "../../src/telegram/pacer.ts";
import { freePort } from "./browser.ts";
import { copySqliteTemplate, createPostgresDatabase, POSTGRES_ADMIN_URL } from "./database-templates.ts";

export { POSTGRES_ADMIN_URL };

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

/**
 * A fresh database of the given dialect: a SQLite file in a temp folder, or a new PostgreSQL
 * database. Empty, or with `migrated` already at the latest schema (a copy of a template migrated
 * once per run: see database-templates.ts). Tests of the migrations themselves start empty.
 */
export async function createTestDatabase(
  dialect: DialectName,
  options: { migrated?: boolean } = {},
): Promise<TestDatabase> {
  const migrated = options.migrated ?? false;
  const dataDir = mkdtempSync(join(tmpdir(), "dock-notify-test-"));
  if (dialect === "sqlite") {
    const path = join(dataDir, "test.db");
    if (migrated) await copySqliteTemplate(path);
    return {
      url: `sqlite:${path}`,
      dataDir,
      drop: async () => rmSync(dataDir, { recursive: true, force: true }),
    };
  }
  const name = `dock_notify_test_${randomBytes(6).toString("hex")}`;
  await createPostgresDatabase(name, migrated);
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

/** The Dock that migration tests put in a database before the migration under test. */
export const OLD_DOCK = "DockBeforeMigration";

/**
 * For a test of one migration: a fresh database migrated up to `migration` with a user (1) and a
 * Dock (OLD_DOCK) in it, and a function that adds a message to that Dock as rows of that time.
 * `close` closes and drops it.
 */
export async function databaseAt(dialect: DialectName, migration: string) {
  const database = await createTestDatabase(dialect);
  const db = await openDb(database.url);
  await migrate(db, { to: migration });
  const now = Date.now();
  await sql`insert into users (telegram_id, created_at) values (1, ${now})`.execute(db.kysely);
  await sql`insert into docks (id, owner_id, name, secret_hash, secret_sealed, created_at, updated_at)
    values (${OLD_DOCK}, 1, 'Old', 'hash', 'sealed', ${now}, ${now})`.execute(db.kysely);
  return {
    db,
    now,
    addMessage: (id: string, text: string, subscribers: number) =>
      sql`insert into messages (id, dock_id, text, subscribers, created_at)
        values (${id}, ${OLD_DOCK}, ${text}, ${subscribers}, ${now})`.execute(db.kysely),
    close: async () => {
      await db.close();
      await database.drop();
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

export interface ServiceOptions {
  /**
   * `telegram` (the default): Telegram's flood limits, kept by the pacer and enforced by the
   * sandbox (a 429 for a message too many). `unpaced`, for tests whose subject is not the pace (a
   * conversation with the bot, the console): the sandbox's limits off and the pacer's far above
   * any test's needs, so five replies to one person do not wait out a chat's 3 messages in any 3
   * seconds, nor a group's 20 a minute. Delivery at Telegram's real pace without a 429 is what
   * delivery-pace, pacing-faults, delivery-crash, scale-out and postgres-outages test.
   */
  pace?: "telegram" | "unpaced";
  /** How often the activity counts' rows are folded: a test that watches the rows makes it rare. */
  foldIntervalMs?: number;
  /** Resolves callback URLs' host names instead of the system (names chosen by the test). */
  resolveHost?: HostResolver;
  /** The payload thread's deadline: a test that needs every job stopped makes it tiny. */
  threadDeadlineMs?: number;
  /** Reads the service's audit log back for the test (see RecordedAudit). */
  audit?: RecordedAudit;
  /** The service's clock (a test moves it on to reach an expiry); the system's when omitted. */
  now?: () => number;
  /** How often a bot that is down warns again (a minute when omitted): a test that watches the repeats sets less. */
  botDownWarningEveryMs?: number;
}

/** The actions of a Dock's audience (domain/audit.ts), which the private-Docks tests read back. */
const AUDIENCE_ACTIONS = new Set([
  "visibility_changed",
  "invite_created",
  "invite_revoked",
  "request_approved",
  "request_declined",
  "subscriber_removed",
  "subscriber_banned",
  "subscriber_unbanned",
]);

/**
 * A Dock's audit log as the service keeps it (store/audit.ts), read back for a test: give it to
 * startService as `audit`, then ask `of(dockId)` for its entries, oldest first.
 */
export class RecordedAudit {
  #log: DockAudit | null = null;
  /** Where it reads (startService sets it). */
  readFrom(log: DockAudit): void {
    this.#log = log;
  }
  /**
   * The entries of one Dock's audience (who may subscribe, invite links, join requests, removals,
   * bans: AUDIENCE_ACTIONS), oldest first, as `[action, actor, detail]`. The rest of its log (its
   * creation, settings, team) is test/access/audit.test.ts's.
   */
  async of(dockId: string): Promise<[string, number | null, AuditLine["detail"]][]> {
    if (this.#log === null) throw new Error("RecordedAudit: not given to startService");
    const page = await this.#log.page(dockId, { limit: AUDIT_PAGE.max });
    return page.entries
      .toReversed()
      .filter((entry) => AUDIENCE_ACTIONS.has(entry.action))
      .map((entry) => [entry.action, entry.actor?.id ?? null, entry.detail]);
  }
}

/** Limits no test comes near: 1000 messages a second, to the bot and to any one chat. */
const UNPACED: Partial<PacerLimits> = {
  globalPerSecond: 1000,
  privatePerSecond: 1000,
  privateBurst: 1000,
  groupPerMinute: 60_000,
};

/** The whole service listening on a random local port, over a fresh database dropped on close. */
export async function startService(
  dialect: DialectName,
  env: Record<string, string> = {},
  options: ServiceOptions = {},
): Promise<RunningService> {
  const database = await createTestDatabase(dialect, { migrated: true });
  const service = await startServiceOver(database, env, randomBytes(32), options);
  return {
    ...service,
    close: async () => {
      await service.close();
      await database.drop();
    },
  };
}

/**
 * A SQLite service that links to itself: PUBLIC_URL is its own address, so the links it gives (a
 * sign-in, the sandbox's `?start=` pages) open in the test's browser. Telegram's pace is off.
 */
export async function startLinkedService(
  env: Record<string, string> = {},
  options: ServiceOptions = {},
): Promise<RunningService> {
  const port = await freePort();
  return startService(
    "sqlite",
    { PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, ...env },
    { pace: "unpaced", ...options },
  );
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
  options: ServiceOptions = {},
): Promise<RunningService> {
  const unpaced = options.pace === "unpaced";
  const config = loadConfig({
    PORT: "0",
    DATABASE_URL: database.url,
    DATA_DIR: database.dataDir,
    LOG_LEVEL: "info",
    ...(unpaced ? { SANDBOX_RATE_LIMITS: "off" } : {}),
    ...env,
  });
  // As `serve` opens it: the migrations on a connection without the bound (a busy machine can
  // take longer than a test's short DATABASE_TIMEOUT_SECONDS to connect), the service's with it.
  const db = await openMigratedDb(config);
  const logs = new LogCapture();
  const app = await createApp({
    config,
    db,
    encryptionKey,
    logStream: logs,
    ...(unpaced ? { pace: UNPACED } : {}),
    ...(options.foldIntervalMs === undefined ? {} : { foldIntervalMs: options.foldIntervalMs }),
    ...(options.resolveHost === undefined ? {} : { resolveHost: options.resolveHost }),
    ...(options.threadDeadlineMs === undefined ? {} : { threadDeadlineMs: options.threadDeadlineMs }),
    ...(options.now === undefined ? {} : { now: options.now }),
    ...(options.botDownWarningEveryMs === undefined
      ? {}
      : { botDownWarningEveryMs: options.botDownWarningEveryMs }),
  });
  options.audit?.readFrom(app.audit);
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
      // Each step is timed: one that takes long says which (a close once hung past a 60 s hook
      // timeout on a loaded machine, and the log is all a CI run leaves).
      await slowStepWarning("app.stop()", () => app.stop());
      await slowStepWarning(
        "server.close()",
        () => app.server.close(),
        () => {
          // What a hung close waits for: connections still open, and the process's live handles.
          app.server.server.getConnections((_error, count) =>
            console.warn(`closing the test service: ${count} connections still open`),
          );
        },
      );
      await slowStepWarning("db.close()", () => db.close());
    },
  };
}

/** Runs `step`, and says on stderr when it took more than 10 s. */
async function slowStepWarning(
  name: string,
  step: () => Promise<unknown>,
  explain?: () => void,
): Promise<void> {
  const started = performance.now();
  const warn = setTimeout(() => {
    console.warn(`closing the test service: ${name} still running after 10 s`);
    const resources = new Map<string, number>();
    for (const kind of process.getActiveResourcesInfo()) resources.set(kind, (resources.get(kind) ?? 0) + 1);
    console.warn(
      `closing the test service: active resources ${JSON.stringify(Object.fromEntries(resources))}`,
    );
    explain?.();
  }, 10_000);
  try {
    await step();
  } finally {
    clearTimeout(warn);
    const seconds = (performance.now() - started) / 1000;
    if (seconds > 10) console.warn(`closing the test service: ${name} took ${seconds.toFixed(1)} s`);
  }
}

/** The dialects a suite runs against: SQLite always, PostgreSQL when reachable (always in CI). */
export async function dialects(): Promise<DialectName[]> {
  return (await hasPostgres()) ? ["sqlite", "postgres"] : ["sqlite"];
}

export function basic(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
}

/** The send API as an application calls it, with a Dock's credentials (Basic): status and JSON. */
export async function asDock(
  url: string,
  dock: { id: string; secret_key: string },
  method: string,
  path: string,
  body?: unknown,
  // biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON the service answered.
): Promise<{ status: number; body: any }> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: {
      Authorization: basic(dock.id, dock.secret_key),
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: await response.json() };
}
