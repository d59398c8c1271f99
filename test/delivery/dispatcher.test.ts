import { randomBytes } from "node:crypto";
import { GrammyError, HttpError } from "grammy";
import pino from "pino";
import { describe, expect, it, type TestContext } from "vitest";
import { Dispatcher } from "../../src/delivery/dispatcher.ts";
import type { RenderedPart } from "../../src/domain/render.ts";
import { createMetrics } from "../../src/runtime/metrics.ts";
import type { Db, Leadership } from "../../src/store/db.ts";
import { DockRepository, type DockWithSecret } from "../../src/store/docks.ts";
import { MessageChanges } from "../../src/store/message-changes.ts";
import { MessageRepository } from "../../src/store/messages.ts";
import { openDb } from "../../src/store/open.ts";
import { Outbox } from "../../src/store/outbox.ts";
import { SubscriptionRepository } from "../../src/store/subscriptions.ts";
import type { CopySender } from "../../src/telegram/copies.ts";
import { Pacer, type PacerLimits } from "../../src/telegram/pacer.ts";
import { createTestDatabase } from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

/** A call the dispatcher made, as the fake Telegram saw it. */
interface Call {
  method: "send" | "edit" | "delete" | "probe";
  chatId: number;
  messageId?: number;
  text?: string;
  /** Date.now() when it was made. */
  at: number;
}

/** What the fake Telegram does with a call before it answers: nothing (it succeeds), throw, or wait. */
type Answer = (call: Call) => void | Promise<void>;

/** Telegram's refusal as grammY throws it. */
function refusal(
  code: number,
  description: string,
  parameters: { retry_after?: number; migrate_to_chat_id?: number } = {},
): GrammyError {
  return new GrammyError(
    `Call failed! (${code}: ${description})`,
    { ok: false, error_code: code, description, parameters },
    "sendMessage",
    {},
  );
}

/** No answer at all (Telegram unreachable), as grammY throws it. */
const unreachable = () =>
  new HttpError("Network request for 'sendMessage' failed!", new Error("ECONNREFUSED"));

/**
 * Telegram played by a few maps, behind the CopySender the dispatcher calls: each chat's messages
 * by id, every call made (`calls`), how many were in flight at most (`maxInFlight`). Edits and
 * deletes answer as Telegram does for a message that is gone or unchanged; `answer` decides the
 * rest (a refusal, a wait the test ends).
 */
class FakeTelegram implements CopySender {
  readonly calls: Call[] = [];
  readonly chats = new Map<number, Map<number, string>>();
  answer: Answer = () => {};
  inFlight = 0;
  maxInFlight = 0;
  #nextId = 1;

  async #call(call: Omit<Call, "at">): Promise<void> {
    const made = { ...call, at: Date.now() };
    this.calls.push(made);
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      await this.answer(made);
    } finally {
      this.inFlight--;
    }
  }

  chat(chatId: number): Map<number, string> {
    const messages = this.chats.get(chatId) ?? new Map<number, string>();
    this.chats.set(chatId, messages);
    return messages;
  }

  /** The texts a chat shows now, oldest first. */
  texts(chatId: number): string[] {
    return [...this.chat(chatId).values()];
  }

  /** The calls of one kind to one chat, in the order they were made. */
  made(method: Call["method"], chatId: number): Call[] {
    return this.calls.filter((call) => call.method === method && call.chatId === chatId);
  }

  async send(chatId: number, part: RenderedPart): Promise<number> {
    await this.#call({ method: "send", chatId, text: part.text });
    const id = this.#nextId++;
    this.chat(chatId).set(id, part.text);
    return id;
  }

  async edit(chatId: number, messageId: number, part: RenderedPart): Promise<void> {
    await this.#call({ method: "edit", chatId, messageId, text: part.text });
    const shown = this.chat(chatId).get(messageId);
    if (shown === undefined) throw refusal(400, "Bad Request: message to edit not found");
    if (shown === part.text)
      throw refusal(400, "Bad Request: message is not modified: specified new message content is the same");
    this.chat(chatId).set(messageId, part.text);
  }

  async delete(chatId: number, messageId: number): Promise<void> {
    await this.#call({ method: "delete", chatId, messageId });
    if (!this.chat(chatId).delete(messageId)) throw refusal(400, "Bad Request: message to delete not found");
  }

  async probe(): Promise<void> {
    await this.#call({ method: "probe", chatId: 0 });
  }
}

