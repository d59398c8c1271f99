import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Outbox } from "../../src/store/outbox.ts";
import { dialects, type RunningService, startService } from "../helpers/harness.ts";

const DIALECTS = await dialects();

describe.each(DIALECTS)("delivery leases on %s", (dialect) => {
  let service: RunningService;
  let clock = Date.now();
  let repo: Outbox;

  beforeAll(async () => {
    // A chat the sandbox does not know: the running dispatcher's own attempts would only get in
    // the way, so this Dock's subscriber is added after the service's dispatcher is stopped.
    service = await startService(dialect);
    await service.app.stop();
    repo = new Outbox(service.db, () => clock);
  });
  afterAll(async () => service.close());

  it("a late outcome from an expired claim is not recorded over the new claim's", async () => {
    const dock = await service.app.docks.create(1, { name: "Lease", link: null, description: null });
    await service.subscriptions.subscribe(dock.id, 42, "private");
    await service.app.messages.accept({ dockId: dock.id, text: "hello" });
    expect(await repo.fanOut(dock.id, 10)).toEqual({ queued: 1, more: false });
    const [pending] = await repo.queuedFor(dock.id, 0, 10);
    if (!pending) throw new Error("nothing queued");

    const first = await repo.claim(pending.id, clock + 1000);
    if (first.status !== "claimed") throw new Error("not claimed");
    clock += 5000; // the first sender stalls past its lease
    expect(await repo.requeueAbandoned(false)).toBe(1);
    const second = await repo.claim(pending.id, clock + 1000);
    if (second.status !== "claimed") throw new Error("not claimed again");

    expect(await repo.failed(pending.id, first.lease, "late", [])).toBe(false);
    expect(
      await repo.sent({ id: pending.id, lease: second.lease, messageId: pending.messageId }, [7], 1),
    ).toBe(true);
    const row = await service.db.kysely
      .selectFrom("deliveries")
      .selectAll()
      .where("id", "=", pending.id)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ state: "sent", telegram_message_ids: "7", attempts: 2 });
  });
  it("a claim whose answer was lost is taken again under its own lease only; re-queueing spares the sends in flight", async () => {
    const dock = await service.app.docks.create(1, { name: "Lost", link: null, description: null });
    await service.subscriptions.subscribe(dock.id, 43, "private");
    await service.app.messages.accept({ dockId: dock.id, text: "hello" });
    await repo.fanOut(dock.id, 10);
    const [pending] = await repo.queuedFor(dock.id, 0, 10);
    if (!pending) throw new Error("nothing queued");

    // The claim is written, but its answer never reaches the dispatcher (the database failed).
    const lost = clock + 60_000;
    expect(await repo.claim(pending.id, lost)).toMatchObject({ status: "claimed" });
    expect(await repo.claim(pending.id, clock + 70_000)).toEqual({ status: "missing" });
    expect(await repo.claim(pending.id, clock + 70_000, [lost - 1])).toEqual({ status: "missing" });
    // Several claims may have failed meanwhile; any of them may be the one that was written.
    expect(await repo.claim(pending.id, clock + 70_000, [lost - 2, lost, lost + 5])).toMatchObject({
      status: "claimed",
      lease: clock + 70_000,
    });
    // A dispatcher taking over re-queues what is left in flight, but not its own sends.
    expect(await repo.requeueAbandoned(true, [pending.id])).toBe(0);
    expect(await repo.requeueAbandoned(true)).toBe(1);
  });

  it("a group's move to a supergroup takes its queued deliveries along; a claim answers where the row now points", async () => {
    const dock = await service.app.docks.create(1, { name: "Moves", link: null, description: null });
    const [group, supergroup] = [-4000000900, -1001000000900];
    await service.subscriptions.subscribe(dock.id, group, "group");
    await service.app.messages.accept({ dockId: dock.id, text: "before the upgrade" });
    await repo.fanOut(dock.id, 10);
    const [read] = await repo.queuedFor(dock.id, 0, 10);
    if (!read) throw new Error("nothing queued");

    expect(await service.subscriptions.moveChat(group, supergroup)).toBe(1);
    expect(await service.subscriptions.moveChat(group, supergroup)).toBe(0);
    // The row was read under the old id; the claim says where it points now.
    expect(await repo.claim(read.id, clock + 1000)).toMatchObject({ status: "claimed", chatId: supergroup });
    expect(await service.subscriptions.listActive(supergroup)).toMatchObject([{ dockId: dock.id }]);
  });

  it("a move to a chat that already has a message's delivery does not deliver it twice", async () => {
    const dock = await service.app.docks.create(1, { name: "Twice", link: null, description: null });
    const [group, supergroup] = [-4000000901, -1001000000901];
    await service.subscriptions.subscribe(dock.id, group, "group");
    await service.subscriptions.subscribe(dock.id, supergroup, "supergroup");
    const accepted = await service.app.messages.accept({ dockId: dock.id, text: "to both" });
    if (accepted.kind !== "accepted") throw new Error("not accepted");
    await repo.fanOut(dock.id, 10);

    await service.subscriptions.moveChat(group, supergroup);
    const rows = await service.db.kysely
      .selectFrom("deliveries")
      .select(["chat_id", "state"])
      .where("message_id", "=", accepted.messageId)
      .orderBy("id")
      .execute();
    expect(rows).toEqual([
      { chat_id: group, state: "gone" },
      { chat_id: supergroup, state: "queued" },
    ]);
    expect(await service.subscriptions.listActive(group)).toEqual([]);
  });

  it("a copy's Telegram ids go on record as Telegram answers, under the claim's lease only; a crash's re-queue counts the attempt as unknown, and a resumed copy that had every part on record takes it back", async () => {
    const dock = await service.app.docks.create(1, { name: "Record", link: null, description: null });
    await service.subscriptions.subscribe(dock.id, 44, "private");
    await service.app.messages.accept({ dockId: dock.id, text: "hello" });
    await repo.fanOut(dock.id, 10);
    const [pending] = await repo.queuedFor(dock.id, 0, 10);
    if (!pending) throw new Error("nothing queued");
    const row = () =>
      service.db.kysely
        .selectFrom("deliveries")
        .select(["state", "telegram_message_ids", "revision", "unknown_attempts", "attempts"])
        .where("id", "=", pending.id)
        .executeTakeFirstOrThrow();

    const claim = await repo.claim(pending.id, clock + 60_000);
    if (claim.status !== "claimed") throw new Error("not claimed");
    expect(await repo.recordParts({ ...pending, lease: claim.lease + 1 }, [70], 1)).toBe(false);
    expect(await repo.recordParts({ ...pending, lease: claim.lease }, [70], 1)).toBe(true);
    expect(await row()).toMatchObject({ state: "sending", telegram_message_ids: "70", revision: 1 });

    // The process dies before the outcome: the next dispatcher re-queues the copy and counts the
    // attempt as one whose outcome is unknown; the copy resumes after the part on record.
    await repo.requeueAbandoned(true);
    expect(await row()).toMatchObject({ state: "queued", unknown_attempts: 1 });
    const [resumed] = await repo.queuedFor(dock.id, 0, 10);
    expect(resumed).toMatchObject({ sentParts: [70], partsRevision: 1, unknownAttempts: 1 });
    const again = await repo.claim(pending.id, clock + 60_001);
    if (again.status !== "claimed") throw new Error("not claimed again");
    // Every part was on record: nothing went out unrecorded after all.
    expect(await repo.sent({ ...pending, lease: again.lease }, [70], 1, true)).toBe(true);
    expect(await row()).toMatchObject({
      state: "sent",
      telegram_message_ids: "70",
      unknown_attempts: 0,
      attempts: 2,
    });
  });

  it("an outcome too late to be recorded leaves Telegram's ids as the copy's strays, and queues the edit that removes them", async () => {
    const dock = await service.app.docks.create(1, { name: "Strays", link: null, description: null });
    await service.subscriptions.subscribe(dock.id, 45, "private");
    await service.app.messages.accept({ dockId: dock.id, text: "hello" });
    await repo.fanOut(dock.id, 10);
    const [pending] = await repo.queuedFor(dock.id, 0, 10);
    if (!pending) throw new Error("nothing queued");
    const first = await repo.claim(pending.id, clock + 1000);
    if (first.status !== "claimed") throw new Error("not claimed");
    clock += 5000; // the first sender stalls past its lease; another attempt sends the copy again
    await repo.requeueAbandoned(false);
    const second = await repo.claim(pending.id, clock + 1000);
    if (second.status !== "claimed") throw new Error("not claimed again");
    expect(await repo.sent({ ...pending, lease: second.lease }, [81], 1)).toBe(true);

    expect(await repo.sent({ ...pending, lease: first.lease }, [80], 1)).toBe(false);
    await repo.straysOf(pending, [80]);
    await repo.straysOf(pending, [80, 81]);
    const rows = await service.db.kysely
      .selectFrom("deliveries")
      .select(["kind", "state", "telegram_message_ids", "stray_ids", "unknown_attempts", "target_id"])
      .where("message_id", "=", pending.messageId)
      .orderBy("id")
      .execute();
    expect(rows).toEqual([
      {
        kind: "send",
        state: "sent",
        telegram_message_ids: "81",
        stray_ids: "80",
        unknown_attempts: 1,
        target_id: null,
      },
      {
        kind: "edit",
        state: "queued",
        telegram_message_ids: null,
        stray_ids: null,
        unknown_attempts: 0,
        target_id: pending.id,
      },
    ]);
    expect(await repo.copy(pending.id)).toMatchObject({ telegramIds: [81], strays: [80] });
  });

  it("a write that must not wait goes before the work waiting for the database (SQLite) or past a full pool (PostgreSQL)", async () => {
    const dock = await service.app.docks.create(1, { name: "Urgent", link: null, description: null });
    const order: string[] = [];
    const touch = () =>
      service.db.kysely.updateTable("docks").set({ updated_at: clock }).where("id", "=", dock.id).compile();
    if (dialect === "sqlite") {
      // While a transaction holds the one connection, another waits for it; the urgent write,
      // asked for later, goes first.
      let queued: Promise<unknown> = Promise.resolve();
      let urgent: Promise<unknown> = Promise.resolve();
      await service.db.kysely.transaction().execute(async (tx) => {
        await tx.selectFrom("docks").select("id").execute();
        queued = service.db.kysely.transaction().execute(async () => void order.push("queued"));
        urgent = service.db.urgent(touch()).then(() => order.push("urgent"));
      });
      await Promise.all([queued, urgent]);
      expect(order).toEqual(["urgent", "queued"]);
      return;
    }
    // Every pooled connection held by a transaction: the urgent write needs none of them.
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const holders = Array.from({ length: 10 }, () =>
      service.db.kysely.transaction().execute(async (tx) => {
        await tx.selectFrom("docks").select("id").execute();
        await held;
      }),
    );
    await service.db.urgent(touch());
    order.push("urgent");
    release();
    await Promise.all(holders);
    expect(order).toEqual(["urgent"]);
    // Its commits need not wait for the disk: what they record must outlive this process only.
    const setting = await service.db.urgent(sql`show synchronous_commit`.compile(service.db.kysely));
    expect(setting.rows).toEqual([{ synchronous_commit: "off" }]);
  });
});
