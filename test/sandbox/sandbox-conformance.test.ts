import { GrammyError, HttpError } from "grammy";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SANDBOX_BOT_TOKEN } from "../../src/telegram/sandbox-bot.ts";
import { type RunningSandbox, startSandbox } from "../helpers/sandbox-harness.ts";

const json = (body: unknown): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body),
});

describe("sandbox envelopes and parameter forms", () => {
  let sandbox: RunningSandbox;
  let chat: number;
  beforeAll(async () => {
    sandbox = await startSandbox();
    chat = await sandbox.startedPerson();
  });
  afterAll(() => sandbox.close());

  it("answers {ok:true,result} on success", async () => {
    const { status, body } = await sandbox.raw("getMe");
    expect(status).toBe(200);
    expect(Object.keys(body)).toEqual(["ok", "result"]);
    expect(body.ok).toBe(true);
  });

  it("a wrong token is 401 Unauthorized, a malformed one and an unknown method 404 Not Found", async () => {
    const root = sandbox.root;
    const wrong = await fetch(`${root}/bot1234567:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA/getMe`);
    expect([wrong.status, await wrong.json()]).toEqual([
      401,
      { ok: false, error_code: 401, description: "Unauthorized" },
    ]);
    const malformed = await fetch(`${root}/botnot-a-token/getMe`);
    expect([malformed.status, await malformed.json()]).toEqual([
      404,
      { ok: false, error_code: 404, description: "Not Found" },
    ]);
    const unknown = await sandbox.raw("getNothing");
    expect([unknown.status, unknown.body]).toEqual([
      404,
      { ok: false, error_code: 404, description: "Not Found" },
    ]);
  });

  it("method names are case-insensitive, as on Telegram", async () => {
    expect((await sandbox.raw("GETME")).body.ok).toBe(true);
  });

  it("takes parameters as JSON, form, multipart and query string, by GET and POST", async () => {
    const form = new FormData();
    form.set("chat_id", String(chat));
    form.set("text", "multipart");
    form.set("reply_markup", JSON.stringify({ inline_keyboard: [[{ text: "A", callback_data: "a" }]] }));
    const answers = [
      await sandbox.raw("sendMessage", json({ chat_id: chat, text: "json" })),
      await sandbox.raw("sendMessage", {
        method: "POST",
        body: new URLSearchParams({ chat_id: String(chat), text: "form" }),
      }),
      await sandbox.raw("sendMessage", { method: "POST", body: form }),
      await sandbox.raw("sendMessage", {
        query: new URLSearchParams({ chat_id: String(chat), text: "query" }).toString(),
      }),
      await sandbox.raw("sendMessage", { method: "POST", query: `chat_id=${chat}&text=post-query` }),
    ];
    expect(answers.map((a) => a.body.result.text)).toEqual([
      "json",
      "form",
      "multipart",
      "query",
      "post-query",
    ]);
    expect(answers[2]?.body.result.reply_markup.inline_keyboard[0][0].text).toBe("A");
  });

  it("400 for a body that is not JSON", async () => {
    const bad = await sandbox.raw("sendMessage", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{oops",
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ ok: false, error_code: 400 });
  });

  it("names missing and empty parameters as Telegram does", async () => {
    expect((await sandbox.raw("sendMessage", json({ text: "x" }))).body.description).toBe(
      "Bad Request: chat_id is empty",
    );
    expect((await sandbox.raw("sendMessage", json({ chat_id: chat }))).body.description).toBe(
      "Bad Request: message text is empty",
    );
    expect((await sandbox.raw("sendMessage", json({ chat_id: chat, text: " \n " }))).body.description).toBe(
      "Bad Request: message text is empty",
    );
    expect((await sandbox.raw("sendMessage", json({ chat_id: "@nobody", text: "x" }))).body.description).toBe(
      "Bad Request: chat not found",
    );
  });
});

