import { type Button, emojiShortcodes, type Priority } from "../domain/message-options.ts";
import { isButtonUrl } from "../domain/telegram-format.ts";
import {
  buttonRows,
  type Conversion,
  clip,
  ENTITY_BUDGET,
  escapeHtml,
  type InboundFormat,
  isRecord,
  linkButton,
  PayloadError,
  TEXT_BUDGET,
  textOf,
} from "./inbound.ts";
import { jsonSample } from "./settings.ts";

/*
 * Slack's incoming webhooks, which many tools can post to: `text` in Slack's mrkdwn, Block Kit
 * `blocks` (sections, headers, context, rich text, dividers; action buttons become URL buttons) and
 * the older `attachments`. Slack's mrkdwn becomes Telegram HTML: links, *bold*, _italic_, ~strike~,
 * `code`, ```blocks``` and > quotes; mentions are shown as text. Whatever the input, the output is
 * valid Telegram HTML: what does not parse as mrkdwn is shown as written.
 */

/** The fields of an incoming webhook's body (anything else means the body is not Slack's). */
const SLACK_FIELDS = new Set([
  "text",
  "blocks",
  "attachments",
  "username",
  "icon_emoji",
  "icon_url",
  "channel",
  "mrkdwn",
  "unfurl_links",
  "unfurl_media",
  "link_names",
  "parse",
  "thread_ts",
  "response_type",
]);

/**
 * How many items of each list are read: Slack's own limits (it refuses a message with more), and
 * 100 for lists it sets none for. Every item is rendered several times while the message is fitted
 * (fitPieces): a megabyte of section fields, read whole, held the event loop for two seconds.
 */
const READ = { blocks: 50, attachments: 100, fields: 10, elements: 25, other: 100 } as const;

/** A payload's list, or its first `max` items (nothing when it is not a list). */
const first = (value: unknown, max: number): unknown[] => (Array.isArray(value) ? value.slice(0, max) : []);

const SLACK_ESCAPES: Record<string, string> = { "&amp;": "&", "&lt;": "<", "&gt;": ">" };

/** Slack's three escapes undone: the text as its author wrote it. */
const unescapeSlack = (value: string) => value.replace(/&(?:amp|lt|gt);/g, (e) => SLACK_ESCAPES[e] as string);

/** Text of Slack's, escaped for Telegram HTML. */
const html = (value: string) => escapeHtml(unescapeSlack(value));

/** A link when Telegram takes its URL, else the label alone (Telegram would refuse the message). */
function link(url: string, label: string): string {
  const href = url.trim();
  const shown = escapeHtml(label === "" ? href : label);
  return /^https?:/i.test(href) && href.length <= 2048 && isButtonUrl(href)
    ? `<a href="${escapeHtml(href)}">${shown}</a>`
    : shown;
}

/** What `<…>` holds: a link, a mention of a user, channel or group, a date, or @channel. */
function angle(inner: string): string {
  const bar = inner.indexOf("|");
  const target = bar < 0 ? inner : inner.slice(0, bar);
  const label = bar < 0 ? "" : unescapeSlack(inner.slice(bar + 1));
  if (target.startsWith("@")) return escapeHtml(label === "" ? target : `@${label.replace(/^@/, "")}`);
  if (target.startsWith("#")) return escapeHtml(label === "" ? target : `#${label.replace(/^#/, "")}`);
  if (target.startsWith("!")) {
    const command = target.slice(1).split("^", 1)[0] ?? "";
    if (label !== "") return escapeHtml(label);
    return escapeHtml(["channel", "here", "everyone"].includes(command) ? `@${command}` : command);
  }
  return link(unescapeSlack(target), label);
}

/** Placeholders for HTML already made, so that the plain text around it can be scanned and escaped. */
const HOLE = /\uE000(\d+)\uE001/g;

const EMPHASIS: [string, string][] = [
  ["\\*", "b"],
  ["_", "i"],
  ["~", "s"],
];

/** Emoji by Slack's short code (star: ⭐), as far as gemoji knows them. */
type Emoji = ReadonlyMap<string, string>;

const NO_EMOJI: Emoji = new Map();

/** `:star:` as ⭐ in HTML text; codes not known stay as written. */
const withEmoji = (made: string, emoji: Emoji) =>
  emoji.size === 0
    ? made
    : made.replace(/:([a-z0-9_+-]+):/g, (code, name: string) => emoji.get(name) ?? code);

