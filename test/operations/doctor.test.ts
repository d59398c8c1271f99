import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SANDBOX_BOT_TOKEN } from "../../src/telegram/sandbox-bot.ts";
import { freePort } from "../helpers/browser.ts";
import {
  createTestDatabase,
  type RunningService,
  startServiceOver,
  type TestDatabase,
} from "../helpers/harness.ts";
import { type RunningSandbox, startSandbox } from "../helpers/sandbox-harness.ts";

/** The compiled command line (dist/, built by the global setup), as an operator runs it. */
const CLI = join(import.meta.dirname, "..", "..", "dist", "cli.js");

/** A token in Telegram's shape that the sandbox does not know: 401 Unauthorized, as from Telegram. */
const REFUSED_TOKEN = "123456789:AAHrefusedTokenForTheDoctorTests00000";

/** `dock-notify doctor` in a process of its own (as `uid`, when given): its exit status and output. */
function doctor(
  env: Record<string, string>,
  options: { json?: boolean; uid?: number } = {},
): Promise<{ status: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, [CLI, "doctor", ...(options.json ? ["--json"] : [])], {
    // Only what the test names: the doctor reads its configuration from the environment.
    env: { PATH: process.env.PATH ?? "", LOG_LEVEL: "silent", ...env },
    timeout: 60_000,
    ...(options.uid === undefined ? {} : { uid: options.uid, gid: options.uid }),
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (status) => resolve({ status, out, err }));
  });
}

/** The line of one check in the report, e.g. `FAIL  Bot token …`, and the fix below it (if any). */
function reported(out: string, check: string): { line: string; fix: string | undefined } {
  const lines = out.split("\n");
  const index = lines.findIndex((line) => new RegExp(`^  (ok  |warn|FAIL)  ${check} `).test(line));
  if (index === -1) throw new Error(`no line for ${check} in:\n${out}`);
  const next = lines[index + 1]?.trim() ?? "";
  return { line: lines[index] as string, fix: next.startsWith("fix: ") ? next.slice(5) : undefined };
}

/**
 * The configuration checked end to end by `dock-notify doctor`, against a running service and a
 * standalone sandbox standing in for Telegram (one that knows the bot token, and refuses others).
 */
