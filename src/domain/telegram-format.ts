/**
 * Message formatting as Telegram does it: `parse_mode` (HTML, MarkdownV2, Markdown) turned into
 * plain text plus entities, explicit `entities` checked, surrounding whitespace trimmed, and
 * commands, mentions, hashtags and links found in the text. Offsets and lengths count UTF-16 code
 * units, which is also how JavaScript strings count, so `text.length` is Telegram's length.
 * Error texts follow Telegram's ("can't parse entities: …", byte offsets into the UTF-8 input).
 *
 * One implementation for both sides: the sandbox parses what bots send with it, and the service
 * checks a message in `format: html` or `telegram_markdownv2` with it when the message is
 * accepted, so that what we accept is exactly what Telegram would.
 */

/** One formatting span of a message, as the Bot API sends and receives it. */
export interface MessageEntity {
  type: string;
  offset: number;
  length: number;
  url?: string;
  language?: string;
  user?: { id: number; is_bot: boolean; first_name: string };
  custom_emoji_id?: string;
}

/** Text with its entities, after parsing. */
export interface FormattedText {
  text: string;
  entities: MessageEntity[];
}

/** The input could not be parsed; the message is Telegram's, to follow "can't parse entities: ". */
export class EntityParseError extends Error {
  override name = "EntityParseError";
}

/** Entity types a bot may send explicitly in `entities`. */
export const ENTITY_TYPES = new Set([
  "mention",
  "hashtag",
  "cashtag",
  "bot_command",
  "url",
  "email",
  "phone_number",
  "bold",
  "italic",
  "underline",
  "strikethrough",
  "spoiler",
  "blockquote",
  "expandable_blockquote",
  "code",
  "pre",
  "text_link",
  "text_mention",
  "custom_emoji",
]);

function byteOffset(text: string, index: number): number {
  return Buffer.byteLength(text.slice(0, index), "utf8");
}

const isSpace = (c: string | undefined) => c === " " || c === "\t" || c === "\n" || c === "\r";