describe("sandbox message length, counted in UTF-16 code units", () => {
  let sandbox: RunningSandbox;
  let chat: number;
  beforeAll(async () => {
    sandbox = await startSandbox();
    chat = await sandbox.startedPerson();
  });
  afterAll(() => sandbox.close());

  const tooLong = async (text: string, other: Record<string, unknown> = {}) => {
    try {
      await sandbox.api.sendMessage(chat, text, other);
      return false;
    } catch (error) {
      if (error instanceof GrammyError && error.description === "Bad Request: message is too long")
        return true;
      throw error;
    }
  };

  it("4096 code units pass, 4097 are too long", async () => {
    expect(await tooLong("a".repeat(4096))).toBe(false);
    expect(await tooLong("a".repeat(4097))).toBe(true);
  });

  it("an emoji outside the BMP counts as two (a surrogate pair)", async () => {
    expect("😀".length).toBe(2);
    expect(await tooLong("😀".repeat(2048))).toBe(false);
    expect(await tooLong(`${"😀".repeat(2048)}a`)).toBe(true);
  });

  it("the limit applies after parse_mode markup is removed and whitespace trimmed", async () => {
    expect(await tooLong(`<b>${"a".repeat(4096)}</b>`, { parse_mode: "HTML" })).toBe(false);
    expect(await tooLong(`  ${"a".repeat(4096)}\n\n`)).toBe(false);
  });

  it("entity offsets count UTF-16 code units", async () => {
    const sent = await sandbox.api.sendMessage(chat, "😀 <b>bold</b>", { parse_mode: "HTML" });
    expect(sent.entities).toEqual([{ type: "bold", offset: 3, length: 4 }]);
  });
});