/** One line of mrkdwn (no code fences) as Telegram HTML. */
function inline(line: string, emoji: Emoji): string {
  const made: { html: string; depth: number }[] = [];
  const hold = (piece: string, depth = 0) => `\uE000${made.push({ html: piece, depth }) - 1}\uE001`;
  let out = line
    .replace(/`([^`]+)`/g, (_, code: string) => hold(`<code>${html(code)}</code>`))
    // Slack's controls: <@U123>, <#C123|general>, <!here>, <https://…|label>, <mailto:…>.
    .replace(
      /<([@#!][^<>\s|\uE000]*(?:\|[^<>\uE000]*)?|[a-z][a-z0-9+.-]*:[^<>\s|\uE000]+(?:\|[^<>\uE000]*)?)>/gi,
      (_, inner: string) => hold(angle(inner)),
    );
  for (const [mark, tag] of EMPHASIS) {
    // Slack's rule: the marks hug the text and do not sit inside a word.
    const pattern = new RegExp(
      `(?<![\\p{L}\\p{N}])${mark}(?=[^\\s${mark}])([^${mark}]*?[^\\s${mark}])${mark}(?![\\p{L}\\p{N}])`,
      "gu",
    );
    out = out.replace(pattern, (whole, body: string) => {
      // Formatting that would cross a link or another mark (`*a _b* c_`) stays as written.
      let depth = 0;
      for (const [, n] of body.matchAll(HOLE)) {
        depth += (made[Number(n)] as { depth: number }).depth;
        if (depth < 0) return whole;
      }
      return depth === 0 ? `${hold(`<${tag}>`, 1)}${body}${hold(`</${tag}>`, -1)}` : whole;
    });
  }
  return out
    .split(HOLE)
    .map((part, i) =>
      i % 2 === 0 ? withEmoji(html(part), emoji) : (made[Number(part)] as { html: string }).html,
    )
    .join("");
}

/**
 * Slack's mrkdwn as Telegram HTML: code fences as pre, lines starting with > as quotes, the rest
 * line by line (see inline).
 */
export function mrkdwnToHtml(source: string, emoji: Emoji = NO_EMOJI): string {
  // The placeholders' marks (private use characters) cannot come from the text.
  const clean = source.replace(/[\uE000\uE001]/g, "").replace(/\r\n?/g, "\n");
  const out: string[] = [];
  const parts = clean.split(/```/);
  // An odd number of fences leaves the last one open: it is text, as Slack shows it.
  const closed = parts.length % 2 === 1 ? parts.length : parts.length - 1;
  for (const [i, part] of parts.entries()) {
    if (i % 2 === 1 && i < closed) {
      const code = unescapeSlack(part.replace(/^\n/, ""));
      if (code.trim() !== "") out.push(`<pre>${escapeHtml(code)}</pre>`);
      continue;
    }
    // Text after a closed fence starts on a line of its own.
    const segment = i % 2 === 1 ? `\`\`\`${part}` : i > 0 ? part.replace(/^ +/, "") : part;
    const lines = segment.split("\n");
    const rendered: string[] = [];
    let quote: string[] = [];
    const endQuote = () => {
      if (quote.length > 0) rendered.push(`<blockquote>${quote.join("\n")}</blockquote>`);
      quote = [];
    };
    for (const line of lines) {
      const quoted = /^(?:&gt;|>){1,3} ?(.*)$/.exec(line);
      if (quoted !== null) quote.push(inline(quoted[1] ?? "", emoji));
      else {
        endQuote();
        rendered.push(inline(line.trimEnd(), emoji));
      }
    }
    endQuote();
    out.push(rendered.join("\n"));
  }
  return out.join("\n").trim();
}

/** How payload texts are rendered: each clipped to `limit` characters, emoji codes from `emoji`. */
interface Render {
  limit: number;
  emoji: Emoji;
}

/** A text object of Block Kit: mrkdwn, or plain_text (never formatted, never escaped by Slack). */
function textObject(value: unknown, r: Render): string {
  if (typeof value === "string") return mrkdwnToHtml(clip(value, r.limit), r.emoji);
  if (!isRecord(value)) return "";
  const source = clip(textOf(value.text), r.limit);
  return value.type === "plain_text" ? withEmoji(escapeHtml(source), r.emoji) : mrkdwnToHtml(source, r.emoji);
}

