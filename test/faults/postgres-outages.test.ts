import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { describe, expect, it } from "vitest";
import type { DockWithSecret } from "../../src/store/docks.ts";
import { openDb } from "../../src/store/open.ts";
import { freePort } from "../helpers/browser.ts";
import { startChildService } from "../helpers/child-service.ts";
import { sandboxOf } from "../helpers/delivery-harness.ts";
import {
  admin,
  childEnv,
  faultResources,
  seedDock,
  sendUntilStored,
  terminateAll,
} from "../helpers/fault-harness.ts";
import { hasPostgres, type RunningService } from "../helpers/harness.ts";
import type { RunningSandbox } from "../helpers/sandbox-harness.ts";
import { waitFor } from "../helpers/wait.ts";

const POSTGRES = await hasPostgres();

/** Notifications a chat received from a Dock, oldest first, as the sandbox has them. */
async function received(sandbox: RunningSandbox, chat: number, dock: string): Promise<string[]> {
  const { body } = await sandbox.control("GET", `/chats/${chat}/messages?limit=1000`);
  return (body as { from?: { is_bot: boolean }; text: string }[])
    .filter((m) => m.from?.is_bot && m.text.startsWith(`${dock}\n`))
    .map((m) => m.text.slice(dock.length + 1));
}

/**
 * PostgreSQL failing under the service, on the real server, each test on its own database: its
 * backends terminated under load (a failover, an administrator), a server that stops answering (a
 * TCP proxy the test controls), the leader killed with sends in flight. The service stays up,
 * answers a prompt 503 while the database is gone, recovers by itself, loses nothing it
 * acknowledged, and keeps each chat's order.
 */
