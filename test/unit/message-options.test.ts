import { describe, expect, it } from "vitest";
import {
  isSilent,
  LABEL_RULE,
  type MessageOptions,
  OptionsError,
  prepareContent,
  readDuration,
  readOptions,
  URL_RULE,
} from "../../src/domain/message-options.ts";
import { entityProblems } from "../../src/domain/telegram-format.ts";
import { decodeHeaderValue, gatherOptions } from "../../src/integrations/ntfy-dialect.ts";

const fromBody = (body: Record<string, unknown>) => readOptions(gatherOptions(body));

/** The problems readOptions reports, as `field: message`. */
function problems(read: () => unknown): string[] {
  try {
    read();
  } catch (error) {
    if (error instanceof OptionsError) return error.problems.map((p) => `${p.field}: ${p.message}`);
    throw error;
  }
  return [];
}

describe("message options from a JSON body", () => {
  it("reads every option, normalised", () => {
    expect(
      fromBody({
        title: "  CI \n run ",
        format: "Markdown",
        priority: 4,
        silent: false,
        tags: ["warning", " deploy "],
        buttons: [{ text: "Logs", url: "https://ci.example/42" }],
        click: "https://ci.example",
        link_preview: true,
        protect_content: "yes",
      }),
    ).toEqual({
      title: "CI run",
      format: "markdown",
      priority: "high",
      tags: ["warning", "deploy"],
      buttons: [[{ text: "Logs", url: "https://ci.example/42" }]],
      click: "https://ci.example",
      link_preview: true,
      protect_content: true,
    });
  });

  it("leaves out what is at its default, and reads nothing from a plain message", () => {
    expect(fromBody({ msg: "hi" })).toEqual({});
    expect(
      fromBody({
        priority: "default",
        title: "  ",
        tags: [],
        format: "text",
        silent: false,
        link_preview: false,
        protect_content: false,
        markdown: false,
      }),
    ).toEqual({});
    // silent: false is not a default for min and low: it gives them a sound.
    expect(fromBody({ priority: "low", silent: false })).toEqual({ priority: "low", silent: false });
  });

  it("reads ntfy's JSON name markdown: true as format markdown; format wins", () => {
    expect(fromBody({ markdown: true })).toEqual({ format: "markdown" });
    expect(fromBody({ markdown: true, format: "html" })).toEqual({ format: "html" });
  });

  it.each([
    ["min", "min"],
    [1, "min"],
    ["2", "low"],
    ["LOW", "low"],
    [4, "high"],
    ["urgent", "urgent"],
    ["max", "urgent"],
    [5, "urgent"],
  ])("priority %j is %s", (given, priority) => {
    expect(fromBody({ priority: given }).priority).toBe(priority);
  });

  it.each(["constructor", "__proto__", "6", "0", "highest"])(
    "refuses priority %j with the rule, whatever the word",
    (given) => {
      expect(problems(() => fromBody({ priority: given }))).toEqual([
        "priority: must be min, low, default, high or urgent, or 1 to 5.",
      ]);
    },
  );

  it("min and low arrive silently unless silent says otherwise; silent wins both ways", () => {
    const silent = (options: MessageOptions) => isSilent(options);
    expect(silent({ priority: "min" })).toBe(true);
    expect(silent({ priority: "low" })).toBe(true);
    expect(silent({})).toBe(false);
    expect(silent({ priority: "urgent" })).toBe(false);
    expect(silent({ priority: "low", silent: false })).toBe(false);
    expect(silent({ priority: "high", silent: true })).toBe(true);
  });

  it("lays a flat list of buttons out in rows of three", () => {
    const buttons = Array.from({ length: 7 }, (_, i) => ({ text: `B${i}`, url: `https://x.example/${i}` }));
    expect(fromBody({ buttons }).buttons?.map((row) => row.length)).toEqual([3, 3, 1]);
  });

  it("names every field that is wrong, all at once", () => {
    expect(
      problems(() =>
        fromBody({
          title: "t".repeat(251),
          format: "rtf",
          priority: 6,
          silent: "maybe",
          tags: "a,".repeat(11),
          click: "javascript:alert(1)",
        }),
      ),
    ).toEqual([
      "format: must be one of text, markdown, html, telegram_markdownv2.",
      "title: must be at most 250 characters.",
      "priority: must be min, low, default, high or urgent, or 1 to 5.",
      "silent: must be true or false.",
      "tags: may hold at most 10 tags of at most 64 characters.",
      `click: ${URL_RULE}`,
    ]);
  });

  it.each<[string, unknown, string]>([
    ["not a list", { text: "x" }, "buttons: must be an array of buttons, or of rows of buttons."],
    [
      "four rows",
      [[{ text: "a", url: "https://a.example" }], [], [], []],
      "buttons: may hold at most 3 rows of 3 buttons.",
    ],
    [
      "four in a row",
      [Array(4).fill({ text: "a", url: "https://a.example" })],
      "buttons: may hold at most 3 rows of 3 buttons.",
    ],
    [
      "a mix of rows and buttons",
      [[{ text: "a", url: "https://a.example" }], { text: "b", url: "https://b.example" }],
      "buttons: must be buttons or rows of buttons, not a mix.",
    ],
    ["an empty label", [[{ text: " ", url: "https://a.example" }]], `buttons[0][0].text: ${LABEL_RULE}`],
    ["a javascript URL", [[{ text: "a", url: "javascript:alert(1)" }]], `buttons[0][0].url: ${URL_RULE}`],
    ["a URL without a host", [[{ text: "a", url: "https://" }]], `buttons[0][0].url: ${URL_RULE}`],
    [
      "a label with a lone surrogate",
      [[{ text: "a\ud800", url: "https://a.example" }]],
      `buttons[0][0].text: ${LABEL_RULE}`,
    ],
    [
      "a label with a control character",
      [[{ text: "a\u0007", url: "https://a.example" }]],
      `buttons[0][0].text: ${LABEL_RULE}`,
    ],
  ])("buttons: %s", (_name, buttons, problem) => {
    expect(problems(() => fromBody({ buttons }))).toEqual([problem]);
  });

  it.each([
    "http://localhost:3000/job/1",
    "http://jenkins/job/1",
    "https://a.example:0/",
    "https://user:secret@a.example/",
    "tg:foo!!",
    "tg://a.b",
    "ton://wallet",
    "ci.example/42",
    "https://a.example/\u0001",
    "https://a.example/\ud800",
    "http://3000/",
    "http://0x7f000001/",
    "http:example.com",
    "https:/example.com",
    "https:\\\\example.com\\x",
    "http://a%2eb/",
    "http://example.com./",
    "tg://user?id=42",
    "tg:user?id=42",
    "tg://user/?foo=1&id=42",
    // Telegram takes these, but pressing one acts on the reader's app: refused like the others.
    "tg://proxy?server=proxy.evil.example&port=443&secret=00",
    "tg://socks?server=evil.example&port=1080",
    "tg://login?token=abc",
    "tg://join?invite=abc",
    "TG://PROXY?server=evil.example",
  ])("refuses a button URL Telegram refuses, or an app link other than tg://resolve: %j", (url) => {
    expect(problems(() => fromBody({ buttons: [{ text: "x", url }] }))).toEqual([
      `buttons[0][0].url: ${URL_RULE}`,
    ]);
    expect(problems(() => fromBody({ click: url }))).toHaveLength(1);
  });

  it.each([
    "https://ci.example/42?a=1#x",
    "http://10.0.0.7:8080/",
    "http://[2001:db8::1]:8080/x",
    "tg://resolve?domain=dock_notify_bot",
  ])("takes a button URL Telegram takes: %s", (url) => {
    expect(fromBody({ click: url }).click).toBe(url);
  });
});