/** Rich text's styles around a piece, innermost last: bold, italic, strikethrough. */
function styled(piece: string, style: unknown): string {
  if (!isRecord(style) || piece === "") return piece;
  let out = piece;
  if (style.strike === true) out = `<s>${out}</s>`;
  if (style.italic === true) out = `<i>${out}</i>`;
  if (style.bold === true) out = `<b>${out}</b>`;
  return out;
}

/** One element of a rich text section: text, a link, an emoji, a mention. */
function richElement(element: unknown, r: Render): string {
  if (!isRecord(element)) return "";
  switch (element.type) {
    case "text": {
      // Rich text is cut only when too long: its spaces between pieces count.
      const raw = textOf(element.text);
      const plain = escapeHtml(raw.length <= r.limit ? raw : clip(raw, r.limit));
      const code = isRecord(element.style) && element.style.code === true && plain.trim() !== "";
      return styled(code ? `<code>${plain}</code>` : plain, element.style);
    }
    case "link":
      return styled(link(textOf(element.url), clip(textOf(element.text), r.limit, true)), element.style);
    case "emoji": {
      const points = textOf(element.unicode)
        .split("-")
        .map((hex) => Number.parseInt(hex, 16));
      // An emoji is a few code points (a family is seven): more is no emoji.
      return points.length > 0 &&
        points.length <= 16 &&
        points.every((p) => Number.isInteger(p) && p > 0 && p <= 0x10ffff)
        ? String.fromCodePoint(...points)
        : withEmoji(escapeHtml(`:${textOf(element.name)}:`), r.emoji);
    }
    case "user":
      return escapeHtml(`@${textOf(element.user_id)}`);
    case "usergroup":
      return escapeHtml(`@${textOf(element.usergroup_id)}`);
    case "channel":
      return escapeHtml(`#${textOf(element.channel_id)}`);
    case "broadcast":
      return escapeHtml(`@${textOf(element.range)}`);
    case "date":
      return escapeHtml(textOf(element.fallback));
    default:
      return "";
  }
}

const richElements = (value: unknown, r: Render) =>
  first(value, READ.other)
    .map((element) => richElement(element, r))
    .join("");

/** A rich_text block: sections, lists, preformatted text and quotes. */
function richText(block: Record<string, unknown>, r: Render): string {
  const out: string[] = [];
  for (const part of first(block.elements, READ.other)) {
    if (!isRecord(part)) continue;
    switch (part.type) {
      case "rich_text_section":
        out.push(richElements(part.elements, r));
        break;
      case "rich_text_list": {
        const items = first(part.elements, READ.other).filter(isRecord);
        const indent = "  ".repeat(Math.min(4, typeof part.indent === "number" ? part.indent : 0));
        for (const [n, item] of items.entries()) {
          const bullet = part.style === "ordered" ? `${n + 1}.` : "•";
          out.push(`${indent}${bullet} ${richElements(item.elements, r)}`);
        }
        break;
      }
      case "rich_text_preformatted": {
        const code = first(part.elements, READ.other)
          .map((element) => (isRecord(element) ? textOf(element.text) || textOf(element.url) : ""))
          .join("");
        if (code.trim() !== "") out.push(`<pre>${escapeHtml(clip(code, r.limit))}</pre>`);
        break;
      }
      case "rich_text_quote":
        out.push(`<blockquote>${richElements(part.elements, r)}</blockquote>`);
        break;
    }
  }
  return out.filter((line) => line.replace(/<[^>]*>/g, "").trim() !== "").join("\n");
}

