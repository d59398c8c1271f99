import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadEncryptionKey } from "../../src/runtime/encryption-key.ts";
import { DockRepository } from "../../src/store/docks.ts";
import { migrate, openDb } from "../../src/store/open.ts";
import { SubscriptionRepository } from "../../src/store/subscriptions.ts";
import { SANDBOX_BOT_TOKEN } from "../../src/telegram/sandbox-bot.ts";
import { startChildService } from "../helpers/child-service.ts";
import { basic } from "../helpers/harness.ts";
import { startSandbox } from "../helpers/sandbox-harness.ts";
import { waitFor } from "../helpers/wait.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON the service and sandbox answered.
type Json = any;

/**
 * The service as a child process (so it can be killed) over a SQLite file; Telegram played by a
 * sandbox in this process, with its flood limits on, which remembers what every chat shows.
 */
describe("edits across a crash", () => {
  it("SIGKILL during an edit storm, restart: every copy ends in its message's final form", async ({
    onTestFinished,
  }) => {
    const dataDir = mkdtempSync(join(tmpdir(), "dock-notify-edit-crash-"));
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
      name: "Storm",
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
    const start = async () => {
      const started = await startChildService({
        DATA_DIR: dataDir,
        TELEGRAM_BOT_TOKEN: SANDBOX_BOT_TOKEN,
        TELEGRAM_API_ROOT: sandbox.root,
        DOCK_RATE_BURST: "0",
        DELIVERY_CONCURRENCY: "16",
      });
      child = started.child;
      return started;
    };
    const call = async (url: string, method: string, path: string, body: unknown): Promise<Json> => {
      const response = await fetch(`${url}${path}`, {
        method,
        headers: { Authorization: basic(dock.id, dock.secretKey), "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      expect(response.status).toBe(202);
      return response.json();
    };
    const shown = async (chat: number): Promise<string[]> => {
      const { body } = await sandbox.control("GET", `/chats/${chat}/messages?limit=1000`);
      return (body as Json[])
        .filter((m) => m.from?.is_bot && m.text.startsWith("Storm\n"))
        .map((m) => m.text.slice("Storm\n".length));
    };

    const first = await start();
    const ids: string[] = [];
    for (const name of ["api", "web", "db"]) {
      ids.push((await call(first.url, "POST", "/webhook", { msg: `${name} r0`, key: name })).message_id);
    }
    await waitFor("30 copies sent", async () => {
      const all = await Promise.all(chats.map(shown));
      return all.every((texts) => texts.length === 3) ? true : undefined;
    });

    // The storm: ten rounds of edits to the three messages, as fast as the API takes them.
    for (let round = 1; round <= 10; round++) {
      for (const [i, id] of ids.entries()) {
        await call(first.url, "PATCH", `/messages/${id}`, { msg: `${["api", "web", "db"][i]} r${round}` });
      }
    }
    await waitFor("edits under way", async () => {
      const stats = (await sandbox.control("GET", "/stats")).body;
      return stats.edit_message >= 10 ? true : undefined;
    });
    first.child.kill("SIGKILL");
    await once(first.child, "exit");
    // The kill came mid-storm: edits were still to do (at a message a second per chat, ten chats'
    // three edits each take seconds).
    const dead = await openDb(dbUrl);
    try {
      const pending = await dead.kysely
        .selectFrom("deliveries")
        .select("id")
        .where("kind", "=", "edit")
        .where("state", "in", ["queued", "sending"])
        .execute();
      expect(pending.length).toBeGreaterThan(0);
    } finally {
      await dead.close();
    }

    await start();
    await waitFor(
      "every copy showing round 10",
      async () => {
        const all = await Promise.all(chats.map(shown));
        return all.every((texts) => [...texts].sort().join("|") === "api r10|db r10|web r10")
          ? true
          : undefined;
      },
      90_000,
      250,
    );
    // One copy per message in each chat (nothing sent twice), and nothing left to do.
    for (const chat of chats) expect(await shown(chat)).toHaveLength(3);
    const check = await openDb(dbUrl);
    try {
      const open = await check.kysely
        .selectFrom("deliveries")
        .select("id")
        .where("state", "in", ["queued", "sending"])
        .execute();
      expect(open).toEqual([]);
      const stale = await check.kysely
        .selectFrom("deliveries")
        .innerJoin("messages", "messages.id", "deliveries.message_id")
        .select("deliveries.id")
        .where("deliveries.kind", "=", "send")
        .whereRef("deliveries.revision", "<", "messages.revision")
        .execute();
      expect(stale).toEqual([]);
    } finally {
      await check.close();
    }
    expect((await sandbox.control("GET", "/stats")).body.too_many_requests).toBe(0);
  }, 150_000);
});
