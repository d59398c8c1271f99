import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { sql } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isUniqueViolation } from "../../src/store/accept-batch.ts";
import { DockRepository } from "../../src/store/docks.ts";
import { isDatabaseUnavailable } from "../../src/store/faults.ts";
import { MessageRepository } from "../../src/store/messages.ts";
import { type Db, migrate, openDb } from "../../src/store/open.ts";
import { LEASE_MS } from "../../src/store/postgres/allowances.ts";
import { reviseMessage } from "../../src/store/revise.ts";
import { SubscriptionRepository } from "../../src/store/subscriptions.ts";
import { createTestDatabase, dialects, type TestDatabase } from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

const DIALECTS = await dialects();
const KEY = Buffer.alloc(32, 7);

/**
 * Another session takes what storing a message needs (SQLite's write lock; PostgreSQL's
 * `messages` table, exclusively) until the returned function lets go.
 */
async function holdMessages(database: TestDatabase): Promise<() => Promise<void>> {
  if (database.url.startsWith("sqlite:")) {
    const other = new DatabaseSync(database.url.slice("sqlite:".length));
    other.exec("begin immediate");
    let released = false;
    return async () => {
      if (released) return;
      released = true;
      other.exec("rollback");
      other.close();
    };
  }
  const other = new pg.Client({ connectionString: database.url });
  // Ended by the server when its database is dropped, should the test fail before letting go:
  // not an uncaught exception in the worker.
  other.on("error", () => {});
  await other.connect();
  await other.query("begin");
  await other.query("lock table messages in access exclusive mode");
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    await other.query("rollback");
    await other.end();
  };
}