describe("message options from /webhook headers and query parameters (ntfy's names)", () => {
  it("reads ntfy's headers", () => {
    const options = readOptions(
      gatherOptions(
        {},
        {
          title: "Backup",
          "x-priority": "5",
          tags: "warning,skull, nightly",
          markdown: "yes",
          click: "https://backup.example",
          actions: "view, Open log, https://backup.example/log?a=1,2; view, Docs, https://docs.example",
        },
      ),
    );
    expect(options).toEqual({
      title: "Backup",
      priority: "urgent",
      tags: ["warning", "skull", "nightly"],
      format: "markdown",
      click: "https://backup.example",
      buttons: [
        [
          { text: "Open log", url: "https://backup.example/log?a=1,2" },
          { text: "Docs", url: "https://docs.example" },
        ],
      ],
    });
  });

  it("reads the short names too (t, p, ta, md) and ntfy's key=value and JSON actions", () => {
    expect(readOptions(gatherOptions({}, { t: "x", p: "low", ta: "a", md: "1" }))).toEqual({
      title: "x",
      priority: "low",
      tags: ["a"],
      format: "markdown",
    });
    expect(
      readOptions(
        gatherOptions({}, { actions: "action=view, label=Open, url=https://a.example, clear=true" }),
      ),
    ).toEqual({ buttons: [[{ text: "Open", url: "https://a.example" }]] });
    expect(
      readOptions(
        gatherOptions({}, { actions: '[{"action":"view","label":"Open","url":"https://a.example"}]' }),
      ),
    ).toEqual({ buttons: [[{ text: "Open", url: "https://a.example" }]] });
  });

  it("a body field wins over a header, a header over a query parameter", () => {
    const options = readOptions(
      gatherOptions(
        { title: "from body" },
        { title: "from header", priority: "high" },
        { title: "from query", priority: "min", tags: "q" },
      ),
    );
    expect(options).toEqual({ title: "from body", priority: "high", tags: ["q"] });
  });

  it("Format wins over Markdown, and Markdown: no leaves the text as it is", () => {
    expect(readOptions(gatherOptions({}, { format: "html", markdown: "yes" })).format).toBe("html");
    expect(readOptions(gatherOptions({}, { markdown: "no" })).format).toBeUndefined();
  });

  it("ignores HTTP's own Priority header (RFC 9218), which proxies and HTTP/2 clients add", () => {
    expect(readOptions(gatherOptions({}, { priority: "u=3" }))).toEqual({});
    expect(readOptions(gatherOptions({}, { priority: "u=1, i" }))).toEqual({});
    expect(readOptions(gatherOptions({}, { priority: "u=0, i=?1" }))).toEqual({});
    expect(readOptions(gatherOptions({}, { priority: "i=?0" }))).toEqual({});
    expect(readOptions(gatherOptions({}, { priority: "u=3", "x-priority": "high" }))).toEqual({
      priority: "high",
    });
  });

  it("names the header or query parameter that is wrong", () => {
    expect(problems(() => readOptions(gatherOptions({}, { "x-priority": "loud" })))).toEqual([
      "the X-Priority header: must be min, low, default, high or urgent, or 1 to 5.",
    ]);
    expect(problems(() => readOptions(gatherOptions({}, {}, { p: "9" })))).toEqual([
      "the p query parameter: must be min, low, default, high or urgent, or 1 to 5.",
    ]);
    expect(
      problems(() => readOptions(gatherOptions({}, { actions: "http, Reboot, https://a.example" }))),
    ).toEqual([
      'the Actions header (action 1): only "view" actions (URL buttons) and "ack" (an Acknowledge button) can be shown; "http" cannot.',
    ]);
    expect(
      problems(() =>
        readOptions(
          gatherOptions({}, { actions: "view, A, https://a.example; view, B, http://localhost:3000" }),
        ),
      ),
    ).toEqual([`the Actions header (action 2).url: ${URL_RULE}`]);
    expect(problems(() => readOptions(gatherOptions({}, { actions: "garbage" })))).toEqual([
      'the Actions header (action 1): is not in ntfy\'s action form "view, Label, https://…" ("garbage" is not an action).',
    ]);
  });

  it("decodes UTF-8 sent raw (Node reads it as Latin-1) and RFC 2047 words", () => {
    const raw = Buffer.from("Sauvegarde réussie ✅", "utf8").toString("latin1");
    expect(decodeHeaderValue(raw)).toBe("Sauvegarde réussie ✅");
    expect(decodeHeaderValue(`=?UTF-8?B?${Buffer.from("Привет 👋").toString("base64")}?=`)).toBe("Привет 👋");
    expect(decodeHeaderValue("=?utf-8?q?caf=C3=A9_ok?=")).toBe("café ok");
    // Latin-1 that is not UTF-8 stays as it came.
    expect(decodeHeaderValue("caf\u00e9")).toBe("café");
  });
});

