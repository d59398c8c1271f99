import { createApp } from "./app.ts";
import type { Config } from "./config.ts";
import { loadEncryptionKey } from "./encryption-key.ts";
import { type Db, migrate, openDb } from "./store/db.ts";

/** Opens the database named in the config and brings its schema up to date. */
export async function openMigratedDb(config: Config): Promise<Db> {
  const db = openDb(config.databaseUrl, { sqliteSynchronous: config.sqliteSynchronous });
  try {
    await migrate(db);
  } catch (error) {
    await db.close();
    throw error;
  }
  return db;
}

/** Hides the password of a postgres:// URL so it can be logged. */
export function describeDatabase(url: string): string {
  if (url.startsWith("sqlite:")) return url;
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "postgres://(unparseable URL)";
  }
}

/**
 * `dock-notify serve`: migrate, listen, and on SIGTERM/SIGINT stop accepting, finish in-flight
 * requests (up to SHUTDOWN_TIMEOUT_MS), close the database, exit.
 */
export async function serve(config: Config): Promise<void> {
  const db = await openMigratedDb(config);
  const { key, generated } = loadEncryptionKey(config.encryptionKey, config.dataDir);
  const app = await createApp({ config, db, encryptionKey: key });
  const { server } = app;
  if (generated) {
    server.log.warn(
      { path: `${config.dataDir}/encryption.key` },
      "generated a new encryption key for Dock secrets; back it up, and set ENCRYPTION_KEY when several instances share a database",
    );
  }

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    server.log.info({ signal }, "shutting down");
    const timer = setTimeout(() => {
      server.log.error("shutdown timed out; exiting with work still in flight");
      process.exit(1);
    }, config.shutdownTimeoutMs);
    timer.unref();
    // Workers first (the dispatcher finishes its in-flight sends), then HTTP, then the database.
    await app.stop();
    await server.close();
    await db.close();
    server.log.info("stopped");
    process.exit(0);
  };
  process.once("SIGTERM", () => void stop("SIGTERM"));
  process.once("SIGINT", () => void stop("SIGINT"));

  await server.listen({ port: config.port, host: config.host });
  await app.start();
  const address = server.server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  server.log.info(
    {
      database: describeDatabase(config.databaseUrl),
      telegram: config.telegramBotToken ? config.telegramApiRoot : "sandbox",
      port,
    },
    `Dock Notify is ready: console ${config.publicUrl}/console/ · API ${config.publicUrl}/ping · reference ${config.publicUrl}/docs${
      config.telegramBotToken ? "" : ` · Telegram sandbox ${config.publicUrl}/sandbox`
    }`,
  );
}
