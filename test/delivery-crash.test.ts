import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadEncryptionKey } from "../src/encryption-key.ts";
import { SANDBOX_BOT_TOKEN } from "../src/sandbox/identity.ts";
import { migrate, openDb } from "../src/store/db.ts";
import { DockRepository, type DockWithSecret } from "../src/store/docks.ts";
import { SubscriptionRepository } from "../src/store/subscriptions.ts";
import { startChildService } from "./child-service.ts";
import { type RunningSandbox, startSandbox } from "./sandbox-harness.ts";
import { waitFor } from "./wait.ts";

const CONCURRENCY = 16;

/**
 * The service as a child process (so it can be killed), Telegram played by a sandbox in this
 * process (so it survives the kill and remembers what each chat received).
 */
describe("delivery across crashes", () => {
  let dataDir: string;
  let sandbox: RunningSandbox;
  let child: ChildProcess | undefined;
  let dock: DockWithSecret;
  let chats: number[];
  const dbUrl = () => `sqlite:${join(dataDir, "dock-notify.db")}`;

  beforeEach(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "dock-notify-crash-"));
    sandbox = await startSandbox({ rateLimits: true });
    const db = openDb(dbUrl());
    await migrate(db);
    dock = await new DockRepository(db, loadEncryptionKey(null, dataDir).key).create(1, {
      name: "Crash",
      link: null,
      description: null,
    });
    const subscriptions = new SubscriptionRepository(db);
    chats = [];
    for (let i = 0; i < 10; i++) {
      const chat = await sandbox.startedPerson(`Reader ${i}`);
      chats.push(chat);
      await subscriptions.subscribe(dock.id, chat, "private");
    }
    await db.close();
  });
  afterEach(async () => {
    child?.kill("SIGKILL");
    await sandbox.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function startChild(): Promise<{ child: ChildProcess; url: string }> {
    const started = await startChildService({
      DATA_DIR: dataDir,
      TELEGRAM_BOT_TOKEN: SANDBOX_BOT_TOKEN,
      TELEGRAM_API_ROOT: sandbox.root,
      DOCK_RATE_BURST: "0",
      DELIVERY_CONCURRENCY: String(CONCURRENCY),
    });
    child = started.child;
    return started;
  }

  async function send(url: string, count: number): Promise<void> {
    for (let n = 1; n <= count; n++) {
      const response = await fetch(`${url}/ping`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ dock_id: dock.id, secret_key: dock.secretKey, msg: `n${n}` }),
      });
      expect(response.status).toBe(202);
    }
  }

  async function states(): Promise<Record<string, number>> {
    const db = openDb(dbUrl());
    try {
      const rows = await db.kysely
        .selectFrom("deliveries")
        .select(["state", (eb) => eb.fn.countAll<number>().as("n")])
        .groupBy("state")
        .execute();
      return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
    } finally {
      await db.close();
    }
  }

  async function received(chat: number): Promise<string[]> {
    const { body } = await sandbox.control("GET", `/chats/${chat}/messages?limit=1000`);
    return (
      (body as { from?: { is_bot: boolean }; text: string }[])
        // Notifications only: the bot also answers each person's /start.
        .filter((m) => m.from?.is_bot && m.text.startsWith("Crash\n"))
        .map((m) => m.text.split("\n")[1] as string)
    );
  }

  it("SIGKILL mid-stream, restart: every accepted message delivered, duplicates only from sends in flight", async () => {
    const first = await startChild();
    await send(first.url, 12); // 120 deliveries; at 1 message/s per chat this takes over 10 s
    await waitFor(
      "some deliveries made",
      async () => (await sandbox.control("GET", "/stats")).body.send_message >= 40,
    );
    first.child.kill("SIGKILL");
    await once(first.child, "exit");

    await startChild();
    await waitFor("all 120 delivered", async () => (await states()).sent === 120, 60_000, 250);

    let duplicates = 0;
    for (const chat of chats) {
      const texts = await received(chat);
      const firstSeen = texts.filter((t, i) => texts.indexOf(t) === i);
      expect(firstSeen).toEqual(Array.from({ length: 12 }, (_, i) => `n${i + 1}`));
      duplicates += texts.length - firstSeen.length;
    }
    expect(duplicates).toBeLessThanOrEqual(CONCURRENCY);
    expect((await sandbox.control("GET", "/stats")).body.too_many_requests).toBe(0);
  }, 90_000);

  it("SIGTERM lets the sends in flight finish before exiting; a restart delivers the rest", async () => {
    const first = await startChild();
    await send(first.url, 6);
    await waitFor(
      "some deliveries made",
      async () => (await sandbox.control("GET", "/stats")).body.send_message >= 15,
    );
    first.child.kill("SIGTERM");
    const [code] = await once(first.child, "exit");
    expect(code).toBe(0);
    const afterStop = await states();
    expect(afterStop.sending ?? 0).toBe(0);
    expect(afterStop.queued ?? 0).toBeGreaterThan(0);

    await startChild();
    await waitFor("all 60 delivered", async () => (await states()).sent === 60, 60_000, 250);
    for (const chat of chats) expect(await received(chat)).toEqual(["n1", "n2", "n3", "n4", "n5", "n6"]);
  }, 90_000);
});