/** A promise the test settles: a Telegram call held until then. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open = () => {};
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

/**
 * A leadership the test scripts (like test/unit/campaign.test.ts's): `lose()` takes it away as a
 * failed session does (through `onLost`), and it is won back at the next campaign once `grant`.
 */
class ScriptedLeadership implements Leadership {
  isLeader = false;
  readonly contended = false;
  grant = true;
  attempts = 0;
  #onLost: ((error: Error) => void) | null = null;

  async tryAcquire(
    _onAnnounced: (payload: string) => void,
    onLost: (error: Error) => void,
  ): Promise<boolean> {
    this.attempts++;
    if (!this.grant) return false;
    this.isLeader = true;
    this.#onLost = onLost;
    return true;
  }
  async heartbeat(): Promise<void> {}
  async release(): Promise<void> {
    this.isLeader = false;
  }
  lose(): void {
    this.isLeader = false;
    this.grant = false;
    this.#onLost?.(new Error("the lock's session ended"));
  }

  async others(): Promise<boolean> {
    return false;
  }

  async leave(): Promise<void> {}
}

/**
 * A dispatcher over a real SQLite file (the store as the service uses it) and the fake Telegram:
 * what the dispatcher decides (which call, to which chat, in which order, after which answer) is
 * seen call by call, with no sandbox, no pace and no wall-clock budget in any assertion but a
 * lower bound. The service's paths end to end are test/delivery*.test.ts.
 */
async function setUp(
  onTestFinished: TestContext["onTestFinished"],
  options: {
    leaseMs?: number;
    sweepMs?: number;
    concurrency?: number;
    /** Telegram's limits for the pacer; by default far above what a test sends. */
    limits?: PacerLimits;
    /** Started by the test (`start()`), after it queued work: a start with a backlog. */
    deferStart?: boolean;
    /** Who leads, as the test scripts it; by default the database's (SQLite: always this one). */
    leadership?: Leadership;
  } = {},
) {
  const database = await createTestDatabase("sqlite", { migrated: true });
  const db = await openDb(database.url);
  onTestFinished(async () => {
    await db.close();
    await database.drop();
  });
  const telegram = new FakeTelegram();
  const outbox = new Outbox(db);
  const subscriptions = new SubscriptionRepository(db);
  const docks = new DockRepository(db, randomBytes(32));
  const messages = new MessageRepository(db);
  const changes = new MessageChanges(db);
  const dispatcher = new Dispatcher({
    outbox,
    subscriptions,
    // By default limits far above what a test sends: when a call may go is the pacer's own tests'
    // subject, and the pace test's below.
    pacer: new Pacer(
      options.limits ?? {
        globalPerSecond: 10_000,
        privatePerSecond: 10_000,
        privateBurst: 10_000,
        groupPerMinute: 1e6,
      },
    ),
    log: pino({ level: "silent" }),
    metrics: createMetrics().delivery,
    maxAgeMs: 10 * 60_000,
    leaseMs: options.leaseMs ?? 30_000,
    concurrency: options.concurrency ?? 4,
    rate: 30,
    windowPerDock: 100,
    sweepMs: options.sweepMs ?? 200,
    leadership: options.leadership ?? db.leadership("dispatcher:test"),
    copies: () => telegram,
  });
  messages.onAccepted((dockIds) => dispatcher.wake(dockIds));
  changes.onChanged((dockIds) => dispatcher.wake(dockIds));
  const start = async () => {
    await dispatcher.start({
      apiRoot: "http://fake.invalid",
      token: "1:fake",
      botUsername: "fake_bot",
      sandbox: false,
    });
    onTestFinished(() => dispatcher.stop());
  };
  if (options.deferStart !== true) await start();

  /** A Dock with these chats subscribed (negative ids: groups). */
  const dock = async (name: string, chats: number[]): Promise<DockWithSecret> => {
    const made = await docks.create(1, { name, link: null, description: null });
    for (const chat of chats) await subscriptions.subscribe(made.id, chat, chat < 0 ? "group" : "private");
    return made;
  };
  const send = async (to: DockWithSecret, text: string): Promise<string> => {
    const result = await messages.accept({ dockId: to.id, text });
    if (result.kind !== "accepted") throw new Error(`not accepted: ${result.kind}`);
    return result.messageId;
  };
  const edit = (to: DockWithSecret, messageId: string, text: string) =>
    changes.revise(to.id, messageId, async () => ({ text, content: null }));
  return { telegram, dispatcher, outbox, subscriptions, db, dock, send, edit, start };
}

