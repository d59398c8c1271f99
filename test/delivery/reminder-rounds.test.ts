import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MessageContent } from "../../src/domain/message-options.ts";
import { DockRepository, type DockWithSecret } from "../../src/store/docks.ts";
import { Escalations } from "../../src/store/escalations.ts";
import { MessageChanges } from "../../src/store/message-changes.ts";
import { MessageRepository } from "../../src/store/messages.ts";
import { type Db, migrate, openDb } from "../../src/store/open.ts";
import { ReminderStore } from "../../src/store/reminders.ts";
import { SubscriptionRepository } from "../../src/store/subscriptions.ts";
import { createTestDatabase, dialects, type TestDatabase } from "../helpers/harness.ts";

const DIALECTS = await dialects();
const KEY = Buffer.alloc(32, 7);
const T0 = 1_900_000_000_000;

/*
 * The reminders' scheduler with a clock the test moves (store/reminders.ts), over the real
 * database: when rounds come, what each queues, what stops them. The copies are put in place as
 * the dispatcher leaves them (sent, with Telegram's ids); test/delivery/reminders.test.ts runs
 * the whole way through the sandbox.
 */
describe.each(DIALECTS)("reminder rounds on %s", (dialect) => {
  let database: TestDatabase;
  let db: Db;
  let dock: DockWithSecret;
  let now = T0;
  const clock = () => now;
  let messages: MessageRepository;
  let changes: MessageChanges;
  let store: ReminderStore;
  const chats = [7001, 7002, 7003];

  beforeAll(async () => {
    database = await createTestDatabase(dialect, { migrated: true });
    db = await openDb(database.url);
    await migrate(db);
    dock = await new DockRepository(db, KEY).create(1, {
      name: "Pager",
      link: null,
      description: null,
      callback_url: "https://hooks.example.com/dock",
    });
    const subscriptions = new SubscriptionRepository(db, clock);
    for (const chat of chats) await subscriptions.subscribe(dock.id, chat, "private");
    messages = new MessageRepository(db, clock);
    changes = new MessageChanges(db, clock);
    store = new ReminderStore(db, clock);
  });
  afterAll(async () => {
    await db.close();
    await database.drop();
  });

  const remindEvery = (every: number, length: number) => ({
    options: { ack: true, remind_every: every, remind_for: length },
  });
  /** A copy of a message in a chat, as the dispatcher leaves it (sent, with Telegram's ids) or queued. */
  const copy = (messageId: string, dockId: string, chat: number, telegramIds: string | null) =>
    db.kysely
      .insertInto("deliveries")
      .values({
        message_id: messageId,
        dock_id: dockId,
        chat_id: chat,
        state: telegramIds === null ? "queued" : "sent",
        attempts: telegramIds === null ? 0 : 1,
        next_attempt_at: now,
        lease_until: null,
        last_error: null,
        telegram_message_ids: telegramIds,
        created_at: now,
        updated_at: now,
        target_id: null,
        revision: 1,
        outcome: null,
        stray_ids: null,
      })
      .execute();
  /** A message accepted now, its copies sent to the first two chats; the third's still queued. */
  const alert = async (text: string, content: MessageContent = remindEvery(30, 300), key?: string) => {
    const accepted = await messages.accept({ dockId: dock.id, text, content, ...(key ? { key } : {}) });
    if (accepted.kind !== "accepted") throw new Error(`not accepted: ${accepted.kind}`);
    const id = accepted.messageId;
    await db.kysely.deleteFrom("fanouts").where("message_id", "=", id).execute();
    for (const [i, chat] of chats.entries()) await copy(id, dock.id, chat, i < 2 ? String(100 + i) : null);
    return id;
  };
  const schedule = (id: string) =>
    db.kysely
      .selectFrom("messages")
      .select(["remind_next_at", "remind_until", "remind_rounds", "remind_ended"])
      .where("id", "=", id)
      .executeTakeFirstOrThrow()
      .then((row) => ({
        next: row.remind_next_at === null ? null : Number(row.remind_next_at),
        until: row.remind_until === null ? null : Number(row.remind_until),
        rounds: row.remind_rounds,
        ended: row.remind_ended,
      }));
  const remindersOf = (id: string) =>
    db.kysely
      .selectFrom("reminders")
      .select(["chat_id", "round", "state", "cleanup", "telegram_message_id"])
      .where("message_id", "=", id)
      .orderBy("id")
      .execute()
      .then((rows) => rows.map((r) => ({ ...r, chat_id: Number(r.chat_id) })));
  const events = (id: string) =>
    db.kysely
      .selectFrom("events")
      .select(["type", "payload"])
      .where("message_id", "=", id)
      .orderBy("id")
      .execute();

  it("comes every remind_every to each copy in a chat, once per round, and after a pause not all at once", async () => {
    now = T0;
    const id = await alert("disk full");
    expect(await schedule(id)).toEqual({ next: T0 + 30_000, until: T0 + 300_000, rounds: 0, ended: null });

    now = T0 + 29_999;
    expect(await store.dueRounds(10)).not.toContain(id);
    expect(await store.round(id)).toEqual({ kind: "none" });
    now = T0 + 30_000;
    expect(await store.dueRounds(10)).toContain(id);
    // Two instances asking at once: one round.
    const both = await Promise.all([store.round(id), store.round(id)]);
    expect(both.map((r) => r.kind).sort()).toEqual(["none", "round"]);
    expect(both.find((r) => r.kind === "round")).toEqual({
      kind: "round",
      dockId: dock.id,
      round: 1,
      copies: 2,
    });
    // The copy still queued (the third chat) gets none: it arrives fresh.
    expect(await remindersOf(id)).toEqual([
      { chat_id: 7001, round: 1, state: "queued", cleanup: 0, telegram_message_id: null },
      { chat_id: 7002, round: 1, state: "queued", cleanup: 0, telegram_message_id: null },
    ]);
    expect((await schedule(id)).next).toBe(T0 + 60_000);

    // The service was away for two minutes: one round now, the next a remind_every later; the
    // first round's reminders, never sent, give way.
    now = T0 + 200_000;
    expect(await store.round(id)).toMatchObject({ kind: "round", round: 2, copies: 2 });
    expect(await schedule(id)).toMatchObject({ next: T0 + 230_000, rounds: 2 });
    expect((await remindersOf(id)).map((r) => [r.round, r.state])).toEqual([
      [1, "gone"],
      [1, "gone"],
      [2, "queued"],
      [2, "queued"],
    ]);

    // Rounds up to remind_until included; then they end, and the sender hears it.
    now = T0 + 290_000;
    expect(await store.round(id)).toMatchObject({ kind: "round", round: 3 });
    expect((await schedule(id)).next).toBe(T0 + 300_001);
    now = T0 + 300_000;
    expect(await store.round(id)).toEqual({ kind: "none" });
    now = T0 + 300_001;
    expect(await store.round(id)).toEqual({ kind: "expired", dockId: dock.id });
    expect(await schedule(id)).toEqual({ next: null, until: T0 + 300_000, rounds: 3, ended: "expired" });
    const posted = (await events(id)).map((e) => [e.type, JSON.parse(e.payload)]);
    expect(posted.map(([type]) => type)).toEqual([
      "message.reminded",
      "message.reminded",
      "message.reminded",
      "message.unacknowledged",
    ]);
    expect(posted[3]?.[1]).toMatchObject({ reminders: { rounds: 3, every: 30, for: 300 } });
    now = T0 + 400_000;
    expect(await store.round(id)).toEqual({ kind: "none" });
  });

  it("reminds at remind_for too: an hour's reminder with the default length comes once", async () => {
    now = T0;
    const id = await alert("certificate expires", remindEvery(3600, 3600));
    now = T0 + 3600_000;
    expect(await store.round(id)).toMatchObject({ kind: "round", round: 1, copies: 2 });
    now = T0 + 3600_001;
    expect(await store.round(id)).toEqual({ kind: "expired", dockId: dock.id });
  });

  it("a sent reminder replaces the one before in its chat; an acknowledgement ends them and clears the chats", async () => {
    now = T0;
    const id = await alert("api down");
    now = T0 + 30_000;
    await store.round(id);
    const sendAll = async (telegramIds: number[]) => {
      const due = await store.due(10);
      const claimed = [];
      for (const { id: reminderId } of due) {
        const reminder = await store.claim(reminderId, now + 10_000);
        if (reminder?.messageId === id && !reminder.cleanup) claimed.push(reminder);
      }
      for (const [i, reminder] of claimed.entries()) {
        expect(reminder.over).toBe(false);
        expect(reminder.replyTo).toBe(100 + chats.indexOf(reminder.chatId));
        expect(await store.sent(reminder, telegramIds[i] as number)).toBe(true);
      }
      return claimed.length;
    };
    expect(await sendAll([501, 502])).toBe(2);
    now = T0 + 60_000;
    await store.round(id);
    expect(await sendAll([601, 602])).toBe(2);
    expect((await remindersOf(id)).map((r) => [r.telegram_message_id, r.state, r.cleanup])).toEqual([
      [501, "sent", 1],
      [502, "sent", 1],
      [601, "sent", 0],
      [602, "sent", 0],
    ]);
    // Those replaced are due to be deleted.
    const cleanups = [];
    for (const { id: reminderId } of await store.due(10)) {
      const claimed = await store.claim(reminderId, now + 10_000);
      if (claimed?.cleanup) cleanups.push(claimed.telegramMessageId);
      if (claimed?.cleanup) expect(await store.cleaned(claimed, null)).toBe(true);
    }
    expect(cleanups.sort()).toEqual([501, 502]);

    const pressed = await changes.acknowledge(
      id,
      { id: 7002, name: "Bo", username: null },
      { chatId: 7002, telegramMessageId: 602 },
    );
    expect(pressed.kind).toBe("first");
    expect(await schedule(id)).toMatchObject({ next: null, ended: "acknowledged" });
    expect((await remindersOf(id)).filter((r) => r.cleanup === 1).map((r) => r.telegram_message_id)).toEqual([
      601, 602,
    ]);
    now = T0 + 500_000;
    expect(await store.round(id)).toEqual({ kind: "none" });
  });

  it("snoozed chats are skipped until the snooze ends; a reminder queued there is not sent", async () => {
    now = T0;
    const id = await alert("queue backlog", remindEvery(30, 3600));
    now = T0 + 30_000;
    await store.round(id);
    const snoozed = await changes.snooze(
      id,
      { id: 7001, name: "Ada", username: "ada" },
      { chatId: 7001, telegramMessageId: 100 },
      "15",
    );
    expect(snoozed).toEqual({ kind: "snoozed", until: T0 + 30_000 + 15 * 60_000, dockId: dock.id });
    expect((await remindersOf(id)).map((r) => [r.chat_id, r.state])).toEqual([
      [7001, "gone"],
      [7002, "queued"],
    ]);
    now = T0 + 60_000;
    expect(await store.round(id)).toMatchObject({ round: 2, copies: 1 });
    // A press from a chat without a copy snoozes nothing.
    expect(
      await changes.snooze(
        id,
        { id: 7009, name: "Eve", username: null },
        { chatId: 7009, telegramMessageId: 100 },
        "60",
      ),
    ).toEqual({ kind: "missing" });
    // The snooze over, Ada's chat is reminded again.
    now = T0 + 30_000 + 15 * 60_000;
    expect(await store.round(id)).toMatchObject({ round: 3, copies: 2 });
  });

  it("a replacement that still asks keeps the rhythm; one firing anew after an acknowledgement starts over", async () => {
    now = T0;
    const content = remindEvery(60, 3600);
    const id = await alert("cpu high", content, "cpu");
    now = T0 + 60_000;
    await store.round(id);
    now = T0 + 90_000;
    // Still firing, sent again: the next round stays where it was.
    await messages.accept({ dockId: dock.id, text: "cpu higher", content, key: "cpu" });
    expect(await schedule(id)).toMatchObject({ next: T0 + 120_000, rounds: 1, ended: null });
    await changes.acknowledge(
      id,
      { id: 7001, name: "Ada", username: null },
      { chatId: 7001, telegramMessageId: 100 },
    );
    expect((await schedule(id)).ended).toBe("acknowledged");
    // Firing anew after it was taken: the acknowledgement is forgotten and the reminders start over.
    now = T0 + 600_000;
    await messages.accept({ dockId: dock.id, text: "cpu high again", content, key: "cpu" });
    expect(await schedule(id)).toEqual({ next: T0 + 660_000, until: T0 + 4_200_000, rounds: 0, ended: null });
    // Replaced without reminders (the alert resolved, still under its key): they end.
    now = T0 + 700_000;
    await messages.accept({
      dockId: dock.id,
      text: "cpu normal",
      content: { options: { ack: true } },
      key: "cpu",
    });
    expect(await schedule(id)).toMatchObject({ next: null, ended: "resolved" });
  });

  it("a step's message taken before its step is recorded takes the chain; a new firing escalates anew", async () => {
    const backup = await new DockRepository(db, KEY).create(1, {
      name: "Backup",
      link: null,
      description: null,
    });
    const escalations = new Escalations(db, clock);
    now = T0;
    const content = { options: { ack: true, escalate: [{ after: 60, to: backup.id }] } };
    const id = await alert("payments failing", content, "payments");
    const step = async (run: number) => {
      now += 60_000;
      const due = await escalations.next(id);
      expect(due).toMatchObject({ run, step: 0, to: backup.id, allowed: true });
      if (due === undefined) throw new Error("no step due");
      const key = `\u0001escalation:${id}:${due.run}:${due.step}`;
      const added = await messages.accept({
        dockId: backup.id,
        text: due.text,
        content: due.content,
        idempotencyKey: key,
        requestHash: key,
      });
      if (added.kind !== "accepted") throw new Error(`step not added: ${added.kind}`);
      return { due, added: added.messageId, key };
    };
    const first = await step(1);
    // Its copy in the backup's chat, pressed before the step is on record.
    await copy(first.added, backup.id, 7009, "900");
    expect(
      (
        await changes.acknowledge(
          first.added,
          { id: 7009, name: "Cy", username: null },
          { chatId: 7009, telegramMessageId: 900 },
        )
      ).kind,
    ).toBe("first");
    expect(await changes.recordStep(first.due, first.added, 1, null)).toBe(true);
    // Recorded once only.
    expect(await changes.recordStep(first.due, first.added, 1, null)).toBe(false);
    const acked = await db.kysely
      .selectFrom("messages")
      .select(["id", "acked_name", "escalate_next_at", "escalated_from"])
      .where("id", "in", [id, first.added])
      .orderBy("id")
      .execute();
    expect(acked.map((m) => [m.id === id ? "origin" : "step", m.acked_name, m.escalated_from])).toEqual(
      expect.arrayContaining([
        ["origin", "Cy", null],
        ["step", "Cy", id],
      ]),
    );
    // A replay of the step's send is the same message.
    const again = await messages.accept({
      dockId: backup.id,
      text: first.due.text,
      content: first.due.content,
      idempotencyKey: first.key,
      requestHash: first.key,
    });
    expect(again).toMatchObject({ kind: "replayed", messageId: first.added });

    // Firing anew (changed, asking again): a new run, whose step is a new message in the backup Dock.
    await messages.accept({ dockId: dock.id, text: "payments failing again", content, key: "payments" });
    const second = await step(2);
    expect(second.added).not.toBe(first.added);
  });
});
