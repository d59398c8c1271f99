import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NoticeSender } from "../../src/bot/notices.ts";
import type { Db } from "../../src/store/db.ts";
import { JoinRequestRepository } from "../../src/store/join-requests.ts";
import { NoticeQueue, queueNotice } from "../../src/store/notices.ts";
import { openDb } from "../../src/store/open.ts";
import { Pacer, TELEGRAM_LIMITS } from "../../src/telegram/pacer.ts";
import { SANDBOX_BOT_TOKEN } from "../../src/telegram/sandbox-bot.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/harness.ts";
import { type RunningSandbox, startSandbox } from "../helpers/sandbox-harness.ts";
import { waitFor } from "../helpers/wait.ts";

const DAY = 24 * 60 * 60 * 1000;

/**
 * The bot's notice sender stopping (a deploy, `systemctl stop`) while a notice waits its turn in
 * the pacer — a group's 20 a minute, or a 429's retry_after, can hold one for most of a minute:
 * the stop does not wait for that turn, and the notice is not lost, nor counted as failed, but
 * queued again for whichever instance runs next. Against a real SQLite file and the sandbox.
 */
describe("the bot's notice sender stopping", () => {
  let database: TestDatabase;
  let db: Db;
  let telegram: RunningSandbox;
  beforeAll(async () => {
    database = await createTestDatabase("sqlite", { migrated: true });
    db = await openDb(database.url);
    telegram = await startSandbox();
  });
  afterAll(async () => {
    await db.close();
    await database.drop();
    await telegram.close();
  });

  const sender = (pacer: Pacer) =>
    new NoticeSender({
      notices: new NoticeQueue(db),
      requests: new JoinRequestRepository(db, { ttlMs: 7 * DAY }),
      pacer,
      log: pino({ level: "silent" }),
      telegramTimeoutSeconds: 10,
      leaseMs: 60_000,
      maxAgeMs: DAY,
      sweepMs: 60_000,
    });
  const target = () => ({
    apiRoot: telegram.root,
    token: SANDBOX_BOT_TOKEN,
    botUsername: null,
    sandbox: true,
  });
  const row = () =>
    db.kysely.selectFrom("bot_notices").select(["state", "last_error", "attempts"]).executeTakeFirstOrThrow();
  /** What the bot said in the chat (the person's own /start left out). */
  const received = async (chat: number) => {
    const { body } = await telegram.control<{ text?: string; from?: { is_bot?: boolean } }[]>(
      "GET",
      `/chats/${chat}/messages`,
    );
    return body.filter((m) => m.from?.is_bot).map((m) => m.text);
  };

  it("gives up the notice's wait for its turn, queues it again unsent, and the next sender sends it", async () => {
    const ann = await telegram.startedPerson("Ann");
    await queueNotice(db.kysely, { chatId: ann, kind: "dock_deleted", dockName: "Door" }, Date.now());

    // Telegram said retry_after an hour: nothing may go before then.
    const held = new Pacer({ ...TELEGRAM_LIMITS, globalPerSecond: 30 });
    held.pause(ann, 3600);
    const first = sender(held);
    await first.start(target());
    await waitFor("the notice taken for sending", async () => (await row()).state === "sending");
    // Waiting out the hour would fail this test by its timeout.
    await first.stop();
    // Never tried, so not counted as an attempt: a later failure backs off as from the first.
    expect(await row()).toMatchObject({
      state: "queued",
      last_error: expect.stringContaining("stopped"),
      attempts: 0,
    });
    expect(await received(ann)).toEqual([]);

    const next = sender(new Pacer({ ...TELEGRAM_LIMITS, globalPerSecond: 30 }));
    await next.start(target());
    try {
      await waitFor("the notice sent by the next sender", async () => (await row()).state === "done");
    } finally {
      await next.stop();
    }
    expect(await received(ann)).toEqual([expect.stringContaining("was deleted by its owner")]);
  });
});
