import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MessageRepository } from "../../src/store/messages.ts";
import { migrate } from "../../src/store/open.ts";
import { Outbox } from "../../src/store/outbox.ts";
import { OutboxViews } from "../../src/store/outbox-views.ts";
import { SubscriptionRepository } from "../../src/store/subscriptions.ts";
import { databaseAt, dialects, OLD_DOCK, type RunningService, startService } from "../helpers/harness.ts";

const DIALECTS = await dialects();

/**
 * Accepting a message queues it once; the dispatcher fans it out into one delivery per subscriber
 * later (Outbox.fanOut). Here the service's own dispatcher is stopped and the test
 * plays its part, with a clock it controls, to pin down who receives what.
 */
describe.each(DIALECTS)("deferred fan-out on %s", (dialect) => {
  let service: RunningService;
  let clock = Date.now();
  const now = () => clock;
  let deliveries: Outbox;
  let views: OutboxViews;
  let messages: MessageRepository;
  let subscriptions: SubscriptionRepository;

  beforeAll(async () => {
    service = await startService(dialect);
    await service.app.stop();
    deliveries = new Outbox(service.db, now);
    views = new OutboxViews(service.db);
    messages = new MessageRepository(service.db, now);
    subscriptions = new SubscriptionRepository(service.db, now);
  });
  afterAll(async () => service.close());

  const dock = (name: string) => service.app.docks.create(1, { name, link: null, description: null });
  const chatsOf = async (messageId: string) =>
    (
      await service.db.kysely
        .selectFrom("deliveries")
        .select("chat_id")
        .where("message_id", "=", messageId)
        .orderBy("id")
        .execute()
    ).map((row) => Number(row.chat_id));
  const accept = async (dockId: string, text: string) => {
    const result = await messages.accept({ dockId, text });
    if (result.kind !== "accepted") throw new Error(`not accepted: ${result.kind}`);
    return result;
  };

  it("a large audience is fanned out whole, in subscription order, a chunk of subscribers per statement", async () => {
    const { id } = await dock("Crowd");
    const chats = Array.from({ length: 4500 }, (_, i) => 700_000 + i);
    // Subscribed in bulk (the repository's one-by-one path would take a while for 4,500).
    for (let i = 0; i < chats.length; i += 500) {
      await service.db.kysely
        .insertInto("subscriptions")
        .values(
          chats.slice(i, i + 500).map((chat) => ({
            dock_id: id,
            chat_id: chat,
            chat_type: "private",
            state: "active",
            active_since: clock,
            created_at: clock,
            updated_at: clock,
          })),
        )
        .execute();
    }
    // One of them leaves before the message: not in its audience.
    expect(await subscriptions.transition(700_100, "active", "removed", id)).toBe(1);
    clock += 1000;
    const crowd = await accept(id, "to everyone");
    expect(crowd.subscribers).toBe(4499);
    expect(await deliveries.fanOut(id, 10)).toEqual({ queued: 4499, more: false });
    expect(await chatsOf(crowd.messageId)).toEqual(chats.filter((chat) => chat !== 700_100));
  });

  it("reaches those subscribed when the message was accepted and active now, in order", async () => {
    const { id } = await dock("Audience");
    for (const chat of [101, 102, 103, 105]) await subscriptions.subscribe(id, chat, "private");
    clock += 1000;
    const first = await accept(id, "first");
    const second = await accept(id, "second");
    expect(first.subscribers).toBe(4);
    // Before the fan-out, the status counts every subscriber as queued.
    expect((await views.status(first.messageId, id))?.counts).toEqual({
      queued: 4,
      sent: 0,
      failed: 0,
      gone: 0,
    });

    clock += 1000;
    await subscriptions.subscribe(id, 104, "private"); // too late for both messages
    expect(await subscriptions.transition(102, "active", "removed", id)).toBe(1); // left before the fan-out
    expect(await subscriptions.transition(103, "active", "blocked", id)).toBe(1); // blocked the bot and came back:
    expect(await subscriptions.transition(103, "blocked", "active", id)).toBe(1); // still subscribed, still receives
    expect(await subscriptions.transition(105, "active", "removed", id)).toBe(1); // left and subscribed again:
    await subscriptions.subscribe(id, 105, "private"); // only what is sent from now on

    expect(await deliveries.fanOut(id, 1000)).toEqual({ queued: 4, more: false });
    expect(await chatsOf(first.messageId)).toEqual([101, 103]);
    expect(await chatsOf(second.messageId)).toEqual([101, 103]);
    const queue = await deliveries.queuedFor(id, 0, 10);
    expect(queue.map((d) => d.text)).toEqual(["first", "first", "second", "second"]);
    // Those who left before their delivery was created count as gone.
    expect((await views.status(first.messageId, id))?.counts).toEqual({
      queued: 2,
      sent: 0,
      failed: 0,
      gone: 2,
    });
    expect(await deliveries.fanOut(id, 1000)).toEqual({ queued: 0, more: false });
  });

  it("fans out only as much as asked, oldest messages first, each exactly once", async () => {
    const { id } = await dock("Backlog");
    for (const chat of [201, 202]) await subscriptions.subscribe(id, chat, "private");
    clock += 1000;
    const accepted = [];
    for (let n = 0; n < 5; n++) accepted.push(await accept(id, `m${n}`));

    expect(await deliveries.fanOut(id, 3)).toEqual({ queued: 4, more: true });
    expect(await deliveries.fanOut(id, 3)).toEqual({ queued: 4, more: true });
    expect(await deliveries.fanOut(id, 3)).toEqual({ queued: 2, more: false });
    const queue = await deliveries.queuedFor(id, 0, 100);
    expect(queue.map((d) => `${d.text}→${d.chatId}`)).toEqual(
      accepted.flatMap((_, n) => [`m${n}→201`, `m${n}→202`]),
    );
    expect((await views.backlog()).queued).toBeGreaterThanOrEqual(10);
  });

  it("the backlog counts waiting messages; retention never prunes them; deleting the Dock drops them", async () => {
    const { id } = await dock("Waiting");
    await subscriptions.subscribe(id, 301, "private");
    await subscriptions.subscribe(id, 302, "private");
    clock += 1000;
    const before = await views.backlog();
    const waiting = await accept(id, "not fanned out yet");
    const after = await views.backlog();
    expect(after.queued - before.queued).toBe(2);
    expect(after.oldestCreatedAt).not.toBeNull();

    expect(await deliveries.prune(clock + 365 * 24 * 3600 * 1000)).toBeGreaterThanOrEqual(0);
    expect(await messages.get(waiting.messageId)).toBeDefined();

    expect(await service.app.docks.delete(id)).toBe(true);
    const left = await service.db.kysely
      .selectFrom("fanouts")
      .select("id")
      .where("dock_id", "=", id)
      .execute();
    expect(left).toEqual([]);
  });
  it("the backlog reads waiting messages a chunk at a time and sums them all", async () => {
    const { id } = await dock("Chunked");
    await subscriptions.subscribe(id, 311, "private");
    await subscriptions.subscribe(id, 312, "private");
    clock += 1000;
    const before = await views.backlog();
    for (let i = 0; i < 5; i++) await accept(id, `chunk ${i}`);
    const whole = await views.backlog();
    expect(whole.queued - before.queued).toBe(10);
    // Chunks of 2 and 3 rows end inside the waiting rows and exactly at their end.
    expect(await views.backlog(2)).toEqual(whole);
    expect(await views.backlog(3)).toEqual(whole);
    expect(await views.backlog(1)).toEqual(whole);
  });

  it("finds each Dock with queued deliveries or waiting messages once, and no other", async () => {
    const [queued, waiting, done] = await Promise.all([dock("Queued"), dock("Waiting"), dock("Done")]);
    for (const { id } of [queued, waiting, done]) await subscriptions.subscribe(id, 301, "private");
    clock += 1000;
    for (const { id } of [queued, waiting, done]) {
      await accept(id, "one");
      await accept(id, "two");
    }
    await deliveries.fanOut(queued.id, 10);
    await deliveries.fanOut(done.id, 10);
    await service.db.kysely
      .updateTable("deliveries")
      .set({ state: "sent" })
      .where("dock_id", "=", done.id)
      .execute();
    const docks = await deliveries.queuedDocks();
    expect(docks).toContain(queued.id);
    expect(docks).toContain(waiting.id);
    expect(docks).not.toContain(done.id);
    expect(new Set(docks).size).toBe(docks.length);
  });
});

