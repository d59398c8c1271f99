import { sql } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ActivityRepository } from "../../src/store/activity.ts";
import { type ConsoleClient, signIn } from "../helpers/console-client.ts";
import { sandboxOf } from "../helpers/delivery-harness.ts";
import { basic, dialects, type RunningService, startService } from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON the service answered.
type Json = any;

const DIALECTS = await dialects();

const today = () => new Date().toISOString().slice(0, 10);
const DAY_MS = 86_400_000;

/**
 * The daily activity counts, as the console reads them: messages sent through the real service to
 * sandbox subscribers, delivered (or not) by the real dispatcher, counted per Dock and UTC day, and
 * answered by `GET /docks/:id/activity` and the headline numbers of `GET /docks`.
 */
describe.each(DIALECTS)("activity on %s", (dialect) => {
  let service: RunningService;
  let alice: ConsoleClient;
  let sandbox: ReturnType<typeof sandboxOf>;

  beforeAll(async () => {
    service = await startService(
      dialect,
      { DOCK_RATE_BURST: "0", AUTH_FAILURES_PER_MINUTE: "0" },
      // The tests fold the counts' rows themselves, and look at them before.
      { pace: "unpaced", foldIntervalMs: 3_600_000 },
    );
    alice = await signIn(service, { id: 2001, first_name: "Alice" });
    sandbox = sandboxOf(service);
  });
  afterAll(async () => service?.close());

  const createDock = async (name: string) => {
    const created = await alice.call("POST", "/docks", { name });
    expect(created.status).toBe(201);
    return created.body.dock as { id: string; secret_key: string };
  };
  const subscribed = async (dockId: string, ...names: string[]) => {
    const people: number[] = [];
    for (const name of names) {
      const person = await sandbox.person(name);
      await service.subscriptions.subscribe(dockId, person, "private");
      people.push(person);
    }
    return people;
  };
  const send = async (dock: { id: string; secret_key: string }, msg: string) => {
    const response = await fetch(`${service.url}/webhook`, {
      method: "POST",
      headers: { authorization: basic(dock.id, dock.secret_key), "content-type": "application/json" },
      body: JSON.stringify({ msg }),
    });
    expect(response.status).toBe(202);
    return ((await response.json()) as { message_id: string }).message_id;
  };
  const activity = async (dockId: string, query = "") => {
    const answer = await alice.call("GET", `/docks/${dockId}/activity${query}`);
    expect(answer.status).toBe(200);
    return answer.body.days as Json[];
  };
  const todayOf = async (dockId: string) => (await activity(dockId)).at(-1);
  /** Today's counts once `done` says they are final (a timeout names the last ones seen). */
  const countsBecome = (dockId: string, what: string, done: (day: Json) => boolean) =>
    waitFor(
      what,
      async () => {
        const day = await todayOf(dockId);
        if (!done(day)) throw new Error(JSON.stringify(day));
        return day;
      },
      30_000,
    );

  it("counts each message accepted and each copy sent, exactly, on today's UTC day", async () => {
    const dock = await createDock("Deploys");
    const people = await subscribed(dock.id, "Ann", "Ben");
    // At once: they share batches (one count per Dock and batch), and each is counted.
    await Promise.all(Array.from({ length: 12 }, (_, i) => send(dock, `deploy ${i}`)));
    const day = await countsBecome(dock.id, "24 copies sent", (d) => d.sent === 24);
    expect(day).toEqual({ day: today(), accepted: 12, sent: 24, retried: 0, failed: 0, gone: 0 });
    for (const person of people) expect(await sandbox.botTexts(person)).toHaveLength(12);
    // Counted a row per transaction (no copy's settle waits for another's on the day's row), then
    // folded into one row per day with the same sums.
    const rows = () =>
      service.db.kysely.selectFrom("dock_days").select("id").where("dock_id", "=", dock.id).execute();
    const counted = (await rows()).length;
    expect(counted).toBeGreaterThan(1);
    expect(await service.app.activity.fold()).toBe(counted - 1);
    expect(await rows()).toHaveLength(1);
    expect(await todayOf(dock.id)).toEqual(day);
  });

  it("a chat that blocked the bot is gone; a retried copy is still sent once", async () => {
    const dock = await createDock("Outcomes");
    const [blocked, flaky] = await subscribed(dock.id, "Blocks", "Flaky");
    // Telegram's own answers: 403 "bot was blocked by the user" for one chat, a 5xx once for the other.
    await sandbox.control("POST", "/faults", { kind: "forbidden", chat_id: blocked, rate: 1 });
    await sandbox.control("POST", "/faults", {
      kind: "server_error",
      methods: ["sendMessage"],
      chat_id: flaky,
      count: 1,
    });
    try {
      await send(dock, "one for everyone");
      const day = await countsBecome(dock.id, "one copy sent, one gone", (d) => d.sent === 1 && d.gone === 1);
      expect(day).toMatchObject({ accepted: 1, sent: 1, gone: 1, failed: 0, retried: 1 });
      expect(await sandbox.botTexts(flaky as number)).toHaveLength(1);
      const list = (await alice.call("GET", "/docks")).body.docks as Json[];
      expect(list.find((d) => d.id === dock.id).stats).toMatchObject({
        subscribers: 1,
        accepted_7d: 1,
        failed_7d: 0,
        last_message: { states: { sent: 1, gone: 1 } },
      });
    } finally {
      await sandbox.control("DELETE", "/faults");
    }
  });

  it("a copy that never went because its message was deleted first is no chat gone", async () => {
    const dock = await createDock("Retracted");
    const [reader] = await subscribed(dock.id, "Reader");
    // The first message hangs in Telegram for a while; the second waits behind it (a chat's
    // messages go in order) and is deleted meanwhile.
    await sandbox.control("POST", "/faults", {
      kind: "slow",
      methods: ["sendMessage"],
      chat_id: reader,
      count: 1,
      hang_seconds: 3,
    });
    try {
      await send(dock, "first");
      const second = await send(dock, "second, retracted");
      const deleted = await fetch(`${service.url}/messages/${second}`, {
        method: "DELETE",
        headers: { authorization: basic(dock.id, dock.secret_key) },
      });
      expect(deleted.status).toBe(202);
      const day = await countsBecome(dock.id, "the first sent", (d) => d.sent === 1);
      expect(day).toMatchObject({ accepted: 2, sent: 1, gone: 0, failed: 0 });
      const status = await waitFor("the second's copy settled", async () => {
        const response = await fetch(`${service.url}/messages/${second}`, {
          headers: { authorization: basic(dock.id, dock.secret_key) },
        });
        const { message } = (await response.json()) as Json;
        return message.state !== "pending" ? message : undefined;
      });
      expect(status.counts).toMatchObject({ queued: 0, sent: 0, gone: 1 });
      expect((await todayOf(dock.id)).gone).toBe(0);
      expect(await sandbox.botTexts(reader as number)).toEqual([expect.stringContaining("first")]);
    } finally {
      await sandbox.control("DELETE", "/faults");
    }
  });

  it("answers 7 or 30 zero-filled UTC days, oldest first, today last; other values are a 400", async () => {
    const dock = await createDock("Quiet");
    const week = await activity(dock.id);
    expect(week).toHaveLength(7);
    const month = await activity(dock.id, "?days=30");
    expect(month).toHaveLength(30);
    expect(await activity(dock.id, "?days=7")).toEqual(week);
    const zero = { accepted: 0, sent: 0, retried: 0, failed: 0, gone: 0 };
    const expected = Array.from({ length: 30 }, (_, i) => ({
      day: new Date(Date.now() - (29 - i) * DAY_MS).toISOString().slice(0, 10),
      ...zero,
    }));
    // Unless the test ran across midnight UTC, when every day moved by one.
    if (month.at(-1).day === expected.at(-1)?.day) expect(month).toEqual(expected);
    expect(week).toEqual(month.slice(23));
    for (const query of ["?days=14", "?days=", "?days=seven", "?days=7&days=30"]) {
      const answer = await alice.call("GET", `/docks/${dock.id}/activity${query}`);
      expect({ query, status: answer.status, code: answer.body.error?.code }).toEqual({
        query,
        status: 400,
        code: "invalid_request",
      });
    }
  });

  it("the list's headline numbers: subscribers, 7 days' counts, the newest message with a plain preview", async () => {
    const dock = await createDock("Headlines");
    const [person] = await subscribed(dock.id, "Reader");
    const fresh = (await alice.call("GET", `/docks/${dock.id}`)).body.dock;
    expect(fresh.stats).toEqual({ subscribers: 1, accepted_7d: 0, failed_7d: 0, last_message: null });
    await send(dock, "first");
    const long = `**Disk** almost full on\n\ndb-1: ${"x".repeat(200)} 🚀`;
    const response = await fetch(`${service.url}/webhook`, {
      method: "POST",
      headers: { authorization: basic(dock.id, dock.secret_key), "content-type": "application/json" },
      body: JSON.stringify({ msg: long, title: "Ops", format: "markdown" }),
    });
    const newest = ((await response.json()) as { message_id: string }).message_id;
    await waitFor("both delivered", async () => (await sandbox.botTexts(person as number)).length === 2);
    const listed = await waitFor("the newest message sent", async () => {
      const docks = (await alice.call("GET", "/docks")).body.docks as Json[];
      const stats = docks.find((d) => d.id === dock.id)?.stats;
      return stats?.last_message?.states.sent === 1 ? stats : undefined;
    });
    expect(listed).toEqual({
      subscribers: 1,
      accepted_7d: 2,
      failed_7d: 0,
      last_message: {
        id: newest,
        created_at: expect.any(Number),
        // What the chat shows (the title, the text without its Markdown), on one line, 100 characters.
        preview: `Ops Disk almost full on db-1: ${"x".repeat(100 - "Ops Disk almost full on db-1: ".length)}`,
        states: { sent: 1 },
      },
    });
    // The single Dock's answer says the same.
    expect((await alice.call("GET", `/docks/${dock.id}`)).body.dock.stats).toEqual(listed);
  });

  it("the list reads its headline numbers in a fixed number of queries, for 60 Docks as for 1", async () => {
    const many = await signIn(service, { id: 2002, first_name: "Many" });
    for (let i = 0; i < 60; i++) {
      expect((await many.call("POST", "/docks", { name: `Dock ${i}` })).status).toBe(201);
    }
    const one = await createDock("One");
    const [person] = await subscribed(one.id, "Counted");
    await send(one, "something to show");
    await waitFor("delivered", async () => (await sandbox.botTexts(person as number)).length === 1);
    const list = await many.call("GET", "/docks");
    expect(list.status).toBe(200);
    expect(list.body.docks).toHaveLength(60);
    for (const dock of list.body.docks) {
      expect(dock.stats).toEqual({ subscribers: 0, accepted_7d: 0, failed_7d: 0, last_message: null });
    }
    // Every statement the repository runs, counted on its way to the database.
    let statements = 0;
    const counting = service.db.kysely.withPlugin({
      transformQuery: (args) => {
        statements++;
        return args.node;
      },
      transformResult: async (args) => args.result,
    });
    const activity = new ActivityRepository({ ...service.db, kysely: counting });
    const statementsFor = async (ids: string[]) => {
      statements = 0;
      const headlines = await activity.headlines(ids);
      expect(headlines.size).toBe(ids.length);
      return statements;
    };
    const sixty = list.body.docks.map((d: Json) => d.id);
    // With a message (its copies' states are read too) as without: the same for 61 Docks as for 1.
    expect(await statementsFor([one.id, ...sixty])).toBe(await statementsFor([one.id]));
    expect(await statementsFor([one.id])).toBe(4);
  });

  it("a busy day is folded a few hundred rows at a time, its sums kept", async () => {
    const dock = await createDock("Busy");
    // The other tests' Docks folded first: what follows counts this Dock's rows alone.
    await service.app.activity.fold();
    const values = Array.from({ length: 450 }, (_, i) => ({
      dock_id: dock.id,
      day: today(),
      accepted: 1,
      sent: 2,
      retried: i % 2,
      failed: 0,
      gone: 0,
      changed: 0,
    }));
    await service.db.kysely.insertInto("dock_days").values(values).execute();
    const rows = () =>
      service.db.kysely.selectFrom("dock_days").select("id").where("dock_id", "=", dock.id).execute();
    const expected = { day: today(), accepted: 450, sent: 900, retried: 225, failed: 0, gone: 0 };
    expect(await todayOf(dock.id)).toEqual(expected);
    // 200 + 200 + 50 rows, each chunk in its own transaction: three sums, then one.
    expect(await service.app.activity.fold()).toBe(447);
    expect(await rows()).toHaveLength(3);
    expect(await todayOf(dock.id)).toEqual(expected);
    expect(await service.app.activity.fold()).toBe(2);
    expect(await rows()).toHaveLength(1);
    expect(await todayOf(dock.id)).toEqual(expected);
  });

  it("a Dock's counts go with it; days older than 400 are pruned, younger ones kept", async () => {
    const dock = await createDock("Short-lived");
    await send(dock, "hello");
    const rows = () =>
      service.db.kysely.selectFrom("dock_days").select(["day"]).where("dock_id", "=", dock.id).execute();
    await waitFor("the message counted", async () => (await rows()).length === 1);
    const day = (offset: number) => new Date(Date.now() - offset * DAY_MS).toISOString().slice(0, 10);
    await sql`insert into dock_days (dock_id, day, accepted) values (${dock.id}, ${day(402)}, 5), (${dock.id}, ${day(398)}, 7)`.execute(
      service.db.kysely,
    );
    expect(await service.app.activity.prune()).toBe(1);
    expect((await rows()).map((r) => r.day).sort()).toEqual([day(398), today()]);
    expect((await alice.call("DELETE", `/docks/${dock.id}`)).status).toBe(200);
    expect(await rows()).toEqual([]);
    // A count written for a Dock as it was deleted (a settle under way) goes with the next prune.
    await sql`insert into dock_days (dock_id, day, sent) values (${dock.id}, ${today()}, 1)`.execute(
      service.db.kysely,
    );
    expect(await service.app.activity.prune()).toBe(1);
    expect(await rows()).toEqual([]);
  });
});