describe("preparing a message's content on arrival", () => {
  it("a plain message with no options has none", async () => {
    expect(await prepareContent("hi", {})).toBeNull();
  });

  it("splits tags into emoji (GitHub's short codes, as ntfy) and hashtags", async () => {
    const content = await prepareContent("x", { tags: ["warning", ":white_check_mark:", "prod-eu", "42"] });
    expect(content?.emoji).toBe("⚠️✅");
    expect(content?.hashtags).toEqual(["#prod_eu", "#tag_42"]);
  });

  it("parses Markdown into entities", async () => {
    const content = await prepareContent("**Build 42** failed", { format: "markdown" });
    expect(content?.body).toEqual({
      text: "Build 42 failed",
      entities: [{ type: "bold", offset: 0, length: 8 }],
    });
  });

  it("checks Telegram HTML and MarkdownV2 with the sandbox's parser, naming msg", async () => {
    const html = await prepareContent("<b>ok</b> &amp; <a href='https://a.example'>link</a>", {
      format: "html",
    });
    expect(html?.body?.text).toBe("ok & link");
    expect(entityProblems(html?.body?.text ?? "", html?.body?.entities ?? [])).toEqual([]);
    await expect(prepareContent("<div>no</div>", { format: "html" })).rejects.toThrow(
      /msg: is not valid Telegram HTML: Unsupported start tag "div"/,
    );
    const v2 = await prepareContent("*bold* \\. _it_", { format: "telegram_markdownv2" });
    expect(v2?.body?.text).toBe("bold . it");
    await expect(prepareContent("1.5", { format: "telegram_markdownv2" })).rejects.toThrow(
      /msg: is not valid Telegram MarkdownV2: Character '\.' is reserved/,
    );
  });

  it("never builds a mention of a user or a link Telegram refuses: the text stays", async () => {
    for (const format of ["markdown", "html"] as const) {
      const msg =
        format === "markdown"
          ? "[Bob](tg://user/?x=1&id=42) [local](http://localhost:3000) [odd](tg://a.b) [ok](https://a.example)"
          : '<a href="tg:user?id=42">Bob</a> <a href="http://localhost:3000">local</a> <a href="tg://a.b">odd</a> <a href="https://a.example">ok</a>';
      const content = await prepareContent(msg, { format });
      expect(content?.body?.text).toBe("Bob local odd ok");
      expect(content?.body?.entities).toEqual([
        { type: "text_link", offset: 14, length: 2, url: "https://a.example" },
      ]);
    }
  });

  /** The problems prepareContent reports for `msg` in `format`, as `field: message`. */
  async function contentProblems(msg: string, format: MessageOptions["format"]): Promise<string[]> {
    try {
      await prepareContent(msg, { format });
    } catch (error) {
      if (error instanceof OptionsError) return error.problems.map((p) => `${p.field}: ${p.message}`);
      throw error;
    }
    return [];
  }

  /** A link in each format that has them. */
  const linkIn = {
    markdown: (text: string, url: string) => `See [${text.replace(/[[\]]/g, "\\$&")}](${url})`,
    html: (text: string, url: string) => `See <a href="${url.replaceAll("&", "&amp;")}">${text}</a>`,
    telegram_markdownv2: (text: string, url: string) =>
      `See [${text.replace(/[_*[\]()~`>#+\-=|{}.!\\]/g, "\\$&")}](${url.replace(/[)\\]/g, "\\$&")})`,
  } as const;

  it.each(Object.keys(linkIn) as (keyof typeof linkIn)[])(
    "%s: refuses a link whose text is an address on another host, or a tg: link other than resolve",
    async (format) => {
      const refused: [string, string][] = [
        ["https://bank.example/login", "https://evil.example/login"],
        ["bank.example", "https://evil.example"],
        ["www.bank.example", "https://bank.example.evil.example/"],
        ["Log in at https://bank.example now", "https://evil.example"],
        ["https://bank.example@evil.example", "https://evil.example"],
        ["bank\u200b.example", "https://evil.example"],
        ["@DockNotifyBot", "https://evil.example"],
        ["Use this proxy", "tg://proxy?server=proxy.evil.example&port=443&secret=00"],
      ];
      for (const [text, url] of refused) {
        const found = await contentProblems(linkIn[format](text, url), format);
        expect(found, `${text} → ${url}`).toHaveLength(1);
        expect(found[0]).toMatch(/^msg: has a link (where|to tg:\/\/proxy)/);
      }
      const taken: [string, string][] = [
        ["https://bank.example/login", "https://bank.example/"],
        ["bank.example", "https://www.bank.example/login"],
        ["the logs", "https://evil.example"],
        ["README.md", "https://github.com/owner/repo/blob/main/README.md"],
        ["Build 1.2.3", "https://ci.example/1"],
        ["@DockNotifyBot", "https://t.me/docknotifybot"],
        ["our bot", "tg://resolve?domain=DockNotifyBot"],
      ];
      for (const [text, url] of taken) {
        expect(await contentProblems(linkIn[format](text, url), format), `${text} → ${url}`).toEqual([]);
      }
    },
  );

  it("refuses a button whose label is an address on another host", () => {
    expect(
      problems(() => fromBody({ buttons: [{ text: "https://bank.example", url: "https://evil.example" }] })),
    ).toEqual([
      expect.stringMatching(
        /^buttons\[0\]\[0\]\.text: the text "https:\/\/bank\.example" names bank\.example but the link goes to evil\.example/,
      ),
    ]);
    expect(fromBody({ buttons: [{ text: "ci.example", url: "https://ci.example/42" }] }).buttons).toEqual([
      [{ text: "ci.example", url: "https://ci.example/42" }],
    ]);
  });

  it("shows the source when formatting leaves no text", async () => {
    const content = await prepareContent("[](https://a.example)", { format: "markdown" });
    expect(content?.body).toEqual({ text: "[](https://a.example)", entities: [] });
  });
});