/** Group commit: the messages handed over in one turn of the event loop share a transaction. */
describe.each(DIALECTS)("message batches on %s", (dialect) => {
  let database: TestDatabase;
  let db: Db;
  let docks: DockRepository;

  beforeAll(async () => {
    database = await createTestDatabase(dialect, { migrated: true });
    db = await openDb(database.url);
    await migrate(db);
    docks = new DockRepository(db, KEY);
  });
  afterAll(async () => {
    await db.close();
    await database.drop();
  });

  /** The texts stored for the Dock, sorted (messages of one batch share their time). */
  const stored = async (dockId: string) =>
    (await db.kysely.selectFrom("messages").select("text").where("dock_id", "=", dockId).execute())
      .map((row) => row.text)
      .sort();

  it("one message that cannot be stored fails alone; its neighbours are stored and spend the allowance once", async () => {
    const dock = await docks.create(1, { name: "Neighbours", link: null, description: null });
    // Two messages' worth of allowance, refilling far too slowly to matter here.
    const messages = new MessageRepository(db, Date.now, { dockRate: { burst: 2, perSecond: 0.001 } });
    // Handed over in one turn: one batch. The middle one names no Dock (no key is checked, as for
    // the console), so its insert breaks the batch's transaction and each is retried alone.
    const outcomes = await Promise.allSettled([
      messages.accept({ dockId: dock.id, text: "first" }),
      messages.accept({ dockId: "dock_doesnotexist00000000", text: "orphan" }),
      messages.accept({ dockId: dock.id, text: "second" }),
    ]);
    expect(outcomes[0]).toMatchObject({ status: "fulfilled", value: { kind: "accepted" } });
    expect(outcomes[1]?.status).toBe("rejected");
    // Asked again on the retry, the allowance would have been spent twice and this one refused.
    expect(outcomes[2]).toMatchObject({ status: "fulfilled", value: { kind: "accepted" } });
    expect(await stored(dock.id)).toEqual(["first", "second"]);
    // The allowance is now spent.
    expect(await messages.accept({ dockId: dock.id, text: "third" })).toMatchObject({ kind: "refused" });
  });

  it("answers a repeated Idempotency-Key with the first answer even when the Dock is out of allowance", async () => {
    const dock = await docks.create(1, { name: "Retrying", link: null, description: null });
    const messages = new MessageRepository(db, Date.now, { dockRate: { burst: 1, perSecond: 0.001 } });
    const send = (text: string, idempotencyKey?: string) =>
      messages.accept({ dockId: dock.id, secretKey: dock.secretKey, text, idempotencyKey });
    const first = await send("deploy done", "deploy-42");
    expect(first).toMatchObject({ kind: "accepted" });
    // The allowance is spent, but a retry of the same request sends nothing and costs nothing.
    expect(await send("deploy done", "deploy-42")).toEqual({
      kind: "replayed",
      messageId: (first as { messageId: string }).messageId,
      subscribers: 0,
    });
    expect(await send("something else", "deploy-42")).toEqual({ kind: "conflict" });
    expect(await send("a new message")).toMatchObject({ kind: "refused" });
    expect(await stored(dock.id)).toEqual(["deploy done"]);
  });

  it("a key's final message replaces its holder and lets the key go; with no holder it is stored keyless", async () => {
    const dock = await docks.create(1, { name: "Alerts", link: null, description: null });
    const messages = new MessageRepository(db);
    const keyOf = async (id: string) =>
      await db.kysely
        .selectFrom("messages")
        .select(["key", "text"])
        .where("id", "=", id)
        .executeTakeFirstOrThrow();
    // No message holds the key: a new one, without it.
    const orphan = await messages.accept({ dockId: dock.id, text: "resolved early", key: "g", final: true });
    expect(orphan).toMatchObject({ kind: "accepted" });
    expect(await keyOf((orphan as { messageId: string }).messageId)).toEqual({
      key: null,
      text: "resolved early",
    });

    const firing = await messages.accept({ dockId: dock.id, text: "firing", key: "g" });
    const id = (firing as { messageId: string }).messageId;
    // A retry of the final send replays it; the key is gone after the first.
    const first = await messages.accept({
      dockId: dock.id,
      text: "resolved",
      key: "g",
      final: true,
      idempotencyKey: "r1",
    });
    expect(first).toMatchObject({ kind: "replaced", messageId: id });
    const retry = await messages.accept({
      dockId: dock.id,
      text: "resolved",
      key: "g",
      final: true,
      idempotencyKey: "r1",
    });
    expect(retry).toMatchObject({ kind: "replayed", messageId: id });
    expect(await keyOf(id)).toEqual({ key: null, text: "resolved" });
    const again = await messages.accept({ dockId: dock.id, text: "firing again", key: "g" });
    expect((again as { messageId: string }).messageId).not.toBe(id);

    // In one batch: the keyed message and its final one make one message, stored keyless.
    const [fired, settled] = await Promise.all([
      messages.accept({ dockId: dock.id, text: "firing", key: "h" }),
      messages.accept({ dockId: dock.id, text: "resolved at once", key: "h", final: true }),
    ]);
    expect(settled).toMatchObject({
      kind: "replaced",
      messageId: (fired as { messageId: string }).messageId,
    });
    expect(await keyOf((fired as { messageId: string }).messageId)).toEqual({
      key: null,
      text: "resolved at once",
    });
  });

  it("keyed sends in one batch each meet the key's holder as the sends before them left it", async () => {
    const dock = await docks.create(1, { name: "Groups", link: null, description: null });
    const messages = new MessageRepository(db);
    const holder = (await messages.accept({ dockId: dock.id, text: "firing", key: "k" })) as {
      messageId: string;
    };
    const other = (await messages.accept({ dockId: dock.id, text: "other", key: "m" })) as {
      messageId: string;
    };
    // Handed over in one turn: one batch, whose keys are looked up together.
    const [update, resolved, refired, fresh, otherUpdate] = await Promise.all([
      messages.accept({ dockId: dock.id, text: "still firing", key: "k" }),
      messages.accept({ dockId: dock.id, text: "resolved", key: "k", final: true }),
      messages.accept({ dockId: dock.id, text: "firing anew", key: "k" }),
      messages.accept({ dockId: dock.id, text: "new group", key: "j" }),
      messages.accept({ dockId: dock.id, text: "other, changed", key: "m" }),
    ]);
    expect(update).toMatchObject({ kind: "replaced", messageId: holder.messageId });
    expect(resolved).toMatchObject({ kind: "replaced", messageId: holder.messageId });
    // The key was let go a send earlier: a new message takes it.
    expect(refired).toMatchObject({ kind: "accepted" });
    expect(fresh).toMatchObject({ kind: "accepted" });
    expect(otherUpdate).toMatchObject({ kind: "replaced", messageId: other.messageId });
    const rows = await db.kysely
      .selectFrom("messages")
      .select(["id", "key", "text"])
      .where("dock_id", "=", dock.id)
      .orderBy("text")
      .execute();
    expect(rows).toEqual(
      [
        { id: (refired as { messageId: string }).messageId, key: "k", text: "firing anew" },
        { id: (fresh as { messageId: string }).messageId, key: "j", text: "new group" },
        { id: other.messageId, key: "m", text: "other, changed" },
        { id: holder.messageId, key: null, text: "resolved" },
      ].sort((a, b) => a.text.localeCompare(b.text)),
    );
  });

  it("a replacement by key finds the key let go since it was read: nothing is changed", async () => {
    const dock = await docks.create(1, { name: "Let go", link: null, description: null });
    const messages = new MessageRepository(db);
    const held = (await messages.accept({ dockId: dock.id, text: "firing", key: "q" })) as {
      messageId: string;
    };
    // Another send resolves it (the key let go) after this one read its holder.
    expect(await messages.accept({ dockId: dock.id, text: "resolved", key: "q", final: true })).toMatchObject(
      {
        kind: "replaced",
      },
    );
    const revised = await db.kysely
      .transaction()
      .execute((tx) =>
        reviseMessage(
          tx,
          { messageId: held.messageId, revision: null, text: "firing anew", content: null, heldKey: "q" },
          Date.now(),
          db.messageLocks,
        ),
      );
    expect(revised).toBeUndefined();
    expect(await stored(dock.id)).toEqual(["resolved"]);
  });

  it("tells the dispatcher only about Docks that got a message", async () => {
    const [open, limited] = await Promise.all([
      docks.create(1, { name: "Open", link: null, description: null }),
      docks.create(1, { name: "Limited", link: null, description: null }),
    ]);
    const messages = new MessageRepository(db, Date.now, { dockRate: { burst: 1, perSecond: 0.001 } });
    const told: string[][] = [];
    messages.onAccepted((dockIds) => told.push(dockIds));
    expect((await messages.accept({ dockId: limited.id, text: "spends the allowance" })).kind).toBe(
      "accepted",
    );
    told.length = 0;
    const results = await Promise.all([
      // A stranger's guess: whatever dock_id it names must not wake anyone.
      messages.accept({ dockId: "dock_strangersguess000000", secretKey: "dnsk_nope", text: "x" }),
      messages.accept({ dockId: open.id, secretKey: `${open.secretKey}x`, text: "wrong key" }),
      messages.accept({ dockId: limited.id, text: "over the rate" }),
    ]);
    expect(results.map((r) => r.kind)).toEqual(["unauthorized", "unauthorized", "refused"]);
    expect(told).toEqual([]);
    await messages.accept({ dockId: open.id, secretKey: open.secretKey, text: "right key" });
    expect(told).toEqual([[open.id]]);
  });

  it("checks every message's key, even when the Dock is read once for the batch", async () => {
    const dock = await docks.create(1, { name: "Keys", link: null, description: null });
    const messages = new MessageRepository(db);
    const results = await Promise.all([
      messages.accept({ dockId: dock.id, secretKey: dock.secretKey, text: "right" }),
      messages.accept({ dockId: dock.id, secretKey: `${dock.secretKey}x`, text: "wrong" }),
      messages.accept({ dockId: dock.id, secretKey: dock.secretKey, text: "right again" }),
      messages.accept({ dockId: "not a dock", secretKey: dock.secretKey, text: "nowhere" }),
    ]);
    expect(results.map((r) => r.kind)).toEqual(["accepted", "unauthorized", "accepted", "unauthorized"]);
    expect(await stored(dock.id)).toEqual(["right", "right again"]);
  });

  // SQLite commits batches in the order they were handed over; PostgreSQL writes several at once
  // (Db.batchesAtOnce), so messages handed over together have no order among themselves there.
  it.runIf(dialect === "sqlite")(
    "queues each Dock's messages in the order they were handed over, across batches",
    async () => {
      const dock = await docks.create(1, { name: "Order", link: null, description: null });
      await new SubscriptionRepository(db).subscribe(dock.id, 4242, "private");
      const messages = new MessageRepository(db);
      const texts = Array.from({ length: 600 }, (_, i) => `m${String(i).padStart(3, "0")}`);
      const results = await Promise.all(texts.map((text) => messages.accept({ dockId: dock.id, text })));
      expect(results.every((r) => r.kind === "accepted")).toBe(true);
      // More than two batches' worth (256 each); the fan-outs are the order the dispatcher follows.
      const queued = await db.kysely
        .selectFrom("fanouts")
        .innerJoin("messages", "messages.id", "fanouts.message_id")
        .select("messages.text")
        .where("fanouts.dock_id", "=", dock.id)
        .orderBy("fanouts.id")
        .execute();
      expect(queued.map((row) => row.text)).toEqual(texts);
    },
  );

  it("queues a message sent after another's answer after it, while other batches are written at once", async () => {
    const dock = await docks.create(1, { name: "In turn", link: null, description: null });
    await new SubscriptionRepository(db).subscribe(dock.id, 4243, "private");
    const messages = new MessageRepository(db);
    // A storm of other sends to the same Dock keeps several batches in flight all along.
    let storming = true;
    const storm = (async () => {
      let n = 0;
      while (storming) {
        await Promise.all(
          Array.from({ length: 40 }, () => messages.accept({ dockId: dock.id, text: `storm ${n++}` })),
        );
      }
    })();
    const inTurn: string[] = [];
    for (let i = 0; i < 60; i++) {
      const text = `turn ${String(i).padStart(2, "0")}`;
      expect((await messages.accept({ dockId: dock.id, text })).kind).toBe("accepted");
      inTurn.push(text);
    }
    storming = false;
    await storm;
    const queued = await db.kysely
      .selectFrom("fanouts")
      .innerJoin("messages", "messages.id", "fanouts.message_id")
      .select("messages.text")
      .where("fanouts.dock_id", "=", dock.id)
      .where("messages.text", "like", "turn %")
      .orderBy("fanouts.id")
      .execute();
    expect(queued.map((row) => row.text)).toEqual(inTurn);
  });

  it.runIf(dialect === "sqlite")("a transaction in progress is never interleaved with a batch", async () => {
    const dock = await docks.create(1, { name: "Exclusive", link: null, description: null });
    const messages = new MessageRepository(db);
    const events: string[] = [];
    let accepted: Promise<unknown> = Promise.resolve();
    await db.kysely.transaction().execute(async (tx) => {
      await tx.updateTable("docks").set({ name: "Renamed" }).where("id", "=", dock.id).execute();
      accepted = messages.accept({ dockId: dock.id, text: "during" }).then(() => events.push("accepted"));
      // Long enough for the batch to be handed over, were it allowed to.
      await new Promise((resolve) => setTimeout(resolve, 50));
      await tx.updateTable("docks").set({ name: "Renamed twice" }).where("id", "=", dock.id).execute();
      events.push("committing");
    });
    await accepted;
    // The batch waited for the connection: run inside the transaction, it would have failed.
    expect(events).toEqual(["committing", "accepted"]);
    expect(await stored(dock.id)).toEqual(["during"]);
  });

  it("a message still waiting for its batch at its deadline is refused and never stored; PostgreSQL gives up the batches under way too", async ({
    onTestFinished,
  }) => {
    const dock = await docks.create(1, { name: "Deadline", link: null, description: null });
    const messages = new MessageRepository(db, Date.now, { timeoutMs: 1000 });
    // Another session holds what the batches must write, and lets go only at the end (or when the
    // test fails: the lock would hold up the next tests).
    const release = await holdMessages(database);
    onTestFinished(release);
    const handedOver = () => new Promise((resolve) => setImmediate(resolve));
    const settle = (promise: Promise<unknown>) =>
      promise.then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      );
    // Two batches under way (each handed over in a turn of its own), a third message waiting.
    const first = settle(messages.accept({ dockId: dock.id, text: "first" }));
    await handedOver();
    const second = settle(messages.accept({ dockId: dock.id, text: "second" }));
    await handedOver();
    const third = await settle(messages.accept({ dockId: dock.id, text: "third" }));
    expect(third).toEqual({ error: expect.objectContaining({ code: "ETIMEDOUT" }) });
    expect(isDatabaseUnavailable((third as { error: unknown }).error)).toBe(true);
    await release();
    const underWay = await Promise.all([first, second]);
    if (dialect === "postgres") {
      // Given up at the deadline (rolled back): refused like the one that waited.
      for (const outcome of underWay)
        expect(isDatabaseUnavailable((outcome as { error: unknown }).error)).toBe(true);
      expect(await stored(dock.id)).toEqual([]);
    } else {
      // SQLite's thread finishes what it was given (it waits up to busy_timeout for the lock).
      expect(underWay).toEqual([
        { value: expect.objectContaining({ kind: "accepted" }) },
        { value: expect.objectContaining({ kind: "accepted" }) },
      ]);
      expect(await stored(dock.id)).toEqual(["first", "second"]);
    }
  });

  it("counts only the subscribers the fan-out will reach: those subscribed by the time of acceptance", async () => {
    const dock = await docks.create(1, { name: "Audience", link: null, description: null });
    const accepted = Date.now() - 60_000;
    await new SubscriptionRepository(db, () => accepted - 1000).subscribe(dock.id, 501, "private");
    // Subscribed after the message's time (a batch's time is when it was handed over).
    await new SubscriptionRepository(db, () => accepted + 1000).subscribe(dock.id, 502, "private");
    const result = await new MessageRepository(db, () => accepted).accept({ dockId: dock.id, text: "t" });
    expect(result).toMatchObject({ kind: "accepted", subscribers: 1 });
  });

  it("rolls back to a savepoint inside a transaction", async () => {
    const dock = await docks.create(1, { name: "Savepoint", link: null, description: null });
    const trx = await db.kysely.startTransaction().execute();
    await trx.updateTable("docks").set({ name: "kept" }).where("id", "=", dock.id).execute();
    const inner = await trx.savepoint("before_rename").execute();
    await inner.updateTable("docks").set({ name: "undone" }).where("id", "=", dock.id).execute();
    const back = await inner.rollbackToSavepoint("before_rename").execute();
    await back.releaseSavepoint("before_rename").execute();
    await back.commit().execute();
    const row = await db.kysely
      .selectFrom("docks")
      .select("name")
      .where("id", "=", dock.id)
      .executeTakeFirst();
    expect(row?.name).toBe("kept");
  });

  it("passes the database's own errors on, with their codes", async () => {
    const dock = await docks.create(1, { name: "Errors", link: null, description: null });
    const insert = () =>
      db.kysely
        .insertInto("docks")
        .values({
          id: dock.id,
          owner_id: 1,
          name: "Twin",
          link: null,
          description: null,
          secret_hash: "00",
          secret_sealed: "00",
          signing_sealed: "00",
          created_at: 0,
          updated_at: 0,
        })
        .execute();
    const error = (await insert().catch((e: unknown) => e)) as { code?: string; errcode?: number };
    expect(error).toBeInstanceOf(Error);
    // What callers outside the thread recognise a duplicate by.
    expect(isUniqueViolation(error)).toBe(true);
    if (dialect === "sqlite")
      expect(error.errcode).toBe(1555); // SQLITE_CONSTRAINT_PRIMARYKEY
    else expect(error.code).toBe("23505");
  });

  it.runIf(dialect === "sqlite")("keeps the event loop turning while a long statement runs", async () => {
    let finished = false;
    // A few hundred milliseconds of work inside SQLite.
    const counting = sql<{ n: number }>`
      with recursive c(x) as (select 1 union all select x + 1 from c where x < 3000000)
      select count(*) as n from c`
      .execute(db.kysely)
      .then((result) => {
        finished = true;
        return result;
      });
    // One turn of the event loop, however busy the machine (a timer of a few ms could be late by
    // the statement's length). On the event loop, the statement would have run to its end first.
    await new Promise((resolve) => setImmediate(resolve));
    expect(finished).toBe(false);
    expect((await counting).rows[0]?.n).toBe(3000000);
  });
});

