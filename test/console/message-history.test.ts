import fc from "fast-check";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newMessageId } from "../../src/domain/ids.ts";
import { type Db, openDb } from "../../src/store/open.ts";
import { OutboxViews } from "../../src/store/outbox-views.ts";
import type { DeliveryState } from "../../src/store/schema.ts";
import { type ConsoleClient, signIn } from "../helpers/console-client.ts";
import { sandboxOf } from "../helpers/delivery-harness.ts";
import {
  asDock,
  createTestDatabase,
  dialects,
  type RunningService,
  startService,
  type TestDatabase,
} from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

const DIALECTS = await dialects();

// biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON the service answered.
type Json = any;

describe.each(DIALECTS)("the console's message history on %s", (dialect) => {
  let service: RunningService;
  let alice: ConsoleClient;
  let sandbox: ReturnType<typeof sandboxOf>;

  beforeAll(async () => {
    service = await startService(dialect, {}, { pace: "unpaced" });
    alice = await signIn(service, { id: 2001, first_name: "Alice" });
    sandbox = sandboxOf(service);
  });
  afterAll(async () => service.close());

  const createDock = async (name: string) => {
    const created = await alice.call("POST", "/docks", { name });
    expect(created.status).toBe(201);
    return created.body.dock as { id: string; secret_key: string };
  };

  /** The send API as an application calls it, with the Dock's credentials. */
  const api = (dock: { id: string; secret_key: string }, method: string, path: string, body?: unknown) =>
    asDock(service.url, dock, method, path, body);

  const send = async (dock: { id: string; secret_key: string }, body: Record<string, unknown>) => {
    const sent = await api(dock, "POST", "/webhook", body);
    expect(sent.status).toBe(202);
    return sent.body.message_id as string;
  };

  const history = async (dockId: string, query = "") => {
    const answer = await alice.call("GET", `/docks/${dockId}/messages${query}`);
    expect(answer.status).toBe(200);
    return answer.body as { messages: Json[]; next_before: string | null };
  };

  const detail = async (dockId: string, messageId: string, query = "") => {
    const answer = await alice.call("GET", `/docks/${dockId}/messages/${messageId}${query}`);
    expect(answer.status).toBe(200);
    return answer.body as { message: Json; next_after: number | null };
  };

  /** The message's page once `done` says it is as awaited (a timeout names the last one seen). */
  const detailOnce = (dockId: string, messageId: string, what: string, done: (m: Json) => boolean) =>
    waitFor(
      what,
      async () => {
        const { message } = await detail(dockId, messageId);
        if (!done(message)) throw new Error(JSON.stringify(message));
        return message;
      },
      20_000,
    );

  const idsOf = (page: { messages: Json[] }) => page.messages.map((m) => m.id as string);

  it("pages of 20, 20 and 5, newest first: messages arriving between pages are neither repeated nor skipped", async () => {
    const dock = await createDock("Paged");
    const sent: string[] = [];
    for (let i = 1; i <= 45; i++) sent.push(await send(dock, { msg: `message ${i}` }));

    // No parameters: the first page, as the card has always asked for it.
    const first = await history(dock.id);
    expect(first.messages).toHaveLength(20);
    expect(first.next_before).toBe(first.messages[19].id);
    const late = [await send(dock, { msg: "late 1" })];
    const second = await history(dock.id, `?before=${first.next_before}`);
    expect(second.messages).toHaveLength(20);
    late.push(await send(dock, { msg: "late 2" }));
    const third = await history(dock.id, `?before=${second.next_before}&limit=20`);
    expect(third.messages).toHaveLength(5);
    expect(third.next_before).toBeNull();

    const paged = [...idsOf(first), ...idsOf(second), ...idsOf(third)];
    expect(new Set(paged).size).toBe(45);
    expect([...paged].sort()).toEqual([...sent].sort());
    // The pages follow one another in the history's order, as one page of all of them has it.
    const whole = await history(dock.id, "?limit=100");
    expect(whole.next_before).toBeNull();
    expect(idsOf(whole).filter((id) => !late.includes(id))).toEqual(paged);
    expect(idsOf(whole).sort()).toEqual([...sent, ...late].sort());
    const times = whole.messages.map((m) => m.created_at as number);
    expect(times).toEqual([...times].sort((a, b) => b - a));

    // A page that ends exactly at the last message says so only on the next read.
    const exact = await history(dock.id, `?limit=46&before=${whole.messages[0].id}`);
    expect(exact.messages).toHaveLength(46);
    expect(exact.next_before).toBeNull();
  });

  it("search finds text and key, letter case aside, and takes %, _ and \\ literally", async () => {
    const dock = await createDock("Searched");
    const full = await send(dock, { msg: "Disk 100% full on db_1" });
    const ninety = await send(dock, { msg: "disk at 90 percent on db1" });
    const backup = await send(dock, { msg: "Nightly run done", key: "Backup-Job" });
    const slash = await send(dock, { msg: "path C:\\temp is full" });
    await send(dock, { msg: "CPU hot" });
    // Sorted: two messages accepted in the same millisecond are in no particular order.
    const found = async (q: string) => idsOf(await history(dock.id, `?q=${encodeURIComponent(q)}`)).sort();

    expect(await found("DISK")).toEqual([ninety, full].sort());
    expect(await found("backup-job")).toEqual([backup]);
    expect(await found("BACKUP")).toEqual([backup]);
    // As wildcards these would match every message (%), every message with a letter after "db"
    // (_), or nothing in particular (\).
    expect(await found("%")).toEqual([full]);
    expect(await found("db_")).toEqual([full]);
    expect(await found("_")).toEqual([full]);
    expect(await found("\\")).toEqual([slash]);
    expect(await found("0% f")).toEqual([full]);
    expect(await found("nothing like it")).toEqual([]);
    // An empty search is no search.
    expect(await found("")).toHaveLength(5);

    // Search pages like the history.
    const one = await history(dock.id, "?q=disk&limit=1");
    expect(one.next_before).toBe(idsOf(one)[0]);
    const two = await history(dock.id, `?q=disk&limit=1&before=${one.next_before}`);
    expect([...idsOf(one), ...idsOf(two)].sort()).toEqual([ninety, full].sort());
    expect(two.next_before).toBeNull();
  });

  it("state filters, and each copy's state, tries and error in the message's own page", async () => {
    const dock = await createDock("Filtered");
    const nobody = await send(dock, { msg: "before anyone subscribed" });
    const ada = await sandbox.person("Ada");
    const bob = await sandbox.person("Bob");
    await service.subscriptions.subscribe(dock.id, ada, "private", { firstName: "Ada", username: "ada_l" });
    await service.subscriptions.subscribe(dock.id, bob, "private", { firstName: "Bob" });
    // Telegram answers the next send to Bob as it does once someone blocked the bot. (Blocking it
    // in the sandbox would tell the bot at once, and the message would not be for Bob at all.)
    await sandbox.control("POST", "/faults", {
      kind: "forbidden",
      methods: ["sendMessage"],
      chat_id: bob,
      count: 1,
    });

    const both = await send(dock, { msg: "to both of them" });
    const settled = await detailOnce(
      dock.id,
      both,
      "one copy sent, Bob's gone",
      (m) => m.states.sent === 1 && m.states.gone === 1 && Object.keys(m.states).length === 2,
    );
    expect(settled.deliveries_total).toBe(2);
    const copyFor = (m: Json, chatId: number) => m.deliveries.find((d: Json) => d.chat_id === chatId);
    expect(copyFor(settled, ada)).toMatchObject({
      state: "sent",
      attempts: 1,
      last_error: null,
      chat_type: "private",
      name: "Ada (@ada_l)",
      first_name: "Ada",
      username: "ada_l",
      sent_at: expect.any(Number),
      edit: null,
      delete: null,
    });
    expect(copyFor(settled, bob)).toMatchObject({
      state: "gone",
      attempts: 1,
      last_error: "403 Forbidden: bot was blocked by the user",
      name: "Bob",
      sent_at: null,
    });
    // Bob's subscription is blocked now: the next message is for Ada alone.
    await waitFor("Bob's subscription blocked", async () => {
      const { subscribers } = (await alice.call("GET", `/docks/${dock.id}/subscribers`)).body;
      return subscribers.find((s: Json) => s.chat_id === bob)?.state === "blocked";
    });
    const adaOnly = await send(dock, { msg: "to Ada alone" });
    await detailOnce(dock.id, adaOnly, "Ada's copy sent", (m) => m.states.sent === 1);

    // Telegram fails Ada's copies (a 500: retried) until told otherwise.
    await sandbox.control("POST", "/faults", {
      kind: "server_error",
      methods: ["sendMessage"],
      chat_id: ada,
      rate: 1,
    });
    const stuck = await send(dock, { msg: "stuck for a while" });
    try {
      const retrying = await detailOnce(
        dock.id,
        stuck,
        "Ada's copy tried and waiting to be tried again",
        (m) => m.deliveries[0]?.attempts >= 1 && m.deliveries[0]?.last_error !== null,
      );
      expect(retrying.deliveries[0]).toMatchObject({ chat_id: ada, sent_at: null });
      expect(["queued", "sending"]).toContain(retrying.deliveries[0].state);

      const filtered = async (state: string) => idsOf(await history(dock.id, `?state=${state}`));
      expect(await filtered("failed")).toEqual([both]);
      expect(await filtered("pending")).toEqual([stuck]);
      expect(await filtered("delivered")).toEqual([adaOnly]);
      expect(await filtered("no_subscribers")).toEqual([nobody]);
      expect(idsOf(await history(dock.id, "?state=delivered&q=ALONE"))).toEqual([adaOnly]);
      expect(idsOf(await history(dock.id, "?state=delivered&q=both"))).toEqual([]);
    } finally {
      await sandbox.control("DELETE", "/faults");
    }
    // Retried until Telegram took it: at least the failed try and the one that went through.
    const delivered = await detailOnce(dock.id, stuck, "the retried copy sent", (m) => m.states.sent === 1);
    expect(delivered.deliveries[0].attempts).toBeGreaterThanOrEqual(2);
    expect(delivered.deliveries[0].sent_at).toEqual(expect.any(Number));
    expect(idsOf(await history(dock.id, "?state=delivered"))).toEqual([stuck, adaOnly]);
    expect(idsOf(await history(dock.id, "?state=pending"))).toEqual([]);

    // The message's copies page by page.
    const firstCopy = await detail(dock.id, both, "?limit=1");
    expect(firstCopy.message.deliveries).toHaveLength(1);
    expect(firstCopy.message.deliveries_total).toBe(2);
    expect(firstCopy.next_after).toEqual(expect.any(Number));
    const secondCopy = await detail(dock.id, both, `?limit=1&after=${firstCopy.next_after}`);
    expect(secondCopy.message.deliveries).toHaveLength(1);
    expect(secondCopy.next_after).toBeNull();
    expect(
      [...firstCopy.message.deliveries, ...secondCopy.message.deliveries].map((d: Json) => d.chat_id).sort(),
    ).toEqual([ada, bob].sort());
  });

  it("a page lists at most 10 copies of a message, those gone wrong first; its own page lists them all, groups by title", async () => {
    const dock = await createDock("Crowded");
    const reader = await sandbox.person("Grace");
    await service.subscriptions.subscribe(dock.id, reader, "private", { firstName: "Grace" });
    // Chats Telegram does not know: each copy is gone ("chat not found").
    const strangers = Array.from({ length: 11 }, (_, i) => 7_700_000_001 + i);
    for (const chat of strangers) await service.subscriptions.subscribe(dock.id, chat, "private");
    const group = -4_000_000_777;
    await service.subscriptions.subscribe(dock.id, group, "group");
    await service.db.kysely
      .insertInto("chats")
      .values({ chat_id: group, title: "Ops room", updated_at: Date.now() })
      .execute();

    const id = await send(dock, { msg: "to a crowd" });
    const settled = await detailOnce(
      dock.id,
      id,
      "every copy settled",
      (m) => m.states.sent === 1 && m.states.gone === 12,
    );
    expect(settled.deliveries).toHaveLength(13);
    expect(settled.deliveries_total).toBe(13);
    expect(settled.deliveries.find((d: Json) => d.chat_id === group)).toMatchObject({
      chat_type: "group",
      name: "Ops room",
      state: "gone",
      last_error: expect.stringContaining("chat not found"),
    });
    expect(settled.deliveries.find((d: Json) => d.chat_id === reader)).toMatchObject({ name: "Grace" });

    const [listed] = (await history(dock.id)).messages;
    expect(listed).toMatchObject({ id, states: { sent: 1, gone: 12 }, deliveries_total: 13 });
    expect(listed.deliveries).toHaveLength(10);
    // The list's lines name their chats as the message's page does.
    const named = new Map(settled.deliveries.map((d: Json) => [d.chat_id, d.name]));
    for (const line of listed.deliveries) expect(line.name).toBe(named.get(line.chat_id));
    expect(listed.deliveries.every((d: Json) => d.state === "gone")).toBe(true);
    // The lines of a page: where each copy stands, and who it went to.
    expect(Object.keys(listed.deliveries[0]).sort()).toEqual(
      ["chat_id", "delete", "edit", "last_error", "name", "state", "updated_at"].sort(),
    );
  });

  it("a copy's edit, its deletion and who acknowledged, in the message's own page", async () => {
    const dock = await createDock("Living");
    const reader = await sandbox.person("Ann");
    await service.subscriptions.subscribe(dock.id, reader, "private", { firstName: "Ann" });
    const id = await send(dock, { msg: "Deploy started", key: "deploy", ack: true });
    await detailOnce(dock.id, id, "the copy sent", (m) => m.states.sent === 1);

    expect((await api(dock, "PATCH", `/messages/${id}`, { msg: "Deploy finished" })).status).toBe(202);
    const edited = await detailOnce(dock.id, id, "the copy edited", (m) => m.changes.edits.edited === 1);
    expect(edited).toMatchObject({ text: "Deploy finished", revision: 2, key: "deploy" });
    expect(edited.deliveries[0]).toMatchObject({
      chat_id: reader,
      state: "sent",
      attempts: 1,
      edit: { state: "done", outcome: "edited", last_error: null, updated_at: expect.any(Number) },
      delete: null,
      // The edit rewrote the copy's row: when it was first sent is no longer known.
      sent_at: null,
    });

    const copy = await waitFor("the edited copy in Ann's chat", async () =>
      (await sandbox.botMessages(reader)).find((m: Json) => m.text.endsWith("Deploy finished")),
    );
    await sandbox.control("POST", `/chats/${reader}/messages/${copy.message_id}/press`, {
      callback_data: `ack:${id}`,
    });
    const acknowledged = await detailOnce(
      dock.id,
      id,
      "the acknowledgement on the copy",
      (m) => m.acknowledged !== null && m.revision === 3 && m.changes.edits.pending === 0,
    );
    expect(acknowledged.acknowledged).toEqual({ name: "Ann", at: expect.any(Number) });
    // Counted in SQL here, from every delivery row by the send API: the same counts.
    const status = async () => (await api(dock, "GET", `/messages/${id}`)).body.message;
    expect(acknowledged.changes).toEqual((await status()).changes);

    expect((await api(dock, "DELETE", `/messages/${id}`)).status).toBe(202);
    const deleted = await detailOnce(dock.id, id, "the copy deleted", (m) => m.changes.deletes.deleted === 1);
    expect(deleted.deleted_at).toEqual(expect.any(Number));
    expect(deleted.deliveries[0].delete).toEqual({
      state: "done",
      outcome: "deleted",
      last_error: null,
      updated_at: expect.any(Number),
    });
    // The list says the same of the copy.
    const [listed] = (await history(dock.id)).messages;
    expect(listed.deliveries[0].delete).toEqual(deleted.deliveries[0].delete);
    expect(listed.changes).toEqual(deleted.changes);
    expect(listed.changes).toEqual((await status()).changes);
  });

  it("refuses a bad limit, before, q, state or after with 400 invalid_request naming it", async () => {
    const dock = await createDock("Strict");
    const id = await send(dock, { msg: "one" });
    const refusals: [string, string][] = [
      ["?limit=0", "limit must be a whole number from 1 to 100."],
      ["?limit=101", "limit must be a whole number from 1 to 100."],
      ["?limit=abc", "limit must be a whole number from 1 to 100."],
      ["?limit=1.5", "limit must be a whole number from 1 to 100."],
      ["?limit=-1", "limit must be a whole number from 1 to 100."],
      ["?limit=", "limit must be a whole number from 1 to 100."],
      ["?limit=1&limit=2", "limit must be a string."],
      ["?before=42", "before must be a message ID (msg_…): the next_before of the page before."],
      ["?before=msg_short", "before must be a message ID (msg_…): the next_before of the page before."],
      ["?state=sent", "state must be one of failed, pending, delivered, no_subscribers."],
      ["?state=", "state must be one of failed, pending, delivered, no_subscribers."],
      [`?q=${"x".repeat(201)}`, "q must be at most 200 characters."],
      [`?q=${"é".repeat(201)}`, "q must be at most 200 characters."],
      ["?q=a%00b", "q must not contain the NUL character."],
    ];
    for (const [query, message] of refusals) {
      const answer = await alice.call("GET", `/docks/${dock.id}/messages${query}`);
      expect({ query, status: answer.status, body: answer.body }).toEqual({
        query,
        status: 400,
        body: { ok: false, error: { code: "invalid_request", message } },
      });
    }
    for (const [query, message] of [
      ["?limit=0", "limit must be a whole number from 1 to 1000."],
      ["?limit=1001", "limit must be a whole number from 1 to 1000."],
      ["?after=x", "after must be the next_after of the page before."],
      ["?after=-1", "after must be the next_after of the page before."],
    ] as const) {
      const answer = await alice.call("GET", `/docks/${dock.id}/messages/${id}${query}`);
      expect({ query, status: answer.status, body: answer.body }).toEqual({
        query,
        status: 400,
        body: { ok: false, error: { code: "invalid_request", message } },
      });
    }
    // At the limits: fine.
    expect((await history(dock.id, `?q=${"é".repeat(200)}`)).messages).toEqual([]);
    expect(idsOf(await history(dock.id, "?limit=100"))).toEqual([id]);
    // A message ID that is no message of this Dock (removed since, say) pages by the time in it.
    expect(idsOf(await history(dock.id, "?before=msg_ZZZZZZZZZ0000000000000"))).toEqual([id]);
    expect(idsOf(await history(dock.id, "?before=msg_000000000ZZZZZZZZZZZZZ"))).toEqual([]);
    for (const missing of ["msg_000000000ZZZZZZZZZZZZZ", "nonsense", "msg_%27%20or%201%3D1"]) {
      const answer = await alice.call("GET", `/docks/${dock.id}/messages/${missing}`);
      expect(answer.status).toBe(404);
      expect(answer.body.error).toEqual({ code: "not_found", message: "No such message." });
    }
  });
});

