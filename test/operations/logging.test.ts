import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import Fastify from "fastify";
import { Api } from "grammy";
import pino, { type LoggerOptions } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.ts";
import { loadConfig } from "../../src/runtime/config.ts";
import { decorateRequestLog, loggerOptions, RequestLog, standardOutput } from "../../src/runtime/log.ts";
import { sandboxServer } from "../../src/sandbox/standalone.ts";
import { migrate, openDb } from "../../src/store/open.ts";
import { SANDBOX_BOT_TOKEN } from "../../src/telegram/sandbox-bot.ts";
import { basic, LogCapture, type RunningService, startService } from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

describe("logs", () => {
  let service: RunningService;

  beforeAll(async () => {
    service = await startService("sqlite", { LOG_LEVEL: "trace" });
  });
  afterAll(async () => service.close());

  it("never contain secret keys, Authorization headers, cookies or bot tokens", async () => {
    const dock = await service.app.docks.create(5, { name: "Logged", link: null, description: null });
    const botToken = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0";
    const auth = basic(dock.id, dock.secretKey);
    const requests: [string, RequestInit][] = [
      [
        "/ping",
        { method: "POST", body: JSON.stringify({ dock_id: dock.id, secret_key: dock.secretKey, msg: "hi" }) },
      ],
      // Invalid JSON that holds the key: JSON.parse's own error message would quote it.
      ["/ping", { method: "POST", body: `{"secret_key":"${dock.secretKey}",` }],
      [
        "/ping",
        {
          method: "POST",
          body: JSON.stringify({ dock_id: dock.id, secret_key: `${dock.secretKey}x`, msg: "hi" }),
        },
      ],
      [
        "/webhook",
        {
          method: "POST",
          headers: { authorization: auth, cookie: "session=s3cr3t-cookie-value" },
          body: '{"msg":"hi"}',
        },
      ],
      [
        "/webhook",
        {
          method: "POST",
          headers: { authorization: basic(dock.id, "wrong-key-value") },
          body: '{"msg":"hi"}',
        },
      ],
      [`/sandbox/bot${botToken}/getMe`, { method: "GET" }],
      [`/bot${botToken}/sendMessage?chat_id=1`, { method: "POST" }],
      ["/console/api/sign-in/telegram-widget?id=1&hash=f00dfeedwidgetsignature", { method: "GET" }],
    ];
    for (const [path, init] of requests) await fetch(`${service.url}${path}`, init);
    // A client putting its credentials in the URL: refused, told why, and the key is not logged.
    const inUrl = await fetch(
      `${service.url}/ping?dock_id=${dock.id}&secret_key=${dock.secretKey}&msg=q&api_token=t0ken-in-url`,
      { method: "POST" },
    );
    expect(inUrl.status).toBe(400);
    expect(((await inUrl.json()) as { error: { message: string } }).error.message).toMatch(
      /never put a secret key there/,
    );

    const log = service.logs.text;
    expect(log).toContain(dock.id);
    expect(log).toMatch(/"messageId":"msg_/);
    expect(log).toContain("/bot<redacted>/getMe");
    expect(log).toContain(`/ping?dock_id=${dock.id}&secret_key=<redacted>&msg=q&api_token=<redacted>`);
    for (const secret of [
      dock.secretKey,
      auth.slice("Basic ".length),
      "wrong-key-value",
      "s3cr3t-cookie-value",
      botToken,
      "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0",
      "f00dfeedwidgetsignature",
      "t0ken-in-url",
    ]) {
      expect(log).not.toContain(secret);
    }
  });
});

describe("the sandbox's long polls", () => {
  /** The service in sandbox mode, its bot not started (these tests poll in its place). */
  async function sandboxService(level: string) {
    const config = loadConfig({ DATABASE_URL: "sqlite::memory:", PORT: "0", LOG_LEVEL: level });
    const db = await openDb(config.databaseUrl);
    await migrate(db);
    const logs = new LogCapture();
    const app = await createApp({ config, db, encryptionKey: Buffer.alloc(32, 7), logStream: logs });
    await app.server.listen({ port: 0, host: "127.0.0.1" });
    const address = app.server.server.address();
    const port = typeof address === "object" && address ? address.port : 0;
    const api = new Api(SANDBOX_BOT_TOKEN, { apiRoot: `http://127.0.0.1:${port}/sandbox` });
    const requestLines = () =>
      logs.lines
        .map((line) => JSON.parse(line) as { msg: string; url?: string; status?: number; level: number })
        .filter((line) => line.msg === "request");
    return {
      api,
      root: `http://127.0.0.1:${port}/sandbox`,
      requestLines,
      close: async () => {
        await app.server.close();
        await db.close();
      },
    };
  }

  it("are not a request line each at the default level: an idle bot would fill the log", async () => {
    const service = await sandboxService("info");
    try {
      await service.api.getUpdates({ timeout: 0 });
      // Nor is any call of the built-in sandbox that succeeds: its client is the service's own bot
      // (its getMe, its webhook, its command list would come before the banner).
      await service.api.getMe();
      await service.api.setMyCommands([{ command: "help", description: "Help" }]);
      expect(service.requestLines().map((line) => line.url)).toEqual([]);
      // One that fails is an info line: a wrong token (401) is news.
      await fetch(`${service.root}/bot123456:AAHnotTheSandboxTokenButWellFormed00/getMe`);
      await waitFor("the refused call's line", () => service.requestLines().length > 0);
      expect(service.requestLines().map((line) => [line.url, line.status, line.level])).toEqual([
        ["/sandbox/bot<redacted>/getMe", 401, 30],
      ]);
      // A poll that fails is news: a second poller ends the first with 409, logged at info.
      const first = service.api.getUpdates({ timeout: 5 }).catch((error: unknown) => error);
      // The first poll is waiting (the sandbox counted it) before the second comes.
      await waitFor("the first poll to wait", async () => {
        const stats = (await (await fetch(`${service.root}/api/stats`)).json()) as {
          calls: Record<string, number>;
        };
        return (stats.calls.getupdates ?? 0) >= 2;
      });
      const second = service.api.getUpdates({ timeout: 1 });
      expect(await first).toMatchObject({ error_code: 409 });
      await second;
      await new Promise((resolve) => setImmediate(resolve));
      expect(service.requestLines().map((line) => [line.url, line.status, line.level])).toContainEqual([
        "/sandbox/bot<redacted>/getUpdates",
        409,
        30,
      ]);
    } finally {
      await service.close();
    }
  });

  it("are logged at debug", async () => {
    const service = await sandboxService("debug");
    try {
      await service.api.getUpdates({ timeout: 0 });
      const lines = service.requestLines();
      expect(lines.map((line) => [line.url, line.level])).toEqual([
        ["/sandbox/bot<redacted>/getUpdates", 20],
      ]);
    } finally {
      await service.close();
    }
  });
});

describe("the request log of any server", () => {
  it("masks a bot token in a path no route has (Fastify's own 404 would log the raw URL)", async () => {
    const logs = new LogCapture();
    const server = Fastify({ logger: loggerOptions("info", logs), logController: new RequestLog() });
    decorateRequestLog(server);
    try {
      const secret = "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0";
      expect((await server.inject({ method: "GET", url: `/bot123456789:${secret}/getMe` })).statusCode).toBe(
        404,
      );
      await new Promise((resolve) => setImmediate(resolve));
      expect(logs.text).not.toContain(secret);
      expect(logs.lines).toHaveLength(1);
    } finally {
      await server.close();
    }
  });
});

describe("the standalone sandbox's logs", () => {
  it("are one line per request, and a bot token in a path outside /sandbox is masked", async () => {
    const logs = new LogCapture();
    const server = await sandboxServer(loadConfig({ LOG_LEVEL: "info", PORT: "0" }), logs);
    try {
      // A service whose API root lacks "/sandbox" asks for /bot<token>/getMe.
      const secret = "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0";
      const response = await server.inject({ method: "GET", url: `/bot123456789:${secret}/getMe` });
      expect(response.statusCode).toBe(404);
      expect(response.json()).toEqual({ ok: false, error_code: 404, description: "Not Found" });
      await new Promise((resolve) => setImmediate(resolve));
      expect(logs.text).not.toContain(secret);
      expect(logs.lines.map((line) => JSON.parse(line))).toMatchObject([
        { msg: "request", url: "/bot<redacted>/getMe", status: 404 },
      ]);
    } finally {
      await server.close();
    }
  });

  it("mask its bot token however a client escapes it, in the path and in the query", async () => {
    const logs = new LogCapture();
    const server = await sandboxServer(loadConfig({ LOG_LEVEL: "info", PORT: "0" }), logs);
    try {
      const root = await server.listen({ port: 0, host: "127.0.0.1" });
      const [id, secret] = SANDBOX_BOT_TOKEN.split(":") as [string, string];
      /** Every character of `text` as a percent-escape, in lower case. */
      const escapedAll = (text: string) =>
        [...text].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, "0")}`).join("");
      const spellings: [string, string][] = [
        // The colon escaped is still the token to the sandbox: it answers getMe.
        [`/sandbox/bot${id}%3A${secret}/getMe`, "/sandbox/bot<redacted>/getMe"],
        [`/sandbox/bot${id}%3a${secret}/getMe`, "/sandbox/bot<redacted>/getMe"],
        [`/sandbox/bot${escapedAll(id)}%3A${escapedAll(secret)}/getMe`, "/sandbox/bot<redacted>/getMe"],
        [
          `/sandbox/bot${id}%3A${secret.slice(0, 3)}%2D${secret.slice(4)}/getMe`,
          "/sandbox/bot<redacted>/getMe",
        ],
        // Escaped twice: no route reads it, but the log line must not give it away either.
        [`/sandbox/bot${id}%253A${secret}/getMe`, "/sandbox/bot<redacted>/getMe"],
        [`/anywhere?bot=${id}%3A${secret}&x=1`, "/anywhere?bot=<redacted>&x=1"],
        [`/anywhere?chat=${id}:${secret}`, "/anywhere?chat=<redacted>"],
        [`/anywhere?t=${escapedAll(SANDBOX_BOT_TOKEN)}`, "/anywhere?t=<redacted>"],
      ];
      const statuses: number[] = [];
      for (const [path] of spellings) statuses.push((await fetch(`${root}${path}`)).status);
      expect(statuses.slice(0, 4)).toEqual([200, 200, 200, 200]);
      await waitFor("a line per request", async () => logs.lines.length >= spellings.length || undefined);
      const urls = logs.lines.map((line) => (JSON.parse(line) as { url?: string }).url).filter(Boolean);
      expect(urls).toEqual(spellings.map(([, masked]) => masked));
      // Nor in any other spelling: the whole log, every escape undone, holds no part of the secret.
      const decoded = decodeURIComponent(
        decodeURIComponent(logs.text.replaceAll(/%(?![0-9a-f]{2})/gi, "%25")),
      );
      expect(decoded).not.toContain(secret.slice(0, 12));
      expect(decoded).not.toContain(secret.slice(-12));
    } finally {
      await server.close();
    }
  });
});

describe("redaction", () => {
  it("blanks secret fields at the top of a line and inside the objects the service logs", () => {
    const capture = new LogCapture();
    // The service's own options (Fastify takes the stream among them; pino as its own argument).
    const { stream: _stream, ...options } = loggerOptions("info", capture) as LoggerOptions & {
      stream: unknown;
    };
    const log = pino(options, capture);
    const secret = "dnsk_thisMustNeverBeLogged0000000000000";
    log.info({ secret_key: secret, token: secret }, "top");
    for (const parent of ["body", "dock", "err", "error", "config", "options", "payload"]) {
      log.info(
        { [parent]: { secretKey: secret, secret_key: secret, token: secret, botToken: secret } },
        parent,
      );
    }
    log.info({ res: { headers: { "set-cookie": `session=${secret}` } } }, "response");
    expect(capture.text.split("\n").filter(Boolean)).toHaveLength(9);
    expect(capture.text).not.toContain(secret);
    expect(capture.text).toContain("[redacted]");
  });
});

describe("standard output", () => {
  /** Runs a script that logs through standardOutput() into a file, and returns the file's lines. */
  async function linesWritten(
    script: string,
    env: Record<string, string> = {},
  ): Promise<{ code: number | null; lines: string[] }> {
    const dir = mkdtempSync(join(tmpdir(), "dock-notify-log-"));
    const file = join(dir, "out.log");
    const child = spawn(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `import { openSync } from "node:fs";
         import pino from "pino";
         import { flushLogs, standardOutput } from ${JSON.stringify(pathToFileURL(join(import.meta.dirname, "../../src/runtime/log.ts")).href)};
         const log = pino({}, standardOutput(openSync(${JSON.stringify(file)}, "w")));
         ${script}`,
      ],
      {
        cwd: join(import.meta.dirname, "..", ".."),
        stdio: ["ignore", "ignore", "ignore"],
        env: { ...process.env, LOG_FILE: file, ...env },
      },
    );
    try {
      // A child that cannot exit is killed, and the test fails on its exit code, not on a timeout.
      const deadline = setTimeout(() => child.kill("SIGKILL"), 20_000);
      const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
      clearTimeout(deadline);
      const lines = readFileSync(file, "utf8").split("\n").filter(Boolean);
      return { code, lines };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it("is one destination per file descriptor, however many loggers use it", () => {
    const first = standardOutput(1);
    const hooks = process.listenerCount("exit");
    // A second logger (another app in the same process) adds no exit hook of its own.
    expect(standardOutput(1)).toBe(first);
    expect(process.listenerCount("exit")).toBe(hooks);
  });

  it("writes every line, in order, across turns of the event loop", async () => {
    const { code, lines } = await linesWritten(`
      for (let i = 0; i < 500; i++) log.info({ i }, "first turn");
      setTimeout(() => { for (let i = 500; i < 1000; i++) log.info({ i }, "later turn"); }, 20);`);
    expect(code).toBe(0);
    expect(lines.map((line) => (JSON.parse(line) as { i: number }).i)).toEqual(
      Array.from({ length: 1000 }, (_, i) => i),
    );
  });

  it("writes lines while the process runs, not only when it ends", async () => {
    // The script checks its own log file a while after logging, then says what it saw by its exit code.
    const { code } = await linesWritten(`
      log.info("while running");
      setTimeout(() => {
        const { readFileSync } = process.getBuiltinModule("node:fs");
        const seen = readFileSync(process.env.LOG_FILE, "utf8").includes("while running");
        process.exit(seen ? 0 : 7);
      }, 300);`);
    expect(code).toBe(0);
  });

  it("still writes the lines of the last turn when the process exits or crashes in it", async () => {
    const exited = await linesWritten(`log.info("before exit"); process.exit(3);`);
    expect(exited.code).toBe(3);
    expect(exited.lines.map((line) => JSON.parse(line).msg)).toEqual(["before exit"]);

    const crashed = await linesWritten(`log.fatal("about to crash"); throw new Error("boom");`);
    expect(crashed.code).toBe(1);
    expect(crashed.lines.map((line) => JSON.parse(line).msg)).toEqual(["about to crash"]);
  });

  it("flushLogs before a planned exit keeps the order while libuv's pool is slow to write", async ({
    onTestFinished,
  }) => {
    // The pool's one thread waits in open() on a FIFO until something opens it for writing, so the
    // first line's write waits there; the second line is still gathered when the process decides to
    // exit (as the service's "stopped" line is). The pool is freed 300 ms later, whatever the load:
    // a CPU-bound job there (pbkdf2) outlasted flushLogs' 2 s bound on a starved machine, which
    // tested the bound, not the order.
    const fifo = join(mkdtempSync(join(tmpdir(), "dock-notify-fifo-")), "pool");
    execFileSync("mkfifo", [fifo]);
    onTestFinished(() => rmSync(dirname(fifo), { recursive: true, force: true }));
    const { code, lines } = await linesWritten(
      `const fs = process.getBuiltinModule("node:fs");
       const fifo = process.env.POOL_FIFO;
       // Frees the pool: a writer opens the FIFO. Not on exit: a process that exits without
       // flushLogs must meet a pool still held, as it would on a starved machine (it then cannot
       // exit, and linesWritten kills it).
       const release = () => {
         try { fs.closeSync(fs.openSync(fifo, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK)); } catch {}
       };
       fs.open(fifo, "r", (error, fd) => { if (!error) fs.closeSync(fd); });
       log.info("first");
       setTimeout(async () => {
         // Not yet written: the test would prove nothing otherwise.
         if (fs.readFileSync(process.env.LOG_FILE, "utf8") !== "") {
           release();
           process.exit(9);
         }
         log.info("second");
         setTimeout(release, 300);
         await flushLogs();
         process.exit(3);
       }, 50);`,
      { UV_THREADPOOL_SIZE: "1", POOL_FIFO: fifo },
    );
    expect(code).toBe(3);
    expect(lines.map((line) => JSON.parse(line).msg)).toEqual(["first", "second"]);
  });
});