describe("the OpenAPI schemas and the checks agree", () => {
  it("on every limit and every value", async () => {
    const schemas = await import("../../src/http/message-schemas.ts");
    // The schemas as the OpenAPI document has them (plain JSON Schema).
    // biome-ignore lint/suspicious/noExplicitAny: read as plain JSON.
    const { messageOptionFields, buttonSchema }: any = JSON.parse(JSON.stringify(schemas));
    const limits = await import("../../src/domain/message-options.ts");
    expect(messageOptionFields.title.maxLength).toBe(limits.MAX_TITLE);
    expect(buttonSchema.properties.text.maxLength).toBe(limits.MAX_BUTTON_TEXT);
    expect(buttonSchema.properties.url.maxLength).toBe(limits.MAX_URL);
    expect(messageOptionFields.format.anyOf.map((s: { const: string }) => s.const)).toEqual([
      ...limits.FORMATS,
    ]);
    const [rows, flat] = messageOptionFields.buttons.anyOf;
    expect(rows?.maxItems).toBe(limits.MAX_BUTTON_ROWS);
    expect(rows?.items.maxItems).toBe(limits.MAX_BUTTONS_PER_ROW);
    expect(flat?.type).toBe("array");
    const [list] = messageOptionFields.tags.anyOf;
    expect(list?.maxItems).toBe(limits.MAX_TAGS);
    expect(list?.items.maxLength).toBe(limits.MAX_TAG);
  });
});