// Each test has a database, a sandbox and services of its own, and spends most of its time waiting
// for the outage's consequences: they run side by side.
describe.skipIf(!POSTGRES)("PostgreSQL outages", { concurrent: true }, () => {
  const ping = (url: string, dock: DockWithSecret, msg: string, key?: string) =>
    fetch(`${url}/ping`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(key ? { "idempotency-key": key } : {}) },
      body: JSON.stringify({ dock_id: dock.id, secret_key: dock.secretKey, msg }),
      signal: AbortSignal.timeout(30_000),
    });
  it("backends terminated under load: the process stays up, 503 while down, 202 after, nothing acknowledged lost, each chat's order kept", async ({
    onTestFinished,
  }) => {
    const own = faultResources(onTestFinished);
    const database = await own.database();
    const name = new URL(database.url).pathname.slice(1);
    const sandbox = await own.sandbox();
    const key = randomBytes(32);
    const load = await seedDock(database.url, key, sandbox, "Load", 0);
    const ordered = await seedDock(database.url, key, sandbox, "Ordered", 5);
    const started = await startChildService(
      childEnv(database, key, sandbox, { AUTH_FAILURES_PER_MINUTE: "0", DATABASE_TIMEOUT_SECONDS: "2" }),
    );
    const child = started.child;
    own.child(child);

    // 100 requests a second from 4 senders to a Dock without subscribers, for as long as the test runs.
    const acknowledged: string[] = [];
    const statuses = new Map<number, number>();
    let retryAfterMissing = 0;
    let loading = true;
    const sender = async (id: number) => {
      for (let n = 0; loading; n++) {
        const startedAt = Date.now();
        try {
          const response = await ping(started.url, load.dock, `load ${id}.${n}`);
          statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
          if (response.status === 202) {
            acknowledged.push(((await response.json()) as { message_id: string }).message_id);
          } else {
            if (response.status === 503 && !response.headers.get("retry-after")) retryAfterMissing++;
            await response.arrayBuffer();
          }
        } catch {
          statuses.set(0, (statuses.get(0) ?? 0) + 1); // no answer at all: the process is gone
        }
        await new Promise((r) => setTimeout(r, Math.max(0, 40 - (Date.now() - startedAt))));
      }
    };
    const senders = [0, 1, 2, 3].map(sender);

    // Meanwhile 12 messages to 5 people, one at a time, each sent again (same Idempotency-Key)
    // until it is accepted: their order is the order they must arrive in.
    const orderedSends = (async () => {
      for (let n = 1; n <= 12; n++) {
        await waitFor(
          `message ${n} accepted`,
          async () => {
            const response = await ping(started.url, ordered.dock, `n${n}`, `ordered-${n}`).catch(() => null);
            return response?.status === 202;
          },
          60_000,
          100,
        );
      }
    })();

    await waitFor("load accepted", () => acknowledged.length >= 100);
    // A failover: every backend terminated, again and again, then the database closed to
    // connections for a while, then open again.
    for (let i = 0; i < 8; i++) {
      await admin(terminateAll(name));
      await new Promise((r) => setTimeout(r, 250));
    }
    const refusedBefore = statuses.get(503) ?? 0;
    await admin(`alter database ${name} allow_connections false`, terminateAll(name));
    await waitFor(
      "503s while the database is closed",
      () => (statuses.get(503) ?? 0) >= refusedBefore + 5,
      20_000,
    );
    await admin(`alter database ${name} allow_connections true`);
    const before = acknowledged.length;
    await waitFor("202s again without a restart", () => acknowledged.length >= before + 100, 30_000);
    await orderedSends;
    loading = false;
    await Promise.all(senders);

    expect(child.exitCode).toBeNull();
    expect(child.signalCode).toBeNull();
    expect([...statuses.keys()].sort()).toEqual([202, 503]);
    expect(retryAfterMissing).toBe(0);

    const check = await openDb(database.url);
    try {
      const stored = new Set(
        (await check.kysely.selectFrom("messages").select("id").execute()).map((row) => row.id),
      );
      expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
    } finally {
      await check.close();
    }
    // The dispatcher came back by itself (its lock's session was terminated too) and kept each chat's order.
    const expected = Array.from({ length: 12 }, (_, i) => `n${i + 1}`);
    await waitFor(
      "every ordered message delivered",
      async () => {
        for (const chat of ordered.chats) {
          const texts = await received(sandbox as RunningSandbox, chat, "Ordered");
          if (new Set(texts).size < 12) return false;
        }
        return true;
      },
      60_000,
      250,
    );
    for (const chat of ordered.chats) {
      const texts = await received(sandbox, chat, "Ordered");
      expect(texts.filter((t, i) => texts.indexOf(t) === i)).toEqual(expected);
    }
    expect((await sandbox.control("GET", "/stats")).body.too_many_requests).toBe(0);
  }, 150_000);

  it("a database that stops answering: 503 within DATABASE_TIMEOUT_SECONDS, /readyz 503, 202 again once it answers", async ({
    onTestFinished,
  }) => {
    const own = faultResources(onTestFinished);
    const database = await own.database();
    const proxy = await own.proxy(Number(new URL(database.url).port || 5432));
    const through = new URL(database.url);
    through.port = String(proxy.port);
    const running = await own.service(
      { ...database, url: through.toString() },
      { DATABASE_TIMEOUT_SECONDS: "2", DOCK_RATE_BURST: "0" },
    );
    const dock = await running.app.docks.create(1, { name: "Silent", link: null, description: null });
    const reader = await sandboxOf(running).person("Sol");
    await running.subscriptions.subscribe(dock.id, reader, "private");
    expect(await sendUntilStored(running.url, dock, "before")).toEqual({ status: 202 });

    proxy.silence();
    const timed = async (request: () => Promise<Response>) => {
      const startedAt = performance.now();
      const response = await request();
      return { response, seconds: (performance.now() - startedAt) / 1000 };
    };
    // The bound is 2 s to connect or to wait for a connection, and 3 s for a statement's answer (a
    // request may meet both); without it these requests hang for as long as the database is silent
    // (here: until restored).
    const refused = await timed(() => ping(running.url, dock, "during"));
    expect(refused.response.status).toBe(503);
    expect(refused.response.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(await refused.response.json()).toMatchObject({ error: { code: "database_unavailable" } });
    expect(refused.seconds).toBeLessThan(15);
    const readyz = await timed(() => fetch(`${running.url}/readyz`, { signal: AbortSignal.timeout(30_000) }));
    expect(readyz.response.status).toBe(503);
    expect(await readyz.response.json()).toMatchObject({
      error: { code: "not_ready" },
      checks: { database: "unreachable" },
    });
    expect(readyz.seconds).toBeLessThan(15);
    // Several at once: each gets its answer within the bound, none waits for the others' timeouts.
    const burst = await Promise.all(
      Array.from({ length: 20 }, (_, i) => timed(() => ping(running.url, dock, `burst ${i}`))),
    );
    expect(burst.map((b) => b.response.status)).toEqual(Array(20).fill(503));
    expect(Math.max(...burst.map((b) => b.seconds))).toBeLessThan(15);
    // Someone asks the bot meanwhile: told to try again (not left unanswered), logged as a warning.
    await sandboxOf(running).control("POST", `/chats/${reader}/messages`, { text: "/list" });
    await waitFor(
      "the bot saying it cannot answer now",
      async () =>
        (await chatTexts(running, reader)).some((text) =>
          text.startsWith("Sorry, I cannot answer right now"),
        ),
      30_000,
      250,
    );
    expect(running.logs.text).toContain("bot update failed: the database is away");

    proxy.restore();
    await waitFor(
      "sends accepted again",
      async () => (await ping(running.url, dock, "after")).status === 202,
      30_000,
      250,
    );
    // The dispatcher lost its lock's session and took it back: deliveries flow again.
    await waitFor(
      "the message after the outage delivered",
      async () => (await chatTexts(running, reader)).includes("Silent\nafter"),
      45_000,
      250,
    );
    expect(running.logs.lines.filter((line) => JSON.parse(line).level >= 50)).toEqual([]);
  }, 120_000);

  it("the database gone while sends are in flight: their outcomes are recorded once it is back; nothing overtakes them, nothing goes twice", async ({
    onTestFinished,
  }) => {
    const own = faultResources(onTestFinished);
    const database = await own.database();
    const name = new URL(database.url).pathname.slice(1);
    const running = await own.service(database, {
      DOCK_RATE_BURST: "0",
      DATABASE_TIMEOUT_SECONDS: "2",
      // Were an outcome given up on, its row would wait this long, and later messages would go first.
      DELIVERY_LEASE_SECONDS: "20",
    });
    const { control } = sandboxOf(running);
    const dock = await running.app.docks.create(1, { name: "Inflight", link: null, description: null });
    const chats: number[] = [];
    for (let i = 0; i < 5; i++) {
      const chat = await sandboxOf(running).person(`Reader ${i}`);
      chats.push(chat);
      await running.subscriptions.subscribe(dock.id, chat, "private");
    }
    // Telegram is slow: each send is held for 3 s, then carried out.
    await control("POST", "/faults", { kind: "slow", methods: ["sendMessage"], rate: 1, hang_seconds: 3 });
    const calls = async () => ((await control("GET", "/stats")).calls.sendmessage as number) ?? 0;
    const before = await calls();
    for (let n = 1; n <= 6; n++)
      expect(await sendUntilStored(running.url, dock, `n${n}`)).toEqual({ status: 202 });
    await waitFor("a send in flight to every reader", async () => (await calls()) >= before + 5);
    // While they are held, the database goes away; the sends land, their outcomes cannot be written.
    await admin(`alter database ${name} allow_connections false`, terminateAll(name));
    await waitFor(
      "the held sends carried out",
      async () => {
        const received = await Promise.all(chats.map((chat) => chatTexts(running, chat)));
        return received.every((texts) => texts.includes("Inflight\nn1"));
      },
      20_000,
    );
    await control("DELETE", "/faults");
    await admin(`alter database ${name} allow_connections true`);

    const expected = Array.from({ length: 6 }, (_, i) => `Inflight\nn${i + 1}`);
    await waitFor(
      "every message delivered",
      async () => {
        for (const chat of chats) {
          const texts = (await chatTexts(running, chat)).filter((t) => t.startsWith("Inflight\n"));
          if (new Set(texts).size < 6) return false;
        }
        return true;
      },
      60_000,
      250,
    );
    for (const chat of chats) {
      expect((await chatTexts(running, chat)).filter((t) => t.startsWith("Inflight\n"))).toEqual(expected);
    }
    expect(running.logs.text).toContain("delivery outcome recorded after all");
    expect(running.logs.lines.filter((line) => JSON.parse(line).level >= 50)).toEqual([]);
  }, 120_000);

  it("the leader killed with sends in flight: the standby takes over at once and keeps each chat's order", async ({
    onTestFinished,
  }) => {
    const own = faultResources(onTestFinished);
    const database = await own.database();
    const sandbox = await own.sandbox();
    const key = randomBytes(32);
    const { dock, chats } = await seedDock(database.url, key, sandbox, "Fleet", 10);
    // Both share the bot through one webhook URL (the standby's address, as a load balancer would
    // be): polling instances would end each other's polls.
    const port = await freePort();
    const env = childEnv(database, key, sandbox, {
      TELEGRAM_WEBHOOK_URL: `http://127.0.0.1:${port}/telegram/webhook`,
      // Long enough that waiting for the killed leader's leases would show as out-of-order arrivals.
      DELIVERY_LEASE_SECONDS: "30",
      // The bound on what goes out twice below: the sends the leader may have in flight.
      DELIVERY_CONCURRENCY: "16",
    });
    // The first to start takes the lock (its start waits for the first campaign); the second stands by.
    const leader = await startChildService(env);
    own.child(leader.child);
    const standby = await startChildService({ ...env, PORT: String(port) });
    own.child(standby.child);
    for (let n = 1; n <= 12; n++) expect((await ping(standby.url, dock, `n${n}`)).status).toBe(202);
    const stats = async () => (await sandbox.control("GET", "/stats")).body;
    await waitFor("some deliveries made", async () => (await stats()).send_message >= 30);
    // Telegram stops answering: the leader's next sends hang, claimed (`sending`) in the database…
    const calls = (await stats()).calls.sendmessage as number;
    await sandbox.control("POST", "/faults", {
      kind: "timeout",
      methods: ["sendMessage"],
      rate: 1,
      hang_seconds: 20,
    });
    await waitFor("sends hanging in flight", async () => (await stats()).calls.sendmessage >= calls + 5);
    // …when it dies. Telegram answers again at once; the hung sends never reached a chat.
    leader.child.kill("SIGKILL");
    await once(leader.child, "exit");
    await sandbox.control("DELETE", "/faults");

    const expected = Array.from({ length: 12 }, (_, i) => `n${i + 1}`);
    await waitFor(
      "all 120 delivered by the standby",
      async () => {
        for (const chat of chats) {
          if (new Set(await received(sandbox as RunningSandbox, chat, "Fleet")).size < 12) return false;
        }
        return true;
      },
      60_000,
      250,
    );
    let duplicates = 0;
    for (const chat of chats) {
      const texts = await received(sandbox, chat, "Fleet");
      expect(texts.filter((t, i) => texts.indexOf(t) === i)).toEqual(expected);
      duplicates += texts.length - 12;
    }
    // At most the sends the leader had in flight (DELIVERY_CONCURRENCY).
    expect(duplicates).toBeLessThanOrEqual(16);
    expect((await stats()).too_many_requests).toBe(0);
  }, 120_000);
});

/** The texts of a chat of the service's built-in sandbox, both sides, oldest first. */
async function chatTexts(service: RunningService, chat: number): Promise<string[]> {
  return (
    (await sandboxOf(service).control("GET", `/chats/${chat}/messages?limit=100`)) as { text: string }[]
  ).map((m) => m.text);
}
