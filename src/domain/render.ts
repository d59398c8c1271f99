import type {
  InlineKeyboardButton,
  InlineKeyboardMarkup,
  LinkPreviewOptions,
  MessageEntity as TelegramEntity,
} from "grammy/types";
import {
  ACK_LABEL,
  isSilent,
  type MessageContent,
  type MessageOptions,
  PRIORITY_MARKERS,
} from "./message-options.ts";
import {
  type FormattedText,
  isButtonUrl,
  MAX_ENTITIES,
  type MessageEntity,
  sliceEntities,
} from "./telegram-format.ts";

/** Telegram's limit for one message's text, in UTF-16 code units (after entity parsing). */
export const TELEGRAM_TEXT_LIMIT = 4096;

/** How every part of a notification is sent (Bot API parameters of sendMessage). */
export interface SendOptions {
  disable_notification?: true;
  protect_content?: true;
  link_preview_options?: LinkPreviewOptions;
  /** A reply to a message of the chat (a reminder replies to its copy). */
  reply_parameters?: { message_id: number; allow_sending_without_reply?: boolean };
}

/** One Telegram message of a rendered notification. */
export interface RenderedPart extends SendOptions {
  text: string;
  entities: TelegramEntity[];
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
  return splitFormatted({ text, entities: [] }, max).map((piece) => piece.text);
}

function linkButton(link: string): InlineKeyboardButton {
  let label = link;
  try {
    label = new URL(link).host;
  } catch {
    // validated on save; keep the raw text as the label if it ever does not parse
  }
  return { text: `Open ${label}`, url: link };
}

/**
 * Where the piece of `text` starting at `start` must end at the latest so that it carries at most
 * `limit` entities (those begun earlier and still open count too): where the first entity over
 * the limit begins. `end` when it fits.
 */
function entityStop(entities: readonly MessageEntity[], start: number, end: number, limit: number): number {
  let count = 0;
  for (const entity of entities) {
    if (entity.offset >= end) break;
    if (entity.offset + entity.length <= start) continue;
    if (++count > limit) return Math.max(start, entity.offset);
  }
  return end;
}

/**
 * Splits formatted text like splitText, keeping its entities valid in every piece: an entity cut
 * at a boundary ends with the first piece and begins again at the start of the next. A piece also
 * ends early rather than carry more than `maxEntities` (Telegram's limit per message), so no
 * formatting is lost; only a text with more entities open at one point than that loses the rest.
 * `entities` must be sorted by offset.
 */
export function splitFormatted(
  formatted: FormattedText,
  max: number,
  maxEntities = Infinity,
): FormattedText[] {
  const { text, entities } = formatted;
  const pieces: FormattedText[] = [];
  let start = 0;
  do {
    const rest = text.slice(start);
    let cut = cutPoint(rest, max);
    const stop = entityStop(entities, start, start + cut, maxEntities);
    if (stop > start && stop < start + cut) cut = cutPoint(rest, stop - start);
    pieces.push({ text: rest.slice(0, cut), entities: sliceEntities(entities, start, start + cut) });
    start += cut;
  } while (start < text.length);
  return pieces;
}

const shift = (entities: readonly MessageEntity[], by: number) =>
  entities.map((entity) => ({ ...entity, offset: entity.offset + by }));

/** Who acknowledged a message first, and when (ms). */
export interface Acknowledgement {
  name: string;
  at: number;
}

/** What a message is besides its text and options: its ID (for its buttons) and who acknowledged it. */
export interface MessageState {
  messageId: string;
  acked: Acknowledgement | null;
}

/** The callback data of a message's Acknowledge button (at most 64 bytes, as Telegram allows). */
export const ACK_PREFIX = "ack:";

/** Made on first use: a locale's date formats are ICU data, pages of memory the service rarely needs. */
let ackFormat: Intl.DateTimeFormat | null = null;

/** "24 Nov, 14:05 UTC": the same in every chat, whoever reads it. */
export function ackTime(at: number): string {
  ackFormat ??= new Intl.DateTimeFormat("en-GB", {
    timeZone: "UTC",
    day: "numeric",
    month: "short",
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
  });
  return `${ackFormat.format(new Date(at))} UTC`;
}

/** "45 s", "10 min", "1 h", "1 h 30 min". */
export function spokenDuration(seconds: number): string {
  const h = Math.floor(seconds / 3600);
  const min = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  const parts = [h > 0 ? `${h} h` : "", min > 0 ? `${min} min` : "", s > 0 ? `${s} s` : ""].filter(Boolean);
  return parts.length === 0 ? "0 s" : parts.join(" ");
}