describe("reminders and escalation", () => {
  /** The fields refused. */
  const refused = (read: () => unknown) => problems(read).map((problem) => problem.split(": ")[0]);
  const DOCK = "3kTMd9Qx7pLr2vNw8YbZc4";
  const OTHER = "6v0C41amJuTn1Cf8bQIOtQ";

  it("reads durations as seconds or as hours, minutes and seconds", () => {
    expect([300, "300", "90s", "5m", "1h", "1h30m", " 2M "].map(readDuration)).toEqual([
      300, 300, 90, 300, 3600, 5400, 120,
    ]);
    expect(["", "5 minutes", "1d", "-5", "1.5h", "h", {}, null, 3.5].map(readDuration)).toEqual(
      Array(9).fill(undefined),
    );
  });

  it("takes ack as an object with a schedule, or the schedule alone, which adds ack", () => {
    expect(fromBody({ ack: { remind_every: "5m", remind_for: "1h" } })).toEqual({
      ack: true,
      remind_every: 300,
      remind_for: 3600,
    });
    expect(readOptions(gatherOptions({}, {}, { remind_every: "30s" }))).toEqual({
      ack: true,
      remind_every: 30,
      remind_for: 3600,
    });
    expect(readOptions(gatherOptions({}, { "x-remind-every": "2h" }, {}))).toMatchObject({
      remind_for: 7200,
    });
  });

  it("refuses schedules it cannot keep, naming the field", () => {
    expect(refused(() => fromBody({ ack: { remind_every: 29 } }))).toEqual(["ack.remind_every"]);
    expect(refused(() => fromBody({ ack: { remind_every: "5m", remind_for: "25h" } }))).toEqual([
      "ack.remind_for",
    ]);
    expect(refused(() => fromBody({ ack: { remind_every: "5m", remind_for: "1m" } }))).toEqual([
      "ack.remind_for",
    ]);
    expect(refused(() => fromBody({ ack: { every: "5m" } }))).toEqual(["ack"]);
    expect(refused(() => fromBody({ ack: false, remind_every: "5m" }))).toEqual(["remind_every"]);
    expect(refused(() => fromBody({ remind_for: "1h" }))).toEqual(["remind_for"]);
  });

  it("reads an escalation as a list or as after:dock pairs, in order, five steps at most", () => {
    expect(
      fromBody({
        escalate: [
          { after: "10m", to: DOCK },
          { after: 1800, to: OTHER },
        ],
      }),
    ).toEqual({
      ack: true,
      escalate: [
        { after: 600, to: DOCK },
        { after: 1800, to: OTHER },
      ],
    });
    expect(readOptions(gatherOptions({}, {}, { escalate: `10m:${DOCK}, 30m:${OTHER}` })).escalate).toEqual([
      { after: 600, to: DOCK },
      { after: 1800, to: OTHER },
    ]);
    for (const escalate of [
      [{ after: "10m", to: "not-a-dock" }],
      [{ after: "10s", to: DOCK }],
      [
        { after: "30m", to: DOCK },
        { after: "10m", to: OTHER },
      ],
      Array.from({ length: 6 }, (_, i) => ({ after: 60 * (i + 1), to: DOCK })),
      "10m",
      { after: "10m", to: DOCK },
    ]) {
      expect(refused(() => fromBody({ escalate }))).toEqual(["escalate"]);
    }
  });
});
