import { mkdirSync } from "node:fs";
import fc from "fast-check";
import { Api } from "grammy";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prepareContent, URL_RULE } from "../../src/domain/message-options.ts";
import { notificationBody, renderNotification } from "../../src/domain/render.ts";
import { entityProblems } from "../../src/domain/telegram-format.ts";
import type { DockWithSecret } from "../../src/store/docks.ts";
import { migrate } from "../../src/store/open.ts";
import { OutboxViews } from "../../src/store/outbox-views.ts";
import { SANDBOX_BOT_TOKEN } from "../../src/telegram/sandbox-bot.ts";
import { chromiumPath, launchChromium } from "../helpers/browser.ts";
import { sandboxOf } from "../helpers/delivery-harness.ts";
import {
  basic,
  databaseAt,
  dialects,
  OLD_DOCK,
  type RunningService,
  startService,
} from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON the service and sandbox answered.
type Json = any;

const DIALECTS = await dialects();

async function send(
  url: string,
  body: string,
  headers: Record<string, string>,
): Promise<{ status: number; body: Json }> {
  const response = await fetch(url, { method: "POST", body, headers });
  return { status: response.status, body: await response.json() };
}

const json = { "Content-Type": "application/json" };

/** The example, as a curl user would send it. */
const EXAMPLE = {
  msg: "**Build 42** failed on `main`\n[logs](https://ci.example/42)",
  format: "markdown",
  title: "CI",
  priority: "high",
  tags: ["warning"],
};

