import type { InlineKeyboardMarkup, MessageEntity } from "grammy/types";

/** Telegram's limit for one message's text, in UTF-16 code units (after entity parsing). */
export const TELEGRAM_TEXT_LIMIT = 4096;

/** One Telegram message of a rendered notification. */
export interface RenderedPart {
  text: string;
  entities: MessageEntity[];
  reply_markup?: InlineKeyboardMarkup;
}

const graphemes = new Intl.Segmenter(undefined, { granularity: "grapheme" });

/**
 * Where to cut `text` so the first piece has at most `max` UTF-16 units: after the last line
 * break in the window, else after the last space, else at the last grapheme boundary — never
 * inside a surrogate pair or an emoji sequence. Returns an index in (0, max].
 */
export function cutPoint(text: string, max: number): number {
  if (text.length <= max) return text.length;
  const window = text.slice(0, max + 1);
  const newline = window.lastIndexOf("\n");
  if (newline > max / 2) return newline + 1 <= max ? newline + 1 : newline;
  const space = Math.max(window.lastIndexOf(" "), window.lastIndexOf("\t"));
  if (space > max / 2) return space + 1 <= max ? space + 1 : space;
  let cut = 0;
  for (const { index } of graphemes.segment(text.slice(0, max + 64))) {
    if (index > max) break;
    cut = index;
  }
  if (cut === 0) {
    // A single grapheme longer than the limit (absurd, but possible): cut between code points.
    cut = max;
    const code = text.charCodeAt(cut - 1);
    if (code >= 0xd800 && code <= 0xdbff) cut--;
  }
  return cut;
}

/** Splits text into pieces of at most `max` UTF-16 units at natural boundaries, in order. */
export function splitText(text: string, max: number): string[] {
  const pieces: string[] = [];
  let rest = text;
  while (rest.length > max) {
    const cut = cutPoint(rest, max);
    pieces.push(rest.slice(0, cut));
    rest = rest.slice(cut);
  }
  if (rest.length > 0 || pieces.length === 0) pieces.push(rest);
  return pieces;
}

function linkButton(link: string): InlineKeyboardMarkup {
  let label = link;
  try {
    label = new URL(link).host;
  } catch {
    // validated on save; keep the raw text as the label if it ever does not parse
  }
  return { inline_keyboard: [[{ text: `Open ${label}`, url: link }]] };
}

/**
 * A notification as Telegram messages: the Dock's name as a bold header line, then the text
 * exactly as sent. Formatting comes from `entities`, never `parse_mode`, so nothing in the text can
 * break it. Longer texts become several messages, each headed "Name (i/n)"; the Dock's link, when
 * set, is a button under the last one.
 */
export function renderNotification(
  dock: { name: string; link: string | null },
  text: string,
): RenderedPart[] {
  const single = `${dock.name}\n${text}`;
  let bodies: string[];
  let headers: string[];
  if (single.length <= TELEGRAM_TEXT_LIMIT) {
    bodies = [text];
    headers = [dock.name];
  } else {
    // Room for the header "Name (i/n)" plus its line break; more parts need longer numbers.
    let digits = 1;
    for (;;) {
      bodies = splitText(text, TELEGRAM_TEXT_LIMIT - (dock.name.length + 5 + 2 * digits));
      if (String(bodies.length).length <= digits) break;
      digits++;
    }
    headers = bodies.map((_, i) => `${dock.name} (${i + 1}/${bodies.length})`);
  }
  return bodies.map((body, i) => {
    const header = headers[i] as string;
    const part: RenderedPart = {
      text: `${header}\n${body}`,
      entities: [{ type: "bold", offset: 0, length: header.length }],
    };
    if (dock.link && i === bodies.length - 1) part.reply_markup = linkButton(dock.link);
    return part;
  });
}