describe("sandbox parse_mode", () => {
  let sandbox: RunningSandbox;
  let chat: number;
  beforeAll(async () => {
    sandbox = await startSandbox();
    chat = await sandbox.startedPerson();
  });
  afterAll(() => sandbox.close());

  const send = (text: string, parse_mode: "HTML" | "MarkdownV2" | "Markdown") =>
    sandbox.api.sendMessage(chat, text, { parse_mode });
  const error = async (text: string, parse_mode: "HTML" | "MarkdownV2" | "Markdown") => {
    try {
      await send(text, parse_mode);
    } catch (caught) {
      if (caught instanceof GrammyError) return caught.description;
      throw caught;
    }
    throw new Error("the text was accepted");
  };

  it("HTML: nested tags, escapes, links, code blocks with a language", async () => {
    const sent = await send(
      '<b>a <i>b</i></b> &lt;tag&gt; &amp; <a href="https://x.example/">x</a> <pre><code class="language-ts">let a</code></pre> <tg-spoiler>s</tg-spoiler> <u>u</u> <s>s</s> <code>c</code> <blockquote>q</blockquote>',
      "HTML",
    );
    expect(sent.text).toBe("a b <tag> & x let a s u s c q");
    expect(sent.entities).toEqual([
      { type: "bold", offset: 0, length: 3 },
      { type: "italic", offset: 2, length: 1 },
      { type: "text_link", offset: 12, length: 1, url: "https://x.example/" },
      { type: "pre", offset: 14, length: 5, language: "ts" },
      { type: "spoiler", offset: 20, length: 1 },
      { type: "underline", offset: 22, length: 1 },
      { type: "strikethrough", offset: 24, length: 1 },
      { type: "code", offset: 26, length: 1 },
      { type: "blockquote", offset: 28, length: 1 },
    ]);
  });

  it("HTML: Telegram's errors for unknown, unclosed and mismatched tags", async () => {
    expect(await error("<foo>x</foo>", "HTML")).toBe(
      'Bad Request: can\'t parse entities: Unsupported start tag "foo" at byte offset 0',
    );
    expect(await error("<b>x", "HTML")).toBe(
      "Bad Request: can't parse entities: Can't find end tag corresponding to start tag \"b\"",
    );
    expect(await error("é<b>x</i>", "HTML")).toBe(
      'Bad Request: can\'t parse entities: Unmatched end tag at byte offset 6, expected "</b>", found "</i>"',
    );
    expect(await error("x</b>", "HTML")).toBe(
      "Bad Request: can't parse entities: Unexpected end tag at byte offset 1",
    );
    expect(await error("a <b", "HTML")).toBe(
      "Bad Request: can't parse entities: Unclosed start tag at byte offset 2",
    );
  });

  it("MarkdownV2: entities, escapes and links", async () => {
    const sent = await send(
      "*bold* _it_ __under__ ~strike~ ||spoiler|| `code` [link](https://x.example/a\\)b) 1\\.5",
      "MarkdownV2",
    );
    expect(sent.text).toBe("bold it under strike spoiler code link 1.5");
    expect(sent.entities).toEqual([
      { type: "bold", offset: 0, length: 4 },
      { type: "italic", offset: 5, length: 2 },
      { type: "underline", offset: 8, length: 5 },
      { type: "strikethrough", offset: 14, length: 6 },
      { type: "spoiler", offset: 21, length: 7 },
      { type: "code", offset: 29, length: 4 },
      { type: "text_link", offset: 34, length: 4, url: "https://x.example/a)b" },
    ]);
  });

  it("MarkdownV2: reserved characters must be escaped; unclosed entities are named", async () => {
    expect(await error("Version 1.5", "MarkdownV2")).toBe(
      "Bad Request: can't parse entities: Character '.' is reserved and must be escaped with the preceding '\\'",
    );
    expect(await error("a *bold", "MarkdownV2")).toBe(
      "Bad Request: can't parse entities: Can't find end of Bold entity at byte offset 2",
    );
    expect(await error("```\ncode", "MarkdownV2")).toBe(
      "Bad Request: can't parse entities: Can't find end of Pre entity at byte offset 0",
    );
  });

  it("Markdown (legacy): bold, italic, code and links; an unclosed entity is an error", async () => {
    const sent = await send("*b* _i_ `c` [l](https://x.example/)", "Markdown");
    expect(sent.text).toBe("b i c l");
    expect(sent.entities?.map((e) => e.type)).toEqual(["bold", "italic", "code", "text_link"]);
    expect(await error("*b", "Markdown")).toBe(
      "Bad Request: can't parse entities: Can't find end of the entity starting at byte offset 0",
    );
  });

  it("an unknown parse_mode is refused", async () => {
    const answer = await sandbox.raw("sendMessage", json({ chat_id: chat, text: "x", parse_mode: "BBCode" }));
    expect(answer.body.description).toBe("Bad Request: unsupported parse_mode");
  });

  it("explicit entities are kept, and commands, mentions and links are found", async () => {
    const sent = await sandbox.api.sendMessage(chat, "Hi /help @someone https://x.example", {
      entities: [{ type: "bold", offset: 0, length: 2 }],
    });
    expect(sent.entities?.map((e) => e.type)).toEqual(["bold", "bot_command", "mention", "url"]);
  });

  it("callback data over 64 bytes and text-only inline buttons are refused", async () => {
    const long = await sandbox.raw(
      "sendMessage",
      json({
        chat_id: chat,
        text: "x",
        reply_markup: { inline_keyboard: [[{ text: "A", callback_data: "é".repeat(33) }]] },
      }),
    );
    expect(long.body.description).toBe("Bad Request: BUTTON_DATA_INVALID");
    const ok = await sandbox.raw(
      "sendMessage",
      json({
        chat_id: chat,
        text: "x",
        reply_markup: { inline_keyboard: [[{ text: "A", callback_data: "é".repeat(32) }]] },
      }),
    );
    expect(ok.body.ok).toBe(true);
    const textOnly = await sandbox.raw(
      "sendMessage",
      json({ chat_id: chat, text: "x", reply_markup: { inline_keyboard: [[{ text: "A" }]] } }),
    );
    expect(textOnly.body.description).toBe(
      "Bad Request: can't parse inline keyboard button: Text buttons are unallowed in the inline keyboard",
    );
  });
});

