import pg from "pg";
import { SANDBOX_BOT_TOKEN } from "../src/sandbox/identity.ts";
import { migrate, openDb } from "../src/store/db.ts";
import { DockRepository, type DockWithSecret } from "../src/store/docks.ts";
import { SubscriptionRepository } from "../src/store/subscriptions.ts";
import { POSTGRES_ADMIN_URL } from "./harness.ts";
import type { RunningSandbox } from "./sandbox-harness.ts";

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
  const db = openDb(url);
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