describe.each(DIALECTS)("rich notifications accepted and stored on %s", (dialect) => {
  let service: RunningService;
  let dock: DockWithSecret;

  beforeAll(async () => {
    service = await startService(dialect, { AUTH_FAILURES_PER_MINUTE: "0", DOCK_RATE_BURST: "0" });
    dock = await service.app.docks.create(1, { name: "Deploys", link: null, description: null });
  });
  afterAll(async () => service?.close());

  const ping = (fields: Record<string, unknown>, headers: Record<string, string> = json) =>
    send(
      `${service.url}/ping`,
      JSON.stringify({ dock_id: dock.id, secret_key: dock.secretKey, ...fields }),
      headers,
    );
  const webhook = (body: string, headers: Record<string, string>, query = "") =>
    send(`${service.url}/webhook${query}`, body, {
      Authorization: basic(dock.id, dock.secretKey),
      ...headers,
    });
  const status = async (messageId: string) => {
    const response = await fetch(`${service.url}/messages/${messageId}`, {
      headers: { Authorization: basic(dock.id, dock.secretKey) },
    });
    return ((await response.json()) as Json).message;
  };
  const storedCount = async () =>
    Number(
      (
        await service.db.kysely
          .selectFrom("messages")
          .select((eb) => eb.fn.countAll<number>().as("n"))
          .executeTakeFirstOrThrow()
      ).n,
    );

  it("stores the options with the message and shows them in GET /messages/:id", async () => {
    const answer = await ping(EXAMPLE);
    expect(answer.status).toBe(202);
    expect((await status(answer.body.message_id)).options).toEqual({
      format: "markdown",
      title: "CI",
      priority: "high",
      tags: ["warning"],
    });
    const plain = await ping({ msg: "plain" });
    expect((await status(plain.body.message_id)).options).toEqual({});
  });

  it("/webhook reads ntfy's headers; a body field wins over a header, a header over a query parameter", async () => {
    const fromHeaders = await webhook("Backup *done*", {
      "Content-Type": "text/plain",
      Title: "Nightly",
      Priority: "1",
      Tags: "white_check_mark,backup",
      Markdown: "yes",
      Click: "https://backup.example",
      Actions: "view, Log, https://backup.example/log",
    });
    expect(fromHeaders.status).toBe(202);
    expect((await status(fromHeaders.body.message_id)).options).toEqual({
      format: "markdown",
      title: "Nightly",
      priority: "min",
      tags: ["white_check_mark", "backup"],
      click: "https://backup.example",
      buttons: [[{ text: "Log", url: "https://backup.example/log" }]],
    });

    const mixed = await webhook(
      JSON.stringify({ msg: "x", title: "from body" }),
      { ...json, Title: "from header", Priority: "high" },
      "?title=from+query&priority=min&tags=q",
    );
    expect((await status(mixed.body.message_id)).options).toEqual({
      title: "from body",
      priority: "high",
      tags: ["q"],
    });

    const fromQuery = await webhook("x", { "Content-Type": "text/plain" }, "?t=Query+title&p=5&md=1");
    expect((await status(fromQuery.body.message_id)).options).toEqual({
      title: "Query title",
      priority: "urgent",
      format: "markdown",
    });
  });

  it("a title in UTF-8 arrives whole, raw or as RFC 2047", async () => {
    // fetch refuses non-Latin-1 header values, as many clients do; ntfy's answer is RFC 2047.
    const answer = await webhook("x", {
      "Content-Type": "text/plain",
      Title: `=?UTF-8?B?${Buffer.from("Sauvegarde réussie ✅").toString("base64")}?=`,
    });
    expect((await status(answer.body.message_id)).options.title).toBe("Sauvegarde réussie ✅");
  });

  it("400 invalid_fields naming each field, header or query parameter that is wrong, and nothing stored", async () => {
    const before = await storedCount();
    const body = await ping({
      msg: "x",
      priority: "loud",
      title: 42,
      buttons: [[{ text: "x", url: "ftp://x" }]],
    });
    expect(body.status).toBe(400);
    expect(body.body.error.code).toBe("invalid_fields");
    expect(body.body.error.fields).toEqual([
      { field: "title", message: "must be a string." },
      { field: "priority", message: "must be min, low, default, high or urgent, or 1 to 5." },
      { field: "buttons[0][0].url", message: URL_RULE },
    ]);
    const header = await webhook("x", { "Content-Type": "text/plain", "X-Priority": "loud" });
    expect(header.status).toBe(400);
    expect(header.body.error.fields).toEqual([
      { field: "the X-Priority header", message: "must be min, low, default, high or urgent, or 1 to 5." },
    ]);
    const query = await webhook("x", { "Content-Type": "text/plain" }, "?click=javascript:alert(1)");
    expect(query.body.error.fields?.[0]?.field).toBe("the click query parameter");
    const html = await ping({ msg: "<div>not Telegram's</div>", format: "html" });
    expect(html.status).toBe(400);
    expect(html.body.error.fields).toEqual([
      {
        field: "msg",
        message:
          'is not valid Telegram HTML: Unsupported start tag "div" at byte offset 0. In Telegram HTML, write <, > and & in text as &lt;, &gt; and &amp;.',
      },
    ]);
    const v2 = await ping({ msg: "1.5", format: "telegram_markdownv2" });
    expect(v2.body.error.fields?.[0]?.message).toMatch(
      /^is not valid Telegram MarkdownV2: Character '\.' is reserved/,
    );
    expect(await storedCount()).toBe(before);
  });

  it("400 for a link whose text is an address on another host, and for tg: buttons other than resolve", async () => {
    const before = await storedCount();
    const deceptive = {
      markdown: "Your account is locked: [https://bank.example/login](https://evil.example/login)",
      html: 'Your account is locked: <a href="https://evil.example/login">bank.example</a>',
      telegram_markdownv2: "Your account is locked: [www\\.bank\\.example](https://evil.example/login)",
    };
    for (const [format, msg] of Object.entries(deceptive)) {
      const answer = await ping({ msg, format });
      expect(answer.status, format).toBe(400);
      expect(answer.body.error.code).toBe("invalid_fields");
      expect(answer.body.error.fields).toEqual([
        {
          field: "msg",
          message: expect.stringMatching(
            /^has a link where the text ".*" names .*bank\.example but the link goes to evil\.example/,
          ),
        },
      ]);
    }
    const proxyLink = await ping({
      msg: "[Faster](tg://proxy?server=proxy.evil.example&port=443&secret=00)",
      format: "markdown",
    });
    expect(proxyLink.body.error.fields?.[0]?.message).toMatch(
      /^has a link to tg:\/\/proxy: the only tg: links/,
    );
    const proxy = "tg://proxy?server=proxy.evil.example&port=443&secret=00";
    const button = await ping({ msg: "x", buttons: [{ text: "Connect", url: proxy }] });
    expect(button.status).toBe(400);
    expect(button.body.error.fields).toEqual([{ field: "buttons[0][0].url", message: URL_RULE }]);
    const click = await webhook("x", { "Content-Type": "text/plain", Click: proxy });
    expect(click.body.error.fields).toEqual([{ field: "the Click header", message: URL_RULE }]);
    const label = await ping({ msg: "x", buttons: [{ text: "bank.example", url: "https://evil.example" }] });
    expect(label.body.error.fields?.[0]?.field).toBe("buttons[0][0].text");
    expect(await storedCount()).toBe(before);
    // An honest link, a mention of the chat it opens and a tg://resolve button are taken.
    const honest = await ping({
      msg: "[https://bank.example/login](https://www.bank.example/login) and [@DockNotifyBot](https://t.me/DockNotifyBot)",
      format: "markdown",
      buttons: [{ text: "Chat", url: "tg://resolve?domain=DockNotifyBot" }],
    });
    expect(honest.status).toBe(202);
  });

  it("an Idempotency-Key replays the same message and options, and refuses other options", async () => {
    const key = { ...json, "Idempotency-Key": `rich-${dialect}` };
    const first = await ping(EXAMPLE, key);
    const again = await ping(EXAMPLE, key);
    expect(again.status).toBe(202);
    expect(again.body.message_id).toBe(first.body.message_id);
    const other = await ping({ ...EXAMPLE, priority: "low" }, key);
    expect(other.status).toBe(422);
  });
});

