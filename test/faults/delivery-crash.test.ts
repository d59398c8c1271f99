import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, type TestContext } from "vitest";
import { loadEncryptionKey } from "../../src/runtime/encryption-key.ts";
import { DockRepository } from "../../src/store/docks.ts";
import { migrate, openDb } from "../../src/store/open.ts";
import { SubscriptionRepository } from "../../src/store/subscriptions.ts";
import { SANDBOX_BOT_TOKEN } from "../../src/telegram/sandbox-bot.ts";
import { startChildService } from "../helpers/child-service.ts";
import { startSandbox } from "../helpers/sandbox-harness.ts";
import { waitFor } from "../helpers/wait.ts";

const CONCURRENCY = 16;

/**
 * The service as a child process (so it can be killed), Telegram played by a sandbox in this
 * process (so it survives the kill and remembers what each chat received).
 */
// Each test has a sandbox, a database and a service of its own, but one at a time: side by side on
// a loaded machine they only slow each other down. (One test's work holding the other's sandbox up
// used to be seen as a 429 once in five runs; the pacer now holds each place until a window after
// its answer, which no delay can defeat: pacer.ts.)
describe("delivery across crashes", () => {
  /**
   * A Dock with 10 subscribers who opened the bot, in a fresh data folder, and the service to
   * start (and kill) over it; all of it gone when the test ends.
   */
  async function scene(onTestFinished: TestContext["onTestFinished"]) {
    const dataDir = mkdtempSync(join(tmpdir(), "dock-notify-crash-"));
    const sandbox = await startSandbox({ rateLimits: true });
    let child: ChildProcess | undefined;
    onTestFinished(async () => {
      child?.kill("SIGKILL");
      await sandbox.close();
      rmSync(dataDir, { recursive: true, force: true });
    });
    const dbUrl = `sqlite:${join(dataDir, "dock-notify.db")}`;
    const db = await openDb(dbUrl);
    await migrate(db);
    const dock = await new DockRepository(db, loadEncryptionKey(null, dataDir).key).create(1, {
      name: "Crash",
      link: null,
      description: null,
    });
    const subscriptions = new SubscriptionRepository(db);
    const chats: number[] = [];
    for (let i = 0; i < 10; i++) {
      const chat = await sandbox.startedPerson(`Reader ${i}`);
      chats.push(chat);
      await subscriptions.subscribe(dock.id, chat, "private");
    }
    await db.close();

    return {
      sandbox,
      chats,
      async startChild(): Promise<{ child: ChildProcess; url: string }> {
        const started = await startChildService({
          DATA_DIR: dataDir,
          TELEGRAM_BOT_TOKEN: SANDBOX_BOT_TOKEN,
          TELEGRAM_API_ROOT: sandbox.root,
          DOCK_RATE_BURST: "0",
          DELIVERY_CONCURRENCY: String(CONCURRENCY),
        });
        child = started.child;
        return started;
      },

      async send(url: string, count: number): Promise<void> {
        for (let n = 1; n <= count; n++) {
          const response = await fetch(`${url}/ping`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ dock_id: dock.id, secret_key: dock.secretKey, msg: `n${n}` }),
          });
          expect(response.status).toBe(202);
        }
      },

      async states(): Promise<Record<string, number>> {
        const db = await openDb(dbUrl);
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
      },

      async received(chat: number): Promise<string[]> {
        const { body } = await sandbox.control("GET", `/chats/${chat}/messages?limit=1000`);
        return (
          (body as { from?: { is_bot: boolean }; text: string }[])
            // Notifications only: the bot also answers each person's /start.
            .filter((m) => m.from?.is_bot && m.text.startsWith("Crash\n"))
            .map((m) => m.text.split("\n")[1] as string)
        );
      },
    };
  }

  it("SIGKILL mid-stream, restart: every accepted message delivered, duplicates only from sends in flight", async ({
    onTestFinished,
  }) => {
    const { sandbox, chats, startChild, send, states, received } = await scene(onTestFinished);
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

  it("SIGTERM lets the sends in flight finish before exiting; a restart delivers the rest", async ({
    onTestFinished,
  }) => {
    const { sandbox, chats, startChild, send, states, received } = await scene(onTestFinished);
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