/** The line an acknowledged message ends with. */
export function ackLine(acked: Acknowledgement): string {
  return `✔ Acknowledged by ${acked.name} at ${ackTime(acked.at)}`;
}

/**
 * The body of a notification before it is split: the title (bold, after the tags' emoji) on its
 * own line, the text in its format, the free tags as hashtags at the end, and once acknowledged,
 * who did it (italic). Without a title, the emoji begin the text.
 */
export function notificationBody(
  text: string,
  content: MessageContent | null,
  acked: Acknowledgement | null = null,
): FormattedText {
  const body = content?.body ?? { text, entities: [] };
  const title = content?.options.title;
  const emoji = content?.emoji;
  let out = "";
  const entities: MessageEntity[] = [];
  if (title !== undefined) {
    const line = emoji === undefined ? title : `${emoji} ${title}`;
    entities.push({ type: "bold", offset: 0, length: line.length });
    out = `${line}\n`;
  } else if (emoji !== undefined) out = `${emoji} `;
  entities.push(...shift(body.entities, out.length));
  out += body.text;
  if (content?.hashtags) {
    out += "\n\n";
    for (const [i, tag] of content.hashtags.entries()) {
      if (i > 0) out += " ";
      entities.push({ type: "hashtag", offset: out.length, length: tag.length });
      out += tag;
    }
  }
  if (content?.escalated) {
    const line = `⤴ Escalated from ${content.escalated.from}: unacknowledged for ${spokenDuration(content.escalated.after)}`;
    out += "\n\n";
    entities.push({ type: "italic", offset: out.length, length: line.length });
    out += line;
  }
  if (acked !== null) {
    const line = ackLine(acked);
    out += "\n\n";
    entities.push({ type: "italic", offset: out.length, length: line.length });
    out += line;
  }
  return { text: out, entities };
}

/**
 * The buttons under the last part: Acknowledge (until someone has), the sender's rows, then "Open"
 * for `click`, then the Dock's link.
 */
function keyboard(
  dock: { link: string | null },
  options: MessageOptions | undefined,
  state: MessageState | null,
): InlineKeyboardMarkup | undefined {
  const rows: InlineKeyboardButton[][] = [];
  if (options?.ack && state !== null && state.acked === null) {
    rows.push([
      { text: `✔ ${options.ack_label ?? ACK_LABEL}`, callback_data: `${ACK_PREFIX}${state.messageId}` },
    ]);
  }
  for (const row of options?.buttons ?? []) {
    rows.push(row.map((button) => ({ text: button.text, url: button.url })));
  }
  if (options?.click) rows.push([{ text: "Open", url: options.click }]);
  // A Dock saved before links were checked as Telegram checks them (http://localhost:3000, say)
  // would make Telegram refuse every message: its button is left out instead.
  if (dock.link && isButtonUrl(dock.link)) rows.push([linkButton(dock.link)]);
  return rows.length > 0 ? { inline_keyboard: rows } : undefined;
}

/**
 * A notification as Telegram messages: the Dock's name as a bold header line (after a marker for
 * high and urgent priority), then the body (see notificationBody). Formatting comes from `entities`,
 * never `parse_mode`, and the entities were checked when the message was accepted, so nothing in
 * the text can make Telegram refuse it. Longer texts become several messages, each headed
 * "Name (i/n)", each with the entities that fall in it (one cut at a boundary continues in the
 * next part); the title is in the first part, the hashtags and buttons under the last. `state`:
 * the message's ID and acknowledgement (without it, no Acknowledge button can be shown).
 */
