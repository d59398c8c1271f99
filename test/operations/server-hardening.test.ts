import { once } from "node:events";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { SANDBOX_BOT_TOKEN } from "../../src/telegram/sandbox-bot.ts";
import { startChildService } from "../helpers/child-service.ts";
import { type RunningService, startService } from "../helpers/harness.ts";
import { type RunningSandbox, startSandbox } from "../helpers/sandbox-harness.ts";
import { waitFor } from "../helpers/wait.ts";

/** A raw connection to the service, with everything it receives and whether it was closed. */
async function rawConnection(
  url: string,
): Promise<{ socket: Socket; received: () => string; closed: () => boolean }> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  let received = "";
  let closed = false;
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => {
    received += chunk;
  });
  socket.on("error", () => {});
  socket.on("close", () => {
    closed = true;
  });
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  return { socket, received: () => received, closed: () => closed };
}

/** The status line, the headers (lower-case names) and the JSON body of a raw HTTP answer. */
function parseAnswer(raw: string): { status: number; headers: Record<string, string>; body: unknown } {
  const [head = "", body = ""] = raw.split("\r\n\r\n");
  const [statusLine = "", ...headerLines] = head.split("\r\n");
  const headers = Object.fromEntries(
    headerLines.map((line) => {
      const colon = line.indexOf(":");
      return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()];
    }),
  );
  return { status: Number(statusLine.split(" ")[1]), headers, body: body ? JSON.parse(body) : null };
}