describe("dock-notify doctor", () => {
  let telegram: RunningSandbox;
  let database: TestDatabase;
  let service: RunningService;
  const key = randomBytes(32);
  /** The service's own configuration, as the operator would give it to the doctor. */
  let env: Record<string, string>;

  beforeAll(async () => {
    telegram = await startSandbox();
    database = await createTestDatabase("sqlite", { migrated: true });
    const port = await freePort();
    env = {
      PORT: String(port),
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      DATA_DIR: database.dataDir,
      DATABASE_URL: database.url,
      TELEGRAM_BOT_TOKEN: SANDBOX_BOT_TOKEN,
      TELEGRAM_API_ROOT: telegram.root,
      ENCRYPTION_KEY: key.toString("base64"),
      OWNERS: "1",
    };
    service = await startServiceOver(database, env, key);
    // A Dock whose secret key only the right encryption key opens.
    await service.app.docks.create(1, { name: "Checked", link: null, description: null });
  }, 60_000);
  afterAll(async () => {
    await service?.close();
    await database?.drop();
    await telegram?.close();
  });

  it("a good configuration: every check ok, the bot's @name printed, exit 0", async () => {
    const result = await doctor(env);
    expect(result.err).toBe("");
    expect(result.status).toBe(0);
    expect(reported(result.out, "Bot token").line).toMatch(
      /ok {4}Bot token +Telegram accepts it: the bot is @DockNotifySandboxBot \(id 7000000001\)/,
    );
    expect(reported(result.out, "Updates").line).toMatch(
      /ok {4}Updates +polling \(getUpdates\), as configured/,
    );
    expect(reported(result.out, "PUBLIC_URL").line).toMatch(
      new RegExp(`ok {4}PUBLIC_URL +${env.PUBLIC_URL} answers from this machine`),
    );
    expect(reported(result.out, "Data folder").line).toMatch(
      /ok {4}Data folder +.* is writable, and private/,
    );
    expect(reported(result.out, "Encryption key").line).toMatch(
      /ok {4}Encryption key +ENCRYPTION_KEY is set/,
    );
    expect(reported(result.out, "Database").line).toMatch(
      /ok {4}Database +SQLite file .*: reachable, its schema is up to date/,
    );
    expect(result.out).toMatch(/No problem found\.\n$/);
    expect(result.out).not.toContain(SANDBOX_BOT_TOKEN.split(":")[1]);
  }, 60_000);

  it("a token Telegram refuses: FAIL with the fix, exit 1; --json says the same", async () => {
    const result = await doctor({ ...env, TELEGRAM_BOT_TOKEN: REFUSED_TOKEN });
    expect(result.status).toBe(1);
    const token = reported(result.out, "Bot token");
    expect(token.line).toMatch(/FAIL {2}Bot token +Telegram refused the bot token \(401\)/);
    expect(token.fix).toMatch(/^set TELEGRAM_BOT_TOKEN to the token @BotFather gave you/);
    expect(result.out).toMatch(/1 problem found\.\n$/);
    expect(result.out + result.err).not.toContain(REFUSED_TOKEN.split(":")[1]);

    const json = await doctor({ ...env, TELEGRAM_BOT_TOKEN: REFUSED_TOKEN }, { json: true });
    expect(json.status).toBe(1);
    const answer = JSON.parse(json.out) as {
      ok: boolean;
      checks: { check: string; status: string; fix?: string }[];
    };
    expect(answer.ok).toBe(false);
    expect(answer.checks.find((check) => check.check === "Bot token")).toMatchObject({
      status: "fail",
      fix: expect.stringMatching(/^set TELEGRAM_BOT_TOKEN/),
    });
    expect(answer.checks.filter((check) => check.status === "fail")).toHaveLength(1);
  }, 60_000);

  it("a PUBLIC_URL nothing answers at: FAIL with the fix, exit 1", async () => {
    const nowhere = `http://127.0.0.1:${await freePort()}`;
    const result = await doctor({ ...env, PUBLIC_URL: nowhere });
    expect(result.status).toBe(1);
    const check = reported(result.out, "PUBLIC_URL");
    expect(check.line).toMatch(
      new RegExp(`FAIL {2}PUBLIC_URL +${nowhere} cannot be reached from this machine \\(ECONNREFUSED\\)`),
    );
    expect(check.fix).toMatch(/set PUBLIC_URL to the address it is reached at/);
  }, 60_000);

  it("a data folder the service's user cannot write: FAIL with the fix, exit 1", async () => {
    const folder = mkdtempSync(join(tmpdir(), "dock-notify-doctor-"));
    try {
      // Read-only for everyone; the superuser writes anywhere, so as root the doctor runs as nobody.
      chmodSync(folder, 0o555);
      const asRoot = process.getuid?.() === 0;
      const result = await doctor(
        { ...env, DATA_DIR: folder, DATABASE_URL: `sqlite:${join(folder, "dock-notify.db")}` },
        asRoot ? { uid: 65534 } : {},
      );
      expect(result.status).toBe(1);
      const check = reported(result.out, "Data folder");
      expect(check.line).toMatch(new RegExp(`FAIL {2}Data folder +${folder} is not writable \\(EACCES\\)`));
      expect(check.fix).toMatch(/^give the folder to the user the service runs as: chown -R <user> /);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  }, 60_000);

  it("an encryption key that does not open the Docks' secret keys: FAIL with the fix, exit 1", async () => {
    const result = await doctor({ ...env, ENCRYPTION_KEY: randomBytes(32).toString("base64") });
    expect(result.status).toBe(1);
    expect(result.out).toMatch(
      /FAIL {2}Encryption key +the key does not open the Dock secret keys in this database/,
    );
    expect(result.out).toMatch(/fix: set ENCRYPTION_KEY to the key they were sealed with/);
  }, 60_000);
});

describe("dock-notify doctor in sandbox mode", () => {
  it("says so, and checks the sandbox the running service serves", async ({ onTestFinished }) => {
    const database = await createTestDatabase("sqlite", { migrated: true });
    const port = await freePort();
    const env = {
      PORT: String(port),
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      DATA_DIR: database.dataDir,
      DATABASE_URL: database.url,
    };
    const service = await startServiceOver(database, env);
    onTestFinished(async () => {
      await service.close();
      await database.drop();
    });
    const result = await doctor(env);
    expect(result.status).toBe(0);
    expect(reported(result.out, "Telegram").line).toMatch(/sandbox mode: no TELEGRAM_BOT_TOKEN is set/);
    expect(reported(result.out, "Sandbox").line).toMatch(
      new RegExp(`ok {4}Sandbox +answers at ${env.PUBLIC_URL}/sandbox: its bot is @DockNotifySandboxBot`),
    );

    // With the service stopped, the sandbox is gone with it: FAIL, and how to start it.
    await service.close();
    const stopped = await doctor(env);
    expect(stopped.status).toBe(1);
    expect(reported(stopped.out, "Sandbox").fix).toMatch(/^start the service/);
  }, 60_000);
});