/** Waits until the one copy being sent to `chatId` has outlived its lease in the database. */
async function leaseExpired(db: Db, chatId: number): Promise<void> {
  await waitFor(`the lease of ${chatId}'s copy expired`, async () => {
    const rows = await db.kysely
      .selectFrom("deliveries")
      .select("lease_until")
      .where("chat_id", "=", chatId)
      .where("state", "=", "sending")
      .execute();
    return rows.length === 1 && Number(rows[0]?.lease_until) < Date.now();
  });
}

/** How a message shows in a chat: the Dock's name on the first line (render.ts). */
const shown = (dock: DockWithSecret, text: string) => `${dock.name}\n${text}`;

describe.concurrent("the dispatcher, call by call", () => {
  it("a chat gets its messages in order, one call at a time; a held call holds up only its own chat", async ({
    onTestFinished,
  }) => {
    const { telegram, dock, send } = await setUp(onTestFinished);
    const alerts = await dock("Alerts", [101, 102]);
    const held = gate();
    // A failed assertion must not leave the call held: stopping the dispatcher waits for it.
    onTestFinished(held.open);
    telegram.answer = (call) =>
      call.chatId === 101 && call.text === shown(alerts, "one") ? held.wait : undefined;
    await send(alerts, "one");
    await send(alerts, "two");
    await send(alerts, "three");
    await waitFor("chat 102 has all three", () => telegram.texts(102).length === 3);
    // 101's first send has not been answered: nothing else went to 101 meanwhile.
    expect(telegram.made("send", 101).map((call) => call.text)).toEqual([shown(alerts, "one")]);
    held.open();
    await waitFor("chat 101 has all three", () => telegram.texts(101).length === 3);
    for (const chat of [101, 102]) {
      expect(telegram.texts(chat)).toEqual(["one", "two", "three"].map((text) => shown(alerts, text)));
      expect(telegram.made("send", chat)).toHaveLength(3);
    }
  });

  it("a failed send is tried again before the chat's next message; each goes once it is answered", {
    timeout: 120_000,
  }, async ({ onTestFinished }) => {
    const { telegram, dock, send } = await setUp(onTestFinished);
    const alerts = await dock("Alerts", [201]);
    let failures = 2;
    telegram.answer = (call) => {
      if (call.text === shown(alerts, "first") && failures-- > 0) throw refusal(502, "Bad Gateway");
    };
    await send(alerts, "first");
    await send(alerts, "second");
    await waitFor("both delivered", () => telegram.texts(201).length === 2, 60_000);
    expect(telegram.made("send", 201).map((call) => call.text)).toEqual([
      shown(alerts, "first"),
      shown(alerts, "first"),
      shown(alerts, "first"),
      shown(alerts, "second"),
    ]);
    expect(telegram.texts(201)).toEqual([shown(alerts, "first"), shown(alerts, "second")]);
  });

  it("429: the chat waits Telegram's retry_after, then gets the message once", async ({ onTestFinished }) => {
    const { telegram, dock, send } = await setUp(onTestFinished);
    const alerts = await dock("Alerts", [301]);
    let limited = true;
    telegram.answer = (call) => {
      if (call.chatId === 301 && limited) {
        limited = false;
        throw refusal(429, "Too Many Requests: retry after 1", { retry_after: 1 });
      }
    };
    await send(alerts, "paced");
    await waitFor("delivered after the wait", () => telegram.texts(301).length === 1);
    const [refused, sent] = telegram.made("send", 301) as [Call, Call];
    expect(telegram.made("send", 301)).toHaveLength(2);
    // Not before Telegram said (a lower bound: a busy machine only makes it later).
    expect(sent.at - refused.at).toBeGreaterThanOrEqual(990);
  });

  it("403 (blocked): that subscription ends and the chat gets nothing more; the others are served", async ({
    onTestFinished,
  }) => {
    const { telegram, dock, send, subscriptions, db } = await setUp(onTestFinished);
    const alerts = await dock("Alerts", [401, 402]);
    telegram.answer = (call) => {
      if (call.chatId === 402) throw refusal(403, "Forbidden: bot was blocked by the user");
    };
    await send(alerts, "before");
    await waitFor("401 served", () => telegram.texts(401).length === 1);
    await waitFor(
      "402's subscription ended",
      async () => (await subscriptions.state(alerts.id, 402)) === "blocked",
    );
    const after = await send(alerts, "after");
    await waitFor("the later message settled", async () => {
      const rows = await db.kysely
        .selectFrom("deliveries")
        .select("state")
        .where("message_id", "=", after)
        .execute();
      return (
        rows.length > 0 && rows.every((row) => row.state !== "queued" && row.state !== "sending") && rows
      );
    });
    // It was for 401 alone.
    expect(
      await db.kysely.selectFrom("deliveries").select("chat_id").where("message_id", "=", after).execute(),
    ).toEqual([{ chat_id: 401 }]);
    expect(telegram.texts(401)).toEqual([shown(alerts, "before"), shown(alerts, "after")]);
    expect(telegram.made("send", 402)).toHaveLength(1);
  });

  it("a group that became a supergroup: the message and the subscription follow it to its new id", async ({
    onTestFinished,
  }) => {
    const { telegram, dock, send, subscriptions } = await setUp(onTestFinished);
    const alerts = await dock("Alerts", [-501]);
    telegram.answer = (call) => {
      if (call.chatId === -501)
        throw refusal(400, "Bad Request: group chat was upgraded to a supergroup chat", {
          migrate_to_chat_id: -100501,
        });
    };
    await send(alerts, "moved");
    await waitFor("delivered to the supergroup", () => telegram.texts(-100501).length === 1);
    expect(telegram.texts(-100501)).toEqual([shown(alerts, "moved")]);
    expect(await subscriptions.state(alerts.id, -100501)).toBe("active");
    await send(alerts, "next");
    await waitFor("the next one too", () => telegram.texts(-100501).length === 2);
    expect(telegram.made("send", -501)).toHaveLength(1);
  });

  it("an edit changes the copy on record in place; a copy the person deleted is sent anew", async ({
    onTestFinished,
  }) => {
    const { telegram, dock, send, edit } = await setUp(onTestFinished);
    const alerts = await dock("Alerts", [601]);
    const id = await send(alerts, "disk 91%");
    await waitFor("delivered", () => telegram.texts(601).length === 1);
    const [copyId] = [...telegram.chat(601).keys()] as [number];
    await edit(alerts, id, "disk 95%");
    await waitFor("edited", () => telegram.chat(601).get(copyId) === shown(alerts, "disk 95%"));
    expect(telegram.made("send", 601)).toHaveLength(1);
    // The person deletes the message in Telegram; the next edit finds it gone and sends it again.
    telegram.chat(601).delete(copyId);
    await edit(alerts, id, "disk 99%");
    await waitFor("sent anew", () => telegram.texts(601).length === 1);
    expect(telegram.texts(601)).toEqual([shown(alerts, "disk 99%")]);
    expect(telegram.made("send", 601)).toHaveLength(2);
  });

  it("Telegram down: one call at a time probes it, nothing is dropped, and everything goes once it answers", {
    timeout: 180_000,
  }, async ({ onTestFinished }) => {
    const { telegram, dispatcher, dock, send } = await setUp(onTestFinished);
    const chats = [701, 702, 703, 704, 705, 706];
    const alerts = await dock("Alerts", chats);
    let up = false;
    // Calls made while Telegram counts as down, and how many of those were unanswered at once. Each
    // takes a while to fail, as an unreachable Telegram does: a breaker that let every chat's
    // send through would have several at once.
    let downCalls = 0;
    let downInFlight = 0;
    let downOverlap = 0;
    telegram.answer = async () => {
      if (up) return;
      const down = dispatcher.telegramStatus().state === "down";
      if (down) {
        downCalls++;
        downOverlap = Math.max(downOverlap, ++downInFlight);
      }
      try {
        await new Promise((resolve) => setTimeout(resolve, 50));
      } finally {
        if (down) downInFlight--;
      }
      throw unreachable();
    };
    await send(alerts, "during the outage");
    await waitFor("Telegram seen down", () => dispatcher.telegramStatus().state === "down");
    await waitFor("probes made while down", () => downCalls >= 4, 60_000);
    expect(downOverlap).toBe(1);
    up = true;
    await waitFor(
      "everything delivered",
      () => chats.every((chat) => telegram.texts(chat).length === 1),
      60_000,
    );
    expect(dispatcher.telegramStatus().state).toBe("up");
    for (const chat of chats) expect(telegram.texts(chat)).toEqual([shown(alerts, "during the outage")]);
  });

  it("a start with a backlog (a restart, a takeover): nothing in the first second, then never more than the bot's limit in any second", async ({
    onTestFinished,
  }) => {
    const { telegram, dock, send, start } = await setUp(onTestFinished, {
      limits: { globalPerSecond: 5, privatePerSecond: 1, privateBurst: 3, groupPerMinute: 20 },
      deferStart: true,
    });
    const chats = Array.from({ length: 12 }, (_, i) => 901 + i);
    const alerts = await dock("Alerts", chats);
    await send(alerts, "backlog");
    const startedAt = Date.now();
    await start();
    await waitFor("all delivered", () => chats.every((chat) => telegram.texts(chat).length === 1), 60_000);
    const at = telegram.calls.filter((call) => call.method === "send").map((call) => call.at);
    // The previous sender's last second still counts at Telegram: the first send waits it out.
    // (Lower bounds only: a busy machine can only make the calls later.)
    expect(Math.min(...at) - startedAt).toBeGreaterThanOrEqual(1000);
    // Each call's place is held until a second after Telegram answered: the sixth call after any
    // call comes a second after it or later.
    at.sort((a, b) => a - b);
    for (let i = 5; i < at.length; i++)
      expect((at[i] as number) - (at[i - 5] as number)).toBeGreaterThanOrEqual(1000);
  });

  it("leadership lost with a send in flight, then won back: nothing goes meanwhile, nothing twice, each chat in order", {
    timeout: 120_000,
  }, async ({ onTestFinished }) => {
    const leadership = new ScriptedLeadership();
    const { telegram, dock, send, db } = await setUp(onTestFinished, { leadership });
    const alerts = await dock("Alerts", [851, 852]);
    const held = gate();
    onTestFinished(held.open);
    telegram.answer = (call) =>
      call.chatId === 851 && call.text === shown(alerts, "one") ? held.wait : undefined;
    await send(alerts, "one");
    await waitFor("852 has the first", () => telegram.texts(852).length === 1);
    await waitFor("851's send under way", () => telegram.made("send", 851).length === 1);

    // The lock's session ends: another instance may lead now. This one sends nothing new…
    leadership.lose();
    await send(alerts, "two");
    const tried = leadership.attempts;
    await waitFor("a campaign lost", () => leadership.attempts > tried, 30_000);
    expect(telegram.made("send", 852)).toHaveLength(1);
    // …and the send it had under way is settled when Telegram answers, not sent again.
    held.open();
    await waitFor("851's first copy on record", async () => {
      const row = await db.kysely
        .selectFrom("deliveries")
        .select("state")
        .where("chat_id", "=", 851)
        .orderBy("id")
        .executeTakeFirst();
      return row?.state === "sent";
    });
    expect(telegram.made("send", 852)).toHaveLength(1);

    // Won back at a later campaign: what waited goes, in each chat's order, once.
    leadership.grant = true;
    await send(alerts, "three");
    await waitFor(
      "every chat has all three",
      () => telegram.texts(851).length === 3 && telegram.texts(852).length === 3,
      60_000,
    );
    for (const chat of [851, 852]) {
      expect(telegram.texts(chat)).toEqual(["one", "two", "three"].map((text) => shown(alerts, text)));
      expect(telegram.made("send", chat)).toHaveLength(3);
    }
  });

  it("edits made while a send outlives its lease: once answered, the copy converges to the last text, sent once", async ({
    onTestFinished,
  }) => {
    const { telegram, dispatcher, dock, send, edit, db } = await setUp(onTestFinished, {
      leaseMs: 200,
      sweepMs: 50,
    });
    const alerts = await dock("Alerts", [861]);
    const held = gate();
    onTestFinished(held.open);
    telegram.answer = (call) => (call.method === "send" && call.chatId === 861 ? held.wait : undefined);
    const id = await send(alerts, "v1");
    await waitFor("the send under way", () => telegram.made("send", 861).length === 1);
    await leaseExpired(db, 861);
    dispatcher.wake();
    // The message changes twice while Telegram has not answered the send of its first text.
    await edit(alerts, id, "v2");
    await edit(alerts, id, "v3");
    held.open();
    await waitFor("nothing left to do", async () => {
      const open = await db.kysely
        .selectFrom("deliveries")
        .select("id")
        .where("state", "in", ["queued", "sending"])
        .execute();
      return open.length === 0 && telegram.texts(861)[0] === shown(alerts, "v3");
    });
    expect(telegram.texts(861)).toEqual([shown(alerts, "v3")]);
    expect(telegram.made("send", 861)).toHaveLength(1);
  });

  it("a send outliving its lease is not sent again while it is still in flight", async ({
    onTestFinished,
  }) => {
    const { telegram, dispatcher, dock, send, db } = await setUp(onTestFinished, {
      leaseMs: 200,
      sweepMs: 50,
    });
    const alerts = await dock("Alerts", [801, 802]);
    const held = gate();
    onTestFinished(held.open);
    telegram.answer = (call) => (call.chatId === 801 ? held.wait : undefined);
    await send(alerts, "slow");
    await waitFor("the send under way", () => telegram.made("send", 801).length === 1);
    // Its lease runs out in the database while Telegram has not answered.
    await leaseExpired(db, 801);
    // A sweep (which re-queues expired leases) runs before the next message is read: once that
    // one is delivered, the sweep has seen the expired lease.
    dispatcher.wake();
    await send(alerts, "marker");
    await waitFor("the marker delivered", () => telegram.texts(802).length === 2);
    expect(telegram.made("send", 801)).toHaveLength(1);
    held.open();
    await waitFor("801's copies both on record as sent", async () => {
      const rows = await db.kysely
        .selectFrom("deliveries")
        .select("state")
        .where("chat_id", "=", 801)
        .execute();
      return rows.length === 2 && rows.every((row) => row.state === "sent");
    });
    expect(telegram.texts(801)).toEqual([shown(alerts, "slow"), shown(alerts, "marker")]);
    expect(telegram.made("send", 801)).toHaveLength(2);
  });

  it("an urgent message to more people than the lane holds: nothing sent after it reaches a chat first", async ({
    onTestFinished,
  }) => {
    const { telegram, dock, db, start } = await setUp(onTestFinished, { deferStart: true });
    // 250 people: the urgent lane holds 100 of the Dock's copies at a time (windowPerDock).
    const chats = Array.from({ length: 250 }, (_, i) => 5001 + i);
    const alerts = await dock("Alerts", chats);
    const messages = new MessageRepository(db);
    await messages.accept({
      dockId: alerts.id,
      text: "outage",
      content: { options: { priority: "urgent" } },
    });
    await messages.accept({ dockId: alerts.id, text: "resolved" });
    await start();
    await waitFor("both to everyone", () => chats.every((chat) => telegram.texts(chat).length === 2), 60_000);
    for (const chat of chats) {
      expect(telegram.texts(chat).map((text) => text.split("\n").at(-1))).toEqual(["outage", "resolved"]);
    }
  });
});