/** A tg: or ton: link: a host of letters, digits, `_` and `-`, then anything but spaces. */
const APP_LINK = /^(tg|ton):(\/\/)?[A-Za-z0-9_-]+(?:[/?#]\S*)?$/i;
/** Telegram's link to a user's profile, however written: `tg:user?id=`, `tg://user/?x=1&id=`. */
const USER_LINK = /^tg:(\/\/)?user\/?\?(?:[^#]*&)?id=(\d{1,15})(?:[&#]|$)/i;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds.
const CONTROL = /[\u0000-\u001f\u007f]/;

/** Whether the text holds a control character (U+0000–U+001F, U+007F). */
export const hasControlCharacter = (text: string): boolean => CONTROL.test(text);
/** The host as written in an http(s) URL: after `://` and any user info, before port, path, query. */
const WRITTEN_HOST = /^https?:\/\/(?:[^@/?#]*@)?(\[[^\]]*\]|[^:/?#]*)/i;

/**
 * Accepts what Telegram accepts as a link target (its `check_link`): an http(s) URL written out
 * with `://` whose host, as written, is a dotted name, an IPv4 address or a bracketed IPv6 address,
 * with no user name or password and a real port; a tg: or ton: link with a plain host; or a bare
 * domain, which gets `http://`. Anything else yields undefined and the link is dropped, as
 * Telegram does. The host is judged as written: `http://3000/` is a number to a browser's parser
 * (0.0.11.184) but a name without a dot to Telegram.
 */
export function checkLink(raw: string): string | undefined {
  const url = raw.trim();
  if (url === "" || CONTROL.test(url) || /[\s\\]/.test(url) || !url.isWellFormed()) return undefined;
  if (/^(tg|ton):/i.test(url)) return APP_LINK.test(url) || USER_LINK.test(url) ? url : undefined;
  const withScheme = /^[a-z][a-z0-9+.-]*:/i.test(url) ? url : `http://${url}`;
  const host = WRITTEN_HOST.exec(withScheme)?.[1];
  if (host === undefined || host === "") return undefined;
  try {
    const parsed = new URL(withScheme);
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return undefined;
    if (parsed.username !== "" || parsed.password !== "" || parsed.port === "0") return undefined;
    if (parsed.hostname !== host.toLowerCase()) return undefined;
    const ipv6 = host.startsWith("[");
    if (!ipv6 && (!host.includes(".") || host.startsWith(".") || host.endsWith(".") || host.includes("..")))
      return undefined;
    return withScheme;
  } catch {
    return undefined;
  }
}

/** Whether a URL is Telegram's link to a user (which becomes a mention Telegram may refuse). */
export function isUserLink(url: string): boolean {
  return USER_LINK.test(url.trim());
}

/** Telegram's link to a chat by its username: `tg://resolve?domain=…` (also `tg:resolve`, `tg://resolve/?…`). */
const RESOLVE_LINK = /^tg:(\/\/)?resolve\/?(?:[?#]|$)/i;

/**
 * Whether an app link (`tg:`, `ton:`) is one a message of ours may carry: `tg://resolve` (open a
 * user's, bot's, group's or channel's chat). Telegram takes others, but they act on the reader's
 * app when pressed — `tg://proxy` and `tg://socks` switch its connection to someone's server,
 * `tg://login` and `tg://join`, `ton://transfer` … — so we refuse them (`tg://user` becomes a
 * mention or stays text: see linkEntity).
 */
export function isAllowedAppLink(url: string): boolean {
  return RESOLVE_LINK.test(url.trim());
}

/**
 * Whether a URL may be a URL button's: http(s) written out as checkLink has it, or
 * `tg://resolve` (see isAllowedAppLink) — not a link to a user (Telegram may refuse to show one to
 * people who do not know them), nor any other app link.
 */
export function isButtonUrl(url: string): boolean {
  return (
    /^(https?|tg):/i.test(url) &&
    checkLink(url) === url &&
    !isUserLink(url) &&
    (!/^tg:/i.test(url) || isAllowedAppLink(url))
  );
}

/** Either a text_link or, for `tg://user?id=N`, a text_mention; undefined when the link is invalid. */
export function linkEntity(offset: number, length: number, url: string): MessageEntity | undefined {
  const mention = USER_LINK.exec(url.trim());
  if (mention) {
    return {
      type: "text_mention",
      offset,
      length,
      user: { id: Number(mention[2]), is_bot: false, first_name: "" },
    };
  }
  const checked = checkLink(url);
  return checked === undefined ? undefined : { type: "text_link", offset, length, url: checked };
}

// ---------------------------------------------------------------- HTML

const HTML_TAGS = new Set([
  "a",
  "b",
  "strong",
  "i",
  "em",
  "s",
  "strike",
  "del",
  "u",
  "ins",
  "tg-spoiler",
  "tg-emoji",
  "span",
  "pre",
  "code",
  "blockquote",
]);

/** `&lt;` `&gt;` `&amp;` `&quot;` and numeric references; any other `&` is literal text. */
function decodeEntityAt(text: string, start: number): { char: string; end: number } | undefined {
  const match = /^&(?:#x([0-9a-f]{1,6})|#([0-9]{1,7})|(lt|gt|amp|quot));?/i.exec(
    text.slice(start, start + 12),
  );
  if (!match) return undefined;
  let char: string;
  if (match[3] !== undefined) {
    char = { lt: "<", gt: ">", amp: "&", quot: '"' }[match[3].toLowerCase() as "lt"];
  } else {
    const code = match[1] !== undefined ? Number.parseInt(match[1], 16) : Number(match[2]);
    if (code === 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return undefined;
    char = String.fromCodePoint(code);
  }
  return { char, end: start + match[0].length };
}

function decodeHtml(text: string): string {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const decoded = text[i] === "&" ? decodeEntityAt(text, i) : undefined;
    if (decoded) {
      out += decoded.char;
      i = decoded.end - 1;
    } else out += text[i];
  }
  return out;
}

const SIMPLE_HTML: Record<string, string> = {
  b: "bold",
  strong: "bold",
  i: "italic",
  em: "italic",
  u: "underline",
  ins: "underline",
  s: "strikethrough",
  strike: "strikethrough",
  del: "strikethrough",
  "tg-spoiler": "spoiler",
  span: "spoiler",
};

/** `parse_mode: "HTML"`, following Telegram's parser and its error messages. */
export function parseHtml(input: string): FormattedText {
  const fail = (message: string): never => {
    throw new EntityParseError(message);
  };
  const at = (k: number) => input[k];
  let out = "";
  const entities: MessageEntity[] = [];
  const open: { tag: string; argument: string; offset: number }[] = [];

  for (let i = 0; i < input.length; i++) {
    const c = input[i] as string;
    if (c === "&") {
      const decoded = decodeEntityAt(input, i);
      if (decoded) {
        out += decoded.char;
        i = decoded.end - 1;
        continue;
      }
    }
    if (c !== "<") {
      out += c;
      continue;
    }
    const begin = i++;
    const where = () => `at byte offset ${byteOffset(input, begin)}`;
    if (at(i) !== "/") {
      while (i < input.length && !isSpace(at(i)) && at(i) !== ">") i++;
      if (i >= input.length) fail(`Unclosed start tag ${where()}`);
      const tag = input.slice(begin + 1, i).toLowerCase();
      if (!HTML_TAGS.has(tag)) fail(`Unsupported start tag "${tag}" ${where()}`);
      let argument = "";
      while (at(i) !== ">") {
        while (i < input.length && isSpace(at(i))) i++;
        if (at(i) === ">") break;
        const nameStart = i;
        while (i < input.length && !isSpace(at(i)) && at(i) !== "=" && at(i) !== ">") i++;
        const name = input.slice(nameStart, i).toLowerCase();
        if (name === "") fail(`Empty attribute name in the tag "${tag}" ${where()}`);
        while (i < input.length && isSpace(at(i))) i++;
        if (at(i) !== "=")
          fail(`Expected equal sign in declaration of an attribute of the tag "${tag}" ${where()}`);
        i++;
        while (i < input.length && isSpace(at(i))) i++;
        if (i >= input.length) fail(`Unclosed start tag "${tag}" ${where()}`);
        let value: string;
        const quote = at(i);
        if (quote !== "'" && quote !== '"') {
          const tokenStart = i;
          while (i < input.length && /[A-Za-z0-9.-]/.test(at(i) as string)) i++;
          value = input.slice(tokenStart, i).toLowerCase();
          if (!isSpace(at(i)) && at(i) !== ">") {
            fail(`Unexpected end of name token at byte offset ${byteOffset(input, tokenStart)}`);
          }
        } else {
          const end = input.indexOf(quote, i + 1);
          if (end < 0) fail(`Unclosed start tag at byte offset ${byteOffset(input, begin)}`);
          value = decodeHtml(input.slice(i + 1, end));
          i = end + 1;
        }
        if (tag === "a" && name === "href") argument = value;
        else if (tag === "code" && name === "class" && value.startsWith("language-"))
          argument = value.slice(9);
        else if (tag === "span" && name === "class" && value.startsWith("tg-")) argument = value.slice(3);
        else if (tag === "tg-emoji" && name === "emoji-id") argument = value;
        else if (tag === "blockquote" && name === "expandable") argument = "1";
      }
      if (tag === "span" && argument !== "spoiler")
        fail(`Tag "span" must have class "tg-spoiler" ${where()}`);
      open.push({ tag, argument, offset: out.length });
      continue;
    }
    // An end tag.
    const top = open.at(-1);
    if (top === undefined) fail(`Unexpected end tag ${where()}`);
    const nameStart = i + 1;
    while (i < input.length && !isSpace(at(i)) && at(i) !== ">") i++;
    const endName = input.slice(nameStart, i).toLowerCase();
    while (i < input.length && isSpace(at(i))) i++;
    if (at(i) !== ">") fail(`Unclosed end tag ${where()}`);
    const { tag, argument, offset } = top as { tag: string; argument: string; offset: number };
    if (endName !== "" && endName !== tag) {
      fail(`Unmatched end tag ${where()}, expected "</${tag}>", found "</${endName}>"`);
    }
    open.pop();
    const length = out.length - offset;
    if (length === 0) continue;
    const simple = SIMPLE_HTML[tag];
    if (simple) entities.push({ type: simple, offset, length });
    else if (tag === "a") {
      const entity = linkEntity(offset, length, argument === "" ? out.slice(offset) : argument);
      if (entity) entities.push(entity);
    } else if (tag === "code") {
      entities.push({ type: "code", offset, length, ...(argument ? { language: argument } : {}) });
    } else if (tag === "pre") {
      const last = entities.at(-1);
      if (last?.type === "code" && last.offset === offset && last.length === length) {
        last.type = "pre";
      } else entities.push({ type: "pre", offset, length });
    } else if (tag === "blockquote") {
      entities.push({ type: argument ? "expandable_blockquote" : "blockquote", offset, length });
    }
    // tg-emoji: custom emoji need a purchased username on Telegram; the text stays, the entity goes.
  }
  const unclosed = open.at(-1);
  if (unclosed) fail(`Can't find end tag corresponding to start tag "${unclosed.tag}"`);
  return { text: out, entities };
}

// ---------------------------------------------------------------- MarkdownV2

const V2_RESERVED = "_*[]()~`>#+-=|{}.!";

type V2Type =
  | "Bold"
  | "Italic"
  | "Underline"
  | "Strikethrough"
  | "Spoiler"
  | "TextUrl"
  | "Code"
  | "Pre"
  | "PreCode";

const V2_ENTITY: Record<V2Type, string> = {
  Bold: "bold",
  Italic: "italic",
  Underline: "underline",
  Strikethrough: "strikethrough",
  Spoiler: "spoiler",
  TextUrl: "text_link",
  Code: "code",
  Pre: "pre",
  PreCode: "pre",
};

/** After "```" and an optional language, Telegram skips one line break. */
function skipOneNewline(input: string, i: number): number {
  const c = input[i];
  if (c !== "\n" && c !== "\r") return i;
  const next = input[i + 1];
  return (next === "\n" || next === "\r") && next !== c ? i + 2 : i + 1;
}

/** `parse_mode: "MarkdownV2"`, following Telegram's parser and its error messages. */
export function parseMarkdownV2(input: string): FormattedText {
  const fail = (message: string): never => {
    throw new EntityParseError(message);
  };
  const reserved = (c: string) =>
    fail(`Character '${c}' is reserved and must be escaped with the preceding '\\'`);
  let out = "";
  const entities: MessageEntity[] = [];
  // Where each entity began in the input (its byte offset is worked out only for an error).
  const open: { type: V2Type; argument: string; offset: number; at: number; textStart: number }[] = [];
  let quoteStart: number | undefined;

  for (let i = 0; i < input.length; i++) {
    const c = input[i] as string;
    const code = input.charCodeAt(i + 1);
    if (c === "\\" && code > 0 && code <= 126) {
      out += input[++i];
      continue;
    }
    const top = open.at(-1);
    const inCode = top !== undefined && (top.type === "Code" || top.type === "Pre" || top.type === "PreCode");
    if (c === ">" && !inCode && (i === 0 || input[i - 1] === "\n")) {
      // Block quotes run over consecutive lines that start with ">".
      if (quoteStart === undefined) quoteStart = out.length;
      continue;
    }
    if (c === "\n" && quoteStart !== undefined && input[i + 1] !== ">") {
      if (out.length > quoteStart)
        entities.push({ type: "blockquote", offset: quoteStart, length: out.length - quoteStart });
      quoteStart = undefined;
    }
    if (!(inCode ? "`" : V2_RESERVED).includes(c)) {
      out += c;
      continue;
    }
    const next = input[i + 1];
    let ends = false;
    if (top) {
      switch (top.type) {
        case "Bold":
          ends = c === "*";
          break;
        case "Italic":
          ends = c === "_" && next !== "_";
          break;
        case "Code":
          ends = c === "`";
          break;
        case "Pre":
        case "PreCode":
          ends = c === "`" && next === "`" && input[i + 2] === "`";
          break;
        case "TextUrl":
          ends = c === "]";
          break;
        case "Underline":
          ends = c === "_" && next === "_";
          break;
        case "Strikethrough":
          ends = c === "~";
          break;
        case "Spoiler":
          ends = c === "|" && next === "|";
          break;
      }
    }
    if (!ends) {
      const at = i;
      let type: V2Type;
      let argument = "";
      switch (c) {
        case "_":
          if (next === "_") {
            type = "Underline";
            i++;
          } else type = "Italic";
          break;
        case "*":
          type = "Bold";
          break;
        case "~":
          type = "Strikethrough";
          break;
        case "|":
          if (next !== "|") return reserved(c);
          i++;
          type = "Spoiler";
          break;
        case "[":
          type = "TextUrl";
          break;
        case "`":
          if (next === "`" && input[i + 2] === "`") {
            i += 3;
            type = "Pre";
            let languageEnd = i;
            while (languageEnd < input.length && !isSpace(input[languageEnd]) && input[languageEnd] !== "`") {
              languageEnd++;
            }
            if (languageEnd !== i && languageEnd < input.length && input[languageEnd] !== "`") {
              type = "PreCode";
              argument = input.slice(i, languageEnd);
              i = languageEnd;
            }
            i = skipOneNewline(input, i) - 1;
          } else type = "Code";
          break;
        default:
          return reserved(c);
      }
      open.push({ type, argument, offset: out.length, at, textStart: out.length });
      continue;
    }
    const entity = open.pop() as (typeof open)[number];
    let url: string | undefined;
    switch (entity.type) {
      case "Underline":
      case "Spoiler":
        i++;
        break;
      case "Pre":
      case "PreCode":
        i += 2;
        break;
      case "TextUrl":
        if (input[i + 1] !== "(") url = out.slice(entity.textStart);
        else {
          i += 2;
          const urlStart = i;
          url = "";
          while (i < input.length && input[i] !== ")") {
            const escaped = input.charCodeAt(i + 1);
            if (input[i] === "\\" && escaped > 0 && escaped <= 126) {
              url += input[i + 1];
              i += 2;
              continue;
            }
            url += input[i++];
          }
          if (input[i] !== ")") fail(`Can't find end of a URL at byte offset ${byteOffset(input, urlStart)}`);
        }
        break;
    }
    if (out.length === entity.offset) continue;
    const length = out.length - entity.offset;
    if (entity.type === "TextUrl") {
      const link = linkEntity(entity.offset, length, url ?? "");
      if (link) entities.push(link);
      continue;
    }
    entities.push({
      type: V2_ENTITY[entity.type],
      offset: entity.offset,
      length,
      ...(entity.type === "PreCode" ? { language: entity.argument } : {}),
    });
  }
  const unclosed = open.at(-1);
  if (unclosed)
    fail(`Can't find end of ${unclosed.type} entity at byte offset ${byteOffset(input, unclosed.at)}`);
  if (quoteStart !== undefined && out.length > quoteStart) {
    entities.push({ type: "blockquote", offset: quoteStart, length: out.length - quoteStart });
  }
  return { text: out, entities };
}

// ---------------------------------------------------------------- Markdown (legacy)

/** `parse_mode: "Markdown"`, the legacy syntax Telegram still accepts. */
export function parseMarkdown(input: string): FormattedText {
  let out = "";
  const entities: MessageEntity[] = [];
  for (let i = 0; i < input.length; i++) {
    const c = input[i] as string;
    if (c === "\\" && "_*`[".includes(input[i + 1] ?? "x")) {
      out += input[++i];
      continue;
    }
    if (!"_*`[".includes(c)) {
      out += c;
      continue;
    }
    const begin = i;
    const endChar = c === "[" ? "]" : c;
    let isPre = false;
    let language = "";
    i++;
    if (c === "`" && input[i] === "`" && input[i + 1] === "`") {
      i += 2;
      isPre = true;
      let languageEnd = i;
      while (languageEnd < input.length && !isSpace(input[languageEnd]) && input[languageEnd] !== "`") {
        languageEnd++;
      }
      if (languageEnd !== i && languageEnd < input.length && input[languageEnd] !== "`") {
        language = input.slice(i, languageEnd);
        i = languageEnd;
      }
      i = skipOneNewline(input, i);
    }
    const offset = out.length;
    while (
      i < input.length &&
      (input[i] !== endChar || (isPre && !(input[i + 1] === "`" && input[i + 2] === "`")))
    ) {
      out += input[i++];
    }
    if (i >= input.length) {
      throw new EntityParseError(
        `Can't find end of the entity starting at byte offset ${byteOffset(input, begin)}`,
      );
    }
    const length = out.length - offset;
    if (length > 0) {
      if (c === "_") entities.push({ type: "italic", offset, length });
      else if (c === "*") entities.push({ type: "bold", offset, length });
      else if (c === "`") {
        entities.push({ type: isPre ? "pre" : "code", offset, length, ...(language ? { language } : {}) });
      } else {
        let url = out.slice(offset);
        if (input[i + 1] === "(") {
          i += 2;
          url = "";
          while (i < input.length && input[i] !== ")") url += input[i++];
        }
        const link = linkEntity(offset, length, url);
        if (link) entities.push(link);
      }
    }
    if (isPre) i += 2;
  }
  return { text: out, entities };
}

// ---------------------------------------------------------------- finishing

/**
 * Entities Telegram finds by itself in any message text: commands, @mentions, #hashtags and links.
 * Simplified (links need a scheme), and never inside code, pre or an existing link.
 */
const AUTO_ENTITIES: { type: string; pattern: RegExp }[] = [
  {
    type: "bot_command",
    pattern: /(?<![\p{L}\p{N}_/])\/[A-Za-z0-9_]{1,64}(?:@[A-Za-z0-9_]{3,32})?(?![\p{L}\p{N}_/])/gu,
  },
  { type: "mention", pattern: /(?<![\p{L}\p{N}_@])@[A-Za-z0-9_]{4,32}(?![\p{L}\p{N}_])/gu },
  { type: "hashtag", pattern: /(?<![\p{L}\p{N}_#])#[\p{L}\p{N}_]*\p{L}[\p{L}\p{N}_]*/gu },
  { type: "url", pattern: /\b(?:https?:\/\/|t\.me\/)[^\s<>"]+[^\s<>".,;:!?)'\]]/giu },
];

// Where Telegram finds nothing more: inside code and links, and where an entity of the kinds it finds is already.
const OPAQUE = new Set([
  "code",
  "pre",
  "text_link",
  "text_mention",
  "custom_emoji",
  "url",
  "email",
  "hashtag",
  "cashtag",
  "mention",
  "bot_command",
  "phone_number",
]);

function findAutoEntities(text: string, existing: MessageEntity[]): MessageEntity[] {
  const taken = existing.filter((e) => OPAQUE.has(e.type)).map((e) => [e.offset, e.offset + e.length]);
  const found: MessageEntity[] = [];
  for (const { type, pattern } of AUTO_ENTITIES) {
    for (const match of text.matchAll(pattern)) {
      const start = match.index;
      const end = start + match[0].length;
      if (taken.some(([s, e]) => start < (e as number) && end > (s as number))) continue;
      taken.push([start, end]);
      found.push({ type, offset: start, length: end - start });
    }
  }
  return found;
}

/**
 * The last steps Telegram applies to every message: trim surrounding whitespace (moving and
 * clipping entities with it), drop empty entities, add the entities it detects, and sort them.
 */
export function finishText(formatted: FormattedText): FormattedText {
  const lead = formatted.text.length - formatted.text.trimStart().length;
  const text = formatted.text.trim();
  const entities = sliceEntities(formatted.entities, lead, lead + text.length);
  entities.push(...findAutoEntities(text, entities));
  entities.sort((a, b) => a.offset - b.offset || b.length - a.length);
  return { text, entities };
}

/**
 * Parses text in the given parse mode (`HTML`, `MarkdownV2`, `Markdown`; case-insensitive);
 * undefined for a mode Telegram does not know.
 */
export function parseText(text: string, parseMode: string): FormattedText | undefined {
  switch (parseMode.toLowerCase()) {
    case "html":
      return parseHtml(text);
    case "markdownv2":
      return parseMarkdownV2(text);
    case "markdown":
      return parseMarkdown(text);
    default:
      return undefined;
  }
}

// ---------------------------------------------------------------- entities we build

/** Entities of `entities` that overlap [start, end), moved to count from `start` and clipped to it. */
export function sliceEntities(
  entities: readonly MessageEntity[],
  start: number,
  end: number,
): MessageEntity[] {
  const slice: MessageEntity[] = [];
  for (const entity of entities) {
    const from = Math.max(start, entity.offset);
    const to = Math.min(end, entity.offset + entity.length);
    if (to > from) slice.push({ ...entity, offset: from - start, length: to - from });
  }
  return slice;
}

/** At most this many entities go with one message (Telegram's own messages stay far below it). */
export const MAX_ENTITIES = 100;

const isTrimmed = (c: string | undefined) => c !== undefined && c.trim() === "";

/**
 * Text and entities as we send them: surrounding whitespace trimmed (Telegram would trim it and
 * clip the entities), empty entities dropped, the rest sorted outermost first.
 */
export function tidyEntities(formatted: FormattedText): FormattedText {
  let start = 0;
  let end = formatted.text.length;
  while (start < end && isTrimmed(formatted.text[start])) start++;
  while (end > start && isTrimmed(formatted.text[end - 1])) end--;
  const entities = sliceEntities(formatted.entities, start, end);
  entities.sort((a, b) => a.offset - b.offset || b.length - a.length || rank(a) - rank(b));
  return { text: formatted.text.slice(start, end), entities };
}

/** Of two entities over the same text, which holds the other: a quote, a link, style, then code. */
function rank(entity: MessageEntity): number {
  if (QUOTES.has(entity.type)) return 0;
  if (entity.type === "text_link" || entity.type === "text_mention") return 1;
  return CONTAINS_NOTHING.has(entity.type) ? 3 : 2;
}

const CONTAINS_NOTHING = new Set(["code", "pre"]);
const NOT_IN_EACH_OTHER = new Set(["code", "pre", "text_link", "text_mention"]);
const QUOTES = new Set(["blockquote", "expandable_blockquote"]);

const isLowSurrogate = (code: number) => code >= 0xdc00 && code <= 0xdfff;

/**
 * What is wrong with entities we built for `text` (an empty list: nothing). The rules are those
 * under which Telegram shows every entity as given: inside the text, not splitting a character,
 * at most MAX_ENTITIES, sorted, nested or apart but never half-overlapping, nothing inside code or
 * pre, no link in a link, no quote in a quote, and every link one Telegram accepts.
 */
export function entityProblems(text: string, entities: readonly MessageEntity[]): string[] {
  const problems: string[] = [];
  if (entities.length > MAX_ENTITIES) problems.push(`${entities.length} entities, more than ${MAX_ENTITIES}`);
  const open: MessageEntity[] = [];
  let previous: MessageEntity | undefined;
  for (const entity of entities) {
    const { type, offset, length } = entity;
    const end = offset + length;
    const name = `${type} at ${offset}+${length}`;
    if (!ENTITY_TYPES.has(type)) problems.push(`${name}: unknown type`);
    if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || offset < 0 || length <= 0) {
      problems.push(`${name}: offset or length out of range`);
      continue;
    }
    if (end > text.length) problems.push(`${name}: ends after the text (${text.length})`);
    if (isLowSurrogate(text.charCodeAt(offset)) || isLowSurrogate(text.charCodeAt(end))) {
      problems.push(`${name}: splits a surrogate pair`);
    }
    if (previous && (offset < previous.offset || (offset === previous.offset && length > previous.length))) {
      problems.push(`${name}: not sorted`);
    }
    previous = entity;
    while (
      open.length > 0 &&
      (open.at(-1) as MessageEntity).offset + (open.at(-1) as MessageEntity).length <= offset
    )
      open.pop();
    const parent = open.at(-1);
    if (parent && end > parent.offset + parent.length) problems.push(`${name}: half-overlaps ${parent.type}`);
    if (open.some((e) => CONTAINS_NOTHING.has(e.type))) problems.push(`${name}: inside code or pre`);
    if (NOT_IN_EACH_OTHER.has(type) && open.some((e) => NOT_IN_EACH_OTHER.has(e.type)))
      problems.push(`${name}: inside a link or code`);
    if (QUOTES.has(type) && open.some((e) => QUOTES.has(e.type)))
      problems.push(`${name}: a quote in a quote`);
    if (type === "text_link" && (entity.url === undefined || checkLink(entity.url) !== entity.url))
      problems.push(`${name}: a link Telegram refuses`);
    // Telegram refuses a mention of a user the bot has not met: we never build one.
    if (type === "text_mention") problems.push(`${name}: a mention Telegram may refuse`);
    open.push(entity);
  }
  return problems;
}