describe.each(DIALECTS)("migration 0005 on %s", (dialect) => {
  it("gives the messages already waiting their subscriber counts", async () => {
    const old = await databaseAt(dialect, "0004-deferred-fanout");
    const { db, now } = old;
    try {
      for (const [messageId, subscribers] of [
        ["msg_a", 3],
        ["msg_b", 5],
      ] as const) {
        await old.addMessage(messageId, "waiting", subscribers);
        await sql`insert into fanouts (message_id, dock_id, created_at)
          values (${messageId}, ${OLD_DOCK}, ${now})`.execute(db.kysely);
      }

      // Every later migration runs too; those up to now are named (the list grows with the schema).
      expect((await migrate(db)).slice(0, 4)).toEqual([
        "0005-fanout-subscribers",
        "0006-dock-allowances",
        "0007-write-probes",
        "0008-message-content",
      ]);
      const rows = await db.kysely
        .selectFrom("fanouts")
        .select(["message_id", "subscribers"])
        .orderBy("id")
        .execute();
      expect(rows).toEqual([
        { message_id: "msg_a", subscribers: 3 },
        { message_id: "msg_b", subscribers: 5 },
      ]);
      expect(await new OutboxViews(db).backlog()).toEqual({ queued: 8, oldestCreatedAt: now });
    } finally {
      await old.close();
    }
  });
});