/** One Block Kit block as HTML ("" for what is not shown: images, inputs, …). */
function block(value: unknown, r: Render): string {
  if (!isRecord(value)) return "";
  switch (value.type) {
    case "section": {
      const fields = first(value.fields, READ.fields).map((f) => textObject(f, r));
      return [textObject(value.text, r), ...fields].filter((part) => part !== "").join("\n");
    }
    case "header": {
      const title = withEmoji(
        escapeHtml(clip(textOf(isRecord(value.text) ? value.text.text : value.text), 300, true)),
        r.emoji,
      );
      return title === "" ? "" : `<b>${title}</b>`;
    }
    case "context":
      return first(value.elements, READ.elements)
        .map((element) => (isRecord(element) && element.type !== "image" ? textObject(element, r) : ""))
        .filter((part) => part !== "")
        .join(" · ");
    case "divider":
      return "—————";
    case "rich_text":
      return richText(value, r);
    default:
      return "";
  }
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it removes.
const CONTROL = /[\u0000-\u001f\u007f]/g;

/** The URL buttons of `actions` blocks (Slack's interactive buttons cannot work here). */
function actionButtons(blocks: unknown[]): (Button | undefined)[] {
  const buttons: (Button | undefined)[] = [];
  for (const value of blocks) {
    if (!isRecord(value) || value.type !== "actions") continue;
    for (const element of first(value.elements, READ.elements)) {
      if (!isRecord(element) || element.type !== "button") continue;
      const label = textOf(isRecord(element.text) ? element.text.text : element.text).replace(CONTROL, "");
      buttons.push(linkButton(label.trim() === "" ? "Open" : label, element.url));
    }
  }
  return buttons;
}

/** One attachment: pretext, title (linked), text, fields; its fallback when it has none of them. */
function attachment(value: Record<string, unknown>, r: Render): string {
  const parts: string[] = [];
  if (value.pretext !== undefined) parts.push(textObject(textOf(value.pretext), r));
  const title = textOf(value.title);
  if (title.trim() !== "") parts.push(`<b>${link(textOf(value.title_link), clip(title, 300, true))}</b>`);
  if (value.text !== undefined) parts.push(textObject(textOf(value.text), r));
  for (const f of first(value.fields, READ.other)) {
    if (!isRecord(f)) continue;
    const name = clip(textOf(f.title), 200, true);
    const shown = textObject(textOf(f.value), r);
    parts.push(name === "" ? shown : `<b>${escapeHtml(name)}</b>${shown === "" ? "" : `\n${shown}`}`);
  }
  for (const inner of first(value.blocks, READ.blocks)) parts.push(block(inner, r));
  const shown = parts.filter((part) => part !== "");
  if (shown.length === 0 && textOf(value.fallback).trim() !== "")
    shown.push(escapeHtml(clip(textOf(value.fallback), r.limit)));
  return shown.join("\n");
}

/** Slack's red: "danger", or a hex color whose red outweighs the rest (#D63232, #FF0000). */
function isRed(color: unknown): boolean {
  const value = textOf(color).trim().toLowerCase();
  if (value === "danger") return true;
  const hex = /^#?([0-9a-f]{6})$/.exec(value)?.[1];
  if (hex === undefined) return false;
  const [r, g, b] = [0, 2, 4].map((i) => Number.parseInt(hex.slice(i, i + 2), 16)) as [
    number,
    number,
    number,
  ];
  return r >= 0xb0 && g < 0x80 && b < 0x80;
}

/** A piece of the message, rendered with every payload text clipped to `limit` characters. */
interface Piece {
  gap: string;
  render: (limit: number) => string;
}

/** Formatting entities in HTML we wrote (payload text is escaped, so every tag is ours). */
const entityCount = (made: string) => made.match(/<(?:b|i|s|code|pre|a|blockquote)[\s>]/g)?.length ?? 0;

/** Room kept for the line that says the message was cut. */
const CUT_LINE = 60;

/**
 * The pieces in order, as many as fit in TEXT_BUDGET and ENTITY_BUDGET; the first that does not
 * fit whole is cut shorter (its payload texts clipped) if it can be, and the rest are left out,
 * with a note that says so.
 */
function fitPieces(pieces: Piece[]): string {
  let msg = "";
  let entities = 0;
  for (const piece of pieces) {
    const gap = msg === "" ? "" : piece.gap;
    const fits = (made: string) =>
      msg.length + gap.length + made.length + CUT_LINE <= TEXT_BUDGET &&
      entities + entityCount(made) <= ENTITY_BUDGET;
    const whole = piece.render(TEXT_BUDGET);
    let made = whole;
    for (let limit = TEXT_BUDGET / 2; !fits(made); limit = Math.floor(limit / 2)) {
      made = limit < 40 ? "" : piece.render(limit);
      if (made === "") break;
    }
    if (made !== "") {
      msg += gap + made;
      entities += entityCount(made);
    }
    if (made !== whole) {
      msg += `${msg === "" ? "" : "\n"}… (cut to fit one message)`;
      break;
    }
  }
  return msg;
}

function arrayOrNothing(body: Record<string, unknown>, name: string): unknown[] {
  const value = body[name];
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new PayloadError(`${name} must be an array`);
  return value;
}

/** Slack's incoming webhook body. */
export const slack: InboundFormat = {
  name: "slack",
  label: "Slack (incoming webhook)",
  detect({ body }) {
    return (
      isRecord(body) &&
      Object.keys(body).every((name) => SLACK_FIELDS.has(name)) &&
      (typeof body.text === "string" || Array.isArray(body.blocks) || Array.isArray(body.attachments))
    );
  },
  async convert({ body }): Promise<Conversion> {
    if (!isRecord(body)) throw new PayloadError("the body must be a JSON object");
    if (body.text !== undefined && body.text !== null && typeof body.text !== "string")
      throw new PayloadError("text must be a string");
    const blocks = arrayOrNothing(body, "blocks").slice(0, READ.blocks);
    const attachments = arrayOrNothing(body, "attachments").slice(0, READ.attachments).filter(isRecord);
    const buttons = buttonRows(actionButtons(blocks));
    const emoji = await emojiShortcodes();
    const pieces: Piece[] = blocks.map((value) => ({
      gap: "\n",
      render: (limit) => block(value, { limit, emoji }),
    }));
    // With blocks, Slack shows them and keeps text for notifications only.
    if (typeof body.text === "string" && pieces.every((piece) => piece.render(200) === "")) {
      const fallback = textOf(body.text);
      pieces.unshift({ gap: "\n", render: (limit) => mrkdwnToHtml(clip(fallback, limit), emoji) });
    }
    for (const value of attachments)
      pieces.push({ gap: "\n\n", render: (limit) => attachment(value, { limit, emoji }) });
    let msg = fitPieces(pieces.filter((piece) => piece.render(200) !== ""));
    // Nothing but buttons: a line to stand above them.
    if (msg.trim() === "" && buttons !== undefined) msg = "Links:";
    if (msg.trim() === "" && buttons === undefined)
      throw new PayloadError("there is nothing to show: give text, blocks or attachments");
    const priority: Priority | undefined = attachments.some((a) => isRed(a.color)) ? "high" : undefined;
    const title = clip(textOf(body.username), 250, true);
    const icon = textOf(body.icon_emoji).replace(/^:|:$/g, "");
    const tags = emoji.has(icon) ? [icon] : undefined;
    return {
      kind: "notify",
      notification: {
        msg: textOf(msg),
        options: {
          format: "html",
          ...(title === "" ? {} : { title: textOf(title) }),
          ...(priority === undefined ? {} : { priority }),
          ...(tags === undefined ? {} : { tags }),
          ...(buttons === undefined ? {} : { buttons }),
        },
      },
    };
  },
  authentication: "hook-url",
  settings: ({ hook }) => ({
    tool: "Slack-compatible webhook",
    where: "Any tool that posts to a Slack incoming-webhook URL: paste this as the webhook URL",
    text: `${hook}/slack`,
    usesHookUrl: true,
  }),
  // test/fixtures/integrations/slack/attachments.json.
  sample: jsonSample({
    channel: "ABCDEBF1",
    attachments: [
      {
        mrkdwn_in: ["text"],
        color: "#36a64f",
        pretext: "Optional pre-text that appears above the attachment block",
        author_name: "author_name",
        author_link: "http://flickr.com/bobby/",
        author_icon: "https://placeimg.com/16/16/people",
        title: "title",
        title_link: "https://api.slack.com/",
        text: "Optional `text` that appears within the attachment",
        fields: [
          {
            title: "A field's title",
            value: "This field's value",
            short: false,
          },
          {
            title: "A short field's title",
            value: "A short field's value",
            short: true,
          },
          {
            title: "A second short field's title",
            value: "A second short field's value",
            short: true,
          },
        ],
        thumb_url: "http://placekitten.com/g/200/200",
        footer: "footer",
        footer_icon: "https://platform.slack-edge.com/img/default_application_icon.png",
        ts: 123456789,
      },
    ],
  }),
};