describe.each(DIALECTS)("activity on %s, a copy that keeps failing", (dialect) => {
  let service: RunningService;
  afterAll(async () => service?.close());

  it("is failed once older than DELIVERY_MAX_AGE_HOURS, and counted so", async () => {
    // Given up on after a second and a bit.
    service = await startService(dialect, { DELIVERY_MAX_AGE_HOURS: "0.0003" }, { pace: "unpaced" });
    const alice = await signIn(service, { id: 2003, first_name: "Alice" });
    const sandbox = sandboxOf(service);
    const dock = (await alice.call("POST", "/docks", { name: "Broken" })).body.dock;
    const broken = await sandbox.person("Broken");
    await service.subscriptions.subscribe(dock.id, broken, "private");
    await sandbox.control("POST", "/faults", {
      kind: "server_error",
      methods: ["sendMessage"],
      chat_id: broken,
      rate: 1,
    });
    const response = await fetch(`${service.url}/webhook`, {
      method: "POST",
      headers: { authorization: basic(dock.id, dock.secret_key), "content-type": "application/json" },
      body: JSON.stringify({ msg: "never arrives" }),
    });
    expect(response.status).toBe(202);
    const day = await waitFor("the copy given up on", async () => {
      const days = (await alice.call("GET", `/docks/${dock.id}/activity`)).body.days as Json[];
      return days.at(-1)?.failed === 1 ? days.at(-1) : undefined;
    });
    expect(day).toMatchObject({ accepted: 1, sent: 0, failed: 1, gone: 0 });
    const list = (await alice.call("GET", "/docks")).body.docks as Json[];
    expect(list.find((d) => d.id === dock.id).stats).toMatchObject({
      failed_7d: 1,
      last_message: { states: { failed: 1 } },
    });
  });
});

