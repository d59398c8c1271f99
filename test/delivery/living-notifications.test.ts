import { createHmac, randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { INTERNAL_FAILURE } from "../../src/delivery/event-sender.ts";
import type { DockWithSecret } from "../../src/store/docks.ts";
import { MessageChanges } from "../../src/store/message-changes.ts";
import { chromiumPath, launchChromium } from "../helpers/browser.ts";
import { RECEIVERS_HERE, receiver } from "../helpers/callback-receiver.ts";
import { sandboxOf } from "../helpers/delivery-harness.ts";
import {
  basic,
  createTestDatabase,
  dialects,
  type RunningService,
  startService,
  startServiceOver,
} from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON the service and sandbox answered.
type Json = any;

const DIALECTS = await dialects();

describe.each(DIALECTS)("living notifications on %s", (dialect) => {
  let service: RunningService;
  let dock: DockWithSecret;
  let sandbox: ReturnType<typeof sandboxOf>;
  let people: number[];

  beforeAll(async () => {
    // Not about the pace (the next block is): Telegram's limits off, so no case waits out a
    // chat's one message a second.
    service = await startService(
      dialect,
      { AUTH_FAILURES_PER_MINUTE: "0", DOCK_RATE_BURST: "0" },
      { pace: "unpaced" },
    );
    dock = await service.app.docks.create(1, { name: "Alerts", link: null, description: null });
    sandbox = sandboxOf(service);
    people = [await sandbox.person("Ada"), await sandbox.person("Bo")];
    for (const person of people) await service.subscriptions.subscribe(dock.id, person, "private");
  });
  afterAll(async () => service?.close());

  const auth = () => ({ Authorization: basic(dock.id, dock.secretKey) });
  const call = async (
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: Json }> => {
    const response = await fetch(`${service.url}${path}`, {
      method,
      headers: { ...auth(), ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text === "" ? null : JSON.parse(text) };
  };
  const status = async (id: string) => (await call("GET", `/messages/${id}`)).body.message;
  const settled = (id: string, what: string, done: (message: Json) => boolean) =>
    waitFor(what, async () => {
      const message = await status(id);
      return done(message) ? message : undefined;
    });
  const texts = async (person: number) => (await sandbox.botMessages(person)).map((m: Json) => m.text);

  it("an edit changes every copy in place; the status counts them", async () => {
    const sent = await call("POST", "/webhook", { msg: "deploy started", title: "api" });
    expect(sent.status).toBe(202);
    const id = sent.body.message_id;
    await settled(id, "both copies sent", (m) => m.counts.sent === 2);
    const edit = await call("PATCH", `/messages/${id}`, {
      msg: "deploy finished",
      tags: ["white_check_mark"],
    });
    expect(edit.status).toBe(202);
    expect(edit.body).toMatchObject({ revision: 2, edits: 2, queued: 0 });
    const after = await settled(id, "both copies edited", (m) => m.changes.edits.edited === 2);
    expect(after.deliveries.map((d: Json) => d.revision)).toEqual([2, 2]);
    for (const person of people) {
      const messages = await sandbox.botMessages(person);
      expect(messages.at(-1).text).toBe("Alerts\n✅ api\ndeploy finished");
      expect(messages.at(-1).edit_date).toBeDefined();
    }
  });

  it("three sends with one key leave one message per chat showing the third", async () => {
    const before = await Promise.all(people.map(async (p) => (await texts(p)).length));
    let id = "";
    for (const state of ["firing", "still firing", "resolved"]) {
      const sent = await call("POST", "/webhook", { msg: state, key: "disk-full" });
      expect(sent.status).toBe(202);
      id ||= sent.body.message_id;
      expect(sent.body.message_id).toBe(id);
    }
    const found = await call("GET", "/messages?key=disk-full");
    expect(found.body.message.id).toBe(id);
    await waitFor("the third text in every chat", async () => {
      for (const [i, person] of people.entries()) {
        const now = await texts(person);
        if (now.length !== (before[i] as number) + 1 || now.at(-1) !== "Alerts\nresolved") return undefined;
      }
      return true;
    });
  });

  it("a delete removes every copy and cancels what was queued", async () => {
    const sent = await call("POST", "/webhook", { msg: "oops, wrong chat" });
    const id = sent.body.message_id;
    await settled(id, "both copies sent", (m) => m.counts.sent === 2);
    const deleted = await call("DELETE", `/messages/${id}`);
    expect(deleted.body).toMatchObject({ deleting: 2, already_deleted: false });
    await settled(id, "both copies deleted", (m) => m.changes.deletes.deleted === 2);
    for (const person of people) expect(await texts(person)).not.toContain("Alerts\noops, wrong chat");
    expect((await call("PATCH", `/messages/${id}`, { msg: "again" })).status).toBe(409);
    expect((await call("DELETE", `/messages/${id}`)).body.already_deleted).toBe(true);
  });

  it("a copy the person deleted is sent anew by an edit, and its status says so", async () => {
    const sent = await call("POST", "/webhook", { msg: "build 7 running" });
    const id = sent.body.message_id;
    const before = await settled(id, "both copies sent", (m) => m.counts.sent === 2);
    const [ada] = people as [number];
    const adaCopy = before.deliveries.find((d: Json) => d.chat_id === ada).telegram_message_ids[0];
    await sandbox.control("DELETE", `/chats/${ada}/messages/${adaCopy}`);
    await call("PATCH", `/messages/${id}`, { msg: "build 7 passed" });
    const after = await settled(
      id,
      "both copies changed",
      (m) => m.changes.edits.pending === 0 && m.revision === 2,
    );
    expect(after.changes.edits).toMatchObject({ edited: 1, resent: 1 });
    const resent = after.deliveries.find((d: Json) => d.chat_id === ada);
    expect(resent.edit).toMatchObject({ state: "done", outcome: "resent" });
    expect(resent.edit.last_error).toMatch(/message to edit not found/);
    expect(resent.telegram_message_ids[0]).not.toBe(adaCopy);
    expect((await texts(ada)).at(-1)).toBe("Alerts\nbuild 7 passed");
  });

  it("a two-part copy missing its second part is sent anew whole, its first part taken away", async () => {
    const long = `${"alpha ".repeat(900)}\n${"omega ".repeat(300)}`;
    const sent = await call("POST", "/webhook", { msg: long });
    const id = sent.body.message_id;
    const before = await settled(id, "both copies sent", (m) => m.counts.sent === 2);
    const [ada] = people as [number];
    const parts: number[] = before.deliveries.find((d: Json) => d.chat_id === ada).telegram_message_ids;
    expect(parts).toHaveLength(2);
    await sandbox.control("DELETE", `/chats/${ada}/messages/${parts[1]}`);
    await call("PATCH", `/messages/${id}`, { msg: `${long}\nfinal` });
    const after = await settled(
      id,
      "both copies changed",
      (m) => m.changes.edits.pending === 0 && m.revision === 2,
    );
    const copy = after.deliveries.find((d: Json) => d.chat_id === ada);
    expect(copy.edit.outcome).toBe("resent");
    expect(copy.telegram_message_ids).toHaveLength(2);
    const shown = (await sandbox.botMessages(ada)).map((m: Json) => m.message_id);
    expect(shown).not.toContain(parts[0]);
    expect(shown).toEqual(expect.arrayContaining(copy.telegram_message_ids));
  });

  it("Telegram refuses to delete a copy older than 48 hours: the status says which and why", async () => {
    const sent = await call("POST", "/webhook", { msg: "old news" });
    const id = sent.body.message_id;
    const before = await settled(id, "both copies sent", (m) => m.counts.sent === 2);
    const [ada, bo] = people as [number, number];
    const adaCopy = before.deliveries.find((d: Json) => d.chat_id === ada).telegram_message_ids[0];
    await sandbox.control("POST", `/chats/${ada}/messages/${adaCopy}/backdate`, { seconds: 49 * 3600 });
    await call("DELETE", `/messages/${id}`);
    const after = await settled(id, "both deletes settled", (m) => m.changes.deletes.pending === 0);
    expect(after.changes.deletes).toMatchObject({ deleted: 1, not_deleted: 1 });
    const refused = after.deliveries.find((d: Json) => d.chat_id === ada).delete;
    expect(refused).toMatchObject({ state: "failed", outcome: "not_deleted" });
    expect(refused.last_error).toMatch(/message can't be deleted for everyone/);
    expect(await texts(ada)).toContain("Alerts\nold news");
    expect(await texts(bo)).not.toContain("Alerts\nold news");
  });

  it("PATCH merges: fields left out stay, null resets one, a bad one is a 400 naming it", async () => {
    const sent = await call("POST", "/webhook", {
      msg: "*cpu* high",
      format: "markdown",
      title: "Host 3",
      priority: "high",
    });
    const id = sent.body.message_id;
    await settled(id, "both copies sent", (m) => m.counts.sent === 2);
    const bad = await call("PATCH", `/messages/${id}`, { priority: "loud", buttons: "nonsense" });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe("invalid_fields");
    expect(bad.body.error.fields.map((f: Json) => f.field).sort()).toEqual([
      "buttons (action 1)",
      "priority",
    ]);
    expect((await call("PATCH", `/messages/${id}`, { msg: "*cpu* normal", priority: null })).status).toBe(
      202,
    );
    const after = await settled(id, "copies edited", (m) => m.changes.edits.edited === 2);
    expect(after.options).toEqual({ format: "markdown", title: "Host 3" });
    expect((await texts(people[0] as number)).at(-1)).toBe("Alerts\nHost 3\ncpu normal");
  });

  it("another Dock's message, a wrong key or a bad key field: answered as nothing there", async () => {
    const other = await service.app.docks.create(1, { name: "Other", link: null, description: null });
    const sent = await call("POST", "/webhook", { msg: "mine", key: "k-1" });
    const id = sent.body.message_id;
    const as = (method: string) =>
      fetch(`${service.url}/messages/${id}`, {
        method,
        headers: { Authorization: basic(other.id, other.secretKey), "Content-Type": "application/json" },
        ...(method === "PATCH" ? { body: JSON.stringify({ msg: "theirs" }) } : {}),
      });
    expect((await as("PATCH")).status).toBe(404);
    expect((await as("DELETE")).status).toBe(404);
    expect((await call("GET", "/messages?key=k-2")).status).toBe(404);
    const tooLong = await call("POST", "/webhook", { msg: "x", key: "k".repeat(129) });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error.fields).toEqual([{ field: "key", message: "must be 1 to 128 characters." }]);
    const notText = await call("POST", "/webhook", { msg: "x", key: 5 });
    expect(notText.body.error.fields).toEqual([{ field: "key", message: "must be a string." }]);
    const wrong = await fetch(`${service.url}/messages/${id}`, {
      method: "DELETE",
      headers: { Authorization: basic(dock.id, "dnsk_wrong") },
    });
    expect(wrong.status).toBe(401);
    expect((await call("GET", `/messages/${id}`)).body.message.deleted_at).toBeNull();
  });
});

/** The signature check a receiver writes with nothing but an HMAC (as docs/api.md shows). */
function verifies(signingSecret: string, header: string, body: string): boolean {
  const fields = Object.fromEntries(header.split(",").map((part) => part.split("=")));
  const expected = createHmac("sha256", signingSecret).update(`${fields.t}.${body}`).digest("hex");
  return fields.v1 === expected && Math.abs(Date.now() / 1000 - Number(fields.t)) < 300;
}

describe.each(DIALECTS)("edits and deletes at Telegram's pace on %s", (dialect) => {
  let service: RunningService;
  let dock: DockWithSecret;
  let sandbox: ReturnType<typeof sandboxOf>;
  const chats: number[] = [];

  beforeAll(async () => {
    // Telegram's limits kept by the pacer and enforced by the sandbox (a 429 for one too many).
    service = await startService(dialect, { AUTH_FAILURES_PER_MINUTE: "0", DOCK_RATE_BURST: "0" });
    dock = await service.app.docks.create(1, { name: "Fleet", link: null, description: null });
    sandbox = sandboxOf(service);
    for (let i = 0; i < 50; i++) {
      const chat = await sandbox.person(`Reader ${i}`);
      chats.push(chat);
      await service.subscriptions.subscribe(dock.id, chat, "private");
    }
  }, 120_000);
  afterAll(async () => service?.close());

  const call = async (method: string, path: string, body?: unknown): Promise<Json> => {
    const response = await fetch(`${service.url}${path}`, {
      method,
      headers: {
        Authorization: basic(dock.id, dock.secretKey),
        ...(body === undefined ? {} : { "Content-Type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    expect(response.status).toBeLessThan(300);
    return response.json();
  };
  const until = (id: string, what: string, done: (message: Json) => boolean) =>
    waitFor(
      what,
      async () => {
        const { message } = await call("GET", `/messages/${id}`);
        return done(message) ? message : undefined;
      },
      60_000,
      250,
    );
  const copies = async (chat: number) =>
    (await sandbox.botMessages(chat)).filter((m: Json) => m.text.startsWith("Fleet"));

  it("50 chats: every copy edited, then deleted, with no 429 from Telegram", async () => {
    const { message_id: id } = await call("POST", "/webhook", { msg: "rollout 1/3", title: "Rollout" });
    await until(id, "50 copies sent", (m) => m.counts.sent === 50);

    const edit = await call("PATCH", `/messages/${id}`, { msg: "rollout 3/3 ✅" });
    expect(edit).toMatchObject({ revision: 2, edits: 50 });
    const edited = await until(id, "50 copies edited", (m) => m.changes.edits.edited === 50);
    expect(edited.deliveries.every((d: Json) => d.revision === 2 && d.edit.state === "done")).toBe(true);
    for (const chat of chats) {
      const [copy] = await copies(chat);
      expect(copy.text).toBe("Fleet\nRollout\nrollout 3/3 ✅");
    }

    const deleted = await call("DELETE", `/messages/${id}`);
    expect(deleted).toMatchObject({ deleting: 50, cancelled: 0 });
    const gone = await until(id, "50 copies deleted", (m) => m.changes.deletes.deleted === 50);
    expect(gone.deleted_at).not.toBeNull();
    for (const chat of chats) expect(await copies(chat)).toEqual([]);
    expect((await sandbox.control("GET", "/stats")).too_many_requests).toBe(0);
  }, 120_000);

  it("edits made while the copies are still going out: every copy ends showing the last", async () => {
    const { message_id: id } = await call("POST", "/webhook", { msg: "v0" });
    // The 50 copies take over a second at Telegram's 30 a second: these land while some are in
    // flight, some sent and some still queued.
    for (let version = 1; version <= 5; version++) {
      await waitFor(`${version * 8} copies sent`, async () => {
        const { message } = await call("GET", `/messages/${id}`);
        return message.counts.sent >= version * 8 ? true : undefined;
      });
      await call("PATCH", `/messages/${id}`, { msg: `v${version}` });
    }
    const done = await until(
      id,
      "every copy at revision 6",
      (m) =>
        m.counts.sent === 50 &&
        m.changes.edits.pending === 0 &&
        m.deliveries.every((d: Json) => d.revision === 6),
    );
    expect(done.revision).toBe(6);
    for (const chat of chats) {
      const shown = (await copies(chat)).map((m: Json) => m.text);
      expect(shown.at(-1)).toBe("Fleet\nv5");
      expect(shown.filter((text: string) => text.startsWith("Fleet\nv"))).toHaveLength(1);
    }
    expect((await sandbox.control("GET", "/stats")).too_many_requests).toBe(0);
  }, 120_000);

  it("an edit that needs more parts sends them; one that needs fewer deletes the rest", async () => {
    const long = `${"word ".repeat(1000)}\n${"more ".repeat(600)}`;
    const chat = chats[0] as number;
    const { message_id: id } = await call("POST", "/webhook", { msg: "short" });
    const sent = await until(id, "copies sent", (m) => m.counts.sent === 50);
    const first = sent.deliveries.find((d: Json) => d.chat_id === chat);
    expect(first.telegram_message_ids).toHaveLength(1);

    await call("PATCH", `/messages/${id}`, { msg: long });
    const grown = await until(id, "copies grown to two parts", (m) => m.changes.edits.edited === 50);
    const two = grown.deliveries.find((d: Json) => d.chat_id === chat).telegram_message_ids;
    expect(two).toHaveLength(2);
    expect(two[0]).toBe(first.telegram_message_ids[0]);

    await call("PATCH", `/messages/${id}`, { msg: "short again" });
    const shrunk = await until(id, "copies back to one part", (m) =>
      m.deliveries.every((d: Json) => d.revision === 3 && d.telegram_message_ids.length === 1),
    );
    expect(shrunk.deliveries.find((d: Json) => d.chat_id === chat).telegram_message_ids).toEqual([two[0]]);
    const left = (await sandbox.botMessages(chat)).map((m: Json) => m.message_id);
    expect(left).toContain(two[0]);
    expect(left).not.toContain(two[1]);
    expect((await sandbox.control("GET", "/stats")).too_many_requests).toBe(0);
  }, 120_000);
});

describe.each(DIALECTS)("acknowledgements and the sender's events on %s", (dialect) => {
  let service: RunningService;
  let dock: DockWithSecret;
  let sandbox: ReturnType<typeof sandboxOf>;
  let people: number[];
  let hook: Awaited<ReturnType<typeof receiver>>;

  beforeAll(async () => {
    hook = await receiver();
    service = await startService(
      dialect,
      { AUTH_FAILURES_PER_MINUTE: "0", DOCK_RATE_BURST: "0", ...RECEIVERS_HERE },
      { pace: "unpaced" },
    );
    dock = await service.app.docks.create(1, {
      name: "On call",
      link: null,
      description: null,
      callback_url: hook.url,
    });
    sandbox = sandboxOf(service);
    people = [await sandbox.person("Ada"), await sandbox.person("Bo"), await sandbox.person("Cy")];
    for (const person of people) await service.subscriptions.subscribe(dock.id, person, "private");
  });
  afterAll(async () => {
    await service?.close();
    await hook?.close();
  });

  const send = async (body: Record<string, unknown>): Promise<string> => {
    const response = await fetch(`${service.url}/webhook`, {
      method: "POST",
      headers: { Authorization: basic(dock.id, dock.secretKey), "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    expect(response.status).toBe(202);
    return ((await response.json()) as Json).message_id;
  };
  const status = async (id: string): Promise<Json> =>
    (
      (await (
        await fetch(`${service.url}/messages/${id}`, {
          headers: { Authorization: basic(dock.id, dock.secretKey) },
        })
      ).json()) as Json
    ).message;
  const eventsOf = (id: string) =>
    hook.posts
      .map((post) => ({ ...post, json: JSON.parse(post.body) }))
      .filter((post) => post.json.message?.id === id);

  it("two people press Acknowledge at once: one acknowledgement, shown on every copy, both answered", async () => {
    const id = await send({ msg: "disk 91% full on db-1", title: "Disk", priority: "high", ack: true });
    const copies = await waitFor("every copy with its Acknowledge button", async () => {
      const found = await Promise.all(
        people.map(async (person) =>
          (await sandbox.botMessages(person)).find((m: Json) => m.text.includes("db-1")),
        ),
      );
      return found.every(Boolean) ? found : undefined;
    });
    const button = copies[0].reply_markup.inline_keyboard[0][0];
    expect(button).toEqual({ text: "✔ Acknowledge", callback_data: `ack:${id}` });

    const presses = await Promise.all(
      [0, 1].map((i) =>
        sandbox.control("POST", `/chats/${people[i]}/messages/${copies[i].message_id}/press`, {
          callback_data: button.callback_data,
        }),
      ),
    );
    const answers = await Promise.all(
      presses.map((press: Json) =>
        waitFor("the press answered", async () => {
          const query = await sandbox.control("GET", `/callback-queries/${press.callback_query_id}`);
          return query.answered ? query.answer.text : undefined;
        }),
      ),
    );
    const first = answers.filter((text: string) => text.startsWith("✔ Acknowledged"));
    const later = answers.filter((text: string) => text.startsWith("Already acknowledged by"));
    expect([first.length, later.length]).toEqual([1, 1]);

    const acknowledged = await waitFor("every copy edited", async () => {
      const message = await status(id);
      return message.changes.edits.edited === 3 ? message : undefined;
    });
    expect(["Ada", "Bo"]).toContain(acknowledged.acknowledged.by.name);
    expect(later[0]).toContain(acknowledged.acknowledged.by.name);
    for (const person of people) {
      const copy = (await sandbox.botMessages(person)).find((m: Json) => m.text.includes("db-1"));
      expect(copy.text).toMatch(
        new RegExp(
          `\\n\\n✔ Acknowledged by ${acknowledged.acknowledged.by.name} at \\d{1,2} \\w{3}, \\d{2}:\\d{2} UTC$`,
        ),
      );
      expect(copy.reply_markup).toBeUndefined();
    }
    const rows = await service.db.kysely
      .selectFrom("events")
      .select("type")
      .where("message_id", "=", id)
      .execute();
    expect(rows.filter((row) => row.type === "message.acknowledged")).toHaveLength(1);
    const event = await waitFor("the acknowledgement posted", async () =>
      eventsOf(id).find((post) => post.json.type === "message.acknowledged"),
    );
    expect(event.json.acknowledged.by.name).toBe(acknowledged.acknowledged.by.name);
    expect(verifies(dock.signingSecret, String(event.headers["dock-signature"]), event.body)).toBe(true);
  });

  it("an alert firing anew under its key asks for an acknowledgement again; resolving keeps who took it", async () => {
    const fire = (msg: string, ack: boolean) => send({ msg, key: "refire", ...(ack ? { ack: true } : {}) });
    const id = await fire("🔥 queue stuck", true);
    const copy = await waitFor("Ada's copy with its button", async () =>
      (await sandbox.botMessages(people[0] as number)).find((m: Json) => m.text.includes("queue stuck")),
    );
    await sandbox.control("POST", `/chats/${people[0]}/messages/${copy.message_id}/press`, {
      callback_data: `ack:${id}`,
    });
    await waitFor("acknowledged", async () => ((await status(id)).acknowledged ? true : undefined));
    expect(await fire("✅ queue moving", false)).toBe(id);
    expect((await status(id)).acknowledged.by.name).toBe("Ada");
    expect(await fire("🔥 queue stuck again", true)).toBe(id);
    const again = await status(id);
    expect(again.acknowledged).toBeNull();
    const shown = await waitFor("the button back on Ada's copy", async () => {
      const now = (await sandbox.botMessages(people[0] as number)).find(
        (m: Json) => m.message_id === copy.message_id,
      );
      return now?.text.includes("again") && now.reply_markup ? now : undefined;
    });
    expect(shown.text).not.toContain("Acknowledged by");
    expect(shown.reply_markup.inline_keyboard[0][0].callback_data).toBe(`ack:${id}`);
  });

  it("three acknowledgements racing in the database (as from several instances): exactly one wins", async () => {
    const id = await send({ msg: "queue depth 10k", ack: true });
    const sent = await waitFor("every copy sent", async () => {
      const message = await status(id);
      return message.counts.sent === 3 ? message : undefined;
    });
    const changes = new MessageChanges(service.db);
    const results = await Promise.all(
      sent.deliveries.map((copy: Json, i: number) =>
        changes.acknowledge(
          id,
          { id: copy.chat_id, name: `Person ${i}`, username: null },
          { chatId: copy.chat_id, telegramMessageId: copy.telegram_message_ids[0] },
        ),
      ),
    );
    expect(results.filter((r) => r.kind === "first")).toHaveLength(1);
    expect(results.filter((r) => r.kind === "already")).toHaveLength(2);
    // A press under another message of the chat (or any chat without a copy) acknowledges nothing.
    const stranger = await changes.acknowledge(
      id,
      { id: 1, name: "Mallory", username: null },
      { chatId: sent.deliveries[0].chat_id, telegramMessageId: 999_999 },
    );
    expect(stranger.kind).toBe("missing");
    const events = await service.db.kysely
      .selectFrom("events")
      .select("type")
      .where("message_id", "=", id)
      .where("type", "=", "message.acknowledged")
      .execute();
    expect(events).toHaveLength(1);
  });

  it("message.delivered is posted once per message, signed; a receiver answering 500 gets it again later", async () => {
    hook.status.code = 500;
    const id = await send({ msg: "nightly backup done" });
    await waitFor("two failed posts", async () => (eventsOf(id).length >= 2 ? true : undefined));
    // Between tries the event waits, queued, with the receiver's answer as its error (a try may be
    // under way at any moment: waited for, not raced).
    const failing = await waitFor("the event queued again after a 500", async () => {
      const event = (await status(id)).events[0];
      return event?.state === "queued" ? event : undefined;
    });
    // The receiver is at an internal address: its owner is told it did not take the event, the
    // operator's log says why.
    expect(failing).toMatchObject({
      type: "message.delivered",
      state: "queued",
      last_error: INTERNAL_FAILURE,
    });
    expect(
      service.logs.lines.some((line) => {
        const entry = JSON.parse(line);
        return entry.msg === "callback event will be retried" && entry.reason === "HTTP 500";
      }),
    ).toBe(true);
    hook.status.code = 200;
    await waitFor("the event taken", async () =>
      (await status(id)).events[0]?.state === "sent" ? true : undefined,
    );
    const posts = eventsOf(id);
    // Every attempt is the same event, signed anew.
    expect(new Set(posts.map((post) => post.json.id)).size).toBe(1);
    expect(posts.every((post) => post.json.type === "message.delivered")).toBe(true);
    expect(posts.at(-1)?.json.message.copies).toEqual({ sent: 3, failed: 0, gone: 0 });
    for (const post of posts)
      expect(verifies(dock.signingSecret, String(post.headers["dock-signature"]), post.body)).toBe(true);
    // Signed with the signing secret, not with the secret key (which can send: review D1).
    expect(dock.signingSecret).toMatch(/^dnss_[A-Za-z0-9]{33}$/);
    expect(verifies(dock.secretKey, String(posts[0]?.headers["dock-signature"]), posts[0]?.body ?? "")).toBe(
      false,
    );
  });

  it("a new signing secret signs the events from then on; a new secret key changes no signature", async () => {
    const signedWith = async (msg: string) => {
      const id = await send({ msg });
      const post = await waitFor(`the event of "${msg}" posted`, async () =>
        eventsOf(id).find((p) => p.json.type === "message.delivered"),
      );
      return (secret: string) => verifies(secret, String(post.headers["dock-signature"]), post.body);
    };
    const old = dock.signingSecret;
    const rotated = await service.app.docks.rotateSigningSecret(dock.id);
    expect(rotated).toMatch(/^dnss_/);
    expect(rotated).not.toBe(old);
    const newSecret = await signedWith("after the signing secret rotated");
    expect([newSecret(rotated as string), newSecret(old)]).toEqual([true, false]);

    await service.app.docks.rotateSecret(dock.id);
    const reread = (await service.app.docks.get(dock.id)) as DockWithSecret;
    expect(reread.signingSecret).toBe(rotated);
    dock = reread;
    const afterKey = await signedWith("after the secret key rotated");
    expect([afterKey(rotated as string), afterKey(dock.secretKey)]).toEqual([true, false]);
  });
});

describe.each(DIALECTS)("what the sender is told, and replays, on %s", (dialect) => {
  let service: RunningService;
  let hook: Awaited<ReturnType<typeof receiver>>;

  beforeAll(async () => {
    hook = await receiver();
    service = await startService(
      dialect,
      { AUTH_FAILURES_PER_MINUTE: "0", DOCK_RATE_BURST: "0", ...RECEIVERS_HERE },
      { pace: "unpaced" },
    );
  });
  afterAll(async () => {
    await service?.close();
    await hook?.close();
  });

  const dockWith = (name: string) =>
    service.app.docks.create(1, { name, link: null, description: null, callback_url: hook.url });
  const post = async (dock: DockWithSecret, body: unknown, headers: Record<string, string> = {}) => {
    const response = await fetch(`${service.url}/webhook`, {
      method: "POST",
      headers: {
        Authorization: basic(dock.id, dock.secretKey),
        "Content-Type": "application/json",
        ...headers,
      },
      body: JSON.stringify(body),
    });
    return { status: response.status, headers: response.headers, body: (await response.json()) as Json };
  };
  const eventsOf = (id: string) =>
    hook.posts.map((p) => JSON.parse(p.body)).filter((event) => event.message?.id === id);

  it("a message nobody was subscribed to is reported failed, with its state", async () => {
    const dock = await dockWith("Nobody");
    const { body } = await post(dock, { msg: "into the void" });
    const [event] = await waitFor("the event", async () => {
      const found = eventsOf(body.message_id);
      return found.length > 0 ? found : undefined;
    });
    expect(event).toMatchObject({
      type: "message.failed",
      message: { state: "no_subscribers", subscribers: 0 },
    });
  });

  it("a message deleted before it reached anyone is not reported, and is never sent", async () => {
    const dock = await dockWith("Deleted early");
    const sandbox = sandboxOf(service);
    const person = await sandbox.person("Eve");
    await service.subscriptions.subscribe(dock.id, person, "private");
    // Telegram refuses every send for now: the copy waits, and is deleted meanwhile.
    await sandbox.control("POST", "/faults", {
      kind: "server_error",
      rate: 1,
      methods: ["sendMessage"],
      chat_id: person,
    });
    try {
      const { body } = await post(dock, { msg: "not for your eyes" });
      const auth = { Authorization: basic(dock.id, dock.secretKey) };
      await waitFor("a failed attempt", async () => {
        const { message } = (await (
          await fetch(`${service.url}/messages/${body.message_id}`, { headers: auth })
        ).json()) as Json;
        return message.deliveries[0]?.attempts > 0 ? true : undefined;
      });
      expect(
        (await fetch(`${service.url}/messages/${body.message_id}`, { method: "DELETE", headers: auth }))
          .status,
      ).toBe(202);
      await sandbox.control("DELETE", "/faults");
      const after = await waitFor("the copy cancelled", async () => {
        const { message } = (await (
          await fetch(`${service.url}/messages/${body.message_id}`, { headers: auth })
        ).json()) as Json;
        return message.deliveries[0]?.state === "gone" ? message : undefined;
      });
      expect(after.deliveries[0].last_error).toBe("the message was deleted");
      const row = await service.db.kysely
        .selectFrom("messages")
        .select("report_pending")
        .where("id", "=", body.message_id)
        .executeTakeFirstOrThrow();
      expect(row.report_pending).toBe(0);
      expect(eventsOf(body.message_id)).toEqual([]);
      expect((await sandbox.botMessages(person)).map((m: Json) => m.text)).not.toContain(
        "Deleted early\nnot for your eyes",
      );
    } finally {
      await sandbox.control("DELETE", "/faults");
    }
  });

  it("a retried replacement with its Idempotency-Key is a replay: the newer text stays", async () => {
    const dock = await dockWith("Replays");
    const first = await post(dock, { msg: "firing", key: "cpu" }, { "Idempotency-Key": "a1" });
    const replace = await post(dock, { msg: "resolved", key: "cpu" }, { "Idempotency-Key": "a2" });
    expect(replace.body).toMatchObject({ message_id: first.body.message_id, replaced: true, revision: 2 });
    const newer = await post(dock, { msg: "firing again", key: "cpu" }, { "Idempotency-Key": "a3" });
    expect(newer.body.revision).toBe(3);
    // The client lost the answer to a2 and sends it again: nothing changes.
    const retry = await post(dock, { msg: "resolved", key: "cpu" }, { "Idempotency-Key": "a2" });
    expect(retry.status).toBe(202);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    // The first answer, whole: it replaced the message, which was then at revision 2.
    expect(retry.body).toMatchObject({ message_id: first.body.message_id, replaced: true, revision: 2 });
    const conflict = await post(dock, { msg: "other", key: "cpu" }, { "Idempotency-Key": "a2" });
    expect(conflict.status).toBe(422);
    const message = await service.db.kysely
      .selectFrom("messages")
      .select(["text", "revision"])
      .where("id", "=", first.body.message_id)
      .executeTakeFirstOrThrow();
    expect(message).toEqual({ text: "firing again", revision: 3 });
  });

  it("a receiver that hangs holds up its own Dock's events only", async () => {
    const stuck = await receiver();
    stuck.status.code = 0;
    try {
      const slow = await service.app.docks.create(1, {
        name: "Slow receiver",
        link: null,
        description: null,
        callback_url: stuck.url,
      });
      for (let i = 0; i < 6; i++) await post(slow, { msg: `into a hanging receiver ${i}` });
      await waitFor("a post to the hanging receiver", async () =>
        stuck.posts.length > 0 ? true : undefined,
      );
      const dock = await dockWith("Prompt receiver");
      const { body } = await post(dock, { msg: "for the prompt one" });
      await waitFor("the other Dock's event", async () =>
        eventsOf(body.message_id).length > 0 ? true : undefined,
      );
      // One post at a time to the hanging receiver, however many of its Dock's events wait.
      expect(stuck.status.mostOpen).toBe(1);
    } finally {
      await stuck.close();
    }
  });

  it("key null is no key; a PATCH with nothing to change is a 400", async () => {
    const dock = await dockWith("Nulls");
    const sent = await post(dock, { msg: "plain", key: null });
    expect(sent.status).toBe(202);
    const empty = await fetch(`${service.url}/messages/${sent.body.message_id}`, {
      method: "PATCH",
      headers: { Authorization: basic(dock.id, dock.secretKey), "Content-Type": "application/json" },
      body: "{}",
    });
    expect(empty.status).toBe(400);
    expect(((await empty.json()) as Json).error.code).toBe("invalid_request");
  });
});

describe.each(DIALECTS)("events survive a restart on %s", (dialect) => {
  it("an event the receiver could not take before the service stopped is posted after it starts again", async () => {
    const database = await createTestDatabase(dialect, { migrated: true });
    const key = randomBytes(32);
    const hook = await receiver();
    hook.status.code = 503;
    const env = { AUTH_FAILURES_PER_MINUTE: "0", DOCK_RATE_BURST: "0", ...RECEIVERS_HERE };
    let service = await startServiceOver(database, env, key);
    try {
      const dock = await service.app.docks.create(1, {
        name: "Restart",
        link: null,
        description: null,
        callback_url: hook.url,
      });
      const sandbox = sandboxOf(service);
      const person = await sandbox.person("Di");
      await service.subscriptions.subscribe(dock.id, person, "private");
      const response = await fetch(`${service.url}/webhook`, {
        method: "POST",
        headers: { Authorization: basic(dock.id, dock.secretKey), "Content-Type": "text/plain" },
        body: "before the restart",
      });
      const id = ((await response.json()) as Json).message_id;
      await waitFor("a refused post", async () => (hook.posts.length > 0 ? true : undefined));
      await service.close();
      hook.status.code = 200;
      const refused = hook.posts.length;
      service = await startServiceOver(database, env, key);
      const taken = await waitFor("the event posted after the restart", async () => {
        const row = await service.db.kysely
          .selectFrom("events")
          .selectAll()
          .where("message_id", "=", id)
          .executeTakeFirst();
        return row?.state === "sent" ? row : undefined;
      });
      expect(taken.type).toBe("message.delivered");
      expect(hook.posts.length).toBeGreaterThan(refused);
      expect(new Set(hook.posts.map((post) => JSON.parse(post.body).id)).size).toBe(1);
    } finally {
      await service.close();
      await hook.close();
      await database.drop();
    }
  });
});

describe("an alert's life in the sandbox, in Chromium", () => {
  it.skipIf(!chromiumPath)(
    "firing turns into resolved in place, acknowledged by a person pressing the button; the sender hears of both",
    async () => {
      const hook = await receiver();
      const service = await startService("sqlite", {
        AUTH_FAILURES_PER_MINUTE: "0",
        DOCK_RATE_BURST: "0",
        ...RECEIVERS_HERE,
      });
      const browser = await launchChromium();
      try {
        const dock = await service.app.docks.create(1, {
          name: "Prometheus",
          link: null,
          description: null,
          callback_url: hook.url,
        });
        const sandbox = sandboxOf(service);
        const ada = await sandbox.person("Ada");
        await service.subscriptions.subscribe(dock.id, ada, "private");
        const alert = (fields: Record<string, unknown>) =>
          fetch(`${service.url}/webhook`, {
            method: "POST",
            headers: { Authorization: basic(dock.id, dock.secretKey), "Content-Type": "application/json" },
            body: JSON.stringify({ key: "HighLatency/api-1", format: "markdown", ack: true, ...fields }),
          }).then(async (response) => ((await response.json()) as Json).message_id as string);

        const page = await browser.newPage({ viewport: { width: 480, height: 700 } });
        await page.goto(`${service.url}/sandbox`);
        const log = page.getByRole("log", { name: "Messages" });
        const id = await alert({
          msg: "**HighLatency** on `api-1`: p99 2.4 s for 5 min",
          title: "Firing",
          priority: "urgent",
          tags: ["fire"],
        });
        const message = log.locator("li", { hasText: "HighLatency" }).last();
        await message.getByRole("button", { name: /Acknowledge/ }).click();
        await message.getByText(/✔ Acknowledged by Ada at/).waitFor();
        expect(await message.getByRole("button", { name: /Acknowledge/ }).count()).toBe(0);

        expect(
          await alert({
            msg: "**HighLatency** on `api-1` is over",
            ack: false,
            title: "Resolved",
            tags: ["white_check_mark"],
          }),
        ).toBe(id);
        await message.getByText("✅ Resolved").waitFor();
        await message.getByText(/✔ Acknowledged by Ada at/).waitFor();
        await message.getByText(/edited/).waitFor();
        // In place: the chat holds one notification, now resolved.
        expect(await log.locator("li", { hasText: "HighLatency" }).count()).toBe(1);
        mkdirSync("test-results", { recursive: true });
        await page.screenshot({ path: "test-results/living-notification.png", fullPage: true });

        const events = await waitFor("both events posted", async () => {
          const types = hook.posts.map((post) => JSON.parse(post.body).type);
          return types.includes("message.acknowledged") && types.includes("message.delivered")
            ? hook.posts
            : undefined;
        });
        for (const post of events) {
          expect(verifies(dock.signingSecret, String(post.headers["dock-signature"]), post.body)).toBe(true);
        }
        const acknowledged = JSON.parse(
          events.find((post) => JSON.parse(post.body).type === "message.acknowledged")?.body ?? "{}",
        );
        expect(acknowledged).toMatchObject({
          message: { id, key: "HighLatency/api-1" },
          acknowledged: { by: { name: "Ada" } },
        });
      } finally {
        await browser.close();
        await service.close();
        await hook.close();
      }
    },
    120_000,
  );
});

describe.skipIf(!DIALECTS.includes("postgres"))("message locks on postgres", () => {
  it("a change waits for a copy's settle under way, and copies' settles never wait for each other", async () => {
    const service = await startService("postgres", { AUTH_FAILURES_PER_MINUTE: "0", DOCK_RATE_BURST: "0" });
    try {
      const dock = await service.app.docks.create(1, { name: "Locks", link: null, description: null });
      const response = await fetch(`${service.url}/webhook`, {
        method: "POST",
        headers: { Authorization: basic(dock.id, dock.secretKey), "Content-Type": "text/plain" },
        body: "v1",
      });
      const id = ((await response.json()) as Json).message_id as string;
      const locks = service.db.messageLocks;
      // This test's database only: other tests' services share the server (and take advisory locks).
      const thisDatabase = sql`database = (select oid from pg_database where datname = current_database())`;
      const waiting = async () =>
        Number(
          (
            await sql<{
              n: number;
            }>`select count(*) as n from pg_locks where locktype = 'advisory' and not granted and ${thisDatabase}`.execute(
              service.db.kysely,
            )
          ).rows[0]?.n,
        );
      // Two settles hold the message's lock at once (as copies settling together do)…
      let release = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      const settles = [0, 1].map(() =>
        service.db.kysely.transaction().execute(async (tx) => {
          await locks.shared(tx, id);
          await held;
        }),
      );
      await waitFor("both settles holding the lock", async () => {
        const { rows } = await sql<{
          n: number;
        }>`select count(*) as n from pg_locks where locktype = 'advisory' and granted and mode = 'ShareLock' and ${thisDatabase}`.execute(
          service.db.kysely,
        );
        return Number(rows[0]?.n) >= 2 ? true : undefined;
      });
      expect(await waiting()).toBe(0);
      // …and a change of it waits until both have committed.
      let revised = false;
      const change = new MessageChanges(service.db)
        .revise(dock.id, id, async () => ({ text: "v2", content: null }))
        .then((result) => {
          revised = true;
          return result;
        });
      await waitFor("the change waiting for the lock", async () =>
        (await waiting()) === 1 ? true : undefined,
      );
      expect(revised).toBe(false);
      release();
      await Promise.all(settles);
      expect(await change).toMatchObject({ kind: "revised", revision: 2 });
    } finally {
      await service.close();
    }
  });
});