export function renderNotification(
  dock: { name: string; link: string | null },
  text: string,
  content: MessageContent | null = null,
  state: MessageState | null = null,
): RenderedPart[] {
  const options = content?.options;
  const marker = options?.priority ? PRIORITY_MARKERS[options.priority] : undefined;
  const name = marker === undefined ? dock.name : `${marker} ${dock.name}`;
  const body = notificationBody(text, content, state?.acked ?? null);
  let bodies: FormattedText[];
  let headers: string[];
  // Each part's own entity is its bold header; the body's may use the rest of Telegram's limit.
  const bodyEntities = MAX_ENTITIES - 1;
  if (name.length + 1 + body.text.length <= TELEGRAM_TEXT_LIMIT && body.entities.length <= bodyEntities) {
    bodies = [body];
    headers = [name];
  } else {
    // Room for the header "Name (i/n)" plus its line break; more parts need longer numbers.
    let digits = 1;
    for (;;) {
      bodies = splitFormatted(body, TELEGRAM_TEXT_LIMIT - (name.length + 5 + 2 * digits), bodyEntities);
      if (String(bodies.length).length <= digits) break;
      digits++;
    }
    headers = bodies.map((_, i) => `${name} (${i + 1}/${bodies.length})`);
  }
  const send: SendOptions = {
    ...(content !== null && isSilent(content.options) ? { disable_notification: true } : {}),
    ...(options?.protect_content ? { protect_content: true } : {}),
    ...(options?.link_preview ? {} : { link_preview_options: { is_disabled: true } }),
  };
  const buttons = keyboard(dock, options, state);
  return bodies.map((piece, i) => {
    const header = headers[i] as string;
    const entities = [
      { type: "bold", offset: 0, length: header.length },
      ...shift(piece.entities, header.length + 1),
    ];
    const part: RenderedPart = {
      text: `${header}\n${piece.text}`,
      // Telegram takes at most MAX_ENTITIES: parts end early to stay within it (splitFormatted), so
      // this cuts only a text with more entities open at one point than that.
      entities: entities.slice(0, MAX_ENTITIES) as TelegramEntity[],
      ...send,
    };
    if (buttons && i === bodies.length - 1) part.reply_markup = buttons;
    return part;
  });
}

/** The callback data of a reminder's snooze buttons: the prefix, the message ID, and minutes or `am`. */
export const SNOOZE_PREFIX = "snz:";

/** The snoozes a reminder offers: minutes, or until the next 08:00 UTC. */
export const SNOOZES = [
  { label: "⏰ 1 h", until: "60" },
  { label: "15 min", until: "15" },
  { label: "till 08:00 UTC", until: "am" },
] as const;

/** When a snooze pressed at `now` ends: minutes on, or the next 08:00 UTC. */
export function snoozeUntil(spec: string, now: number): number {
  if (spec !== "am") return now + Number(spec) * 60_000;
  const day = new Date(now);
  const eight = Date.UTC(day.getUTCFullYear(), day.getUTCMonth(), day.getUTCDate(), 8);
  return eight > now ? eight : eight + 24 * 3600_000;
}

/** At most this many UTF-16 units of the message are quoted in a reminder. */
const REMINDER_QUOTE = 200;

/**
 * A reply with sound to a copy: a reminder (`remind`), or a change that must be heard (see
 * store/reminder-schedule.ts ringOf).
 */
export type ReminderKind = "remind" | "raised" | "repeated" | "refired";

function reminderHead(kind: ReminderKind, round: number, options: MessageOptions | undefined): string {
  switch (kind) {
    case "raised":
      return `⬆ Now ${options?.priority ?? "default"}`;
    case "repeated":
      return "🔁 Still firing";
    case "refired":
      return "🔥 Firing again";
    default:
      return `⏰ Still unacknowledged (${round})`;
  }
}

/**
 * A reply with sound to a copy (store/reminders.ts): a reminder of an unacknowledged message ("⏰
 * Still unacknowledged (3):"), or a change that must be heard ("⬆ Now urgent:", "🔁 Still firing:",
 * "🔥 Firing again:"), then the message's title (or its first line), with its Acknowledge button
 * and, while reminders go on, the snoozes.
 */
export function renderReminder(
  kind: ReminderKind,
  round: number,
  text: string,
  content: MessageContent | null,
  messageId: string,
): RenderedPart {
  const options = content?.options;
  const head = reminderHead(kind, round, options);
  const source = options?.title ?? (content?.body?.text ?? text).trim().split("\n")[0] ?? "";
  const line = source.replace(/\s+/g, " ").trim();
  const quote = line.length > REMINDER_QUOTE ? `${line.slice(0, cutPoint(line, REMINDER_QUOTE - 1))}…` : line;
  const rows: InlineKeyboardButton[][] = [];
  if (options?.ack)
    rows.push([{ text: `✔ ${options.ack_label ?? ACK_LABEL}`, callback_data: `${ACK_PREFIX}${messageId}` }]);
  if (options?.ack && options.remind_every !== undefined)
    rows.push(
      SNOOZES.map((snooze) => ({
        text: snooze.label,
        callback_data: `${SNOOZE_PREFIX}${messageId}:${snooze.until}`,
      })),
    );
  return {
    text: quote === "" ? head : `${head}: ${quote}`,
    entities: [{ type: "bold", offset: 0, length: head.length }],
    ...(options?.protect_content ? { protect_content: true as const } : {}),
    ...(rows.length > 0 ? { reply_markup: { inline_keyboard: rows } } : {}),
  };
}
