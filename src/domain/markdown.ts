import type { MarkdownIt, Token } from "markdown-it";
import { type FormattedText, linkEntity, type MessageEntity, tidyEntities } from "./telegram-format.ts";

/**
 * Markdown as people write it (CommonMark plus GitHub's strikethrough and autolinks) turned into
 * plain text and Telegram entities that we build ourselves. Nothing in the input can make
 * Telegram refuse the message: the text is sent as it is and the entities are checked here, so a
 * stray `*` or an unclosed backtick is shown as written instead of failing the delivery (as
 * MarkdownV2 with `parse_mode` would).
 *
 * What Telegram cannot show degrades to readable text: headings become bold lines, list items
 * lines starting with "• " or "1. ", images their alt text (linked to the image), a thematic break
 * a line of "—", tables their source text. Raw HTML is shown as written.
 */

/**
 * Deeper than this, markdown-it stops parsing blocks and drops what is inside them; such an input
 * (a pathological one: twenty nested quotes or lists) is sent as plain text instead.
 */
const MAX_NESTING = 20;

/** A fence's language is kept when it looks like one (Telegram shows it above the block). */
const LANGUAGE = /^[A-Za-z0-9_+#.-]{1,32}$/;

export type MarkdownParser = MarkdownIt;

let parser: Promise<MarkdownParser> | undefined;

/**
 * The parser, loaded on first use: most services never receive Markdown, and markdown-it with its
 * HTML entity tables is a megabyte of heap that they need not carry.
 */
export function markdownParser(): Promise<MarkdownParser> {
  parser ??= import("markdown-it").then(({ default: MarkdownItClass }) =>
    new MarkdownItClass({ html: false, linkify: true, maxNesting: MAX_NESTING }).disable([
      "table",
      "replacements",
      "smartquotes",
    ]),
  );
  return parser;
}

/** ASCII punctuation: CommonMark lets a backslash make any of it literal. */
const PUNCTUATION = /[!-/:-@[-`{-~]/g;

/** Whitespace that a paragraph loses at its ends (markdown-it trims lines and paragraphs with `trim`). */
const EDGE_SPACE = /^\s+|\s+$/g;

/**
 * A character as a numeric character reference, which markdown-it reads back as that character;
 * U+000B as it is (a reference to it would read as U+FFFD, and a paragraph keeps it but at its ends).
 */
const reference = (c: string) => (c === "\v" ? c : `&#${c.codePointAt(0)};`);

/**
 * A text as Markdown that reads back as exactly that text and nothing else — no emphasis, heading,
 * list, quote, code, table, link, autolink or entity — wherever a template puts it: every ASCII
 * punctuation character backslash-escaped (`=` and `-` of a setext underline, `#`, `>`, `+`, `*`,
 * `1.`, `|`, backticks, `~`, `<`, `&`, brackets, `!`, `_`, `\`, and the `.` and `:` that linkify
 * would find a link with); line breaks and the whitespace at its ends as character references, so
 * a value stays inline: it never starts a block, an indented code block or a hard break, and keeps
 * its spaces and blank lines. The exceptions: U+0000, which CommonMark replaces with U+FFFD (no
 * message may hold it anyway), and U+000B at the very ends of a message, trimmed as all whitespace is.
 */
export function escapeMarkdown(text: string): string {
  return text
    .replace(PUNCTUATION, "\\$&")
    .replace(/[\r\n]/g, reference)
    .replace(EDGE_SPACE, (run) => [...run].map(reference).join(""));
}

/** Entities that Telegram shows as one piece: none of them may hold another of them. */
const OPAQUE = new Set(["code", "pre", "text_link"]);

/** An entity begun and not yet ended; type "" for one Telegram would not show (see open). */
interface Open {
  type: string;
  offset: number;
  url?: string;
}

/** Builds the text and its entities from markdown-it's token stream. */
class Writer {
  text = "";
  readonly entities: MessageEntity[] = [];
  readonly #open: Open[] = [];
  /** Line breaks owed before the next text: 2 after a paragraph, 1 between tight list items. */
  #breaks = 0;
  /**
   * The line breaks the text ends with, counted as it is written: reading the end of a text built
   * with `+=` copies all of it, and once per list item made a long list quadratic (131,072
   * characters of `- a` lines took 4 s).
   */
  #trailing = 0;
  /** Open quotes, and open entities that hold no others (code, pre, links). */
  #quotes = 0;
  #opaque = 0;

  write(value: string): void {
    if (value === "") return;
    this.#flush();
    this.#append(value);
  }

  #append(value: string): void {
    this.text += value;
    let end = value.length;
    while (end > 0 && value.charCodeAt(end - 1) === 10) end--;
    this.#trailing = end === 0 ? this.#trailing + value.length : value.length - end;
  }

  /** Writes the line breaks owed, counting those already at the end of the text. */
  #flush(): void {
    if (this.text !== "" && this.#breaks > this.#trailing)
      this.#append("\n".repeat(this.#breaks - this.#trailing));
    this.#breaks = 0;
  }

  /** Ends a block: the next text starts `lines` line breaks further down. */
  breakLines(lines: number): void {
    this.#breaks = Math.max(this.#breaks, lines);
  }

  /** Starts an entity at the current position (after any line breaks owed). */
  open(type: string, url?: string): void {
    this.#flush();
    // Telegram shows nothing inside code or a link's code, and no quote in a quote: the text
    // stays, the inner entity goes.
    const dropped = (OPAQUE.has(type) && this.#opaque > 0) || (type === "blockquote" && this.#quotes > 0);
    if (type === "blockquote") this.#quotes++;
    if (OPAQUE.has(type)) this.#opaque++;
    this.#open.push(
      dropped ? { type: "", offset: 0 } : { type, offset: this.text.length, ...(url ? { url } : {}) },
    );
  }

  close(type: string, extra: Partial<MessageEntity> = {}): void {
    const open = this.#open.pop();
    if (type === "blockquote") this.#quotes--;
    if (OPAQUE.has(type)) this.#opaque--;
    if (open === undefined || open.type === "") return;
    const length = this.text.length - open.offset;
    if (length <= 0) return;
    if (open.type === "text_link") {
      const link = linkEntity(open.offset, length, open.url ?? "");
      // A link to a user (tg://user?id=…) stays text: Telegram refuses a mention of someone the
      // bot has not met.
      if (link?.type === "text_link") this.entities.push(link);
      return;
    }
    this.entities.push({ type: open.type, offset: open.offset, length, ...extra });
  }

  /** Text inside one entity, e.g. an inline code span. */
  span(type: string, value: string, extra: Partial<MessageEntity> = {}): void {
    this.open(type);
    this.write(value);
    this.close(type, extra);
  }
}

/** Where a list item's number or bullet comes from, per open list. */
interface List {
  ordered: boolean;
  next: number;
}

/** The entity for each of markdown-it's inline styles, by the HTML tag it would render. */
const STYLES: Record<string, string> = { strong: "bold", em: "italic", s: "strikethrough" };

function inline(writer: Writer, children: Token[]): void {
  for (const token of children) {
    switch (token.type) {
      case "text":
      case "text_special":
      case "html_inline":
        writer.write(token.content);
        break;
      case "softbreak":
      case "hardbreak":
        // A line break in a notification is meant: keep it (CommonMark would make it a space).
        writer.write("\n");
        break;
      case "strong_open":
      case "em_open":
      case "s_open":
        writer.open(STYLES[token.tag] as string);
        break;
      case "strong_close":
      case "em_close":
      case "s_close":
        writer.close(STYLES[token.tag] as string);
        break;
      case "link_open":
        writer.open("text_link", String(token.attrGet("href") ?? ""));
        break;
      case "link_close":
        writer.close("text_link");
        break;
      case "code_inline":
        writer.span("code", token.content);
        break;
      case "image": {
        const src = String(token.attrGet("src") ?? "");
        writer.open("text_link", src);
        writer.write(token.content.trim() === "" ? "image" : token.content);
        writer.close("text_link");
        break;
      }
      default:
        writer.write(token.content);
    }
  }
}

/**
 * Converts Markdown to Telegram's text and entities. Always succeeds: what cannot be formatted is
 * shown as text. The entities are sorted, properly nested, non-empty and inside the text (see
 * tidyEntities).
 */
export function markdownToEntities(md: MarkdownParser, source: string): FormattedText {
  const tokens = md.parse(source, {});
  if (tokens.some((token) => token.level >= MAX_NESTING - 2)) return { text: source.trim(), entities: [] };
  const writer = new Writer();
  const lists: List[] = [];
  for (const token of tokens) {
    switch (token.type) {
      case "inline":
        inline(writer, token.children ?? []);
        break;
      case "paragraph_open":
        break;
      case "paragraph_close":
        // Paragraphs of a tight list item follow one another line by line.
        writer.breakLines(token.hidden ? 1 : 2);
        break;
      case "heading_open":
        writer.open("bold");
        break;
      case "heading_close":
        writer.close("bold");
        writer.breakLines(2);
        break;
      case "blockquote_open":
        writer.open("blockquote");
        break;
      case "blockquote_close":
        writer.close("blockquote");
        writer.breakLines(2);
        break;
      case "bullet_list_open":
      case "ordered_list_open":
        writer.breakLines(1);
        lists.push({
          ordered: token.type === "ordered_list_open",
          next: Number(token.attrGet("start") ?? 1),
        });
        break;
      case "bullet_list_close":
      case "ordered_list_close":
        lists.pop();
        writer.breakLines(lists.length > 0 ? 1 : 2);
        break;
      case "list_item_open": {
        const list = lists.at(-1);
        writer.breakLines(1);
        const indent = "   ".repeat(Math.max(0, lists.length - 1));
        writer.write(`${indent}${list?.ordered ? `${list.next++}. ` : "• "}`);
        break;
      }
      case "list_item_close":
        writer.breakLines(1);
        break;
      case "fence":
      case "code_block": {
        const language = token.info.trim().split(/\s+/)[0] ?? "";
        const code = token.content.replace(/\n$/, "");
        writer.span("pre", code, token.type === "fence" && LANGUAGE.test(language) ? { language } : {});
        writer.breakLines(2);
        break;
      }
      case "hr":
        writer.write("——————");
        writer.breakLines(2);
        break;
      default:
        writer.write(token.content);
        writer.breakLines(2);
    }
  }
  return tidyEntities({ text: writer.text, entities: writer.entities });
}