describe("the SQLite thread", () => {
  it("reports a database it cannot open on the first statement, and closes cleanly", async () => {
    const database = await createTestDatabase("sqlite");
    // A file where the database's folder should be.
    const blocker = join(database.dataDir, "not-a-folder");
    writeFileSync(blocker, "");
    const db = await openDb(`sqlite:${join(blocker, "test.db")}`);
    // The reason names the path.
    await expect(migrate(db)).rejects.toThrow(/not-a-folder/);
    await db.close();
    await database.drop();
  });

  it("refuses statements and batches once closed; what was handed over before is stored", async () => {
    const database = await createTestDatabase("sqlite", { migrated: true });
    const db = await openDb(database.url);
    await migrate(db);
    const dock = await new DockRepository(db, KEY).create(1, {
      name: "Closing",
      link: null,
      description: null,
    });
    const messages = new MessageRepository(db);
    const before = messages.accept({ dockId: dock.id, text: "before" });
    // Let the batch be handed over, then close while it is being written.
    await new Promise((resolve) => setImmediate(resolve));
    const closing = db.close();
    // Neither of these may hang: they are refused.
    await expect(messages.accept({ dockId: dock.id, text: "after" })).rejects.toThrow(/closed/);
    await expect(db.kysely.selectFrom("docks").selectAll().execute()).rejects.toThrow(/destroyed|closed/);
    expect(await before).toMatchObject({ kind: "accepted" });
    await closing;
    const reopened = await openDb(database.url);
    const stored = await reopened.kysely.selectFrom("messages").select("text").execute();
    expect(stored.map((row) => row.text)).toEqual(["before"]);
    await reopened.close();
    await database.drop();
  });
});

