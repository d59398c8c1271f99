import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import type { TestContext } from "vitest";
import { DockRepository, type DockWithSecret } from "../../src/store/docks.ts";
import { migrate, openDb } from "../../src/store/open.ts";
import { SubscriptionRepository } from "../../src/store/subscriptions.ts";
import { SANDBOX_BOT_TOKEN } from "../../src/telegram/sandbox-bot.ts";
import {
  createTestDatabase,
  POSTGRES_ADMIN_URL,
  type RunningService,
  type ServiceOptions,
  startServiceOver,
  type TestDatabase,
} from "./harness.ts";
import { type RunningSandbox, startSandbox } from "./sandbox-harness.ts";
import { startTcpProxy, type TcpProxy } from "./tcp-proxy.ts";

/**
 * A send that must be stored before a scenario starts, sent as a client following our docs does:
 * refused with `503 database_unavailable`, it is tried again after Retry-After (at most a second
 * here), with an Idempotency-Key (`key`) so that a retry never stores it twice. A healthy database
 * answers well within DATABASE_TIMEOUT_SECONDS, but a machine whose cores are taken by other work
 * can hold a fresh service's first sends longer: that is the 503's job, not the tests' subject.
 * Answers the final answer (its status, and its error's code): any other refusal at once, the last
 * 503 after `patienceMs`; each request may take `requestTimeoutMs`.
 */
export async function sendUntilStored(
  url: string,
  dock: DockWithSecret,
  msg: string,
  key = `stored-${msg}`,
  { patienceMs = 60_000, requestTimeoutMs = 60_000 } = {},
): Promise<{ status: number; code?: string }> {
  const deadline = Date.now() + patienceMs;
  for (;;) {
    const response = await fetch(`${url}/ping`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": key },
      body: JSON.stringify({ dock_id: dock.id, secret_key: dock.secretKey, msg }),
      signal: AbortSignal.timeout(requestTimeoutMs),
    });
    const code = ((await response.json()) as { error?: { code?: string } }).error?.code;
    const answer = { status: response.status, ...(code === undefined ? {} : { code }) };
    if (response.status !== 503 || code !== "database_unavailable" || Date.now() > deadline) return answer;
    const wait = Number(response.headers.get("retry-after"));
    await new Promise((resolve) =>
      setTimeout(resolve, Number.isFinite(wait) ? Math.min(1, wait) * 1000 : 1000),
    );
  }
}

/** Runs statements as the PostgreSQL administrator (on the `postgres` database, never a test's). */
export async function admin(...statements: string[]): Promise<void> {
  const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await client.connect();
  try {
    for (const statement of statements) await client.query(statement);
  } finally {
    await client.end();
  }
}

/** Ends every session on a database but the caller's (a failover, an administrator's hand). */
export function terminateAll(database: string): string {
  return `select pg_terminate_backend(pid) from pg_stat_activity where datname = '${database}' and pid <> pg_backend_pid()`;
}

/**
 * A Dock made the way an operator would (in the database the service will use), with `people`
 * subscribers who opened the bot in `sandbox`.
 */
export async function seedDock(
  url: string,
  key: Buffer,
  sandbox: RunningSandbox,
  name: string,
  people: number,
): Promise<{ dock: DockWithSecret; chats: number[] }> {
  const db = await openDb(url);
  try {
    await migrate(db);
    const dock = await new DockRepository(db, key).create(1, { name, link: null, description: null });
    const subscriptions = new SubscriptionRepository(db);
    const chats: number[] = [];
    for (let i = 0; i < people; i++) {
      const chat = await sandbox.startedPerson(`${name} reader ${i}`);
      chats.push(chat);
      await subscriptions.subscribe(dock.id, chat, "private");
    }
    return { dock, chats };
  } finally {
    await db.close();
  }
}

/** The environment of a service in a child process, on `database`, with Telegram played by `sandbox`. */
export function childEnv(
  database: { url: string; dataDir: string },
  key: Buffer,
  sandbox: RunningSandbox,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    DATABASE_URL: database.url,
    DATA_DIR: database.dataDir,
    ENCRYPTION_KEY: key.toString("base64"),
    TELEGRAM_BOT_TOKEN: SANDBOX_BOT_TOKEN,
    TELEGRAM_API_ROOT: sandbox.root,
    DOCK_RATE_BURST: "0",
    ...extra,
  };
}

/**
 * What a fault test starts — a PostgreSQL database, a sandbox, a TCP proxy, a service, a data
 * folder, child processes — each stopped or removed when the test ends, however it ends.
 */
export function faultResources(onTestFinished: TestContext["onTestFinished"]) {
  let database: TestDatabase | undefined;
  let sandbox: RunningSandbox | undefined;
  let proxy: TcpProxy | undefined;
  let service: RunningService | undefined;
  let dataDir: string | undefined;
  const children: ChildProcess[] = [];
  onTestFinished(async () => {
    proxy?.restore();
    for (const child of children) child.kill("SIGKILL");
    await service?.close();
    await proxy?.close();
    // A test may have closed the database to connections (an outage): open it to be dropped.
    if (database)
      await admin(`alter database ${new URL(database.url).pathname.slice(1)} allow_connections true`);
    await database?.drop();
    await sandbox?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });
  return {
    async database(): Promise<TestDatabase> {
      database = await createTestDatabase("postgres", { migrated: true });
      return database;
    },
    async sandbox(): Promise<RunningSandbox> {
      sandbox = await startSandbox({ rateLimits: true });
      return sandbox;
    },
    async proxy(port: number): Promise<TcpProxy> {
      proxy = await startTcpProxy({ host: "127.0.0.1", port });
      return proxy;
    },
    async service(
      over: TestDatabase,
      env: Record<string, string>,
      options: ServiceOptions = {},
    ): Promise<RunningService> {
      service = await startServiceOver(over, env, undefined, options);
      return service;
    },
    dataDir(): string {
      dataDir = mkdtempSync(join(tmpdir(), "dock-notify-fault-"));
      return dataDir;
    },
    child(child: ChildProcess): void {
      children.push(child);
    },
  };
}
