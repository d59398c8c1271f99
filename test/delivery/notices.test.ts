import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Db } from "../../src/store/db.ts";
import { banChat, DockBanRepository } from "../../src/store/dock-bans.ts";
import { DockStamps, STAMP_PARTS } from "../../src/store/dock-stamps.ts";
import { DockRepository } from "../../src/store/docks.ts";
import { InviteLinkRepository } from "../../src/store/invite-links.ts";
import { JoinRequestRepository } from "../../src/store/join-requests.ts";
import { NoticeQueue } from "../../src/store/notices.ts";
import { openDb } from "../../src/store/open.ts";
import { SubscriptionRepository } from "../../src/store/subscriptions.ts";
import { createTestDatabase, dialects, type TestDatabase } from "../helpers/harness.ts";

const DIALECTS = await dialects();
const DAY = 24 * 60 * 60 * 1000;

/**
 * The bot's notices and join requests in the store (issue 37), against a real database and a
 * clock the test moves: what a sender that races a decision, dies, or meets an expiry leaves.
 */
describe.each(DIALECTS)("bot notices and join requests in the store on %s", (dialect) => {
  let database: TestDatabase;
  let db: Db;
  let clock = Date.parse("2026-11-28T09:00:00Z");
  const now = () => clock;
  let notices: NoticeQueue;
  let requests: JoinRequestRepository;
  let docks: DockRepository;
  const key = randomBytes(32);

  beforeAll(async () => {
    database = await createTestDatabase(dialect, { migrated: true });
    db = await openDb(database.url);
    notices = new NoticeQueue(db, now);
    requests = new JoinRequestRepository(db, { ttlMs: 7 * DAY, now });
    docks = new DockRepository(db, key, now);
  });
  afterAll(async () => {
    await db.close();
    await database.drop();
  });

  let nextChat = 5000;
  /** A new approval Dock of owner 42 and a pending request to it from a new person; the copy's notice id. */
  async function asked() {
    const dock = await docks.create(
      42,
      { name: "Door", link: null, description: null },
      undefined,
      "approval",
    );
    const chatId = nextChat++;
    const outcome = await requests.ask(
      { dockId: dock.id, chatId, chatType: "private", userId: chatId, inviteId: null, memberCount: null },
      [42],
    );
    if (outcome.kind !== "sent") throw new Error(`not sent: ${outcome.kind}`);
    const copy = await db.kysely
      .selectFrom("bot_notices")
      .select(["id"])
      .where("request_id", "=", outcome.request.id)
      .executeTakeFirstOrThrow();
    return { dock, chatId, request: outcome.request, copyId: Number(copy.id) };
  }

  const noticeRow = (id: number) =>
    db.kysely
      .selectFrom("bot_notices")
      .select(["state", "message_id", "version"])
      .where("id", "=", id)
      .executeTakeFirstOrThrow();

  it("a decision made while its copy is being sent: the copy's message is kept, and it is queued to show the decision", async () => {
    const { dock, request, copyId } = await asked();
    const sending = await notices.claim(copyId, clock + 60_000);
    expect(sending).toMatchObject({ kind: "request_copy", chatId: 42, messageId: null, version: 0 });
    const decided = await requests.decide(dock.id, request.id, "approved", 42);
    expect(decided.kind).toBe("decided");
    // The send of the pending copy settles after the decision: it must not count as showing it.
    expect(await notices.done(sending as NonNullable<typeof sending>, 7001)).toBe(true);
    expect(await noticeRow(copyId)).toMatchObject({ state: "queued", message_id: 7001, version: 1 });
    const again = await notices.claim(copyId, clock + 60_000);
    expect(again).toMatchObject({ messageId: 7001, version: 1 });
    expect(await notices.done(again as NonNullable<typeof again>)).toBe(true);
    expect(await noticeRow(copyId)).toMatchObject({ state: "done", message_id: 7001 });
  });

  it("a notice whose sender died is claimed again once its lease ran out, and the dead sender's settle is refused", async () => {
    const { copyId } = await asked();
    const dead = await notices.claim(copyId, clock + 60_000);
    expect(await notices.claim(copyId, clock + 60_000)).toBeUndefined();
    expect(await notices.requeueExpired()).toBe(0);
    clock += 61_000;
    expect(await notices.requeueExpired()).toBe(1);
    const alive = await notices.claim(copyId, clock + 60_000);
    expect(alive).toBeDefined();
    expect(await notices.done(dead as NonNullable<typeof dead>, 9999)).toBe(false);
    expect(await notices.done(alive as NonNullable<typeof alive>, 7002)).toBe(true);
  });

  it("a decision after the request's time ran out, before any sweep: it ends as expired, and the requester is told once", async () => {
    const { dock, request, chatId } = await asked();
    clock += 7 * DAY;
    const late = await requests.decide(dock.id, request.id, "approved", 42);
    expect(late.kind).toBe("ended");
    expect(late.kind === "ended" && late.request.state).toBe("expired");
    // A sweep after it (other tests' requests may expire now) does not end it, nor tell it, again.
    await requests.expireDue();
    const told = await db.kysely
      .selectFrom("bot_notices")
      .select(["kind", "detail", "dock_name"])
      .where("chat_id", "=", chatId)
      .execute();
    expect(told).toEqual([{ kind: "request_outcome", detail: "expired", dock_name: "Door" }]);
    const subscribed = await db.kysely
      .selectFrom("subscriptions")
      .select("state")
      .where("chat_id", "=", chatId)
      .execute();
    expect(subscribed).toEqual([]);
  });

  it("retention prunes one-off notices done a day ago, never copies nor notices still to send", async () => {
    const { dock, request, chatId } = await asked();
    await requests.decide(dock.id, request.id, "declined", 42);
    const outcome = await db.kysely
      .selectFrom("bot_notices")
      .select("id")
      .where("chat_id", "=", chatId)
      .executeTakeFirstOrThrow();
    const claimed = await notices.claim(Number(outcome.id), clock + 60_000);
    await notices.done(claimed as NonNullable<typeof claimed>, 1);
    clock += DAY + 1;
    const queuedBefore = await db.kysely
      .selectFrom("bot_notices")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("state", "=", "queued")
      .executeTakeFirstOrThrow();
    expect(await notices.prune(clock - DAY)).toBeGreaterThanOrEqual(1);
    expect(
      await db.kysely.selectFrom("bot_notices").select("id").where("id", "=", Number(outcome.id)).execute(),
    ).toEqual([]);
    const queuedAfter = await db.kysely
      .selectFrom("bot_notices")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("state", "=", "queued")
      .executeTakeFirstOrThrow();
    expect(Number(queuedAfter.n)).toBe(Number(queuedBefore.n));
    const copies = await db.kysely
      .selectFrom("bot_notices")
      .select("id")
      .where("request_id", "=", request.id)
      .execute();
    expect(copies).toHaveLength(1);
  });

  it("a request ended is replaced by a new one of the same chat; a waiting one is not", async () => {
    const { dock, request, chatId } = await asked();
    const asking = {
      dockId: dock.id,
      chatId,
      chatType: "private",
      userId: chatId,
      inviteId: null,
      memberCount: null,
    };
    expect((await requests.ask(asking, [42])).kind).toBe("pending");
    await requests.decide(dock.id, request.id, "declined", 42);
    const renewed = await requests.ask(asking, [42]);
    expect(renewed.kind).toBe("sent");
    expect(renewed.kind === "sent" && renewed.request.id).not.toBe(request.id);
    expect(await requests.get(request.id)).toBeUndefined();
  });

  it("retention prunes requests that ended before its cutoff, with their copies; waiting ones stay", async () => {
    const ended = await asked();
    await requests.decide(ended.dock.id, ended.request.id, "approved", 42);
    const waiting = await asked();
    clock += 31 * DAY;
    expect(await requests.prune(clock - 30 * DAY)).toBeGreaterThanOrEqual(1);
    expect(await requests.get(ended.request.id)).toBeUndefined();
    const copies = await db.kysely
      .selectFrom("bot_notices")
      .select("id")
      .where("request_id", "=", ended.request.id)
      .execute();
    expect(copies).toEqual([]);
    // Waiting a month is long past its time: the sweep ends it (it is not pruned unended).
    expect((await requests.get(waiting.request.id))?.state).toBe("pending");
  });

  it("every change of a Dock's audience moves the audience part of its live stamp, and no other", async () => {
    const { dock, request, chatId } = await asked();
    const stamps = new DockStamps(db, now);
    const parts = async () => {
      const found = (await stamps.of([42])).find((stamp) => stamp.id === dock.id);
      return (found?.stamp ?? "").split("/");
    };
    const invites = new InviteLinkRepository(db, key, now);
    const bans = new DockBanRepository(db, now);
    const subscriptions = new SubscriptionRepository(db, now);
    const rules = { name: "L", usageLimit: null, expiresAt: null, approval: false };
    let link: Awaited<ReturnType<InviteLinkRepository["create"]>> | undefined;
    const changes: [string, () => Promise<unknown>][] = [
      ["a link made", async () => (link = await invites.create(dock.id, { actor: 42 }, rules))],
      [
        "a link used",
        () =>
          subscriptions.joinThrough({
            dockId: dock.id,
            chatId: 7777,
            chatType: "private",
            inviteId: (link as NonNullable<typeof link>).id,
          }),
      ],
      ["a link revoked", () => invites.revoke(dock.id, (link as NonNullable<typeof link>).id, { actor: 42 })],
      ["a request decided", () => requests.decide(dock.id, request.id, "declined", 42)],
      [
        "a request made",
        () =>
          requests.ask(
            {
              dockId: dock.id,
              chatId: 8888,
              chatType: "private",
              userId: 8888,
              inviteId: null,
              memberCount: null,
            },
            [42],
          ),
      ],
      [
        "a request expired",
        async () => {
          clock += 8 * DAY;
          await requests.expireDue();
        },
      ],
      ["a ban", () => db.kysely.transaction().execute((tx) => banChat(tx, dock.id, chatId, 42, clock))],
      ["an unban", () => bans.unban(dock.id, chatId, { actor: 42 })],
    ];
    const at = STAMP_PARTS.indexOf("audience");
    for (const [what, change] of changes) {
      const before = await parts();
      await change();
      const after = await parts();
      expect(after[at], what).not.toBe(before[at]);
      expect(after[0], what).toBe(before[0]);
    }
  });
});