describe("the HTTP server's limits", () => {
  let service: RunningService;
  beforeAll(async () => {
    service = await startService("sqlite", {
      REQUEST_TIMEOUT_SECONDS: "2",
      METRICS_TOKEN: "metrics-token-0123456789",
    });
  });
  afterAll(async () => service.close());

  it("a body trickled in byte by byte is cut off at REQUEST_TIMEOUT_SECONDS with a 408 in the error format", async () => {
    const connections = await Promise.all(Array.from({ length: 30 }, () => rawConnection(service.url)));
    for (const { socket } of connections) {
      socket.write(
        "POST /ping HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{",
      );
    }
    // One byte every half second, for as long as the connections stay open.
    const drip = setInterval(() => {
      for (const { socket, closed } of connections) if (!closed()) socket.write(" ");
    }, 500);
    try {
      await waitFor("every slow connection closed", () => connections.every((c) => c.closed()), 20_000, 100);
    } finally {
      clearInterval(drip);
    }
    for (const connection of connections) {
      const answer = parseAnswer(connection.received());
      expect(answer.status).toBe(408);
      expect(answer.body).toMatchObject({ ok: false, error: { code: "request_timeout" } });
      expect(answer.headers["x-content-type-options"]).toBe("nosniff");
    }
  });

  it("errors before any route (headers too large, a URL that does not decode) come in the error format", async () => {
    const big = await rawConnection(service.url);
    big.socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${"x".repeat(20_000)}\r\n\r\n`);
    await waitFor("the answer to the oversized headers", () => big.closed());
    const oversized = parseAnswer(big.received());
    expect(oversized.status).toBe(431);
    expect(oversized.body).toMatchObject({ ok: false, error: { code: "headers_too_large" } });
    expect(oversized.headers["content-security-policy"]).toBe("default-src 'none'; frame-ancestors 'none'");

    const response = await fetch(`${service.url}/%E0%A4%A`);
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ ok: false, error: { code: "invalid_request" } });
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
  });

  it("METRICS_TOKEN: /metrics answers only the bearer of the token", async () => {
    const metrics = (authorization?: string) =>
      fetch(`${service.url}/metrics`, { headers: authorization ? { authorization } : {} });
    const without = await metrics();
    expect(without.status).toBe(401);
    expect(without.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect(await without.json()).toMatchObject({ ok: false, error: { code: "metrics_token_required" } });
    expect((await metrics("Bearer not-the-token-at-all")).status).toBe(401);
    const right = await metrics("Bearer metrics-token-0123456789");
    expect(right.status).toBe(200);
    expect(await right.text()).toContain("dock_notify_messages_accepted_total");
    expect((await fetch(`${service.url}/healthz`)).status).toBe(200);
  });

  it("the API reference's index.html leads to /docs/, query or not (it used to redirect to itself)", async () => {
    const response = await fetch(`${service.url}/docs/static/index.html?url=x`, { redirect: "manual" });
    expect(response.status).toBe(302);
    expect(response.headers.get("location")).toBe("/docs/");
  });

  it("a sign-in link opened in the sandbox does not put its token in the log", async () => {
    const token = "SignInToken0123456789ab";
    expect((await fetch(`${service.url}/sandbox?start=login_${token}`)).status).toBe(200);
    await waitFor("the request's log line", () =>
      service.logs.text.includes("/sandbox?start=login_<redacted>"),
    );
    expect(service.logs.text).not.toContain(token);
  });
});

describe("MAX_CONNECTIONS", () => {
  let sandbox: RunningSandbox;
  let service: RunningService;
  beforeAll(async () => {
    // Telegram elsewhere: the service's own bot and dispatcher hold no connection to itself.
    sandbox = await startSandbox();
    service = await startService("sqlite", {
      MAX_CONNECTIONS: "10",
      TELEGRAM_BOT_TOKEN: SANDBOX_BOT_TOKEN,
      TELEGRAM_API_ROOT: sandbox.root,
    });
  });
  afterAll(async () => {
    await service.close();
    await sandbox.close();
  });

  it("refuses connections beyond it while the others are busy; one ending makes room", async () => {
    // Ten requests in progress (their bodies still on the way).
    const busy = await Promise.all(Array.from({ length: 10 }, () => rawConnection(service.url)));
    for (const { socket } of busy) {
      socket.write(
        "POST /ping HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{",
      );
    }
    const extra = await rawConnection(service.url);
    extra.socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    await waitFor("the extra connection closed unanswered", () => extra.closed());
    expect(extra.received()).toBe("");
    (busy[0] as { socket: Socket }).socket.destroy();
    await waitFor(
      "room again",
      async () => (await fetch(`${service.url}/healthz`).catch(() => null))?.status === 200,
    );
    for (const { socket } of busy) socket.destroy();
  });

  it("at the cap, kept-alive connections sitting idle are closed to make room", async () => {
    // Clients that made one request each and keep their connections open, doing nothing: as many
    // as fit (the first one refused shows the cap is reached).
    const idle: Awaited<ReturnType<typeof rawConnection>>[] = [];
    for (let i = 0; i < 15; i++) {
      const client = await rawConnection(service.url);
      client.socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
      await waitFor("an answer or a refusal", () => client.received().includes("200 OK") || client.closed());
      if (!client.received().includes("200 OK")) break;
      idle.push(client);
    }
    expect(idle.length).toBeLessThanOrEqual(10);
    // A newcomer gets in: the idle ones were closed to make room.
    await waitFor(
      "the newcomer answered",
      async () => (await fetch(`${service.url}/healthz`).catch(() => null))?.status === 200,
    );
    expect(idle.some((c) => c.closed())).toBe(true);
    for (const { socket } of idle) socket.destroy();
  });
});

describe("files on disk", () => {
  let root: string;
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it("the data folder is the service's alone (0700); the database, its WAL, the key and the sandbox file 0600", async () => {
    root = mkdtempSync(join(tmpdir(), "dock-notify-modes-"));
    const dataDir = join(root, "data");
    const { child, url } = await startChildService({ DATA_DIR: dataDir });
    try {
      await fetch(`${url}/sandbox/api/users`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ first_name: "Mo" }),
      });
      const mode = (file: string) => (statSync(join(dataDir, file)).mode & 0o777).toString(8);
      await waitFor("the sandbox's file written", () => {
        try {
          return mode("sandbox.json") !== undefined;
        } catch {
          return false;
        }
      });
      expect((statSync(dataDir).mode & 0o777).toString(8)).toBe("700");
      for (const file of [
        "dock-notify.db",
        "dock-notify.db-wal",
        "dock-notify.db-shm",
        "encryption.key",
        "sandbox.json",
      ]) {
        expect([file, mode(file)]).toEqual([file, "600"]);
      }
    } finally {
      child.kill("SIGTERM");
      await once(child, "exit");
    }
  });
});
