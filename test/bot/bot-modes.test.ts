import { randomBytes } from "node:crypto";
import { Api } from "grammy";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/runtime/config.ts";
import { SANDBOX_BOT_TOKEN, SANDBOX_BOT_USERNAME } from "../../src/telegram/sandbox-bot.ts";
import { webhookSecret } from "../../src/telegram/target.ts";
import { People, subscriptionRows } from "../helpers/bot-harness.ts";
import { freePort } from "../helpers/browser.ts";
import {
  createTestDatabase,
  dialects,
  type RunningService,
  startService,
  startServiceOver,
} from "../helpers/harness.ts";
import { startSandbox } from "../helpers/sandbox-harness.ts";

const DIALECTS = await dialects();

describe.each(DIALECTS)("the bot across a restart on %s", (dialect) => {
  it("a person who pressed Subscribe before the restart is subscribed by the ID pasted after it", async () => {
    // The sandbox runs on its own, as `dock-notify sandbox` does, so it outlives the service.
    const sandbox = await startSandbox();
    const database = await createTestDatabase(dialect, { migrated: true });
    const key = randomBytes(32);
    const env = { TELEGRAM_BOT_TOKEN: SANDBOX_BOT_TOKEN, TELEGRAM_API_ROOT: sandbox.root };
    const people = new People(sandbox.root);
    let service: RunningService | undefined;
    try {
      service = await startServiceOver(database, env, key);
      // Not in sandbox mode: the username comes from getMe.
      expect(service.app.botInfo()).toEqual({ username: SANDBOX_BOT_USERNAME });
      const dock = await service.app.docks.create(1, { name: "Nightly", link: null, description: null });
      const rae = await people.person("Rae");
      await people.botReply(rae, await people.start(rae), "the welcome");
      const prompt = await people.botReply(
        rae,
        await people.keyboard(rae, "Subscribe"),
        "the Dock ID prompt",
      );

      await service.close();
      service = await startServiceOver(database, env, key);

      const answer = await people.say(rae, dock.id, { replyTo: prompt.message_id });
      expect((await people.botReply(rae, answer, "the answer after the restart")).text).toContain(
        "now subscribed to Nightly",
      );
      expect(await subscriptionRows(service.db)).toEqual([[dock.id, rae, "private", "active"]]);
      // The Bot API token never reaches the log, not even inside error messages.
      expect(service.logs.text).toContain("bot started");
      expect(service.logs.text).not.toContain(SANDBOX_BOT_TOKEN.split(":")[1]);
    } finally {
      await service?.close();
      await database.drop();
      await sandbox.close();
    }
  });
});

describe("the bot's Telegram client", () => {
  let service: RunningService;
  let people: People;

  beforeAll(async () => {
    service = await startService("sqlite");
    people = new People(`${service.url}/sandbox`);
  });
  afterAll(async () => service.close());

  it("publishes its commands on start", async () => {
    const api = new Api(SANDBOX_BOT_TOKEN, { apiRoot: `${service.url}/sandbox` });
    // Published in the background once the bot runs (a Telegram refusing them must not hold up the
    // start): wait for them, then check them.
    await people.waitFor("the commands published", async () =>
      (await api.getMyCommands()).length > 0 ? true : undefined,
    );
    const commands = await api.getMyCommands();
    expect(commands.map((c) => c.command)).toEqual([
      "start",
      "subscribe",
      "list",
      "unsubscribe",
      "cancel",
      "help",
    ]);
    expect(service.app.botInfo()).toEqual({ username: SANDBOX_BOT_USERNAME });
  });

  it("a reply that meets a 429 anyway (another sender used the chat's allowance) is retried, not lost", async () => {
    await people.control("PUT", "/limits", { rate_limits: true });
    const sam = await people.person("Sam");
    await people.botReply(sam, await people.start(sam), "the welcome");
    // Someone else with the same token (another instance, a script) empties this chat's allowance,
    // which our pacer cannot know about: the bot's next replies meet Telegram's 429.
    const outsider = new Api(SANDBOX_BOT_TOKEN, { apiRoot: `${service.url}/sandbox` });
    await people.control("DELETE", "/stats");
    for (let i = 0; i < 3; i++) await outsider.sendMessage(sam, `outside ${i}`).catch(() => undefined);
    const first = await people.say(sam, "/help");
    await people.say(sam, "/help");
    const replies = await people.botMessages(sam, first, 2, "two help replies");
    expect(replies.every((reply) => reply.text?.includes("/subscribe"))).toBe(true);
    const stats = await people.control<{ too_many_requests: number }>("GET", "/stats");
    expect(stats.too_many_requests).toBeGreaterThan(0);
  });

  it("a reply Telegram refuses fails only that update: it is logged, and the bot goes on", async () => {
    const tom = await people.person("Tom");
    await people.botReply(tom, await people.start(tom), "the welcome");
    await people.control("POST", "/faults", {
      kind: "forbidden",
      chat_id: tom,
      count: 1,
      methods: ["sendMessage"],
    });
    const refused = await people.say(tom, "/help");
    await people.waitFor("the failure in the log", async () =>
      service.logs.text.includes("bot update failed") ? true : undefined,
    );
    const line = service.logs.lines.find((l) => l.includes("bot update failed")) ?? "";
    expect(JSON.parse(line).error).toMatchObject({ kind: "telegram", method: "sendMessage", code: 403 });
    const next = await people.say(tom, "/help");
    const reply = await people.botReply(tom, refused);
    expect(reply.message_id).toBeGreaterThan(next.message_id);
  });
});

