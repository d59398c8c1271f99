import { rmSync } from "node:fs";
import { join } from "node:path";
import type { DestinationStream } from "pino";
import pkg from "../package.json" with { type: "json" };
import type { App } from "./app.ts";
import { banner } from "./cli/banner.ts";
import { type Config, ConfigError } from "./runtime/config.ts";
import { loadEncryptionKey } from "./runtime/encryption-key.ts";
import { HeapTidier } from "./runtime/heap.ts";
import { flushLogs, maskUrl, standardOutput } from "./runtime/log.ts";
import { type PortReservation, reservePort } from "./runtime/port-reservation.ts";
import { forPeople, readableLogs } from "./runtime/readable-log.ts";
import { recordServedUrl, servedUrl } from "./runtime/service-url.ts";
import { DockRepository } from "./store/docks.ts";
import { isDatabaseUnavailable } from "./store/faults.ts";
import { type Db, migrate, openDb } from "./store/open.ts";

/**
 * The encryption key (loadEncryptionKey), checked against the Docks already in the database: a
 * key that does not open their secret keys is a configuration error, not a console that answers
 * 500 on every page later. Typical cause: a second instance on a shared PostgreSQL database
 * without ENCRYPTION_KEY generated a key of its own (that new file is removed again).
 */
export async function loadCheckedEncryptionKey(
  config: Config,
  db: Db,
): Promise<{ key: Buffer; generated: boolean }> {
  const loaded = loadEncryptionKey(config.encryptionKey, config.dataDir);
  if (await new DockRepository(db, loaded.key).keyOpensSecrets()) return loaded;
  const file = join(config.dataDir, "encryption.key");
  if (loaded.generated) rmSync(file, { force: true });
  const which =
    config.encryptionKey !== null
      ? "ENCRYPTION_KEY does not"
      : loaded.generated
        ? `ENCRYPTION_KEY is not set and there was no ${file}; a new key would not`
        : `ENCRYPTION_KEY is not set and the key in ${file} does not`;
  throw new ConfigError(
    `${which} open the Dock secret keys in this database: set ENCRYPTION_KEY to the key they were sealed with (every instance sharing a database needs the same one)`,
  );
}

/**
 * Opens the database named in the config and brings its schema up to date. On PostgreSQL the
 * migrations run on a connection of their own without DATABASE_TIMEOUT_SECONDS (building an index
 * on a large table rightly takes long); the service's connections have the bound.
 */
export async function openMigratedDb(config: Config): Promise<Db> {
  const options = { sqliteSynchronous: config.sqliteSynchronous, timeoutMs: config.databaseTimeoutMs };
  const postgres = !config.databaseUrl.startsWith("sqlite:");
  const db = await openDb(config.databaseUrl, options);
  const migrating = postgres ? await openDb(config.databaseUrl, { poolSize: 1, timeoutMs: 0 }) : db;
  try {
    await migrate(migrating);
  } catch (error) {
    await db.close();
    throw explained(error, config);
  } finally {
    if (migrating !== db) await migrating.close().catch(() => {});
  }
  return db;
}

/** File-system errors that mean a path from the configuration cannot be used. */
const UNUSABLE_PATH = new Set(["ENOTDIR", "EACCES", "EPERM", "EROFS", "EISDIR", "ENOENT"]);

/**
 * A start-up failure as the operator can act on it, naming the setting to look at: a data
 * directory or database file that cannot be used (a configuration error, exit 2), a database
 * server that cannot be reached (exit 1: the configuration may be right and the server down).
 */
export function explained(error: unknown, config: Config): unknown {
  const { code, message } = error as { code?: unknown; message?: unknown };
  const text = typeof message === "string" ? message : String(error);
  if (typeof code === "string" && UNUSABLE_PATH.has(code)) {
    return new ConfigError(
      `cannot use the data directory or database file (check DATA_DIR and DATABASE_URL): ${text}`,
    );
  }
  if (isDatabaseUnavailable(error)) {
    return new Error(
      `the database cannot be reached (DATABASE_URL ${describeDatabase(config.databaseUrl)}): ${text}`,
    );
  }
  return error;
}

/**
 * A postgres:// URL as it can be logged: its password hidden, and so is any credential in its
 * query (libpq's `?password=…`, `sslpassword=…`), as maskUrl hides them in request URLs.
 */
export function describeDatabase(url: string): string {
  if (url.startsWith("sqlite:")) return url;
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return maskUrl(parsed.toString());
  } catch {
    return "postgres://(unparseable URL)";
  }
}

/**
 * `dock-notify serve`: migrate, listen, and on SIGTERM/SIGINT stop accepting, finish in-flight
 * requests (up to SHUTDOWN_TIMEOUT_MS), close the database, exit. Logs to `logStream`, standard
 * output when omitted: JSON lines, or for a person on a terminal (LOG_FORMAT) a banner once it
 * listens and readable lines.
 */