describe("sandbox rate limits", () => {
  // A frozen clock: no allowance refills during the test, so the limits are exact.
  let sandbox: RunningSandbox;
  beforeAll(async () => {
    sandbox = await startSandbox({ rateLimits: true, now: () => 1_700_000_000_000 });
  });
  afterAll(() => sandbox.close());

  const sendRaw = (chat: number) => sandbox.raw("sendMessage", json({ chat_id: chat, text: "x" }));

  it("a private chat takes 3 in any 3 seconds, then 429 with retry_after (until the first leaves the window)", async () => {
    const chat = await sandbox.startedPerson();
    for (let i = 0; i < 3; i++) expect((await sendRaw(chat)).status).toBe(200);
    const limited = await sendRaw(chat);
    expect([limited.status, limited.body]).toEqual([
      429,
      {
        ok: false,
        error_code: 429,
        description: "Too Many Requests: retry after 3",
        parameters: { retry_after: 3 },
      },
    ]);
  });

  it("grammY sees the 429 with parameters.retry_after", async () => {
    const chat = await sandbox.startedPerson();
    for (let i = 0; i < 3; i++) await sandbox.api.sendMessage(chat, "x");
    const error = await sandbox.api.sendMessage(chat, "x").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GrammyError);
    expect((error as GrammyError).parameters.retry_after).toBe(3);
  });

  it("a group takes 20 messages a minute", async () => {
    await sandbox.control("PUT", "/limits", { rate_limits: false });
    const admin = await sandbox.person();
    const group = (await sandbox.control("POST", "/groups", { title: "G", members: [admin] })).body
      .id as number;
    await sandbox.control("POST", `/chats/${group}/bot`, { from: admin, status: "member" });
    await sandbox.control("PUT", "/limits", { rate_limits: true });
    const statuses: number[] = [];
    for (let i = 0; i < 21; i++) statuses.push((await sendRaw(group)).status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(20);
    const limited = await sendRaw(group);
    expect(limited.body.parameters.retry_after).toBe(60);
  });

  it("is a strict sliding window: a sender quiet for a while still gets no more than 30 into any second", async () => {
    const clock = { now: 1_700_000_000_000 };
    const strict = await startSandbox({ rateLimits: true, now: () => clock.now });
    try {
      await strict.control("PUT", "/limits", { rate_limits: false });
      const chats: number[] = [];
      for (let i = 0; i < 61; i++) chats.push(await strict.startedPerson());
      await strict.control("PUT", "/limits", { rate_limits: true });
      const send = async (chat: number) =>
        (await strict.raw("sendMessage", json({ chat_id: chat, text: "x" }))).status;
      // 30 at once after a long quiet: the window's whole allowance, and nothing on top of it
      // (a token bucket would have let the quiet time's refill through as well).
      for (const chat of chats.slice(0, 30)) expect(await send(chat)).toBe(200);
      clock.now += 999;
      expect(await send(chats[30] as number)).toBe(429);
      clock.now += 1;
      for (const chat of chats.slice(31, 61)) expect(await send(chat)).toBe(200);
    } finally {
      await strict.close();
    }
  });

  it("the bot as a whole takes 30 messages a second, more with allow_paid_broadcast; stats count the 429s", async () => {
    const fresh = await startSandbox({ rateLimits: true, now: () => 1_700_000_000_000 });
    try {
      await fresh.control("PUT", "/limits", { rate_limits: false });
      const chats: number[] = [];
      for (let i = 0; i < 32; i++) chats.push(await fresh.startedPerson());
      await fresh.control("PUT", "/limits", { rate_limits: true });
      const statuses: number[] = [];
      for (const chat of chats.slice(0, 31)) {
        statuses.push((await fresh.raw("sendMessage", json({ chat_id: chat, text: "x" }))).status);
      }
      expect(statuses.slice(0, 30).every((s) => s === 200)).toBe(true);
      expect(statuses[30]).toBe(429);
      const paid = await fresh.raw(
        "sendMessage",
        json({ chat_id: chats[31], text: "x", allow_paid_broadcast: true }),
      );
      expect(paid.status).toBe(200);
      const stats = (await fresh.control("GET", "/stats")).body;
      expect(stats).toMatchObject({ send_message: 32, too_many_requests: 1 });
    } finally {
      await fresh.close();
    }
  });

  it("switched off, nothing is limited", async () => {
    const off = await startSandbox({ rateLimits: false, now: () => 1_700_000_000_000 });
    try {
      const chat = await off.startedPerson();
      for (let i = 0; i < 10; i++)
        expect((await off.raw("sendMessage", json({ chat_id: chat, text: "x" }))).status).toBe(200);
      expect((await off.control("GET", "/stats")).body.too_many_requests).toBe(0);
    } finally {
      await off.close();
    }
  });
});

