import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import pkg from "../../package.json" with { type: "json" };
import { SANDBOX_BOT_TOKEN } from "../../src/telegram/sandbox-bot.ts";
import { People } from "../helpers/bot-harness.ts";
import { freePort } from "../helpers/browser.ts";
import { createTestDatabase, hasPostgres } from "../helpers/harness.ts";
import { startSandbox } from "../helpers/sandbox-harness.ts";
import { waitFor } from "../helpers/wait.ts";

/** The compiled service (dist/, built by the global setup), as `npm start` runs it. */
const CLI = join(import.meta.dirname, "..", "..", "dist", "cli.js");

/** A readable log line: local time, level, message. */
const READABLE = /^\d\d:\d\d:\d\d (TRACE|DEBUG|INFO |WARN |ERROR|FATAL) \S/;

/** `dock-notify serve` with what it writes gathered as it comes; `stop` ends it and waits. */
interface Served {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function collect(child: ChildProcess): Served {
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, output: () => output, exited };
}

/**
 * The service on a terminal of its own: util-linux's `script` gives it a pseudo-terminal (so its
 * standard output is a TTY, as in a person's shell) and copies what it shows. What the test writes
 * to `script`'s input is typed on that terminal: `\x03` is Ctrl+C.
 */
function onTerminal(env: Record<string, string>): Served {
  const command = `exec '${process.execPath}' '${CLI}' serve`;
  return collect(
    spawn("script", ["-qfec", command, "/dev/null"], {
      env: { ...process.env, LOG_LEVEL: "info", ...env },
      stdio: ["pipe", "pipe", "pipe"],
    }),
  );
}