describe("webhook mode", () => {
  let service: RunningService;
  let people: People;

  beforeAll(async () => {
    const port = await freePort();
    service = await startService("sqlite", {
      PORT: String(port),
      TELEGRAM_WEBHOOK_URL: `http://127.0.0.1:${port}/telegram/webhook`,
    });
    people = new People(`${service.url}/sandbox`);
  });
  afterAll(async () => service.close());

  it("registers the webhook with a secret token and answers people through it", async () => {
    const info = await new Api(SANDBOX_BOT_TOKEN, { apiRoot: `${service.url}/sandbox` }).getWebhookInfo();
    expect(info.url).toBe(`${service.url}/telegram/webhook`);
    const una = await people.person("Una");
    const welcome = await people.botReply(una, await people.start(una), "the welcome through the webhook");
    expect(welcome.text).toContain("Dock");
  });

  it("refuses updates without the matching secret header, and acts on those with it", async () => {
    const dock = await service.app.docks.create(1, { name: "Hooks", link: null, description: null });
    const vic = await people.person("Vic");
    await people.botReply(vic, await people.start(vic), "the welcome");
    const update = (updateId: number) => ({
      update_id: updateId,
      message: {
        message_id: 900_000 + updateId,
        date: Math.floor(Date.now() / 1000),
        chat: { id: vic, type: "private", first_name: "Vic" },
        from: { id: vic, is_bot: false, first_name: "Vic" },
        text: `/subscribe ${dock.id}`,
        entities: [{ type: "bot_command", offset: 0, length: 10 }],
      },
    });
    const post = (body: unknown, secret?: string) =>
      fetch(`${service.url}/telegram/webhook`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(secret === undefined ? {} : { "x-telegram-bot-api-secret-token": secret }),
        },
        body: JSON.stringify(body),
      });

    const wrong = await post(update(1_000_001), "not-the-secret");
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toMatchObject({ ok: false, error: { code: "unauthorized" } });
    expect((await post(update(1_000_002))).status).toBe(401);
    expect(await subscriptionRows(service.db)).toEqual([]);

    const right = await post(update(1_000_003), webhookSecret(SANDBOX_BOT_TOKEN));
    expect(right.status).toBe(200);
    expect(await subscriptionRows(service.db)).toEqual([[dock.id, vic, "private", "active"]]);
    // The header's value never reaches the log.
    expect(service.logs.text).not.toContain(webhookSecret(SANDBOX_BOT_TOKEN));
  });

  it("TELEGRAM_WEBHOOK_URL must be https with a real bot token (the sandbox's takes http)", () => {
    const token = `123456:${"A".repeat(35)}`;
    expect(() =>
      loadConfig({ TELEGRAM_BOT_TOKEN: token, TELEGRAM_WEBHOOK_URL: "http://bot.example/telegram/webhook" }),
    ).toThrow(ConfigError);
    expect(
      loadConfig({ TELEGRAM_BOT_TOKEN: token, TELEGRAM_WEBHOOK_URL: "https://bot.example/telegram/webhook" })
        .telegramWebhookUrl,
    ).toBe("https://bot.example/telegram/webhook");
    // The sandbox's bot takes http too, built in or shared (`dock-notify sandbox` on another port).
    expect(
      loadConfig({
        TELEGRAM_BOT_TOKEN: SANDBOX_BOT_TOKEN,
        TELEGRAM_API_ROOT: "http://127.0.0.1:8081/sandbox",
        TELEGRAM_WEBHOOK_URL: "http://127.0.0.1:8080/telegram/webhook",
      }).telegramWebhookUrl,
    ).toBe("http://127.0.0.1:8080/telegram/webhook");
    expect(() => loadConfig({ TELEGRAM_WEBHOOK_URL: "somewhere" })).toThrow(
      'TELEGRAM_WEBHOOK_URL must be an absolute http(s) URL, got "somewhere"',
    );
    expect(loadConfig({}).telegramWebhookUrl).toBeNull();
  });
});