describe.runIf(DIALECTS.includes("postgres"))("activity counts and deleting a Dock on postgres", () => {
  let service: RunningService;
  afterAll(async () => service?.close());

  it("a settle's count never waits for its Dock's row: deleting a Dock while a copy settles deadlocks nothing", {
    timeout: 90_000,
  }, async () => {
    // The delete waits for the settle's lock for as long as the test takes to see it wait: on a
    // loaded machine longer than the default 5 s database timeout, which would give it up.
    service = await startService("postgres", { DATABASE_TIMEOUT_SECONDS: "120" }, { pace: "unpaced" });
    const alice = await signIn(service, { id: 2004, first_name: "Alice" });
    const sandbox = sandboxOf(service);
    const dock = (await alice.call("POST", "/docks", { name: "Going" })).body.dock;
    const person = await sandbox.person("Reader");
    await service.subscriptions.subscribe(dock.id, person, "private");
    const response = await fetch(`${service.url}/webhook`, {
      method: "POST",
      headers: { authorization: basic(dock.id, dock.secret_key), "content-type": "application/json" },
      body: JSON.stringify({ msg: "hello" }),
    });
    expect(response.status).toBe(202);
    await waitFor("delivered", async () => (await sandbox.botTexts(person)).length === 1);
    const [copy] = await service.db.kysely
      .selectFrom("deliveries")
      .select("id")
      .where("dock_id", "=", dock.id)
      .execute();
    // A settle as outbox.ts writes it: its copy's row first, then its count (rollups.ts).
    const settle = new pg.Client({ connectionString: service.config.databaseUrl });
    await settle.connect();
    try {
      await settle.query("begin");
      await settle.query("update deliveries set attempts = attempts + 1 where id = $1", [copy?.id]);
      // Meanwhile the owner deletes the Dock: it waits for the copy's row (the cascade)…
      const deleting = service.app.docks.delete(dock.id);
      // Awaited below; a failure meanwhile is the test's, not an unhandled rejection.
      deleting.catch(() => {});
      // (Told by what blocks it: pg_stat_activity's query text can lag behind the statement.)
      await waitFor("the delete waiting for the copy's row", async () => {
        const { rows } = await settle.query(
          "select 1 from pg_stat_activity where datname = current_database() and pg_backend_pid() = any(pg_blocking_pids(pid))",
        );
        return rows.length === 1;
      });
      // …and the settle's count must not wait for the Dock's row in turn (a foreign key's check would).
      await settle.query("insert into dock_days (dock_id, day, sent) values ($1, $2, 1)", [dock.id, today()]);
      await settle.query("commit");
      expect(await deleting).toBe(true);
    } finally {
      await settle.end();
    }
    expect((await alice.call("GET", `/docks/${dock.id}`)).status).toBe(404);
  });
});