/** The service with its standard output a pipe, as under a container runtime or a log collector. */
function onPipe(env: Record<string, string>, command = "serve"): Served {
  return collect(
    spawn(process.execPath, [CLI, command], {
      env: { ...process.env, LOG_LEVEL: "info", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    }),
  );
}

const POSTGRES = await hasPostgres();

describe("what serve shows", () => {
  const dirs: string[] = [];
  const running: Served[] = [];
  afterAll(async () => {
    for (const served of running) served.child.kill("SIGKILL");
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  function dataDir(): string {
    const dir = mkdtempSync(join(tmpdir(), "dock-notify-terminal-"));
    dirs.push(dir);
    return dir;
  }
  function started(served: Served, what: string, ready: RegExp): Promise<string> {
    running.push(served);
    return waitFor(what, () => (ready.test(served.output()) ? served.output() : undefined), 30_000);
  }

  it("on a terminal: a banner (console, sandbox, API docs, the data, how to stop), readable log lines, Ctrl+C stops", async () => {
    const dir = dataDir();
    const port = await freePort();
    const served = onTerminal({ DATA_DIR: dir, PORT: String(port) });
    const shown = await started(served, "the banner", /Press Ctrl\+C to stop\./);
    const lines = shown.split(/\r?\n/);
    const url = `http://127.0.0.1:${port}`;
    expect(lines).toContain(`  Dock Notify ${pkg.version} is running`);
    expect(lines).toContain(`  Console   ${url}/console/`);
    expect(lines).toContain(`  Sandbox   ${url}/sandbox   (plays Telegram: no TELEGRAM_BOT_TOKEN is set)`);
    expect(lines).toContain("  Bot       running @DockNotifySandboxBot (polling)");
    expect(lines).toContain('  Real bot  docs/telegram.md, "Connect your bot": BotFather, token, PUBLIC_URL');
    expect(lines).toContain(`  API docs  ${url}/docs`);
    expect(lines).toContain(`  Data      SQLite file ${join(dir, "dock-notify.db")}`);
    // Every other line is a readable log line, not JSON; the banner comes once the service answers.
    const logLines = lines.filter((line) => line !== "" && !line.startsWith("  "));
    expect(logLines.length).toBeGreaterThan(0);
    for (const line of logLines) expect(line).toMatch(READABLE);
    expect(lines.findIndex((line) => line.includes("Dock Notify is ready"))).toBeLessThan(
      lines.indexOf("  Press Ctrl+C to stop."),
    );
    expect(lines.some((line) => /^\d\d:\d\d:\d\d INFO {2}bot started .*mode=polling/.test(line))).toBe(true);
    // The bot's own calls to the built-in sandbox (getMe, deleteWebhook, setMyCommands) are at debug.
    expect(lines.filter((line) => line.includes("/sandbox/bot"))).toEqual([]);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    // A request reads as one: method, path, status, time.
    await waitFor("the request's log line", () =>
      /INFO {2}GET \/healthz → 200 [\d.]+ ms/.test(served.output()) ? true : undefined,
    );

    served.child.stdin?.write("\x03");
    expect(await served.exited).toBe(0);
    const after = served.output();
    expect(after).toMatch(/INFO {2}shutting down signal=SIGINT/);
    expect(after).toMatch(/INFO {2}stopped/);
    expect(after).not.toContain('{"level"');
  }, 60_000);

  it("with a real bot and no OWNERS: the banner and the log print a claim link; whoever confirms it administers, and the next start prints none", async () => {
    // A sandbox on its own port plays Telegram for a service with a bot token, as in production.
    const telegram = await startSandbox();
    try {
      const dir = dataDir();
      const env = { DATA_DIR: dir, TELEGRAM_BOT_TOKEN: SANDBOX_BOT_TOKEN, TELEGRAM_API_ROOT: telegram.root };
      const served = onTerminal({ ...env, PORT: String(await freePort()) });
      const shown = await started(served, "the banner", /Press Ctrl\+C to stop\./);
      const link = /Claim {5}(https:\/\/t\.me\/DockNotifySandboxBot\?start=(claim_[A-Za-z0-9]{22}))/.exec(
        shown,
      );
      expect(link).not.toBeNull();
      expect(shown).toContain("open the claim link in Telegram and");
      expect(shown).not.toContain("Real bot");
      // The same link in the log, as a warning a log collector keeps.
      expect(shown).toMatch(
        new RegExp(
          `WARN {2}This Dock Notify has no administrator yet: open ${(link?.[1] ?? "").replaceAll("?", "\\?")} in Telegram`,
        ),
      );

      const people = new People(telegram.root);
      const ops = await people.person("Ops");
      const prompt = await people.botReply(ops, await people.start(ops, link?.[2]));
      await people.press(ops, prompt, "Yes");
      expect((await people.edited(ops, prompt)).text).toContain("you are the administrator");
      served.child.stdin?.write("\x03");
      expect(await served.exited).toBe(0);

      const again = onPipe({ ...env, PORT: "0" });
      await started(again, "the ready line", /Dock Notify is ready/);
      expect(again.output()).not.toContain("no administrator");
      again.child.kill("SIGTERM");
      await again.exited;
    } finally {
      await telegram.close();
    }
  }, 60_000);

  it("with a bot token Telegram refuses: the banner says so and what to set, and the log repeats it", async () => {
    // A standalone sandbox plays Telegram, and refuses a token it does not know with 401.
    const telegram = await startSandbox();
    try {
      const served = onTerminal({
        DATA_DIR: dataDir(),
        PORT: String(await freePort()),
        OWNERS: "1",
        TELEGRAM_BOT_TOKEN: "123456789:AAHrefusedTokenForTheBannerTest000000",
        TELEGRAM_API_ROOT: telegram.root,
      });
      const shown = await started(served, "the banner", /Press Ctrl\+C to stop\./);
      const lines = shown.split(/\r?\n/);
      expect(lines).toContain("  Bot       unauthorized: Telegram refused the bot token (401)");
      expect(lines).toContain(
        "            fix: set TELEGRAM_BOT_TOKEN to the token @BotFather gave you (send /token to @BotFather to see it again), then restart Dock Notify",
      );
      // The warning before it, with the same fix, for a log collector.
      expect(shown).toMatch(
        /WARN {2}bot could not start yet; retrying: Telegram refused the bot token \(401\) .*state=unauthorized .*fix="set TELEGRAM_BOT_TOKEN/,
      );
      expect(shown).not.toContain("AAHrefusedTokenForTheBannerTest000000");
      served.child.stdin?.write("\x03");
      expect(await served.exited).toBe(0);
    } finally {
      await telegram.close();
    }
  }, 60_000);

  it.runIf(POSTGRES)(
    "on a terminal with PostgreSQL: the banner names the database and its server, never the password",
    async () => {
      const database = await createTestDatabase("postgres");
      try {
        // PostgreSQL here trusts local connections: the password is accepted and ignored.
        const withPassword = new URL(database.url);
        withPassword.password = "s3cret-pw";
        const served = onTerminal({
          DATA_DIR: database.dataDir,
          PORT: String(await freePort()),
          DATABASE_URL: withPassword.toString(),
        });
        const shown = await started(served, "the banner", /Press Ctrl\+C to stop\./);
        const name = withPassword.pathname.slice(1);
        // The server as TEST_POSTGRES_URL names it (the default port when it names none).
        const server = `${withPassword.hostname}:${withPassword.port || 5432}`;
        expect(shown).toContain(`  Data      PostgreSQL database ${name} on ${server}`);
        expect(shown).not.toContain("s3cret-pw");
        served.child.stdin?.write("\x03");
        expect(await served.exited).toBe(0);
        expect(served.output()).not.toContain("s3cret-pw");
      } finally {
        await database.drop();
      }
    },
    60_000,
  );

  it("LOG_FORMAT=json on a terminal: JSON lines only, no banner", async () => {
    const served = onTerminal({ DATA_DIR: dataDir(), PORT: "0", LOG_FORMAT: "json" });
    const shown = await started(served, "the ready line", /"msg":"Dock Notify is ready/);
    served.child.stdin?.write("\x03");
    expect(await served.exited).toBe(0);
    expect(shown).not.toContain("Press Ctrl+C");
    // The terminal echoes the Ctrl+C typed on it as "^C".
    const lines = served
      .output()
      .replaceAll("^C", "")
      .split(/\r?\n/)
      .filter((line) => line !== "");
    for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
  }, 60_000);

  it("not on a terminal: standard output is JSON lines only, as before", async () => {
    const served = onPipe({ DATA_DIR: dataDir(), PORT: "0" });
    await started(served, "the ready line", /"msg":"Dock Notify is ready/);
    served.child.kill("SIGTERM");
    expect(await served.exited).toBe(0);
    const lines = served
      .output()
      .split("\n")
      .filter((line) => line !== "");
    expect(lines.length).toBeGreaterThan(3);
    for (const line of lines) expect(JSON.parse(line)).toHaveProperty("msg");
    expect(served.output()).not.toContain("Press Ctrl+C");
    // With PORT=0 the ready line names the port the service was given, not 0.
    const ready = lines
      .map((line) => JSON.parse(line))
      .find((entry) => entry.msg.startsWith("Dock Notify is ready"));
    expect(ready.msg).toContain(`http://127.0.0.1:${ready.port}/console/`);
  }, 60_000);

  it("LOG_FORMAT=pretty: readable lines and the banner even into a pipe; a bad value is refused", async () => {
    const served = onPipe({ DATA_DIR: dataDir(), PORT: "0", LOG_FORMAT: "pretty" });
    const shown = await started(served, "the banner", /Press Ctrl\+C to stop\./);
    served.child.kill("SIGTERM");
    expect(await served.exited).toBe(0);
    expect(shown).toMatch(/^ {2}Console {3}http:\/\/127\.0\.0\.1:\d+\/console\/$/m);
    expect(shown).not.toContain('{"level"');

    // `dock-notify sandbox` writes its logs the same way (it has no banner: its ready line says it all).
    const sandbox = onPipe({ DATA_DIR: dataDir(), PORT: "0", LOG_FORMAT: "pretty" }, "sandbox");
    const sandboxShown = await started(sandbox, "the sandbox's ready line", /Telegram sandbox is ready/);
    sandbox.child.kill("SIGTERM");
    expect(await sandbox.exited).toBe(0);
    // With PORT=0 it names the port it was given.
    expect(sandboxShown).toMatch(
      /^\d\d:\d\d:\d\d INFO {2}Telegram sandbox is ready: chat page http:\/\/127\.0\.0\.1:[1-9]\d*\/sandbox/m,
    );
    expect(sandboxShown).not.toContain('{"level"');

    const refused = onPipe({ DATA_DIR: dataDir(), LOG_FORMAT: "yaml" });
    expect(await refused.exited).toBe(2);
    expect(refused.output()).toMatch(/LOG_FORMAT must be one of auto, json, pretty, got "yaml"/);
  }, 60_000);
});
