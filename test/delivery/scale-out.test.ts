import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SANDBOX_BOT_TOKEN } from "../../src/telegram/sandbox-bot.ts";
import { freePort } from "../helpers/browser.ts";
import {
  createTestDatabase,
  hasPostgres,
  type RunningService,
  startServiceOver,
  type TestDatabase,
} from "../helpers/harness.ts";
import { type RunningSandbox, startSandbox } from "../helpers/sandbox-harness.ts";
import { waitFor } from "../helpers/wait.ts";

const POSTGRES = await hasPostgres();

/**
 * Several instances on one PostgreSQL database and one Telegram (the sandbox, limits on): any
 * instance accepts messages, exactly one dispatches them, and another takes over when it stops.
 */
describe.skipIf(!POSTGRES)("several instances on PostgreSQL", () => {
  let database: TestDatabase;
  let sandbox: RunningSandbox;
  const instances: RunningService[] = [];
  const key = randomBytes(32);

  beforeAll(async () => {
    database = await createTestDatabase("postgres", { migrated: true });
    sandbox = await startSandbox({ rateLimits: true });
    // Webhook mode is how several instances share the bot: one URL in front of them all (a load
    // balancer; here the first instance's address). Polling instances would take turns ending each
    // other's polls with 409 Conflict.
    const port = await freePort();
    const env = {
      TELEGRAM_BOT_TOKEN: SANDBOX_BOT_TOKEN,
      TELEGRAM_API_ROOT: sandbox.root,
      TELEGRAM_WEBHOOK_URL: `http://127.0.0.1:${port}/telegram/webhook`,
      DOCK_RATE_BURST: "0",
    };
    for (let i = 0; i < 3; i++) {
      instances.push(await startServiceOver(database, i === 0 ? { ...env, PORT: String(port) } : env, key));
    }
  });
  afterAll(async () => {
    for (const instance of instances) await instance.close();
    await sandbox.close();
    await database.drop();
  });

  const leaders = () =>
    instances.filter((i) => i.logs.text.includes("this instance is now the active dispatcher"));

  it("one active dispatcher; messages accepted by any instance arrive once each, without a 429", async () => {
    await waitFor("a leader", () => leaders().length === 1);
    const first = instances[0] as RunningService;
    const dock = await first.app.docks.create(1, { name: "Fleet", link: null, description: null });
    const chats: number[] = [];
    for (let i = 0; i < 6; i++) {
      const chat = await sandbox.startedPerson(`Reader ${i}`);
      chats.push(chat);
      await first.subscriptions.subscribe(dock.id, chat, "private");
    }
    await sandbox.control("DELETE", "/stats");
    for (let n = 1; n <= 9; n++) {
      const instance = instances[n % 3] as RunningService;
      const response = await fetch(`${instance.url}/ping`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ dock_id: dock.id, secret_key: dock.secretKey, msg: `n${n}` }),
      });
      expect(response.status).toBe(202);
    }
    const notifications = async (chat: number) =>
      ((await sandbox.control("GET", `/chats/${chat}/messages?limit=1000`)).body as { text: string }[])
        .filter((m) => m.text.startsWith("Fleet\n"))
        .map((m) => m.text.slice("Fleet\n".length));
    await waitFor(
      "54 deliveries",
      async () => (await Promise.all(chats.map(notifications))).flat().length === 54,
      60_000,
      200,
    );
    for (const chat of chats)
      expect(await notifications(chat)).toEqual(["n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9"]);
    expect(leaders()).toHaveLength(1);
    const stats = await sandbox.control("GET", "/stats");
    expect(stats.body.too_many_requests).toBe(0);
  }, 90_000);

  it("when the active dispatcher stops, another instance takes over", async () => {
    const leader = leaders()[0] as RunningService;
    await leader.close();
    instances.splice(instances.indexOf(leader), 1);
    await waitFor("a new leader", () => leaders().length === 1, 20_000, 100);
    const survivor = instances[0] as RunningService;
    const dock = await survivor.app.docks.create(2, { name: "After", link: null, description: null });
    const chat = await sandbox.startedPerson("Late reader");
    await survivor.subscriptions.subscribe(dock.id, chat, "private");
    await fetch(`${survivor.url}/ping`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ dock_id: dock.id, secret_key: dock.secretKey, msg: "still here" }),
    });
    await waitFor("delivered by the new leader", async () =>
      ((await sandbox.control("GET", `/chats/${chat}/messages`)).body as { text: string }[]).some(
        (m) => m.text === "After\nstill here",
      ),
    );
  }, 60_000);
});

describe.skipIf(!POSTGRES)("a Dock's rate limit across instances on PostgreSQL", () => {
  let database: TestDatabase;
  const instances: RunningService[] = [];

  beforeAll(async () => {
    database = await createTestDatabase("postgres", { migrated: true });
    const key = randomBytes(32);
    // A burst of 3, then one message every 100 s: nothing refills during the test.
    const env = { DOCK_RATE_BURST: "3", DOCK_RATE_PER_SECOND: "0.01" };
    for (let i = 0; i < 2; i++) instances.push(await startServiceOver(database, env, key));
  });
  afterAll(async () => {
    for (const instance of instances) await instance.close();
    await database.drop();
  });

  it("holds for the Dock as a whole, whichever instance each request reaches", async () => {
    const dock = await (instances[0] as RunningService).app.docks.create(1, {
      name: "Limited",
      link: null,
      description: null,
    });
    const answers: { status: number; retryAfter: string | null; code?: string }[] = [];
    for (let n = 0; n < 6; n++) {
      const response = await fetch(`${(instances[n % 2] as RunningService).url}/ping`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ dock_id: dock.id, secret_key: dock.secretKey, msg: `n${n}` }),
      });
      const body = (await response.json()) as { error?: { code: string } };
      answers.push({
        status: response.status,
        retryAfter: response.headers.get("retry-after"),
        ...(body.error ? { code: body.error.code } : {}),
      });
    }
    expect(answers.map((a) => a.status)).toEqual([202, 202, 202, 429, 429, 429]);
    for (const refused of answers.slice(3)) {
      expect(refused.code).toBe("rate_limited");
      expect(Number(refused.retryAfter)).toBeGreaterThan(0);
      expect(Number(refused.retryAfter)).toBeLessThanOrEqual(100);
    }
  }, 60_000);
});