describe("sandbox fault injection", () => {
  let sandbox: RunningSandbox;
  beforeAll(async () => {
    sandbox = await startSandbox();
  });
  afterAll(() => sandbox.close());

  it("the next N calls fail with a 5xx, then calls succeed again", async () => {
    const chat = await sandbox.startedPerson();
    const armed = await sandbox.control("POST", "/faults", {
      kind: "server_error",
      count: 2,
      methods: ["sendMessage"],
      status: 502,
    });
    expect(armed.status).toBe(201);
    const first = await sandbox.raw("sendMessage", json({ chat_id: chat, text: "x" }));
    expect([first.status, first.body]).toEqual([
      502,
      { ok: false, error_code: 502, description: "Bad Gateway" },
    ]);
    // getMe is not one of the fault's methods.
    expect((await sandbox.raw("getMe")).status).toBe(200);
    expect((await sandbox.raw("sendMessage", json({ chat_id: chat, text: "x" }))).status).toBe(502);
    expect((await sandbox.raw("sendMessage", json({ chat_id: chat, text: "x" }))).status).toBe(200);
    expect((await sandbox.control("GET", "/faults")).body).toEqual([]);
  });

  it("one chat answers 403 while others work", async () => {
    const victim = await sandbox.startedPerson();
    const other = await sandbox.startedPerson();
    await sandbox.control("POST", "/faults", { kind: "forbidden", chat_id: victim, rate: 1 });
    const refused = await sandbox.raw("sendMessage", json({ chat_id: victim, text: "x" }));
    expect(refused.body).toEqual({
      ok: false,
      error_code: 403,
      description: "Forbidden: bot was blocked by the user",
    });
    expect((await sandbox.raw("sendMessage", json({ chat_id: other, text: "x" }))).status).toBe(200);
    await sandbox.control("DELETE", "/faults");
    expect((await sandbox.raw("sendMessage", json({ chat_id: victim, text: "x" }))).status).toBe(200);
  });

  it("a timeout fault drops the connection without an answer", async () => {
    const chat = await sandbox.startedPerson();
    await sandbox.control("POST", "/faults", { kind: "timeout", count: 1, hang_seconds: 0.2 });
    const error = await sandbox.api.sendMessage(chat, "x").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HttpError);
    expect((await sandbox.api.sendMessage(chat, "x")).text).toBe("x");
  });

  it("a slow fault answers as usual, only later", async () => {
    const chat = await sandbox.startedPerson();
    await sandbox.control("POST", "/faults", { kind: "slow", count: 1, hang_seconds: 0.5 });
    const started = performance.now();
    // Held for half a second (at least), then carried out and answered.
    expect((await sandbox.api.sendMessage(chat, "late")).text).toBe("late");
    expect(performance.now() - started).toBeGreaterThanOrEqual(490);
    expect((await sandbox.control("GET", `/chats/${chat}/messages`)).body.at(-1).text).toBe("late");
  });

  it("bad fault requests are a clear 400", async () => {
    const bad = await sandbox.control("POST", "/faults", { kind: "explode", count: 1 });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/^kind must be one of/);
    const noChat = await sandbox.control("POST", "/faults", { kind: "forbidden", count: 1 });
    expect(noChat.body.error.message).toBe("a forbidden fault needs chat_id");
  });
});

it("the sandbox token is what the log masks", async () => {
  const { maskUrl } = await import("../../src/runtime/log.ts");
  expect(maskUrl(`/sandbox/bot${SANDBOX_BOT_TOKEN}/getMe`)).toBe("/sandbox/bot<redacted>/getMe");
});