export async function serve(
  config: Config,
  logStream?: DestinationStream,
  options: {
    /**
     * The service has the process to itself (the `dock-notify` command, not a test running the CLI
     * in its own process): it may collect garbage when idle to give memory back (heap.ts).
     */
    ownsProcess?: boolean;
  } = {},
): Promise<void> {
  // Loaded here, not with this module: the CLI's docks and migrate commands use the start-up helpers
  // above and have no use for the service (half their start-up time).
  const { createApp } = await import("./app.ts");
  const human = logStream === undefined && forPeople(config.logFormat);
  const logs = human ? readableLogs(standardOutput()) : logStream;
  // The port first: a start that cannot listen writes nothing to DATA_DIR (no database, no key).
  let reservation: PortReservation;
  try {
    reservation = await reservePort(config.host, config.port);
  } catch (error) {
    // A port in use, an address not on this machine, a name that does not resolve.
    throw new ConfigError(
      `cannot listen on HOST ${config.host} PORT ${config.port}: ${(error as Error).message}`,
    );
  }
  let db: Db;
  try {
    db = await openMigratedDb(config);
  } catch (error) {
    await reservation.release();
    throw error;
  }
  let loaded: { key: Buffer; generated: boolean };
  try {
    loaded = await loadCheckedEncryptionKey(config, db);
  } catch (error) {
    await reservation.release();
    await db.close();
    throw explained(error, config);
  }
  const { key, generated } = loaded;
  let app: App;
  try {
    app = await createApp({ config, db, encryptionKey: key, logStream: logs });
  } catch (error) {
    // The database's thread would keep the process alive, not listening, for nothing.
    await reservation.release();
    await db.close();
    throw error;
  }
  const { server } = app;
  if (generated) {
    server.log.warn(
      { path: `${config.dataDir}/encryption.key` },
      "generated a new encryption key for Dock secrets; back it up, and set ENCRYPTION_KEY when several instances share a database",
    );
  }

  const tidier = options.ownsProcess ? new HeapTidier(server.log) : null;
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    tidier?.stop();
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
    await flushLogs();
    process.exit(0);
  };
  // `on`, not `once`: a signal often comes twice (Ctrl-C signals npm and the service, and npm
  // passes its own on), and a second one with no handler would kill the process mid-shutdown,
  // its last log lines unwritten. Repeats are ignored; SHUTDOWN_TIMEOUT_MS bounds the wait.
  const onSignal = (signal: NodeJS.Signals) => void stop(signal);
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);

  try {
    // Handed over at once: the reservation's port, free again for an instant.
    await reservation.release();
    await server.listen({ port: reservation.port, host: config.host });
  } catch (error) {
    // Nothing left to stop: a caller that goes on (a test running the CLI in its process) keeps no handler.
    process.off("SIGTERM", onSignal);
    process.off("SIGINT", onSignal);
    await server.close();
    await db.close();
    // A port in use, an address not on this machine, a name that does not resolve.
    throw new ConfigError(
      `cannot listen on HOST ${config.host} PORT ${config.port}: ${(error as Error).message}`,
    );
  }
  await app.start();
  const address = server.server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  const url = servedUrl(config, port);
  const unrecorded = recordServedUrl(config.dataDir, url);
  if (unrecorded !== null) {
    server.log.debug({ reason: unrecorded.message }, "could not record the service's URL for the CLI");
  }
  // Up, but the bot is not running (a refused token, Telegram unreachable, another poller): the
  // line says so at WARN, with the fix, rather than "ready" at INFO above a warning a reader may
  // miss. A bot still starting was warned of just before ("Telegram has not answered yet").
  const { problem, status } = app.botHealth();
  const cannot =
    status.state === "unauthorized" || status.state === "unreachable"
      ? "cannot deliver yet"
      : "the bot is not taking updates yet";
  const fields = {
    database: describeDatabase(config.databaseUrl),
    telegram: config.telegramBotToken ? config.telegramApiRoot : "sandbox",
    owners: app.owners.policy.open ? "anyone" : "invited",
    port,
  };
  const where = `console ${url}/console/ · API ${url}/ping · reference ${url}/docs${
    config.telegramBotToken ? "" : ` · Telegram sandbox ${url}/sandbox`
  }`;
  if (problem === null) server.log.info(fields, `Dock Notify is ready: ${where}`);
  else {
    server.log.warn(
      { ...fields, bot: problem.what, fix: problem.fix },
      `Dock Notify is ready but ${cannot} — ${problem.what}; fix: ${problem.fix}: ${where}`,
    );
  }
  const claim = await app.claimLink().catch((error: unknown) => {
    // A database that fails right now must not stop a start that got this far: the next start prints one.
    server.log.warn({ err: error }, "could not make a claim link; restart the service to try again");
    return null;
  });
  if (claim !== null) {
    // The one way in to a closed instance nobody has claimed: whoever confirms it in the bot
    // becomes the administrator. A restart prints a new link (each works once, for 24 hours).
    server.log.warn(
      { claim: claim.link ?? claim.command },
      claim.link === null
        ? `This Dock Notify has no administrator yet: send ${claim.command} to your bot in Telegram to become it (works once, for 24 hours)`
        : `This Dock Notify has no administrator yet: open ${claim.link} in Telegram to become it (works once, for 24 hours)`,
    );
  }
  if (claim === null && (await app.owners.lacksAdministrator().catch(() => false))) {
    // An upgraded instance (it counts as claimed) or one whose administrators all left.
    server.log.warn(
      "Nobody administers this Dock Notify: owners can sign in, but nobody can invite or remove them. Name an administrator with OWNERS or `dock-notify owners add <telegram_user_id> --admin`",
    );
  }
  // Last, so that it is what a person sees when the start-up settles.
  if (human) standardOutput().write(banner(config, url, pkg.version, claim, app.botHealth()));
  tidier?.start();
}
