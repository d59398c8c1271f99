import { GrammyError } from "grammy";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type RunningSandbox, startSandbox } from "../helpers/sandbox-harness.ts";

// Edits and deletions of sent messages, as Telegram treats them: the flood limits they share with
// sendMessage, the 48-hour window of deleteMessage, and messages a person deleted.

const json = (body: unknown): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body),
});

const TOO_MANY = {
  ok: false,
  error_code: 429,
  description: "Too Many Requests: retry after 3",
  parameters: { retry_after: 3 },
};

const buttons = (data: string) => ({ inline_keyboard: [[{ text: data, callback_data: data }]] });

/** The GrammyError a call fails with, so a test can look at Telegram's code and description. */
async function failure(call: Promise<unknown>): Promise<GrammyError> {
  try {
    await call;
  } catch (error) {
    if (error instanceof GrammyError) return error;
    throw error;
  }
  throw new Error("the call succeeded");
}

describe("sandbox flood limits on edits and deletions", () => {
  // A frozen clock, moved on by hand: windows fill and empty exactly when a test says so.
  const clock = { now: 1_700_000_000_000 };
  let sandbox: RunningSandbox;
  beforeAll(async () => {
    sandbox = await startSandbox({ rateLimits: true, now: () => clock.now });
  });
  afterAll(() => sandbox.close());
  // Every test starts with empty windows.
  beforeEach(() => {
    clock.now += 3_600_000;
  });

  const call = (method: string, body: Record<string, unknown>) => sandbox.raw(method, json(body));

  it("editMessageText, editMessageReplyMarkup and deleteMessage take sendMessage's places: 429 with retry_after once the chat's are used", async () => {
    const chat = await sandbox.startedPerson();
    await sandbox.control("DELETE", "/stats");
    const sent = await call("sendMessage", { chat_id: chat, text: "v1" });
    expect(sent.status).toBe(200);
    const id = sent.body.result.message_id as number;
    expect((await call("editMessageText", { chat_id: chat, message_id: id, text: "v2" })).status).toBe(200);
    const markup = { chat_id: chat, message_id: id, reply_markup: buttons("a") };
    expect((await call("editMessageReplyMarkup", markup)).status).toBe(200);

    // Three in three seconds used: every kind of call now waits, with sendMessage's answer.
    const limited = [
      await call("editMessageText", { chat_id: chat, message_id: id, text: "v3" }),
      await call("editMessageReplyMarkup", { ...markup, reply_markup: buttons("b") }),
      await call("deleteMessage", { chat_id: chat, message_id: id }),
      await call("sendMessage", { chat_id: chat, text: "more" }),
    ];
    for (const answer of limited) expect([answer.status, answer.body]).toEqual([429, TOO_MANY]);
    const history = await sandbox.control("GET", `/chats/${chat}/messages?limit=1`);
    expect(history.body[0]).toMatchObject({ message_id: id, text: "v2", reply_markup: buttons("a") });
    expect((await sandbox.control("GET", "/stats")).body).toMatchObject({
      send_message: 2,
      edit_message: 4,
      delete_message: 1,
      too_many_requests: 4,
    });

    // Once the first of them leaves the window, there is room again.
    clock.now += 3_000;
    expect((await call("deleteMessage", { chat_id: chat, message_id: id })).body).toEqual({
      ok: true,
      result: true,
    });
  });

  it("an edit that changes nothing is answered 'not modified' without taking a place, even once the limit is used", async () => {
    const chat = await sandbox.startedPerson();
    const id = (await sandbox.api.sendMessage(chat, "v1")).message_id;
    await sandbox.api.editMessageText(chat, id, "v2");
    for (let i = 0; i < 5; i++) {
      const same = await failure(sandbox.api.editMessageText(chat, id, "v2"));
      expect([same.error_code, same.description]).toEqual([
        400,
        expect.stringMatching(/^Bad Request: message is not modified: /),
      ]);
    }
    // The five refusals took nothing: the chat's third place is still free.
    expect(await sandbox.api.editMessageText(chat, id, "v3")).toMatchObject({ text: "v3" });
    const unchanged = await failure(sandbox.api.editMessageText(chat, id, "v3"));
    expect(unchanged.error_code).toBe(400);
    const limited = await failure(sandbox.api.editMessageText(chat, id, "v4"));
    expect([limited.error_code, limited.parameters.retry_after]).toEqual([429, 3]);
  });

  it("errors about the message come before the limit: a missing message is 'not found', not 429", async () => {
    const chat = await sandbox.startedPerson();
    for (let i = 0; i < 3; i++) await sandbox.api.sendMessage(chat, `m${i}`);
    expect((await failure(sandbox.api.editMessageText(chat, 999, "x"))).description).toBe(
      "Bad Request: message to edit not found",
    );
    expect((await failure(sandbox.api.deleteMessage(chat, 999))).description).toBe(
      "Bad Request: message to delete not found",
    );
  });

  it("in a group, edits and deletes count toward its 20 messages a minute", async () => {
    const admin = await sandbox.person();
    const group = (await sandbox.control("POST", "/groups", { title: "G", members: [admin] })).body
      .id as number;
    await sandbox.control("POST", `/chats/${group}/bot`, { from: admin, status: "member" });
    const ids: number[] = [];
    for (let i = 0; i < 10; i++) ids.push((await sandbox.api.sendMessage(group, `m${i}`)).message_id);
    for (const id of ids.slice(0, 5)) await sandbox.api.editMessageText(group, id, "edited");
    for (const id of ids.slice(0, 5)) expect(await sandbox.api.deleteMessage(group, id)).toBe(true);
    // 10 sends, 5 edits and 5 deletes: the minute's 20 places are used.
    const remaining = ids[5] as number;
    const deleteRefused = await call("deleteMessage", { chat_id: group, message_id: remaining });
    const editRefused = await call("editMessageText", { chat_id: group, message_id: remaining, text: "x" });
    for (const answer of [deleteRefused, editRefused]) {
      expect([answer.status, answer.body.parameters]).toEqual([429, { retry_after: 60 }]);
    }
  });
});