describe("rich notifications delivered to the sandbox", () => {
  let service: RunningService;
  let dock: DockWithSecret;
  let person: number;
  let sandbox: ReturnType<typeof sandboxOf>;
  let browser: Browser | undefined;

  beforeAll(async () => {
    service = await startService(
      "sqlite",
      { AUTH_FAILURES_PER_MINUTE: "0", DOCK_RATE_BURST: "0" },
      { pace: "unpaced" },
    );
    dock = await service.app.docks.create(1, {
      name: "Deploys",
      link: "https://deploys.example",
      description: null,
    });
    sandbox = sandboxOf(service);
    person = await sandbox.person("Ada");
    await service.subscriptions.subscribe(dock.id, person, "private");
  });
  afterAll(async () => {
    await browser?.close();
    await service?.close();
  });

  /** Sends with /ping and waits for the bot's message(s) in the person's chat. */
  const delivered = async (fields: Record<string, unknown>, parts = 1): Promise<Json[]> => {
    const seen = (await sandbox.botMessages(person)).length;
    const answer = await send(
      `${service.url}/ping`,
      JSON.stringify({ dock_id: dock.id, secret_key: dock.secretKey, ...fields }),
      json,
    );
    expect(answer.status).toBe(202);
    return waitFor("the notification in the chat", async () => {
      const messages = (await sandbox.botMessages(person)).slice(seen);
      return messages.length >= parts ? messages : undefined;
    });
  };
  const spans = (message: Json) =>
    (message.entities ?? []).map(
      (e: Json) => `${e.type}:${JSON.stringify(message.text.slice(e.offset, e.offset + e.length))}`,
    );

  it("the issue's example arrives formatted, titled and marked, with a clickable link", async () => {
    const [message] = await delivered(EXAMPLE);
    expect(message.text).toBe("❗ Deploys\n⚠️ CI\nBuild 42 failed on main\nlogs");
    expect(spans(message)).toEqual([
      'bold:"❗ Deploys"',
      'bold:"⚠️ CI"',
      'bold:"Build 42"',
      'code:"main"',
      'text_link:"logs"',
    ]);
    expect(message.entities.at(-1).url).toBe("https://ci.example/42");
    expect(message.link_preview_options).toEqual({ is_disabled: true });
    expect(message.reply_markup.inline_keyboard).toEqual([
      [{ text: "Open deploys.example", url: "https://deploys.example" }],
    ]);
  });

  it("low priority arrives silently; buttons, click and protect_content reach Telegram", async () => {
    const [message] = await delivered({
      msg: "<b>disk</b> at 91%",
      format: "html",
      priority: "low",
      protect_content: true,
      buttons: [{ text: "Grafana", url: "https://grafana.example/d/1" }],
      click: "https://grafana.example",
    });
    expect(message.text).toBe("Deploys\ndisk at 91%");
    expect(spans(message)).toEqual(['bold:"Deploys"', 'bold:"disk"']);
    expect(message.disable_notification).toBe(true);
    expect(message.has_protected_content).toBe(true);
    expect(message.reply_markup.inline_keyboard).toEqual([
      [{ text: "Grafana", url: "https://grafana.example/d/1" }],
      [{ text: "Open", url: "https://grafana.example" }],
      [{ text: "Open deploys.example", url: "https://deploys.example" }],
    ]);
  });

  it("a long formatted text arrives in parts, each with valid entities", async () => {
    const msg = `**${"long bold text ".repeat(400)}end**\n\`\`\`\n${"x = 1\n".repeat(500)}\`\`\``;
    const messages = await delivered({ msg, format: "markdown", title: "Report" }, 3);
    expect(messages.map((m: Json) => m.text.split("\n")[0])).toEqual([
      "Deploys (1/3)",
      "Deploys (2/3)",
      "Deploys (3/3)",
    ]);
    for (const message of messages) {
      expect(message.text.length).toBeLessThanOrEqual(4096);
      expect(entityProblems(message.text, message.entities)).toEqual([]);
    }
    // The bold run crosses the first boundary: it ends the first part and begins the second.
    expect(messages[0].entities.at(-1).type).toBe("bold");
    expect(messages[1].entities[1]).toMatchObject({ type: "bold", offset: "Deploys (2/3)\n".length });
  });

  it("for any text in format markdown, Telegram (the sandbox) accepts every part as built (property)", async () => {
    const api = new Api(SANDBOX_BOT_TOKEN, { apiRoot: `${service.url}/sandbox` });
    const source = fc.oneof(
      fc.string({ unit: "grapheme", maxLength: 300 }),
      fc
        .array(
          fc.constantFrom(
            "**",
            "*",
            "_",
            "~~",
            "`",
            "```",
            "\n",
            "> ",
            "- ",
            "[",
            "](https://a.example)",
            "](tg://user?id=42)",
            "](http://localhost:3000)",
            "](tg://a.b)",
            "](https://a.b:0/)",
            "![",
            "word",
            " ",
            "😀",
            "漢字",
            "<b>",
            "#",
          ),
          { maxLength: 60 },
        )
        .map((pieces) => pieces.join("")),
    );
    await fc.assert(
      fc.asyncProperty(source, async (msg) => {
        fc.pre(msg.trim() !== "");
        const content = await prepareContent(msg, { format: "markdown", title: "T", tags: ["warning", "x"] });
        for (const part of renderNotification({ name: "Deploys", link: null }, msg, content)) {
          expect(entityProblems(part.text, part.entities)).toEqual([]);
          const { text, ...options } = part;
          const sent = await api.sendMessage(person, text, options);
          expect(sent.message_id).toBeGreaterThan(0);
        }
      }),
      { numRuns: 150 },
    );
  }, 120_000);

  it.skipIf(!chromiumPath)(
    "the chat page shows the formatted message with title, tags, marker and buttons",
    async () => {
      await delivered({
        ...EXAMPLE,
        tags: ["warning", "ci"],
        buttons: [{ text: "Logs", url: "https://ci.example/42/log" }],
      });
      await delivered({
        msg: "Nightly backup _done_",
        format: "markdown",
        priority: "min",
        tags: ["white_check_mark"],
      });
      browser = await launchChromium();
      const page = await browser.newPage({ viewport: { width: 480, height: 900 } });
      await page.goto(`${service.url}/sandbox`);
      // Ada is the sandbox's only person: the page opens as her, in her chat with the bot.
      expect(await page.getByLabel("You are").locator("option:checked").textContent()).toBe("Ada");
      const log = page.getByRole("log", { name: "Messages" });
      const rich = log.locator("li", { hasText: "Build 42 failed on main" }).last();
      await rich.waitFor();
      expect(await rich.locator("strong").allTextContents()).toEqual(["❗ Deploys", "⚠️ CI", "Build 42"]);
      expect(await rich.locator("code").textContent()).toBe("main");
      expect(await rich.getByRole("link", { name: "logs" }).getAttribute("href")).toBe(
        "https://ci.example/42",
      );
      expect(await rich.locator(".entity-link").allTextContents()).toEqual(["#ci"]);
      await rich.getByRole("button", { name: /Logs/ }).waitFor();
      await rich.getByRole("button", { name: /Open deploys\.example/ }).waitFor();
      const quiet = log.locator("li", { hasText: "Nightly backup done" }).last();
      expect(await quiet.locator("em").textContent()).toBe("done");
      await quiet.getByRole("img", { name: "Arrived without a sound" }).waitFor();
      mkdirSync("test-results", { recursive: true });
      await page.screenshot({ path: "test-results/rich-notification.png", fullPage: true });
    },
  );
});

describe.each(DIALECTS)("migration 0008 on %s", (dialect) => {
  it("messages stored before it stay plain text: no options, the text under the Dock's name", async () => {
    const old = await databaseAt(dialect, "0007-write-probes");
    const { db } = old;
    try {
      await old.addMessage("msg_old", "**not bold**", 0);
      expect((await migrate(db))[0]).toBe("0008-message-content");
      const status = await new OutboxViews(db).status("msg_old", OLD_DOCK);
      expect(status?.content).toBeNull();
      const [report] = (await new OutboxViews(db).history(OLD_DOCK, { limit: 1 })).messages;
      expect(notificationBody(report?.text ?? "", report?.content ?? null)).toEqual({
        text: "**not bold**",
        entities: [],
      });
    } finally {
      await old.close();
    }
  });
});
