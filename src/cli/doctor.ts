import { randomBytes } from "node:crypto";
import { accessSync, constants, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { botProblem, stateForFailure, TOKEN_FIX } from "../bot/bot-health.ts";
import type { Config } from "../runtime/config.ts";
import { maskUrl, scrubToken } from "../runtime/log.ts";
import { SANDBOX_BOT_TOKEN } from "../telegram/sandbox-bot.ts";

/**
 * `dock-notify doctor`: the configuration checked end to end, from the machine the service runs
 * on, each result with what to do about it. Reads only (but for a probe file it writes and removes
 * in DATA_DIR to prove it is writable): it never creates the database, the data folder or the key.
 */

/** ok; warn (works, but look at it); fail (something is wrong: the command exits 1). */
export type CheckStatus = "ok" | "warn" | "fail";

export interface CheckResult {
  /** What was checked, e.g. "Bot token". */
  check: string;
  status: CheckStatus;
  /** What was found. */
  detail: string;
  /** What to do, when it is not ok. */
  fix?: string;
}

/** How long a request of the doctor's (Telegram, PUBLIC_URL) may take before it counts as unanswered. */
const REQUEST_TIMEOUT_MS = 5000;

const ok = (check: string, detail: string): CheckResult => ({ check, status: "ok", detail });
const warn = (check: string, detail: string, fix: string): CheckResult => ({
  check,
  status: "warn",
  detail,
  fix,
});
const fail = (check: string, detail: string, fix: string): CheckResult => ({
  check,
  status: "fail",
  detail,
  fix,
});

/** Why a request got no answer, in a few words (the cause's code: ECONNREFUSED, a timeout). */
function whyUnanswered(error: unknown): string {
  const { name, cause, message } = error as {
    name?: string;
    cause?: { code?: string; message?: string };
    message?: string;
  };
  if (name === "TimeoutError") return `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`;
  return cause?.code ?? cause?.message ?? message ?? String(error);
}

/** A Bot API call the way Telegram answers it: `{ ok, result }` or `{ ok: false, error_code, description }`. */
async function botApi(
  apiRoot: string,
  token: string,
  method: string,
): Promise<{ ok: true; result: unknown } | { ok: false; error_code?: number; description: string }> {
  let response: Response;
  try {
    response = await fetch(`${apiRoot}/bot${token}/${method}`, {
      method: "POST",
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (error) {
    return { ok: false, description: scrubToken(whyUnanswered(error), token) };
  }
  const body = (await response.json().catch(() => null)) as {
    ok?: boolean;
    result?: unknown;
    error_code?: number;
    description?: string;
  } | null;
  if (body?.ok === true) return { ok: true, result: body.result };
  return {
    ok: false,
    error_code: body?.error_code ?? response.status,
    description: scrubToken(body?.description ?? `HTTP ${response.status}`, token),
  };
}

/** The bot token (getMe) and how updates reach the bot (getWebhookInfo against the configured mode). */
async function telegramChecks(config: Config, servedAt: string): Promise<CheckResult[]> {
  if (config.telegramBotToken === null) {
    const root = `${servedAt}/sandbox`;
    const mode = ok(
      "Telegram",
      "sandbox mode: no TELEGRAM_BOT_TOKEN is set, the built-in sandbox plays Telegram",
    );
    const me = await botApi(root, SANDBOX_BOT_TOKEN, "getMe");
    if (me.ok) {
      const { username } = me.result as { username: string };
      return [mode, ok("Sandbox", `answers at ${root}: its bot is @${username}`)];
    }
    return [
      mode,
      fail(
        "Sandbox",
        `does not answer at ${root} (${me.description})`,
        "start the service (npm start, or dock-notify serve): the sandbox is part of it. Set TELEGRAM_BOT_TOKEN to use a real bot instead. If the service runs with a bot token, this shell does not have the service's settings: run the doctor with them (docker compose exec dock-notify dock-notify doctor; with systemd: (set -a; . /etc/dock-notify/env; exec dock-notify doctor))",
      ),
    ];
  }
  const token = config.telegramBotToken;
  const apiRoot = config.telegramApiRoot;
  const me = await botApi(apiRoot, token, "getMe");
  if (!me.ok) {
    const code = me.error_code;
    const reason = code === undefined ? me.description : `getMe: ${code} ${me.description}`;
    const state = stateForFailure(code);
    if (state === "unauthorized")
      return [fail("Bot token", `Telegram refused the bot token (${code})`, TOKEN_FIX)];
    const problem = botProblem(state, reason, {
      apiRoot,
      mode: config.telegramWebhookUrl === null ? "polling" : "webhook",
    });
    return [
      state === "unreachable" && problem
        ? fail("Bot token", `${problem.what}: the token could not be checked`, problem.fix)
        : fail("Bot token", `Telegram answered ${reason}`, "check TELEGRAM_BOT_TOKEN and TELEGRAM_API_ROOT"),
    ];
  }
  const bot = me.result as { id: number; username: string };
  const results = [ok("Bot token", `Telegram accepts it: the bot is @${bot.username} (id ${bot.id})`)];

  const info = await botApi(apiRoot, token, "getWebhookInfo");
  if (!info.ok) {
    results.push(
      fail(
        "Updates",
        `getWebhookInfo failed (${info.description})`,
        "run the doctor again; if it persists, Telegram has trouble with this bot",
      ),
    );
    return results;
  }
  const webhook = info.result as {
    url: string;
    pending_update_count: number;
    last_error_date?: number;
    last_error_message?: string;
  };
  const configured = config.telegramWebhookUrl;
  if (configured === null) {
    results.push(
      webhook.url === ""
        ? ok("Updates", "polling (getUpdates), as configured: no webhook is set")
        : warn(
            "Updates",
            `polling is configured (no TELEGRAM_WEBHOOK_URL), but Telegram has a webhook set (${maskUrl(webhook.url)})`,
            "serve removes it when it starts; if another deployment set it, the two take turns with the bot: give each its own bot, or set TELEGRAM_WEBHOOK_URL here too",
          ),
    );
    return results;
  }
  if (webhook.url !== configured) {
    results.push(
      warn(
        "Updates",
        webhook.url === ""
          ? `webhook mode is configured (${maskUrl(configured)}), but no webhook is set`
          : `webhook mode is configured (${maskUrl(configured)}), but Telegram posts updates to ${maskUrl(webhook.url)}`,
        "serve registers TELEGRAM_WEBHOOK_URL when it starts (start it); if it runs, another deployment with this bot token changes the webhook",
      ),
    );
  } else if (webhook.last_error_message !== undefined && webhook.pending_update_count > 0) {
    results.push(
      fail(
        "Updates",
        `Telegram cannot deliver updates to ${maskUrl(configured)}: ${scrubToken(webhook.last_error_message, token)} (${webhook.pending_update_count} waiting)`,
        "TELEGRAM_WEBHOOK_URL must be reachable from the internet over HTTPS with a valid certificate, and lead to this service's /telegram/webhook",
      ),
    );
  } else {
    results.push(ok("Updates", `webhook registered at ${maskUrl(configured)}, as configured`));
  }
  return results;
}

/** PUBLIC_URL, asked from this machine: does it lead to a Dock Notify (its /healthz)? */
async function publicUrlCheck(servedAt: string): Promise<CheckResult> {
  const url = `${servedAt}/healthz`;
  let response: Response;
  try {
    response = await fetch(url, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  } catch (error) {
    return fail(
      "PUBLIC_URL",
      `${servedAt} cannot be reached from this machine (${whyUnanswered(error)})`,
      "start the service, and set PUBLIC_URL to the address it is reached at (a reverse proxy's https:// address, or http://127.0.0.1:PORT); a proxy in front must forward to HOST:PORT",
    );
  }
  const body = (await response.json().catch(() => null)) as { ok?: boolean; version?: string } | null;
  if (response.status !== 200 || body?.ok !== true) {
    return fail(
      "PUBLIC_URL",
      `${url} answers ${response.status}, not Dock Notify's health check`,
      "PUBLIC_URL must lead to this service: check the reverse proxy's route to HOST:PORT",
    );
  }
  if (body.version !== pkg.version) {
    return warn(
      "PUBLIC_URL",
      `${servedAt} answers, but runs Dock Notify ${body.version}; this command is ${pkg.version}`,
      "restart the service after an upgrade (or run the doctor of the version it runs)",
    );
  }
  return ok("PUBLIC_URL", `${servedAt} answers from this machine (Dock Notify ${body.version})`);
}

/** DATA_DIR: exists (or can be made), a folder, writable (a probe file written and removed), private. */
function dataFolderCheck(dataDir: string): CheckResult {
  const check = "Data folder";
  let mode: number;
  try {
    const stat = statSync(dataDir);
    if (!stat.isDirectory()) {
      return fail(
        check,
        `${dataDir} is not a folder`,
        "set DATA_DIR to a folder (serve creates it when it is missing)",
      );
    }
    mode = stat.mode & 0o777;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "ENOENT")
      return fail(
        check,
        `${dataDir} cannot be used (${code})`,
        "set DATA_DIR to a folder this user may write",
      );
    const parent = dirname(dataDir);
    try {
      accessSync(parent, constants.W_OK | constants.X_OK);
      return ok(check, `${dataDir} does not exist yet: serve creates it (mode 700)`);
    } catch {
      return fail(
        check,
        `${dataDir} does not exist, and ${parent} is not writable to create it`,
        `create it for the service's user: mkdir -p ${dataDir} && chown <user> ${dataDir}`,
      );
    }
  }
  const probe = join(dataDir, `.doctor-${process.pid}-${randomBytes(4).toString("hex")}`);
  try {
    writeFileSync(probe, "", { flag: "wx" });
    rmSync(probe, { force: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "error";
    const user = process.getuid?.() ?? "this user";
    return fail(
      check,
      `${dataDir} is not writable (${code}) for user ${user}`,
      `give the folder to the user the service runs as: chown -R <user> ${dataDir} (a container's bind mount: the image's node user, uid 1000), or set DATA_DIR to a folder it may write`,
    );
  }
  if ((mode & 0o077) !== 0) {
    return warn(
      check,
      `${dataDir} is writable, but others may look inside (mode ${mode.toString(8)}); it holds the encryption key and the database`,
      `chmod 700 ${dataDir}`,
    );
  }
  return ok(check, `${dataDir} is writable, and private (mode ${mode.toString(8)})`);
}

/** The key that seals Dock secret keys: ENCRYPTION_KEY, or DATA_DIR/encryption.key readable and whole. */
function encryptionKeyCheck(config: Config): { result: CheckResult; key: Buffer | null } {
  const check = "Encryption key";
  if (config.encryptionKey !== null)
    return { result: ok(check, "ENCRYPTION_KEY is set"), key: config.encryptionKey };
  const path = join(config.dataDir, "encryption.key");
  let text: string;
  let mode: number;
  try {
    text = readFileSync(path, "utf8");
    mode = statSync(path).mode & 0o777;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") {
      return {
        result: ok(check, `${path} does not exist yet: serve generates it on its first start`),
        key: null,
      };
    }
    return {
      result: fail(
        check,
        `${path} cannot be read (${code})`,
        `give it to the user the service runs as: chown <user> ${path} && chmod 600 ${path}`,
      ),
      key: null,
    };
  }
  const key = Buffer.from(text.trim(), "base64");
  if (key.length !== 32) {
    return {
      result: fail(
        check,
        `${path} does not hold a 32-byte base64 key`,
        "restore the key from your backup, or set ENCRYPTION_KEY to it",
      ),
      key: null,
    };
  }
  if ((mode & 0o077) !== 0) {
    return {
      result: warn(check, `${path} is readable by others (mode ${mode.toString(8)})`, `chmod 600 ${path}`),
      key,
    };
  }
  return { result: ok(check, `${path} is readable, a 32-byte key, private (mode ${mode.toString(8)})`), key };
}

/** The database: reachable, its schema current, the key opening its Dock secrets. */
async function databaseChecks(config: Config, key: Buffer | null): Promise<CheckResult[]> {
  const check = "Database";
  const { databaseLocation } = await import("./banner.ts");
  const where = databaseLocation(config.databaseUrl);
  if (config.databaseUrl.startsWith("sqlite:") && config.databaseUrl !== "sqlite::memory:") {
    try {
      statSync(config.databaseUrl.slice("sqlite:".length));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") {
        return [ok(check, `${where} does not exist yet: serve creates it`)];
      }
    }
  }
  const { explained } = await import("../main.ts");
  const { openDb, pendingMigrations } = await import("../store/open.ts");
  let db: Awaited<ReturnType<typeof openDb>>;
  try {
    db = await openDb(config.databaseUrl, { timeoutMs: REQUEST_TIMEOUT_MS });
  } catch (error) {
    return [
      fail(
        check,
        (explained(error, config) as Error).message,
        "check DATABASE_URL, and that the database server runs and takes connections from this machine",
      ),
    ];
  }
  try {
    const pending = await pendingMigrations(db);
    const results: CheckResult[] = [
      pending.length === 0
        ? ok(check, `${where}: reachable, its schema is up to date`)
        : warn(
            check,
            `${where}: reachable, ${pending.length} migration(s) of this version not applied yet (${pending.join(", ")})`,
            "serve applies them when it starts; or run dock-notify migrate (back the database up first)",
          ),
    ];
    if (key !== null && !pending.includes("0001-initial")) {
      const { DockRepository } = await import("../store/docks.ts");
      if (!(await new DockRepository(db, key).keyOpensSecrets())) {
        results.push(
          fail(
            "Encryption key",
            "the key does not open the Dock secret keys in this database",
            "set ENCRYPTION_KEY to the key they were sealed with (every instance sharing a database needs the same one)",
          ),
        );
      }
    }
    return results;
  } catch (error) {
    return [
      fail(
        check,
        (explained(error, config) as Error).message,
        "check DATABASE_URL and the database's permissions",
      ),
    ];
  } finally {
    await db.close();
  }
}

/**
 * Every check, in the order a person fixes things: the bot, how its updates arrive, PUBLIC_URL, the
 * data folder, the key, the database. `servedAt` is PUBLIC_URL as the service answers it (the URL a
 * running service recorded, when the command's environment names neither PUBLIC_URL nor PORT).
 */
export async function runDoctor(config: Config, servedAt: string): Promise<CheckResult[]> {
  const results = await telegramChecks(config, servedAt);
  results.push(await publicUrlCheck(servedAt));
  const folder = dataFolderCheck(config.dataDir);
  // With PostgreSQL, ENCRYPTION_KEY and a real bot nothing the service needs lives in DATA_DIR
  // (only the URL it answers at, a hint for the CLI): a folder it cannot write is then no failure.
  const folderNeeded =
    config.databaseUrl.startsWith("sqlite:") ||
    config.encryptionKey === null ||
    config.telegramBotToken === null;
  results.push(
    folder.status === "fail" && !folderNeeded
      ? {
          ...folder,
          status: "warn",
          detail: `${folder.detail}; not needed with PostgreSQL and ENCRYPTION_KEY`,
        }
      : folder,
  );
  const { result, key } = encryptionKeyCheck(config);
  results.push(result);
  results.push(...(await databaseChecks(config, key)));
  return results;
}

/** The results as a person reads them: one line each, its fix below it. */
export function doctorReport(results: CheckResult[]): string {
  const label = { ok: "ok  ", warn: "warn", fail: "FAIL" } as const;
  const lines = [`Dock Notify ${pkg.version}: checking the configuration this shell's environment gives`, ""];
  for (const { check, status, detail, fix } of results) {
    lines.push(`  ${label[status]}  ${check.padEnd(16)}${detail}`);
    if (fix !== undefined) lines.push(`${" ".repeat(24)}fix: ${fix}`);
  }
  const failed = results.filter((result) => result.status === "fail").length;
  const warned = results.filter((result) => result.status === "warn").length;
  lines.push(
    "",
    failed > 0
      ? `${failed} problem${failed === 1 ? "" : "s"} found${warned > 0 ? `, ${warned} warning${warned === 1 ? "" : "s"}` : ""}.`
      : warned > 0
        ? `No problem found; ${warned} warning${warned === 1 ? "" : "s"}.`
        : "No problem found.",
  );
  return `${lines.join("\n")}\n`;
}
