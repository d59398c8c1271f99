import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { entityProblems, parseHtml, tidyEntities } from "../../../src/domain/telegram-format.ts";
import { mrkdwnToHtml, slack } from "../../../src/integrations/slack.ts";
import { formatHarness, sent } from "./harness.ts";

const { fixture, inbound, convert, refusal } = formatHarness(slack);

/** Entities as `type:"text"` (links with their URL), as a reader sees them. */
function shown(html: string): string[] {
  const { text, entities } = tidyEntities(parseHtml(html));
  return entities.map(
    (e) =>
      `${e.type}:${JSON.stringify(text.slice(e.offset, e.offset + e.length))}${e.url ? ` ${e.url}` : ""}`,
  );
}

describe("Slack's mrkdwn", () => {
  it.each([
    ["*bold* _italic_ ~strike~ `code`", "<b>bold</b> <i>italic</i> <s>strike</s> <code>code</code>"],
    [
      "<https://example.com/a?b=1&amp;c=2|the docs>",
      '<a href="https://example.com/a?b=1&amp;c=2">the docs</a>',
    ],
    ["<https://example.com>", '<a href="https://example.com">https://example.com</a>'],
    ["see <http://localhost:3000|the dashboard>", "see the dashboard"],
    ["<mailto:ops@example.com|mail us>", "mail us"],
    [
      "<!channel> <!here> <@U024BE7LH> <@U024BE7LH|ada> <#C024BE7LR|general>",
      "@channel @here @U024BE7LH @ada #general",
    ],
    ["<!subteam^SAZ94GDB8|@ops> <!date^1392734382^{date_num}|2014-02-18>", "@ops 2014-02-18"],
    ["1 &lt; 2 &amp;&amp; 3 &gt; 2", "1 &lt; 2 &amp;&amp; 3 &gt; 2"],
    ["a < b > c", "a &lt; b &gt; c"],
    ["snake_case_name and 2*3*4", "snake_case_name and 2*3*4"],
    ["*bold _and italic_*", "<b>bold <i>and italic</i></b>"],
    ["*a _b* c_", "<b>a _b</b> c_"],
    ["*<https://example.com|bold link>*", '<b><a href="https://example.com">bold link</a></b>'],
    ["```\nconst a = 1 < 2;\n```", "<pre>const a = 1 &lt; 2;\n</pre>"],
    ["before ```inline *code*``` after", "before\n<pre>inline *code*</pre>\nafter"],
    ["```unclosed *bold*", "```unclosed <b>bold</b>"],
    [
      "&gt; quoted *line*\n&gt; and more\nafter",
      "<blockquote>quoted <b>line</b>\nand more</blockquote>\nafter",
    ],
    ["`<@U1>` stays code", "<code>&lt;@U1&gt;</code> stays code"],
    ["* not bold * and _ not italic _", "* not bold * and _ not italic _"],
  ])("%j becomes %j", (source, html) => {
    expect(mrkdwnToHtml(source)).toBe(html);
    expect(() => parseHtml(html)).not.toThrow();
  });

  it("never makes HTML that Telegram refuses, whatever the input", () => {
    // The private use characters are the converter's own placeholders: input may hold them too.
    const mrkdwnish = fc.stringMatching(/^[*_~`<>|@#!&;:/.\-a-z0-9 \n😀\uE000\uE001]{0,200}$/u);
    const pieces = fc
      .array(
        fc.constantFrom(
          "*",
          "_",
          "~",
          "`",
          "```",
          "<",
          ">",
          "|",
          "<https://example.com|",
          "<@U1>",
          "&gt;",
          "&amp;",
          "\n",
          "a",
          " ",
        ),
        { maxLength: 40 },
      )
      .map((parts) => parts.join(""));
    fc.assert(
      fc.property(fc.oneof(mrkdwnish, pieces, fc.string({ unit: "grapheme", maxLength: 100 })), (source) => {
        const html = mrkdwnToHtml(source);
        const parsed = tidyEntities(parseHtml(html));
        expect(entityProblems(parsed.text, parsed.entities)).toEqual([]);
      }),
      { numRuns: 2000 },
    );
  });
});

