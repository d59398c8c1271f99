import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { Writable } from "node:stream";
import { Api } from "grammy";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.ts";
import { telegramLink } from "../../src/domain/telegram-link.ts";
import { ConfigError, loadConfig } from "../../src/runtime/config.ts";
import { migrate, openDb } from "../../src/store/open.ts";
import { SANDBOX_BOT_TOKEN, SANDBOX_BOT_USERNAME } from "../../src/telegram/sandbox-bot.ts";

const KEY = Buffer.alloc(32, 7);

async function appWith(env: Record<string, string>) {
  const config = loadConfig({ DATABASE_URL: "sqlite::memory:", PORT: "0", LOG_LEVEL: "silent", ...env });
  const db = await openDb(config.databaseUrl);
  await migrate(db);
  const app = await createApp({ config, db, encryptionKey: KEY });
  return {
    ...app,
    close: async () => {
      await app.server.close();
      await db.close();
    },
  };
}

describe("sandbox mode in the service", () => {
  it("without TELEGRAM_BOT_TOKEN the service mounts the sandbox and points app.telegram at it", async () => {
    const app = await appWith({ PUBLIC_URL: "http://notify.test" });
    try {
      expect(app.telegram).toEqual({
        apiRoot: "http://notify.test/sandbox",
        token: SANDBOX_BOT_TOKEN,
        botUsername: SANDBOX_BOT_USERNAME,
        sandbox: true,
      });
      await app.server.listen({ port: 0, host: "127.0.0.1" });
      const address = app.server.server.address();
      const root = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}/sandbox`;
      const me = await new Api(app.telegram.token, { apiRoot: root }).getMe();
      expect(me.username).toBe(SANDBOX_BOT_USERNAME);
      const page = await fetch(root);
      expect(page.headers.get("content-type")).toMatch(/^text\/html/);
      expect(await page.text()).toContain("<title>Telegram sandbox");
      // The service's own routes keep their error format.
      expect((await fetch(`${root.replace("/sandbox", "")}/nowhere`)).status).toBe(404);
    } finally {
      await app.close();
    }
  });

  it("with a token the sandbox is not mounted and app.telegram is the real Bot API", async () => {
    const token = `123456:${"A".repeat(35)}`;
    const app = await appWith({ TELEGRAM_BOT_TOKEN: token });
    try {
      expect(app.telegram).toEqual({
        apiRoot: "https://api.telegram.org",
        token,
        botUsername: null,
        sandbox: false,
      });
      const response = await app.server.inject({ url: `/sandbox/bot${SANDBOX_BOT_TOKEN}/getMe` });
      expect(response.statusCode).toBe(404);
      expect(response.json()).toMatchObject({ ok: false, error: { code: "not_found" } });
    } finally {
      await app.close();
    }
  });

  it("the Bot API token never reaches the request log", async () => {
    const lines: string[] = [];
    const logStream = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    // Debug: the built-in sandbox logs its own bot's calls that succeed at debug, not info.
    const config = loadConfig({ DATABASE_URL: "sqlite::memory:", LOG_LEVEL: "debug" });
    const db = await openDb(config.databaseUrl);
    await migrate(db);
    const app = await createApp({ config, db, encryptionKey: KEY, logStream });
    try {
      await app.server.inject({ url: `/sandbox/bot${SANDBOX_BOT_TOKEN}/getMe` });
      expect(lines.join("")).toContain("/sandbox/bot<redacted>/getMe");
      expect(lines.join("")).not.toContain(SANDBOX_BOT_TOKEN.split(":")[1]);
    } finally {
      await app.server.close();
      await db.close();
    }
  });

  it("SANDBOX_RATE_LIMITS takes on/off and refuses anything else in one line", () => {
    expect(loadConfig({ SANDBOX_RATE_LIMITS: "off" }).sandboxRateLimits).toBe(false);
    expect(loadConfig({}).sandboxRateLimits).toBe(true);
    expect(() => loadConfig({ SANDBOX_RATE_LIMITS: "sometimes" })).toThrow(ConfigError);
    expect(() => loadConfig({ SANDBOX_HISTORY_LIMIT: "1" })).toThrow(
      'SANDBOX_HISTORY_LIMIT must be a whole number from 10 to 100000, got "1"',
    );
  });
});

describe("telegramLink", () => {
  it("points at t.me on Telegram and at the chat page in the sandbox", () => {
    expect(telegramLink("https://notify.example", "MyBot", "abc_1-2", false)).toBe(
      "https://t.me/MyBot?start=abc_1-2",
    );
    expect(telegramLink("https://notify.example", "MyBot", "abc_1-2", true)).toBe(
      "https://notify.example/sandbox?start=abc_1-2",
    );
  });

  it("refuses a payload Telegram would not accept", () => {
    expect(() => telegramLink("https://n.example", "B", "a b", true)).toThrow(RangeError);
    expect(() => telegramLink("https://n.example", "B", "x".repeat(65), false)).toThrow(RangeError);
  });
});

describe("dock-notify sandbox", () => {
  it("runs only the emulator on its own port until SIGTERM", async () => {
    const bin = new URL("../../bin/dock-notify.js", import.meta.url).pathname;
    const child = spawn(process.execPath, [bin, "sandbox"], {
      env: { ...process.env, PORT: "0", LOG_LEVEL: "info", SANDBOX_RATE_LIMITS: "off" },
      stdio: ["ignore", "pipe", "inherit"],
    });
    try {
      let port: number | undefined;
      for await (const line of createInterface({ input: child.stdout })) {
        const entry = JSON.parse(line) as { msg?: string; port?: number };
        if (entry.msg?.startsWith("Telegram sandbox is ready")) {
          port = entry.port;
          break;
        }
      }
      expect(port).toBeGreaterThan(0);
      const root = `http://127.0.0.1:${port}/sandbox`;
      expect((await new Api(SANDBOX_BOT_TOKEN, { apiRoot: root }).getMe()).username).toBe(
        SANDBOX_BOT_USERNAME,
      );
      const limits = (await (await fetch(`${root}/api/limits`)).json()) as { rate_limits: boolean };
      expect(limits.rate_limits).toBe(false);
      // Only the sandbox: the service's API is not here.
      expect((await fetch(`http://127.0.0.1:${port}/ping`, { method: "POST" })).status).toBe(404);
    } finally {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      expect(await exited).toBe(0);
    }
  });

  it("answers to TELEGRAM_BOT_TOKEN when it is set, and refuses the public token, as Telegram would", async () => {
    const token = "4242424242:AAH-rehearsalOfARealBotToken_0123456789";
    const bin = new URL("../../bin/dock-notify.js", import.meta.url).pathname;
    const child = spawn(process.execPath, [bin, "sandbox"], {
      env: { ...process.env, PORT: "0", LOG_LEVEL: "info", TELEGRAM_BOT_TOKEN: token },
      stdio: ["ignore", "pipe", "inherit"],
    });
    try {
      let ready: { port?: number; answersTo?: string } = {};
      const lines: string[] = [];
      for await (const line of createInterface({ input: child.stdout })) {
        lines.push(line);
        const entry = JSON.parse(line) as { msg?: string; port?: number; answersTo?: string };
        if (entry.msg?.startsWith("Telegram sandbox is ready")) {
          ready = entry;
          break;
        }
      }
      expect(ready.answersTo).toBe("TELEGRAM_BOT_TOKEN");
      const root = `http://127.0.0.1:${ready.port}/sandbox`;
      expect((await new Api(token, { apiRoot: root }).getMe()).username).toBe(SANDBOX_BOT_USERNAME);
      const refused = await fetch(`${root}/bot${SANDBOX_BOT_TOKEN}/getMe`);
      expect(refused.status).toBe(401);
      expect(lines.join("\n")).not.toContain("rehearsalOfARealBotToken");
    } finally {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      expect(await exited).toBe(0);
    }
  });
});