describe("sandbox group upgrades", () => {
  let sandbox: RunningSandbox;
  beforeAll(async () => {
    sandbox = await startSandbox();
  });
  afterAll(() => sandbox.close());

  it("a group upgraded to a supergroup refuses sends with migrate_to_chat_id, and tells the bot in both chats", async () => {
    const admin = await sandbox.startedPerson("Ada");
    const member = await sandbox.startedPerson("Moe");
    const group = (
      await sandbox.control("POST", "/groups", { title: "Ops", members: [admin, member], admins: [admin] })
    ).body.id as number;
    await sandbox.control("POST", `/chats/${group}/bot`, { from: admin, status: "member" });
    // Only an administrator may upgrade it, and only a basic group.
    expect((await sandbox.control("POST", `/chats/${group}/upgrade`, { from: member })).status).toBe(403);
    const upgraded = await sandbox.control("POST", `/chats/${group}/upgrade`, { from: admin });
    expect(upgraded.status).toBe(201);
    const supergroup = upgraded.body.id as number;
    expect(upgraded.body).toMatchObject({ type: "supergroup", title: "Ops", bot_status: "member" });
    expect((await sandbox.control("POST", `/chats/${supergroup}/upgrade`, { from: admin })).status).toBe(400);
    expect((await sandbox.control("POST", `/chats/${group}/upgrade`, { from: admin })).status).toBe(409);

    const refused = await sandbox.api.sendMessage(group, "to the old id").catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(GrammyError);
    expect((refused as GrammyError).error_code).toBe(400);
    expect((refused as GrammyError).description).toBe(
      "Bad Request: group chat was upgraded to a supergroup chat",
    );
    expect((refused as GrammyError).parameters).toEqual({ migrate_to_chat_id: supergroup });
    expect((await sandbox.api.sendMessage(supergroup, "to the new id")).chat.id).toBe(supergroup);

    const updates = await sandbox.api.getUpdates({ allowed_updates: ["message"] });
    const service = updates.flatMap((u) => (u.message ? [u.message] : []));
    expect(service.find((m) => m.migrate_to_chat_id !== undefined)).toMatchObject({
      chat: { id: group, type: "group" },
      migrate_to_chat_id: supergroup,
    });
    expect(service.find((m) => m.migrate_from_chat_id !== undefined)).toMatchObject({
      chat: { id: supergroup, type: "supergroup" },
      migrate_from_chat_id: group,
    });
  });
});

describe("sandbox for load tests: a crowd, a capacity, a network's latency", () => {
  it("a crowd of people who have opened the bot, made at once: the bot may write to each, and hears nothing of them", async ({
    onTestFinished,
  }) => {
    const sandbox = await startSandbox({ maxPeople: 5 });
    onTestFinished(() => sandbox.close());
    const made = await sandbox.control("POST", "/users/crowd", { count: 3, first_name: "Reader" });
    expect(made.status).toBe(201);
    const ids = made.body.ids as number[];
    expect(ids).toHaveLength(3);
    expect((await sandbox.control("GET", `/users/${ids[2]}`)).body).toMatchObject({ first_name: "Reader 3" });
    for (const id of ids) expect((await sandbox.api.sendMessage(id, "to everyone")).chat.id).toBe(id);
    // No /start reached the bot: it would welcome every one of them.
    expect(await sandbox.api.getUpdates({ timeout: 0 })).toEqual([]);
    // SANDBOX_MAX_PEOPLE: 5 people at most, a crowd or one at a time.
    const over = await sandbox.control("POST", "/users/crowd", { count: 3 });
    expect([over.status, over.body.error.message]).toEqual([
      409,
      "the sandbox holds at most 5 people (SANDBOX_MAX_PEOPLE)",
    ]);
    expect((await sandbox.control("POST", "/users/crowd", { count: 2 })).status).toBe(201);
    expect((await sandbox.control("POST", "/users", { first_name: "One more" })).status).toBe(409);
    expect((await sandbox.control("POST", "/users/crowd", { count: 0 })).status).toBe(400);
  });

  it("every Bot API call answers after the latency set (SANDBOX_LATENCY_MS, or PUT /limits at run time)", async ({
    onTestFinished,
  }) => {
    const sandbox = await startSandbox({ latencyMs: 300 });
    onTestFinished(() => sandbox.close());
    expect((await sandbox.control("GET", "/limits")).body).toMatchObject({ latency_ms: 300 });
    const chat = await sandbox.startedPerson();
    const timed = async () => {
      const started = performance.now();
      await sandbox.api.sendMessage(chat, "x");
      return performance.now() - started;
    };
    // Only a lower bound: a busy machine makes any call slower, never faster.
    expect(await timed()).toBeGreaterThanOrEqual(295);
    const changed = await sandbox.control("PUT", "/limits", { latency_ms: 600 });
    expect(changed.body).toMatchObject({ latency_ms: 600, rate_limits: false });
    expect(await timed()).toBeGreaterThanOrEqual(595);
    expect((await sandbox.control("PUT", "/limits", { latency_ms: 10_001 })).status).toBe(400);
    expect((await sandbox.control("PUT", "/limits", { latency_ms: 0 })).body).toMatchObject({
      latency_ms: 0,
    });
  });
});
