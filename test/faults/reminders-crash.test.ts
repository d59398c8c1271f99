import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import { describe, expect, it } from "vitest";
import { loadEncryptionKey } from "../../src/runtime/encryption-key.ts";
import { DockRepository } from "../../src/store/docks.ts";
import { openDb } from "../../src/store/open.ts";
import { SubscriptionRepository } from "../../src/store/subscriptions.ts";
import { SANDBOX_BOT_TOKEN } from "../../src/telegram/sandbox-bot.ts";
import { startChildService } from "../helpers/child-service.ts";
import { basic, createTestDatabase, dialects } from "../helpers/harness.ts";
import { startSandbox } from "../helpers/sandbox-harness.ts";
import { waitFor } from "../helpers/wait.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON the service and sandbox answered.
type Json = any;

const DIALECTS = await dialects();

/**
 * The service as a child process killed with SIGKILL between two rounds of reminders, then started
 * again: the next round comes once, on time, and each chat keeps one reminder. Real time (30 s a
 * round, the shortest allowed): the child's clock cannot be moved.
 */
describe.each(DIALECTS)("reminders across a crash on %s", (dialect) => {
  it("kill -9 between rounds neither loses nor repeats a round", { timeout: 180_000 }, async ({
    onTestFinished,
  }) => {
    const database = await createTestDatabase(dialect, { migrated: true });
    const sandbox = await startSandbox({ rateLimits: true });
    let child: ChildProcess | undefined;
    onTestFinished(async () => {
      child?.kill("SIGKILL");
      await sandbox.close();
      await database.drop();
    });
    const setup = await openDb(database.url);
    const dock = await new DockRepository(setup, loadEncryptionKey(null, database.dataDir).key).create(1, {
      name: "Pager",
      link: null,
      description: null,
    });
    const subscriptions = new SubscriptionRepository(setup);
    const chats: number[] = [];
    for (const name of ["Ada", "Bo", "Cy"]) {
      const chat = await sandbox.startedPerson(name);
      chats.push(chat);
      await subscriptions.subscribe(dock.id, chat, "private");
    }
    await setup.close();
    const start = async () => {
      const started = await startChildService({
        DATABASE_URL: database.url,
        DATA_DIR: database.dataDir,
        TELEGRAM_BOT_TOKEN: SANDBOX_BOT_TOKEN,
        TELEGRAM_API_ROOT: sandbox.root,
        DOCK_RATE_BURST: "0",
      });
      child = started.child;
      return started;
    };
    const fromBot = async (chat: number): Promise<Json[]> => {
      const { body } = await sandbox.control("GET", `/chats/${chat}/messages?limit=1000`);
      return (body as Json[]).filter((m) => m.from?.is_bot);
    };
    /** Each chat's reminders as it shows them now. */
    const reminders = async () =>
      Promise.all(
        chats.map(async (chat) =>
          (await fromBot(chat)).filter((m) => m.text.startsWith("⏰ Still unacknowledged")),
        ),
      );
    const roundShown = (round: number) =>
      waitFor(
        `round ${round} in every chat, alone`,
        async () => {
          const shown = await reminders();
          return shown.every(
            (list) =>
              list.length === 1 && list[0].text === `⏰ Still unacknowledged (${round}): Database down`,
          )
            ? shown
            : undefined;
        },
        90_000,
        250,
      );

    const first = await start();
    const response = await fetch(`${first.url}/webhook`, {
      method: "POST",
      headers: { Authorization: basic(dock.id, dock.secretKey), "Content-Type": "application/json" },
      body: JSON.stringify({
        msg: "primary unreachable",
        title: "Database down",
        priority: "urgent",
        ack: { remind_every: 30, remind_for: 600 },
      }),
    });
    expect(response.status).toBe(202);
    const { message_id: id } = (await response.json()) as Json;
    await roundShown(1);
    // Between rounds: round 1 on record too (a kill after Telegram's answer and before the record
    // leaves a copy nobody knows of, sent again after the lease: at least once, by design).
    const recorded = await openDb(database.url);
    try {
      await waitFor("round 1 on record", async () => {
        const sent = await recorded.kysely
          .selectFrom("reminders")
          .select("id")
          .where("message_id", "=", id)
          .where("round", "=", 1)
          .where("state", "=", "sent")
          .execute();
        return sent.length === chats.length ? true : undefined;
      });
    } finally {
      await recorded.close();
    }
    first.child.kill("SIGKILL");
    await once(first.child, "exit");

    await start();
    await roundShown(2);
    const check = await openDb(database.url);
    try {
      const rows = await check.kysely
        .selectFrom("reminders")
        .select(["chat_id", "round", "state", "cleanup"])
        .where("message_id", "=", id)
        .orderBy("round")
        .orderBy("chat_id")
        .execute();
      // One reminder per chat and round: none lost to the kill, none repeated after it.
      expect(rows.map((r) => [Number(r.chat_id), r.round, r.state])).toEqual([
        ...chats.map((chat) => [chat, 1, "sent"]),
        ...chats.map((chat) => [chat, 2, "sent"]),
      ]);
      const message = await check.kysely
        .selectFrom("messages")
        .select(["remind_rounds", "remind_ended"])
        .where("id", "=", id)
        .executeTakeFirstOrThrow();
      expect(message).toEqual({ remind_rounds: 2, remind_ended: null });
    } finally {
      await check.close();
    }
  });
});