describe("sandbox deleteMessage's 48-hour window", () => {
  const clock = { now: 1_700_000_000_000 };
  let sandbox: RunningSandbox;
  beforeAll(async () => {
    sandbox = await startSandbox({ now: () => clock.now });
  });
  afterAll(() => sandbox.close());

  const HOURS_48 = 48 * 60 * 60;

  it("a message backdated 48 hours or more can't be deleted for everyone; a younger one is deleted", async () => {
    const chat = await sandbox.startedPerson();
    const old = await sandbox.api.sendMessage(chat, "old");
    const edge = await sandbox.api.sendMessage(chat, "just inside");
    const fresh = await sandbox.api.sendMessage(chat, "fresh");

    const backdated = await sandbox.control("POST", `/chats/${chat}/messages/${old.message_id}/backdate`, {
      seconds: HOURS_48,
    });
    expect(backdated.status).toBe(200);
    expect(backdated.body).toMatchObject({
      message_id: old.message_id,
      text: "old",
      date: old.date - HOURS_48,
    });
    const refused = await failure(sandbox.api.deleteMessage(chat, old.message_id));
    expect([refused.error_code, refused.description]).toEqual([
      400,
      "Bad Request: message can't be deleted for everyone",
    ]);

    await sandbox.control("POST", `/chats/${chat}/messages/${edge.message_id}/backdate`, {
      seconds: HOURS_48 - 1,
    });
    expect(await sandbox.api.deleteMessage(chat, edge.message_id)).toBe(true);
    expect(await sandbox.api.deleteMessage(chat, fresh.message_id)).toBe(true);

    const history = await sandbox.control("GET", `/chats/${chat}/messages`);
    expect(history.body.map((m: { text: string }) => m.text)).toEqual(["/start", "old"]);
    expect(history.body[1].date).toBe(old.date - HOURS_48);
  });

  it("backdate: 404 for an unknown chat or message, 400 unless seconds is a positive integer", async () => {
    const chat = await sandbox.startedPerson();
    const id = (await sandbox.api.sendMessage(chat, "x")).message_id;
    const cases: [string, unknown, number][] = [
      ["/chats/42/messages/1/backdate", { seconds: 10 }, 404],
      [`/chats/${chat}/messages/999/backdate`, { seconds: 10 }, 404],
      [`/chats/${chat}/messages/${id}/backdate`, { seconds: 0 }, 400],
      [`/chats/${chat}/messages/${id}/backdate`, { seconds: -5 }, 400],
      [`/chats/${chat}/messages/${id}/backdate`, { seconds: 1.5 }, 400],
      [`/chats/${chat}/messages/${id}/backdate`, { seconds: "soon" }, 400],
      [`/chats/${chat}/messages/${id}/backdate`, {}, 400],
    ];
    for (const [path, body, status] of cases) {
      const answer = await sandbox.control("POST", path, body);
      expect([path, body, answer.status]).toEqual([path, body, status]);
      expect(answer.body.error.code).toBe(status === 404 ? "not_found" : "invalid_request");
    }
    // Nothing was moved by the refused requests.
    const history = await sandbox.control("GET", `/chats/${chat}/messages?limit=1`);
    expect(history.body[0].date).toBe(Math.floor(clock.now / 1000));
  });

  it("the bot deletes a person's message in a private chat, in a group only as an administrator", async () => {
    const alice = await sandbox.startedPerson();
    const start = (await sandbox.control("GET", `/chats/${alice}/messages`)).body[0];
    expect(await sandbox.api.deleteMessage(alice, start.message_id)).toBe(true);

    const bob = await sandbox.person();
    const group = (
      await sandbox.control("POST", "/groups", { title: "Team", members: [alice, bob], admins: [alice] })
    ).body.id as number;
    await sandbox.control("POST", `/chats/${group}/bot`, { from: alice, status: "member" });
    const said = (await sandbox.control("POST", `/chats/${group}/messages`, { from: bob, text: "hi all" }))
      .body.message_id as number;
    const refused = await failure(sandbox.api.deleteMessage(group, said));
    expect([refused.error_code, refused.description]).toEqual([400, "Bad Request: message can't be deleted"]);
    await sandbox.control("POST", `/chats/${group}/bot`, { from: alice, status: "administrator" });
    expect(await sandbox.api.deleteMessage(group, said)).toBe(true);
  });
});

