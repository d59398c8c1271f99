import { createServer, type IncomingMessage, type Server } from "node:http";
import { setTimeout } from "node:timers/promises";
import { Bot, type Context, GrammyError } from "grammy";
import type { Update } from "grammy/types";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { SANDBOX_BOT_ID, SANDBOX_BOT_TOKEN, SANDBOX_BOT_USERNAME } from "../../src/telegram/sandbox-bot.ts";
import { type RunningSandbox, startSandbox } from "../helpers/sandbox-harness.ts";

describe("sandbox getUpdates (long polling)", () => {
  let sandbox: RunningSandbox;
  beforeEach(async () => {
    sandbox = await startSandbox();
  });
  afterEach(() => sandbox.close());

  it("a waiting getUpdates answers as soon as a person writes", async () => {
    const alice = await sandbox.person("Alice");
    // The timeout is far beyond the test's own: only the arriving update can end this call.
    const poll = sandbox.api.getUpdates({ timeout: 50 });
    await sandbox.control("POST", `/chats/${alice}/messages`, { text: "hello" });
    const updates = await poll;
    expect(updates).toHaveLength(1);
    expect(updates[0]?.message).toMatchObject({ text: "hello", from: { id: alice }, chat: { id: alice } });
  });

  it("with nothing to deliver it waits out the timeout, then answers an empty list", async () => {
    const started = Date.now();
    expect(await sandbox.api.getUpdates({ timeout: 1 })).toEqual([]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  it("updates stay until confirmed with a higher offset; limit caps the batch", async () => {
    const alice = await sandbox.person();
    for (const text of ["one", "two", "three"])
      await sandbox.control("POST", `/chats/${alice}/messages`, { text });
    const firstTwo = await sandbox.api.getUpdates({ limit: 2 });
    expect(firstTwo.map((u) => u.message?.text)).toEqual(["one", "two"]);
    expect((await sandbox.api.getUpdates()).map((u) => u.message?.text)).toEqual(["one", "two", "three"]);
    const last = firstTwo[1] as Update;
    expect(
      (await sandbox.api.getUpdates({ offset: last.update_id + 1 })).map((u) => u.message?.text),
    ).toEqual(["three"]);
    expect((await sandbox.api.getWebhookInfo()).pending_update_count).toBe(1);
  });

  it("allowed_updates filters the kinds queued from then on", async () => {
    const alice = await sandbox.startedPerson();
    const before = await sandbox.api.getUpdates({ allowed_updates: ["callback_query"] });
    expect(before.map((u) => u.message?.text)).toEqual(["/start"]);
    await sandbox.control("POST", `/chats/${alice}/messages`, { text: "not for the bot" });
    const sent = await sandbox.api.sendMessage(alice, "?", {
      reply_markup: { inline_keyboard: [[{ text: "Go", callback_data: "go" }]] },
    });
    await sandbox.control("POST", `/chats/${alice}/messages/${sent.message_id}/press`, { row: 0, column: 0 });
    const after = await sandbox.api.getUpdates({ offset: (before[0] as Update).update_id + 1 });
    expect(after).toHaveLength(1);
    expect(after[0]?.callback_query?.data).toBe("go");
  });

  it("a second poller ends the first with 409 Conflict", async () => {
    const first = sandbox.api.getUpdates({ timeout: 30 }).catch((e: unknown) => e);
    // The second call must come after the first is waiting on the server.
    while ((await sandbox.control("GET", "/stats")).body.calls.getupdates !== 1) await setTimeout(10);
    const second = sandbox.api.getUpdates({ timeout: 1 });
    const error = await first;
    expect(error).toBeInstanceOf(GrammyError);
    expect((error as GrammyError).error_code).toBe(409);
    expect((error as GrammyError).description).toBe(
      "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
    );
    await second;
  });
});

describe("sandbox webhook", () => {
  let sandbox: RunningSandbox;
  let receiver: Server;
  let receiverUrl: string;
  const received: { secret: string | undefined; update: Update }[] = [];
  let failNext = 0;
  let waiting: (() => void) | undefined;

  const body = (request: IncomingMessage) =>
    new Promise<string>((resolve) => {
      let text = "";
      request.on("data", (chunk) => {
        text += chunk;
      });
      request.on("end", () => resolve(text));
    });

  beforeAll(async () => {
    sandbox = await startSandbox();
    receiver = createServer(async (request, response) => {
      const update = JSON.parse(await body(request)) as Update;
      if (failNext > 0) {
        failNext--;
        response.writeHead(500).end();
        return;
      }
      received.push({
        secret: request.headers["x-telegram-bot-api-secret-token"] as string | undefined,
        update,
      });
      // Telegram lets a webhook answer with one method call; "ping" gets a "pong" that way.
      const reply =
        update.message?.text === "ping"
          ? { method: "sendMessage", chat_id: update.message.chat.id, text: "pong" }
          : {};
      response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(reply));
      waiting?.();
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    const address = receiver.address();
    receiverUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}/hook`;
  });
  afterAll(async () => {
    await sandbox.close();
    await new Promise((resolve) => receiver.close(resolve));
  });

  const nextDelivery = () =>
    new Promise<void>((resolve) => {
      waiting = resolve;
    });

  it("POSTs updates with X-Telegram-Bot-Api-Secret-Token, and getUpdates is then a 409", async () => {
    expect(await sandbox.api.setWebhook(receiverUrl, { secret_token: "s3cret_token-1" })).toBe(true);
    expect(await sandbox.api.getWebhookInfo()).toMatchObject({ url: receiverUrl, pending_update_count: 0 });
    const alice = await sandbox.person();
    const delivered = nextDelivery();
    await sandbox.control("POST", `/chats/${alice}/messages`, { text: "via webhook" });
    await delivered;
    expect(received.at(-1)).toMatchObject({
      secret: "s3cret_token-1",
      update: { message: { text: "via webhook" } },
    });

    const conflict = await sandbox.api.getUpdates().catch((e: unknown) => e);
    expect((conflict as GrammyError).description).toBe(
      "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
    );
  });

  it("retries a delivery the webhook refused and reports the error", async () => {
    const alice = await sandbox.person();
    failNext = 1;
    const delivered = nextDelivery();
    await sandbox.control("POST", `/chats/${alice}/messages`, { text: "retried" });
    await delivered;
    expect(received.at(-1)?.update.message?.text).toBe("retried");
    const info = await sandbox.api.getWebhookInfo();
    expect(info.last_error_message).toBe("Wrong response from the webhook: 500 Internal Server Error");
    expect(info.pending_update_count).toBe(0);
  });

  it("a method call in the webhook's answer is carried out", async () => {
    const alice = await sandbox.person();
    await sandbox.control("POST", `/chats/${alice}/messages`, { text: "ping" });
    await expect
      .poll(
        async () =>
          (await sandbox.control("GET", `/chats/${alice}/messages`)).body.map(
            (m: { text: string }) => m.text,
          ),
        { timeout: 20_000 },
      )
      .toEqual(["ping", "pong"]);
  });

  it("a bad secret token is refused; deleteWebhook returns to polling", async () => {
    const bad = await sandbox.api
      .setWebhook(receiverUrl, { secret_token: "no spaces" })
      .catch((e: unknown) => e);
    expect((bad as GrammyError).description).toBe("Bad Request: secret token contains unallowed characters");
    expect(await sandbox.api.deleteWebhook()).toBe(true);
    expect((await sandbox.api.getWebhookInfo()).url).toBe("");
    expect(await sandbox.api.getUpdates()).toEqual([]);
  });
});

describe("simulated people talking to a grammY bot", () => {
  let sandbox: RunningSandbox;
  let bot: Bot;
  const seen: Context[] = [];
  const checks = new Set<() => void>();
  /** The first update the bot received (or will receive) that matches. */
  const waitFor = (matches: (ctx: Context) => boolean) =>
    new Promise<Context>((resolve) => {
      const check = () => {
        const found = seen.find(matches);
        if (found === undefined) return;
        checks.delete(check);
        resolve(found);
      };
      checks.add(check);
      check();
    });

  beforeAll(async () => {
    sandbox = await startSandbox();
    bot = new Bot(SANDBOX_BOT_TOKEN, { client: { apiRoot: sandbox.root } });
    bot.use((ctx) => {
      seen.push(ctx);
      for (const check of checks) check();
    });
    await bot.init();
    void bot.start({ timeout: 30 });
  });
  afterAll(async () => {
    await bot.stop();
    await sandbox.close();
  });

  it("a deep link becomes /start <payload> with a bot_command entity", async () => {
    const alice = await sandbox.person();
    const update = waitFor((ctx) => ctx.chat?.id === alice);
    const opened = await sandbox.control("POST", `/users/${alice}/start`, { payload: "dock_ABC-123" });
    expect(opened.status).toBe(201);
    const ctx = await update;
    expect(ctx.message?.text).toBe("/start dock_ABC-123");
    expect(ctx.message?.entities).toEqual([{ type: "bot_command", offset: 0, length: 6 }]);
    expect(ctx.chat?.id).toBe(alice);
    const bad = await sandbox.control("POST", `/users/${alice}/start`, { payload: "not valid!" });
    expect(bad.status).toBe(400);
  });

  it("pressing an inline button sends a callback_query with the message and data", async () => {
    const alice = await sandbox.startedPerson();
    const sent = await bot.api.sendMessage(alice, "Subscribe?", {
      reply_markup: {
        inline_keyboard: [
          [
            { text: "Yes", callback_data: "sub:yes" },
            { text: "No", callback_data: "sub:no" },
          ],
        ],
      },
    });
    const update = waitFor((ctx) => ctx.callbackQuery?.from.id === alice);
    await sandbox.control("POST", `/chats/${alice}/messages/${sent.message_id}/press`, { row: 0, column: 1 });
    const ctx = await update;
    expect(ctx.callbackQuery?.data).toBe("sub:no");
    expect(ctx.callbackQuery?.from.id).toBe(alice);
    expect(ctx.callbackQuery?.message?.message_id).toBe(sent.message_id);
    expect(await ctx.answerCallbackQuery({ text: "Noted" })).toBe(true);
  });

  it("pressing a reply-keyboard button sends its text; a one-time keyboard then hides", async () => {
    const alice = await sandbox.startedPerson();
    await bot.api.sendMessage(alice, "Choose", {
      reply_markup: { keyboard: [[{ text: "Subscribe" }]], one_time_keyboard: true, resize_keyboard: true },
    });
    const update = waitFor((ctx) => ctx.chat?.id === alice && ctx.message?.text === "Subscribe");
    const pressed = await sandbox.control("POST", `/chats/${alice}/keyboard`, { text: "Subscribe" });
    expect(pressed.status).toBe(201);
    expect((await update).message?.text).toBe("Subscribe");
    expect((await sandbox.control("GET", `/chats/${alice}`)).body.reply_keyboard).toBeNull();
    const missing = await sandbox.control("POST", `/chats/${alice}/keyboard`, { text: "Subscribe" });
    expect(missing.status).toBe(400);
  });

  it("answering a force_reply prompt sends a message with reply_to_message", async () => {
    const alice = await sandbox.startedPerson();
    const prompt = await bot.api.sendMessage(alice, "Paste the Dock ID", {
      reply_markup: { force_reply: true },
    });
    const update = waitFor((ctx) => ctx.chat?.id === alice && ctx.message?.text === "abc123");
    await sandbox.control("POST", `/chats/${alice}/messages`, {
      text: "abc123",
      reply_to_message_id: prompt.message_id,
    });
    const ctx = await update;
    expect(ctx.message?.text).toBe("abc123");
    expect(ctx.message?.reply_to_message?.message_id).toBe(prompt.message_id);
    expect(ctx.message?.reply_to_message?.from?.id).toBe(SANDBOX_BOT_ID);
  });

  it("blocking and unblocking send my_chat_member kicked and member", async () => {
    const alice = await sandbox.startedPerson();
    const blocked = waitFor(
      (ctx) => ctx.chat?.id === alice && ctx.myChatMember?.new_chat_member.status === "kicked",
    );
    await sandbox.control("POST", `/users/${alice}/block`);
    const kicked = (await blocked).myChatMember;
    expect(kicked?.old_chat_member.status).toBe("member");
    expect(kicked?.new_chat_member).toMatchObject({ status: "kicked", user: { id: SANDBOX_BOT_ID } });
    const refused = await sandbox.control("POST", `/chats/${alice}/messages`, { text: "hi" });
    expect(refused.status).toBe(409);
    const unblocked = waitFor(
      (ctx) => ctx.chat?.id === alice && ctx.myChatMember?.old_chat_member.status === "kicked",
    );
    await sandbox.control("POST", `/users/${alice}/unblock`);
    expect((await unblocked).myChatMember?.new_chat_member.status).toBe("member");
  });

  it("adding the bot to a group sends my_chat_member; in privacy mode it sees commands, not chatter", async () => {
    const alice = await sandbox.person("Alice");
    const bob = await sandbox.person("Bob");
    const group = (
      await sandbox.control("POST", "/groups", { title: "Ops", members: [alice, bob], admins: [alice] })
    ).body.id as number;
    expect(group).toBeLessThan(0);
    const added = waitFor((ctx) => ctx.chat?.id === group && ctx.myChatMember !== undefined);
    await sandbox.control("POST", `/chats/${group}/bot`, { from: alice, status: "member" });
    const member = (await added).myChatMember;
    expect(member).toMatchObject({ chat: { id: group, type: "group", title: "Ops" }, from: { id: alice } });
    expect(member?.new_chat_member.status).toBe("member");

    await sandbox.control("POST", `/chats/${group}/messages`, { from: bob, text: "just chatting" });
    const command = waitFor((ctx) => ctx.chat?.id === group && ctx.message?.text?.startsWith("/") === true);
    await sandbox.control("POST", `/chats/${group}/messages`, {
      from: bob,
      text: `/subscribe@${SANDBOX_BOT_USERNAME}`,
    });
    expect((await command).message?.text).toBe(`/subscribe@${SANDBOX_BOT_USERNAME}`);
    expect(seen.some((ctx) => ctx.message?.text === "just chatting")).toBe(false);
    const history = await sandbox.control("GET", `/chats/${group}/messages`);
    expect(history.body.some((m: { text?: string }) => m.text === "just chatting")).toBe(true);

    const removed = waitFor(
      (ctx) => ctx.chat?.id === group && ctx.myChatMember?.new_chat_member.status === "left",
    );
    await sandbox.control("POST", `/chats/${group}/bot`, { from: alice, status: "left" });
    expect((await removed).myChatMember?.new_chat_member.status).toBe("left");
    const refused = await bot.api.sendMessage(group, "still here?").catch((e: unknown) => e);
    expect((refused as GrammyError).description).toBe("Forbidden: bot is not a member of the group chat");
  });

  it("renaming a group sends the bot new_chat_title in privacy mode; later updates carry the new title", async () => {
    const alice = await sandbox.person("Alice");
    const bob = await sandbox.person("Bob");
    const group = (
      await sandbox.control("POST", "/groups", { title: "Ops", members: [alice, bob], admins: [alice] })
    ).body.id as number;
    // Renamed while the bot is not there: nothing reaches it, but the chat has the new title.
    expect(
      (await sandbox.control("POST", `/chats/${group}/title`, { from: bob, title: "Ops team" })).status,
    ).toBe(201);
    const added = waitFor((ctx) => ctx.chat?.id === group && ctx.myChatMember !== undefined);
    await sandbox.control("POST", `/chats/${group}/bot`, { from: alice, status: "member" });
    expect((await added).myChatMember?.chat).toMatchObject({ id: group, title: "Ops team" });

    const renamed = waitFor((ctx) => ctx.chat?.id === group && ctx.message?.new_chat_title !== undefined);
    const answer = await sandbox.control("POST", `/chats/${group}/title`, { from: bob, title: "Ops room" });
    expect(answer.status).toBe(201);
    expect(answer.body).toMatchObject({ new_chat_title: "Ops room", from: { id: bob } });
    const told = (await renamed).message;
    expect(told).toMatchObject({ new_chat_title: "Ops room", chat: { id: group, title: "Ops room" } });
    expect(
      seen.filter((ctx) => ctx.message?.new_chat_title !== undefined && ctx.chat?.id === group),
    ).toHaveLength(1);

    const command = waitFor((ctx) => ctx.chat?.id === group && ctx.message?.text === "/help");
    await sandbox.control("POST", `/chats/${group}/messages`, { from: alice, text: "/help" });
    expect((await command).message?.chat).toMatchObject({ title: "Ops room" });
    expect((await sandbox.control("GET", `/chats/${group}`)).body.title).toBe("Ops room");
    const history = (await sandbox.control("GET", `/chats/${group}/messages`)).body as {
      new_chat_title?: string;
    }[];
    expect(history.filter((m) => m.new_chat_title !== undefined).map((m) => m.new_chat_title)).toEqual([
      "Ops team",
      "Ops room",
    ]);
  });

  it("a bot message appears in the history and the event stream", async () => {
    const alice = await sandbox.startedPerson();
    const events = await fetch(`${sandbox.root}/api/events`);
    const reader = (events.body as ReadableStream<Uint8Array>)
      .pipeThrough(new TextDecoderStream())
      .getReader();
    await bot.api.sendMessage(alice, "*hi*", { parse_mode: "MarkdownV2" });
    let text = "";
    while (!text.includes('"text":"hi"')) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
    }
    await reader.cancel();
    expect(text).toContain("event: message\n");
    expect(text).toContain('"entities":[{"type":"bold","offset":0,"length":2}]');
  });
});

describe("sandbox control API input checks", () => {
  let sandbox: RunningSandbox;
  beforeAll(async () => {
    sandbox = await startSandbox();
  });
  afterAll(() => sandbox.close());

  it("answers clear 4xx JSON for bad input, never a crash", async () => {
    const cases: [string, string, unknown, number][] = [
      ["POST", "/users", {}, 400],
      ["POST", "/users", { first_name: "" }, 400],
      ["POST", "/users", { first_name: "A", username: "no spaces" }, 400],
      ["GET", "/users/abc", undefined, 400],
      ["GET", "/users/42", undefined, 404],
      ["POST", "/groups", { title: "G", members: [42] }, 404],
      ["POST", "/chats/42/messages", { text: "hi" }, 404],
      ["GET", "/nothing-here", undefined, 404],
      ["PUT", "/limits", { rate_limits: "yes" }, 400],
      ["POST", "/chats/-42/title", { title: "Nobody's" }, 404],
    ];
    for (const [method, path, body, status] of cases) {
      const answer = await sandbox.control(method, path, body);
      expect([method, path, answer.status]).toEqual([method, path, status]);
      expect(answer.body.ok).toBe(false);
      expect(answer.body.error.message).toBeTypeOf("string");
    }
    const notJson = await fetch(`${sandbox.root}/api/users`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{",
    });
    expect(notJson.status).toBe(400);
  });

  it("renaming refuses a private chat, a stranger, an empty or too long title and an upgraded group", async () => {
    const alice = await sandbox.startedPerson();
    const eve = await sandbox.person("Eve");
    const group = (
      await sandbox.control("POST", "/groups", { title: "G", members: [alice], admins: [alice] })
    ).body.id as number;
    const cases: [number, unknown, number, RegExp][] = [
      [alice, { title: "Me" }, 400, /private chat has no title/],
      [group, { title: "No one" }, 400, /from is required/],
      [group, { from: eve, title: "Not mine" }, 400, /not a member/],
      [group, { from: alice, title: "" }, 400, /title/],
      [group, { from: alice, title: "   " }, 400, /title must not be empty/],
      [group, { from: alice, title: "x".repeat(129) }, 400, /title/],
    ];
    for (const [chat, body, status, message] of cases) {
      const answer = await sandbox.control("POST", `/chats/${chat}/title`, body);
      expect([chat, body, answer.status]).toEqual([chat, body, status]);
      expect(answer.body.error.message).toMatch(message);
    }
    const upgraded = await sandbox.control("POST", `/chats/${group}/upgrade`, { from: alice });
    const old = await sandbox.control("POST", `/chats/${group}/title`, { from: alice, title: "Old" });
    expect(old.status).toBe(409);
    expect(old.body.error.message).toContain(`rename ${upgraded.body.id}`);
    expect((await sandbox.control("GET", `/chats/${group}`)).body.title).toBe("G");
  });

  it("reset forgets everyone", async () => {
    await sandbox.person();
    expect((await sandbox.control("POST", "/reset")).status).toBe(204);
    expect((await sandbox.control("GET", "/users")).body).toEqual([]);
  });
});