describe.each(DIALECTS)("the history's counts on %s", (dialect) => {
  let database: TestDatabase;
  let db: Db;
  const DOCK = "HistoryCountsDock00000";

  beforeAll(async () => {
    database = await createTestDatabase(dialect, { migrated: true });
    db = await openDb(database.url);
    const now = Date.now();
    await sql`insert into users (telegram_id, created_at) values (1, ${now})`.execute(db.kysely);
    await sql`insert into docks (id, owner_id, name, secret_hash, secret_sealed, created_at, updated_at)
      values (${DOCK}, 1, 'Counts', 'hash', 'sealed', ${now}, ${now})`.execute(db.kysely);
  });
  afterAll(async () => {
    await db.close();
    await database.drop();
  });

  const state = fc.constantFrom<DeliveryState>("queued", "sending", "sent", "failed", "gone");
  const change = (outcomes: string[]) =>
    fc.record({ state, outcome: fc.constantFrom(null, ...outcomes), error: fc.boolean() });
  const copy = fc.record({
    state,
    parts: fc.boolean(),
    error: fc.boolean(),
    edits: fc.array(change(["edited", "unchanged", "resent"]), { maxLength: 3 }),
    deletes: fc.array(change(["deleted", "already_deleted", "not_deleted"]), { maxLength: 2 }),
  });
  const message = fc
    .record({
      copies: fc.array(copy, { maxLength: 14 }),
      missing: fc.integer({ min: 0, max: 2 }),
      waiting: fc.record({ send: fc.boolean(), edit: fc.boolean(), delete: fc.boolean() }),
    })
    // As the service writes them: a message waits to be fanned out only when it has subscribers,
    // and its copies are made in the commit that ends the wait.
    .filter(({ copies, missing, waiting }) => !waiting.send || (copies.length === 0 && missing > 0));

  it("states, changes, filters and listed copies agree with the send API's reading of every row (property)", async () => {
    const views = new OutboxViews(db);
    await fc.assert(
      fc.asyncProperty(message, async ({ copies, missing, waiting }) => {
        const now = Date.now();
        const id = newMessageId(now);
        const subscribers = copies.length + missing;
        await db.kysely
          .insertInto("messages")
          .values({ id, dock_id: DOCK, text: "counted", subscribers, created_at: now })
          .execute();
        const row = (chatId: number, c: { state: DeliveryState; error: boolean }) => ({
          message_id: id,
          dock_id: DOCK,
          chat_id: chatId,
          state: c.state,
          attempts: 1,
          next_attempt_at: now,
          last_error: c.error ? "went wrong" : null,
          created_at: now,
          updated_at: now,
        });
        if (copies.length > 0) {
          await db.kysely
            .insertInto("deliveries")
            .values(copies.map((c, i) => ({ ...row(i + 1, c), telegram_message_ids: c.parts ? "5" : null })))
            .execute();
        }
        const sends = await db.kysely
          .selectFrom("deliveries")
          .select(["id", "chat_id"])
          .where("message_id", "=", id)
          .orderBy("id")
          .execute();
        const changes = copies.flatMap((c, i) => {
          const target = Number(sends[i]?.id);
          return [
            ...c.edits.map((e) => ({
              ...row(i + 1, e),
              kind: "edit" as const,
              target_id: target,
              outcome: e.outcome,
            })),
            ...c.deletes.map((d) => ({
              ...row(i + 1, d),
              kind: "delete" as const,
              target_id: target,
              outcome: d.outcome,
            })),
          ];
        });
        if (changes.length > 0) await db.kysely.insertInto("deliveries").values(changes).execute();
        const fanouts = (["send", "edit", "delete"] as const).filter((kind) => waiting[kind]);
        if (fanouts.length > 0) {
          await db.kysely
            .insertInto("fanouts")
            .values(
              fanouts.map((kind) => ({ message_id: id, dock_id: DOCK, created_at: now, subscribers, kind })),
            )
            .execute();
        }

        const status = await views.status(id, DOCK);
        const [listed] = (await views.history(DOCK, { limit: 1 })).messages;
        const detail = await views.detail(DOCK, id, { limit: 1000, after: 0 });
        expect(listed?.id).toBe(id);
        expect(listed?.changes).toEqual(status?.changes);
        expect(detail?.message.changes).toEqual(status?.changes);
        expect(listed?.deliveriesTotal).toBe(copies.length);
        // The send API counts sending as queued.
        const states = listed?.states ?? {};
        const n = (s: DeliveryState) => states[s] ?? 0;
        expect({
          queued: n("queued") + n("sending"),
          sent: n("sent"),
          failed: n("failed"),
          gone: n("gone"),
        }).toEqual(status?.counts);
        // Each copy, in the message's page and in the list, as the send API sees it.
        const seen = (d: {
          chatId: number;
          state: DeliveryState;
          lastError: string | null;
          edit: unknown;
          delete: unknown;
        }) => ({
          chatId: d.chatId,
          state: d.state,
          lastError: d.lastError,
          edit: d.edit,
          delete: d.delete,
        });
        const expected = (status?.deliveries ?? []).map(seen);
        expect(detail?.message.deliveries.map(seen)).toEqual(expected);
        // Listed: at most 10, failed and gone first, then retried after an error, then the rest.
        const rank = (d: { state: DeliveryState; lastError: string | null }) =>
          d.state === "failed" || d.state === "gone" ? 0 : d.lastError !== null ? 1 : 2;
        const ranked = [...(status?.deliveries ?? [])]
          .map((d, i) => ({ d, i }))
          .sort((a, b) => rank(a.d) - rank(b.d) || a.i - b.i)
          .slice(0, 10)
          .map(({ d }) => seen(d));
        expect(listed?.deliveries.map(seen)).toEqual(ranked);
        // The filters follow the counts.
        const filters = {
          failed: n("failed") + n("gone") > 0,
          pending: n("queued") + n("sending") > 0,
          delivered: subscribers > 0 && n("sent") === subscribers,
          no_subscribers: subscribers === 0,
        };
        for (const [filter, holds] of Object.entries(filters)) {
          const page = await views.history(DOCK, { limit: 1, state: filter as keyof typeof filters });
          expect({ filter, holds: page.messages[0]?.id === id }).toEqual({ filter, holds });
        }
      }),
      { numRuns: 40 },
    );
  });
});