describe("sandbox messages a person deleted", () => {
  let sandbox: RunningSandbox;
  beforeAll(async () => {
    sandbox = await startSandbox();
  });
  afterAll(() => sandbox.close());

  it("a bot message the person deleted is gone: edits answer 'message to edit not found', deleteMessage 'message to delete not found'", async () => {
    const chat = await sandbox.startedPerson();
    const sent = await sandbox.api.sendMessage(chat, "Build failed", { reply_markup: buttons("retry") });
    const events = await fetch(`${sandbox.root}/api/events`);
    const reader = (events.body as ReadableStream<Uint8Array>)
      .pipeThrough(new TextDecoderStream())
      .getReader();

    const deleted = await sandbox.control("DELETE", `/chats/${chat}/messages/${sent.message_id}`);
    expect([deleted.status, deleted.body]).toEqual([204, null]);
    // The page learns it from the event stream, as from the bot's own deleteMessage.
    const expected = `event: message_deleted\ndata: {"type":"message_deleted","chat_id":${chat},"message_id":${sent.message_id}}`;
    let stream = "";
    while (!stream.includes(expected)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the event stream ended without ${expected}`);
      stream += value;
    }
    await reader.cancel();
    const history = await sandbox.control("GET", `/chats/${chat}/messages`);
    expect(history.body.map((m: { text: string }) => m.text)).toEqual(["/start"]);

    const edit = await failure(sandbox.api.editMessageText(chat, sent.message_id, "Build fixed"));
    expect([edit.error_code, edit.description]).toEqual([400, "Bad Request: message to edit not found"]);
    const markup = await failure(
      sandbox.api.editMessageReplyMarkup(chat, sent.message_id, { reply_markup: buttons("ok") }),
    );
    expect(markup.description).toBe("Bad Request: message to edit not found");
    const remove = await failure(sandbox.api.deleteMessage(chat, sent.message_id));
    expect([remove.error_code, remove.description]).toEqual([
      400,
      "Bad Request: message to delete not found",
    ]);
    // Deleting it again through the control API is a 404 in its own style.
    const again = await sandbox.control("DELETE", `/chats/${chat}/messages/${sent.message_id}`);
    expect([again.status, again.body.error.code]).toEqual([404, "not_found"]);
  });

  it("in a group a member deletes their own messages; only the creator or an administrator the bot's", async () => {
    const alice = await sandbox.person();
    const bob = await sandbox.person();
    const carol = await sandbox.person();
    const group = (
      await sandbox.control("POST", "/groups", { title: "Ops", members: [alice, bob], admins: [alice] })
    ).body.id as number;
    await sandbox.control("POST", `/chats/${group}/bot`, { from: alice, status: "member" });
    const botMessage = (await sandbox.api.sendMessage(group, "Deploy started")).message_id;
    const own = (await sandbox.control("POST", `/chats/${group}/messages`, { from: bob, text: "mine" })).body
      .message_id as number;

    const cases: [number, unknown, number, string][] = [
      [botMessage, { from: bob }, 403, "sandbox_not_allowed"],
      [botMessage, undefined, 400, "invalid_request"],
      [botMessage, { from: carol }, 400, "invalid_request"],
      [botMessage, { from: "bob" }, 400, "invalid_request"],
      [999, { from: alice }, 404, "not_found"],
    ];
    for (const [id, body, status, code] of cases) {
      const answer = await sandbox.control("DELETE", `/chats/${group}/messages/${id}`, body);
      expect([id, body, answer.status, answer.body.error.code]).toEqual([id, body, status, code]);
    }
    expect((await sandbox.control("DELETE", `/chats/${group}/messages/${own}`, { from: bob })).status).toBe(
      204,
    );
    expect(
      (await sandbox.control("DELETE", `/chats/${group}/messages/${botMessage}`, { from: alice })).status,
    ).toBe(204);
    const texts = (await sandbox.control("GET", `/chats/${group}/messages`)).body.map(
      (m: { text?: string }) => m.text,
    );
    expect(texts).not.toContain("mine");
    expect(texts).not.toContain("Deploy started");
    expect((await sandbox.control("DELETE", `/chats/4242/messages/1`, { from: alice })).status).toBe(404);
  });
});

describe("sandbox stats for edits and deletions", () => {
  let sandbox: RunningSandbox;
  beforeAll(async () => {
    sandbox = await startSandbox();
  });
  afterAll(() => sandbox.close());

  it("edit_message and delete_message count the calls beside send_message; DELETE /api/stats zeroes them", async () => {
    const chat = await sandbox.startedPerson();
    expect((await sandbox.control("DELETE", "/stats")).body).toMatchObject({
      send_message: 0,
      edit_message: 0,
      delete_message: 0,
    });
    const id = (await sandbox.api.sendMessage(chat, "v1")).message_id;
    await sandbox.api.editMessageText(chat, id, "v2", { reply_markup: buttons("a") });
    await sandbox.api.editMessageReplyMarkup(chat, id, { reply_markup: buttons("b") });
    await failure(sandbox.api.editMessageReplyMarkup(chat, id, { reply_markup: buttons("b") }));
    await sandbox.api.deleteMessage(chat, id);
    await failure(sandbox.api.deleteMessage(chat, id));
    const stats = (await sandbox.control("GET", "/stats")).body;
    expect(stats).toMatchObject({
      send_message: 1,
      edit_message: 3,
      delete_message: 2,
      too_many_requests: 0,
      errors: 2,
    });
    expect(stats.calls).toMatchObject({ editmessagetext: 1, editmessagereplymarkup: 2, deletemessage: 2 });
    const reset = (await sandbox.control("DELETE", "/stats")).body;
    expect(reset).toMatchObject({ send_message: 0, edit_message: 0, delete_message: 0, errors: 0 });
    expect((await sandbox.control("GET", "/stats")).body).toEqual(reset);
  });
});