describe("Slack", () => {
  it("a text message keeps its lines", async () => {
    const notification = await convert(fixture("text.json"));
    expect(notification).toEqual({
      msg: "This is a line of text.\nAnd this is another one.",
      options: { format: "html" },
    });
    await sent(notification);
  });

  it("blocks show their sections and fields, with links, bold and emoji; text is only their fallback", async () => {
    const notification = await convert(fixture("blocks.json"));
    expect(notification.msg).toBe(
      [
        "Danny Torrence left the following review for your property:",
        '<a href="https://example.com">Overlook Hotel</a>',
        " ⭐",
        " Doors had too many axe holes, guest in room 237 was far too rowdy, whole place felt stuck in the 1920s.",
        "<b>Average Rating</b>",
        "1.0",
      ].join("\n"),
    );
    expect(notification.options).toEqual({ format: "html" });
    await sent(notification);
  });

  it("an attachment shows its pretext, linked title, text and fields", async () => {
    const notification = await convert(fixture("attachments.json"));
    expect(notification.msg).toBe(
      [
        "Optional pre-text that appears above the attachment block",
        '<b><a href="https://api.slack.com/">title</a></b>',
        "Optional <code>text</code> that appears within the attachment",
        "<b>A field's title</b>",
        "This field's value",
        "<b>A short field's title</b>",
        "A short field's value",
        "<b>A second short field's title</b>",
        "A second short field's value",
      ].join("\n"),
    );
    expect(notification.options).toEqual({ format: "html" });
    const part = await sent(notification);
    expect(part?.text.split("\n").slice(0, 3)).toEqual([
      "Ops",
      "Optional pre-text that appears above the attachment block",
      "title",
    ]);
  });

  it("a red attachment is high priority; a green one is not", async () => {
    for (const [color, priority] of [
      ["danger", "high"],
      ["#D63232", "high"],
      ["FF0000", "high"],
      ["good", undefined],
      ["#36a64f", undefined],
      ["warning", undefined],
    ] as const) {
      const body = { attachments: [{ color, text: "x" }] };
      expect((await convert(body)).options.priority, color).toBe(priority);
    }
  });

  it("an attachment with nothing else shows its fallback; text comes first, attachments after a blank line", async () => {
    const notification = await convert({
      text: "Deploy *done*",
      attachments: [{ fallback: "<b>v2</b> is live" }],
    });
    expect(notification.msg).toBe("Deploy <b>done</b>\n\n&lt;b&gt;v2&lt;/b&gt; is live");
  });

  it("the username is the title and a known icon_emoji a tag", async () => {
    const notification = await convert({ text: "hi", username: "Deploy Bot", icon_emoji: ":rocket:" });
    expect(notification.options).toEqual({ format: "html", title: "Deploy Bot", tags: ["rocket"] });
    expect((await convert({ text: "hi", icon_emoji: ":our-custom-parrot:" })).options.tags).toBeUndefined();
  });

  it("headers, context, dividers and rich text are shown; images and inputs are not", async () => {
    const notification = await convert({
      blocks: [
        { type: "header", text: { type: "plain_text", text: "Deploy :rocket: <v2>" } },
        {
          type: "context",
          elements: [
            { type: "mrkdwn", text: "by *ada*" },
            { type: "image", image_url: "x" },
            { type: "plain_text", text: "now" },
          ],
        },
        { type: "divider" },
        { type: "image", image_url: "https://example.com/a.png", alt_text: "chart" },
        {
          type: "rich_text",
          elements: [
            {
              type: "rich_text_section",
              elements: [
                { type: "text", text: "Hello " },
                { type: "text", text: "world", style: { bold: true, italic: true } },
                { type: "emoji", name: "wave", unicode: "1f44b" },
                { type: "link", url: "https://example.com", text: "site" },
                { type: "user", user_id: "U123" },
                { type: "text", text: "x = 1", style: { code: true } },
              ],
            },
            {
              type: "rich_text_list",
              style: "ordered",
              elements: [
                { type: "rich_text_section", elements: [{ type: "text", text: "one" }] },
                { type: "rich_text_section", elements: [{ type: "text", text: "two" }] },
              ],
            },
            { type: "rich_text_preformatted", elements: [{ type: "text", text: "npm test\n<ok>" }] },
            { type: "rich_text_quote", elements: [{ type: "text", text: "quoted" }] },
          ],
        },
        { type: "input", element: { type: "plain_text_input" } },
      ],
    });
    expect(notification.msg).toBe(
      [
        "<b>Deploy 🚀 &lt;v2&gt;</b>",
        "by <b>ada</b> · now",
        "—————",
        'Hello <b><i>world</i></b>👋<a href="https://example.com">site</a>@U123<code>x = 1</code>',
        "1. one",
        "2. two",
        "<pre>npm test\n&lt;ok&gt;</pre>",
        "<blockquote>quoted</blockquote>",
      ].join("\n"),
    );
    await sent(notification);
  });

  it("URL buttons of actions blocks become buttons; refused URLs and interactive buttons are left out", async () => {
    const notification = await convert({
      blocks: [
        { type: "section", text: { type: "mrkdwn", text: "Build *42* failed" } },
        {
          type: "actions",
          elements: [
            { type: "button", text: { type: "plain_text", text: "Logs" }, url: "https://ci.example.com/42" },
            { type: "button", text: { type: "plain_text", text: "Local" }, url: "http://localhost:8080" },
            { type: "button", text: { type: "plain_text", text: "Approve" }, action_id: "approve" },
            {
              type: "button",
              text: { type: "plain_text", text: "\u0007" },
              url: "https://ci.example.com/43",
            },
          ],
        },
      ],
    });
    expect(notification.options.buttons).toEqual([
      [
        { text: "Logs", url: "https://ci.example.com/42" },
        { text: "Open", url: "https://ci.example.com/43" },
      ],
    ]);
    await sent(notification);
    const onlyButtons = await convert({
      blocks: [{ type: "actions", elements: [{ type: "button", text: "Go", url: "https://example.com" }] }],
    });
    expect(onlyButtons.msg).toBe("Links:");
  });

  it("100 sections of bold links stay within one message and say they were cut", async () => {
    const section = (i: number) => ({
      type: "section",
      text: {
        type: "mrkdwn",
        text: `*Check ${i}* failed: <https://ci.example.com/${i}|log> _${"x".repeat(50)}_`,
      },
    });
    const notification = await convert({ blocks: Array.from({ length: 100 }, (_, i) => section(i)) });
    expect(notification.msg.endsWith("… (cut to fit one message)")).toBe(true);
    await sent(notification);
  });

  it("a megabyte of text is cut to fit", async () => {
    await sent(await convert({ text: "*&<x>* ".repeat(150_000) }));
    await sent(
      await convert({
        attachments: [{ title: "t".repeat(100_000), fields: [{ title: "f", value: "v".repeat(1_000_000) }] }],
      }),
    );
  });

  it.each([
    [{ text: 5 }, "text must be a string"],
    [{ blocks: {} }, "blocks must be an array"],
    [{ attachments: "x" }, "attachments must be an array"],
    [{ blocks: [{ type: "image" }] }, "there is nothing to show: give text, blocks or attachments"],
    [[], "the body must be a JSON object"],
  ])("a body that is not Slack's is refused, naming the field (%j)", async (body, message) => {
    expect(await refusal(body)).toBe(message);
  });

  it("is detected by text, blocks or attachments among Slack's fields only", () => {
    expect(slack.detect(inbound(fixture("text.json")))).toBe(true);
    expect(slack.detect(inbound(fixture("blocks.json")))).toBe(true);
    expect(slack.detect(inbound(fixture("attachments.json")))).toBe(true);
    expect(slack.detect(inbound({ text: "x", username: "bot", icon_emoji: ":x:" }))).toBe(true);
    expect(slack.detect(inbound({ text: "x", level: 3 }))).toBe(false);
    expect(slack.detect(inbound({ username: "bot" }))).toBe(false);
    expect(slack.detect(inbound({ text: 5 }))).toBe(false);
  });

  it("a mention of everyone or a link to a user is text, never an entity Telegram may refuse", () => {
    expect(shown(mrkdwnToHtml("<!channel> hi <@U1|ada> <tg://user?id=5|x>"))).toEqual([]);
  });
});