/** PostgreSQL: several instances accept for the same Docks, so they must share each Dock's allowance. */
describe.skipIf(!DIALECTS.includes("postgres"))("a Dock's allowance on PostgreSQL", () => {
  let database: TestDatabase;
  /** Two connections pools, as two instances of the service would have. */
  let one: Db;
  let two: Db;
  let docks: DockRepository;
  const rate = { burst: 3, perSecond: 0.001 };
  /** The tokens in a Dock's row. */
  const level = async (dockId: string) =>
    Number(
      (
        await one.kysely
          .selectFrom("dock_allowances")
          .select("tokens")
          .where("dock_id", "=", dockId)
          .executeTakeFirstOrThrow()
      ).tokens,
    );

  beforeAll(async () => {
    database = await createTestDatabase("postgres", { migrated: true });
    one = await openDb(database.url);
    two = await openDb(database.url);
    await migrate(one);
    docks = new DockRepository(one, KEY);
  });
  afterAll(async () => {
    await one.close();
    await two.close();
    await database.drop();
  });

  it("is shared by every instance: a burst of 3 is 3 in all, not 3 each", async () => {
    const dock = await docks.create(1, { name: "Shared", link: null, description: null });
    const first = new MessageRepository(one, Date.now, { dockRate: rate });
    const second = new MessageRepository(two, Date.now, { dockRate: rate });
    const send = (messages: MessageRepository, n: number) =>
      messages.accept({ dockId: dock.id, secretKey: dock.secretKey, text: `message ${n}` });
    // Both instances at once, meeting the Dock for the first time: neither starts from its own full burst.
    const outcomes = await Promise.all(
      Array.from({ length: 10 }, (_, n) => send(n % 2 === 0 ? first : second, n)),
    );
    expect(outcomes.filter((o) => o.kind === "accepted")).toHaveLength(3);
    const refused = outcomes.filter((o) => o.kind === "refused");
    expect(refused).toHaveLength(7);
    // At 0.001 per second the next token is at most 1,000 s away.
    for (const outcome of refused) {
      expect(outcome).toMatchObject({ kind: "refused" });
      const wait = (outcome as { retryAfterSeconds: number }).retryAfterSeconds;
      expect(wait).toBeGreaterThan(0);
      expect(wait).toBeLessThanOrEqual(1000);
    }
    const stored = await one.kysely
      .selectFrom("messages")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("dock_id", "=", dock.id)
      .executeTakeFirstOrThrow();
    expect(Number(stored.n)).toBe(3);
  });

  it("is spent only by a Dock's own key: wrong keys and other Docks leave it alone", async () => {
    const [dock, other] = await Promise.all([
      docks.create(1, { name: "Mine", link: null, description: null }),
      docks.create(1, { name: "Other", link: null, description: null }),
    ]);
    const messages = new MessageRepository(two, Date.now, { dockRate: rate });
    for (let i = 0; i < 5; i++) {
      expect(await messages.accept({ dockId: dock.id, secretKey: other.secretKey, text: "x" })).toEqual({
        kind: "unauthorized",
      });
    }
    await messages.accept({ dockId: other.id, secretKey: other.secretKey, text: "theirs" });
    for (let i = 0; i < 3; i++) {
      expect(
        await messages.accept({ dockId: dock.id, secretKey: dock.secretKey, text: `m${i}` }),
      ).toMatchObject({ kind: "accepted" });
    }
    expect(await messages.accept({ dockId: dock.id, secretKey: dock.secretKey, text: "m3" })).toMatchObject({
      kind: "refused",
    });
  });

  it("is reserved a batch at a time: a wrong key parks nothing, the burst holds in all", async () => {
    const dock = await docks.create(1, { name: "Reserved", link: null, description: null });
    const now = 1_000_000_000_000;
    // A burst of 20, refilling far too slowly to matter here.
    const slow = { burst: 20, perSecond: 0.001 };
    const first = new MessageRepository(one, () => now, { dockRate: slow });
    const second = new MessageRepository(two, () => now, { dockRate: slow });
    const send = (messages: MessageRepository, key: string, n: number) =>
      messages.accept({ dockId: dock.id, secretKey: key, text: `message ${n}` });
    const accepted = (outcomes: { kind: string }[]) => outcomes.filter((o) => o.kind === "accepted").length;
    // One batch of ten, half with a wrong key: it reserves ten, spends five (a wrong key spends
    // nothing) and gives five back to the row.
    const mixed = await Promise.all(
      Array.from({ length: 10 }, (_, n) =>
        send(first, n % 2 === 0 ? dock.secretKey : `${dock.secretKey}x`, n),
      ),
    );
    expect(accepted(mixed)).toBe(5);
    expect(mixed.filter((o) => o.kind === "unauthorized")).toHaveLength(5);
    // Back before anyone of the batch heard their answer.
    expect(Math.floor(await level(dock.id))).toBe(15);
    // The other instance finds the rest: fifteen.
    expect(
      accepted(await Promise.all(Array.from({ length: 20 }, (_, n) => send(second, dock.secretKey, n)))),
    ).toBe(15);
    expect(await send(first, dock.secretKey, 100)).toMatchObject({ kind: "refused" });
  });

  it('has the token back for a sender told "wrong key" who tries again at once', async () => {
    // One message allowed, and no refill to speak of: only the token the wrong key left can admit
    // the right one.
    const messages = new MessageRepository(one, Date.now, { dockRate: { burst: 1, perSecond: 0.001 } });
    for (let n = 0; n < 10; n++) {
      const dock = await docks.create(1, { name: `Retry ${n}`, link: null, description: null });
      expect(
        await messages.accept({ dockId: dock.id, secretKey: `${dock.secretKey}x`, text: "typo" }),
      ).toEqual({ kind: "unauthorized" });
      expect(
        await messages.accept({ dockId: dock.id, secretKey: dock.secretKey, text: "fixed" }),
      ).toMatchObject({ kind: "accepted" });
    }
  });

  it("gives back what a lease left once it runs out", async () => {
    const dock = await docks.create(1, { name: "Leased", link: null, description: null });
    let now = 1_000_000_000_000;
    // 40 a second: a lease is at least 2 tokens (50 ms of the rate).
    const rate = { burst: 100, perSecond: 40 };
    const first = new MessageRepository(one, () => now, { dockRate: rate });
    const second = new MessageRepository(two, () => now, { dockRate: rate });
    const send = (messages: MessageRepository, n: number) =>
      messages.accept({ dockId: dock.id, secretKey: dock.secretKey, text: `message ${n}` });
    // The first instance leases 2 and spends 1: 98 left in the row, 1 held here.
    expect(await send(first, 0)).toMatchObject({ kind: "accepted" });
    const burst = await Promise.all(Array.from({ length: 100 }, (_, n) => send(second, n)));
    expect(burst.filter((o) => o.kind === "accepted")).toHaveLength(98);
    // A second on (40 tokens refilled): the first instance's next batch gives its leftover back
    // and leases 2 for itself, spending 1 — 40 + 1 - 2 = 39 in the row.
    now += LEASE_MS;
    expect(await send(first, 1)).toMatchObject({ kind: "accepted" });
    await waitFor("the leftover to be back", async () => Math.floor(await level(dock.id)) === 39);
  });

  it("several batches of one instance at once share the Dock's burst: none refused while it lasts", async () => {
    const dock = await docks.create(1, { name: "Busy", link: null, description: null });
    const messages = new MessageRepository(one, Date.now, { dockRate: { burst: 60, perSecond: 1 } });
    // One send per turn of the event loop: each its own batch, up to four written at once.
    const sends: Promise<{ kind: string }>[] = [];
    for (let n = 0; n < 20; n++) {
      sends.push(messages.accept({ dockId: dock.id, secretKey: dock.secretKey, text: `busy ${n}` }));
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect((await Promise.all(sends)).map((outcome) => outcome.kind)).toEqual(Array(20).fill("accepted"));
  });

  it("refills at its rate, and goes with its Dock", async () => {
    const dock = await docks.create(1, { name: "Refill", link: null, description: null });
    let now = 1_000_000_000_000;
    const messages = new MessageRepository(one, () => now, { dockRate: { burst: 1, perSecond: 1 } });
    const send = () => messages.accept({ dockId: dock.id, secretKey: dock.secretKey, text: "tick" });
    expect(await send()).toMatchObject({ kind: "accepted" });
    expect(await send()).toMatchObject({ kind: "refused", retryAfterSeconds: 1 });
    now += 1000;
    expect(await send()).toMatchObject({ kind: "accepted" });
    // Another instance whose clock is a little behind does not turn the refill backwards.
    const behind = new MessageRepository(two, () => now - 500, { dockRate: { burst: 1, perSecond: 1 } });
    expect(await behind.accept({ dockId: dock.id, secretKey: dock.secretKey, text: "late" })).toMatchObject({
      kind: "refused",
    });
    await docks.delete(dock.id);
    const left = await one.kysely
      .selectFrom("dock_allowances")
      .select("dock_id")
      .where("dock_id", "=", dock.id)
      .execute();
    expect(left).toEqual([]);
  });
});
