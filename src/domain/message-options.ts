import { deceptiveLink } from "./deceptive-links.ts";
import { DOCK_ID_PATTERN } from "./ids.ts";
import { markdownParser, markdownToEntities } from "./markdown.ts";
import {
  EntityParseError,
  type FormattedText,
  hasControlCharacter,
  isAllowedAppLink,
  isButtonUrl,
  parseHtml,
  parseMarkdownV2,
  tidyEntities,
} from "./telegram-format.ts";

/**
 * What a sender may say about a notification besides its text — title, format, priority, tags,
 * buttons — read from a request (JSON fields, `/webhook` headers in ntfy's names, or query
 * parameters), checked, and turned into what is stored with the message: everything the
 * dispatcher needs to render it, decided once, when the message is accepted.
 */

export const FORMATS = ["text", "markdown", "html", "telegram_markdownv2"] as const;
export type Format = (typeof FORMATS)[number];

export const PRIORITIES = ["min", "low", "default", "high", "urgent"] as const;
export type Priority = (typeof PRIORITIES)[number];

export const MAX_TITLE = 250;
export const MAX_TAGS = 10;
export const MAX_TAG = 64;
export const MAX_BUTTON_ROWS = 3;
export const MAX_BUTTONS_PER_ROW = 3;
export const MAX_BUTTON_TEXT = 64;
export const MAX_URL = 2048;

/** A URL button under the message. */
export interface Button {
  text: string;
  url: string;
}

/** The options as the sender gave them, normalised; omitted ones take their defaults. */
export interface MessageOptions {
  format?: Format;
  title?: string;
  priority?: Priority;
  silent?: boolean;
  tags?: string[];
  buttons?: Button[][];
  click?: string;
  link_preview?: boolean;
  protect_content?: boolean;
  /** An Acknowledge button: the first person to press it is shown on every copy. */
  ack?: boolean;
  /** The Acknowledge button's label (an `ack` action's); "Acknowledge" when not given. */
  ack_label?: string;
  /**
   * Reminders while nobody has acknowledged it (with `ack`): a reminder with sound every
   * `remind_every` seconds, for `remind_for` seconds after it was sent (REMIND_FOR_DEFAULT).
   */
  remind_every?: number;
  remind_for?: number;
  /**
   * Escalation while nobody has acknowledged it (with `ack`): after `after` seconds from the
   * message, a copy goes to the Dock `to` (store/escalations.ts). Steps in the order of `after`.
   */
  escalate?: EscalationStep[];
}

/** One step of an escalation: `after` seconds unacknowledged, deliver to the Dock `to`. */
export interface EscalationStep {
  after: number;
  to: string;
}

/** At most this many steps in an escalation. */
export const MAX_ESCALATION_STEPS = 5;

/** Reminders come at most this often (seconds), and stop this long after the message at the latest. */
export const REMIND_EVERY_MIN = 30;
export const REMIND_FOR_MAX = 24 * 3600;
/** How long reminders go on when the sender does not say. */
export const REMIND_FOR_DEFAULT = 3600;

/**
 * How a message is shown, when it is more than its text: stored with it (`messages.content`, as
 * JSON) and read by the renderer. Everything here was checked when the message was accepted.
 */
export interface MessageContent {
  options: MessageOptions;
  /** The text and entities parsed from `msg` (for every format but `text`). */
  body?: FormattedText;
  /** The tags that are emoji short codes, as emoji, in the order given. */
  emoji?: string;
  /** The other tags, as hashtags. */
  hashtags?: string[];
  /** A message an escalation added (store/escalations.ts): the Dock it came from, and after how long (s). */
  escalated?: { from: string; after: number };
}

/** One field the sender got wrong, named as the sender wrote it. */
export interface OptionProblem {
  field: string;
  message: string;
}

/** The options could not be read; every problem found is listed. */
export class OptionsError extends Error {
  override name = "OptionsError";
  readonly problems: OptionProblem[];

  constructor(problems: OptionProblem[]) {
    super(problems.map((p) => `${p.field}: ${p.message}`).join(" "));
    this.problems = problems;
  }
}

/** The options a sender may give (`markdown`: the old spelling of `"format": "markdown"`). */
export type OptionName = Exclude<keyof MessageOptions, "ack_label"> | "markdown";

/**
 * Every option's name, as a JSON field; integrations/ntfy-dialect.ts names the headers and query
 * parameters that carry each (ntfy's, so an ntfy script ports by changing its URL).
 */
export const OPTION_NAMES = Object.keys({
  title: true,
  priority: true,
  tags: true,
  format: true,
  markdown: true,
  click: true,
  buttons: true,
  silent: true,
  link_preview: true,
  protect_content: true,
  ack: true,
  remind_every: true,
  remind_for: true,
  escalate: true,
} satisfies Record<OptionName, true>) as readonly OptionName[];

/**
 * A value and where it came from ("priority", "the Priority header", "the p query parameter"), as
 * integrations/ntfy-dialect.ts's gatherOptions found it.
 */
export interface Given {
  value: unknown;
  field: string;
  /** Buttons read from ntfy's action syntax: each named "(action n)" where refused. */
  actions?: boolean;
  /** What was wrong with the text the value was read from: reported as it is. */
  refused?: OptionProblem;
}

const TRUE = new Set(["true", "yes", "1", "on"]);
const FALSE = new Set(["false", "no", "0", "off"]);

function readBoolean(given: Given): boolean | string {
  if (typeof given.value === "boolean") return given.value;
  if (typeof given.value === "string") {
    const word = given.value.trim().toLowerCase();
    if (TRUE.has(word)) return true;
    if (FALSE.has(word)) return false;
  }
  return "must be true or false.";
}

/** Priorities as senders write them: our words, 1 to 5, and `max` (ntfy's other name for 5). */
const PRIORITY_WORDS = new Map<string, Priority>([
  ["min", "min"],
  ["low", "low"],
  ["default", "default"],
  ["high", "high"],
  ["urgent", "urgent"],
  ["max", "urgent"],
  ["1", "min"],
  ["2", "low"],
  ["3", "default"],
  ["4", "high"],
  ["5", "urgent"],
]);

/**
 * The priority a word or number names, in any case and trimmed (our options and ntfy's payloads
 * both read it so); undefined for anything else. A Map, so that no word reaches an object's
 * prototype (`constructor` is no priority).
 */
export function priorityNamed(value: string | number): Priority | undefined {
  return PRIORITY_WORDS.get(String(value).trim().toLowerCase());
}

function readPriority(given: Given): Priority | string {
  const word = typeof given.value === "number" || typeof given.value === "string" ? given.value : "";
  return priorityNamed(word) ?? "must be min, low, default, high or urgent, or 1 to 5.";
}

/** Telegram refuses a button (and with it the message) whose URL it does not take. */
function isButtonLink(raw: string): boolean {
  return raw.length <= MAX_URL && isButtonUrl(raw);
}

/** What a URL must be, said where one is refused. */
export const URL_RULE = `must be a URL Telegram can open, at most ${MAX_URL} characters: https:// or http:// with a dotted host name or an IP address (not localhost), no user name or password, or tg://resolve?domain=… (no other tg: link).`;
/** What a button's label must be. */
export const LABEL_RULE = `must be 1 to ${MAX_BUTTON_TEXT} characters of text, without control characters.`;

function isLabel(text: string): boolean {
  return (
    text.trim() !== "" && text.length <= MAX_BUTTON_TEXT && text.isWellFormed() && !hasControlCharacter(text)
  );
}

/** The Acknowledge button's label unless the sender names it. */
export const ACK_LABEL = "Acknowledge";

/** An `ack` action in the buttons: the Acknowledge button, with its label. */
interface AckButton {
  ack: string;
}

function checkButton(raw: unknown, where: string, problems: OptionProblem[]): Button | AckButton | undefined {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    problems.push({ field: where, message: "must be an object with text and url." });
    return undefined;
  }
  const { action, label } = raw as { action?: unknown; label?: unknown };
  const { text = label, url } = raw as { text?: unknown; url?: unknown };
  if (typeof action === "string" && action.trim().toLowerCase() === "ack") {
    if (text === undefined) return { ack: ACK_LABEL };
    if (typeof text !== "string" || !isLabel(text)) {
      problems.push({ field: `${where}.text`, message: LABEL_RULE });
      return undefined;
    }
    return { ack: text.trim() };
  }
  if (typeof text !== "string" || !isLabel(text)) {
    problems.push({ field: `${where}.text`, message: LABEL_RULE });
    return undefined;
  }
  if (typeof url !== "string" || !isButtonLink(url.trim())) {
    problems.push({ field: `${where}.url`, message: URL_RULE });
    return undefined;
  }
  const lie = deceptiveLink(text, url.trim());
  if (lie !== undefined) {
    problems.push({ field: `${where}.text`, message: lie });
    return undefined;
  }
  return { text: text.trim(), url: url.trim() };
}

/**
 * The sender's buttons: URL buttons in rows, and an `ack` action (the Acknowledge button, which the
 * renderer places itself) taken out of them.
 */
function readButtons(
  given: Given,
  problems: OptionProblem[],
): { rows: Button[][]; ack?: string } | undefined {
  if (given.refused !== undefined) {
    problems.push(given.refused);
    return undefined;
  }
  const raw = given.value;
  if (!Array.isArray(raw)) {
    problems.push({ field: given.field, message: "must be an array of buttons, or of rows of buttons." });
    return undefined;
  }
  // A flat list is laid out in rows of three.
  const rows: unknown[][] = raw.every((row) => Array.isArray(row))
    ? (raw as unknown[][])
    : raw.some((row) => Array.isArray(row))
      ? []
      : Array.from({ length: Math.ceil(raw.length / MAX_BUTTONS_PER_ROW) }, (_, i) =>
          raw.slice(i * MAX_BUTTONS_PER_ROW, (i + 1) * MAX_BUTTONS_PER_ROW),
        );
  if (rows.length === 0 && raw.length > 0) {
    problems.push({ field: given.field, message: "must be buttons or rows of buttons, not a mix." });
    return undefined;
  }
  if (rows.length > MAX_BUTTON_ROWS || rows.some((row) => row.length > MAX_BUTTONS_PER_ROW)) {
    problems.push({
      field: given.field,
      message: `may hold at most ${MAX_BUTTON_ROWS} rows of ${MAX_BUTTONS_PER_ROW} buttons.`,
    });
    return undefined;
  }
  const before = problems.length;
  const buttons = rows
    .map((row, r) =>
      row.map((button, b) =>
        checkButton(
          button,
          given.actions === true ? `${given.field} (action ${b + 1})` : `${given.field}[${r}][${b}]`,
          problems,
        ),
      ),
    )
    .filter((row) => row.length > 0);
  if (problems.length > before) return undefined;
  const acks = buttons
    .flat()
    .filter((button): button is AckButton => button !== undefined && "ack" in button);
  if (acks.length > 1) {
    problems.push({ field: given.field, message: "may hold one ack action at most." });
    return undefined;
  }
  const urls = buttons
    .map((row) => row.filter((button): button is Button => button !== undefined && "url" in button))
    .filter((row) => row.length > 0);
  return { rows: urls, ...(acks[0] ? { ack: acks[0].ack } : {}) };
}

function readTags(given: Given, problems: OptionProblem[]): string[] | undefined {
  const list =
    typeof given.value === "string"
      ? given.value.split(",")
      : Array.isArray(given.value) && given.value.every((tag) => typeof tag === "string")
        ? (given.value as string[])
        : undefined;
  if (list === undefined) {
    problems.push({
      field: given.field,
      message: "must be an array of strings, or a comma-separated string.",
    });
    return undefined;
  }
  const tags = list.map((tag) => tag.trim()).filter((tag) => tag !== "");
  if (tags.length > MAX_TAGS || tags.some((tag) => tag.length > MAX_TAG || !tag.isWellFormed())) {
    problems.push({
      field: given.field,
      message: `may hold at most ${MAX_TAGS} tags of at most ${MAX_TAG} characters.`,
    });
    return undefined;
  }
  return tags;
}

/**
 * Reads and checks the options (integrations/ntfy-dialect.ts's gatherOptions finds them in a
 * request). Throws an OptionsError listing every field that is wrong.
 */
export function readOptions(found: Map<OptionName, Given>): MessageOptions {
  const problems: OptionProblem[] = [];
  const options: MessageOptions = {};
  const fail = (given: Given, message: string) => problems.push({ field: given.field, message });

  const format = found.get("format");
  const markdown = found.get("markdown");
  if (format) {
    const value = typeof format.value === "string" ? format.value.trim().toLowerCase() : "";
    if (!(FORMATS as readonly string[]).includes(value))
      fail(format, `must be one of ${FORMATS.join(", ")}.`);
    else if (value !== "text") options.format = value as Format;
  } else if (markdown) {
    const on = readBoolean(markdown);
    if (typeof on === "string") fail(markdown, on);
    else if (on) options.format = "markdown";
  }

  const title = found.get("title");
  if (title) {
    if (typeof title.value !== "string") fail(title, "must be a string.");
    else {
      const trimmed = title.value.replace(/\s+/g, " ").trim();
      if (trimmed.length > MAX_TITLE) fail(title, `must be at most ${MAX_TITLE} characters.`);
      else if (!trimmed.isWellFormed() || trimmed.includes("\u0000"))
        fail(title, "contains invalid characters.");
      else if (trimmed !== "") options.title = trimmed;
    }
  }

  const priority = found.get("priority");
  if (priority) {
    const value = readPriority(priority);
    if ((PRIORITIES as readonly string[]).includes(value)) {
      if (value !== "default") options.priority = value as Priority;
    } else fail(priority, value);
  }

  for (const flag of ["silent", "link_preview", "protect_content"] as const) {
    const given = found.get(flag);
    if (!given) continue;
    const value = readBoolean(given);
    if (typeof value === "string") fail(given, value);
    else if (value) options[flag] = true;
    // false is the default, except that silent: false gives min and low a sound.
    else if (flag === "silent" && (options.priority === "min" || options.priority === "low"))
      options.silent = false;
  }

  const tags = found.get("tags");
  if (tags) {
    const value = readTags(tags, problems);
    if (value !== undefined && value.length > 0) options.tags = value;
  }

  const buttons = found.get("buttons");
  if (buttons) {
    const value = readButtons(buttons, problems);
    if (value !== undefined && value.rows.length > 0) options.buttons = value.rows;
    if (value?.ack !== undefined) {
      options.ack = true;
      if (value.ack !== ACK_LABEL) options.ack_label = value.ack;
    }
  }

  const ack = found.get("ack");
  let remindEvery = found.get("remind_every");
  let remindFor = found.get("remind_for");
  if (ack) {
    const value = ack.value;
    if (typeof value === "object" && value !== null && !Array.isArray(value)) {
      // {"remind_every": 300, "remind_for": "1h"}: an Acknowledge button, and reminders until pressed.
      const fields = value as Record<string, unknown>;
      const unknown = Object.keys(fields).filter((name) => name !== "remind_every" && name !== "remind_for");
      if (unknown.length > 0)
        fail(ack, `takes true, or an object with remind_every and remind_for (not ${unknown.join(", ")}).`);
      options.ack = true;
      if (fields.remind_every !== undefined && fields.remind_every !== null)
        remindEvery = { value: fields.remind_every, field: `${ack.field}.remind_every` };
      if (fields.remind_for !== undefined && fields.remind_for !== null)
        remindFor = { value: fields.remind_for, field: `${ack.field}.remind_for` };
    } else {
      const on = readBoolean(ack);
      if (typeof on === "string")
        fail(ack, "must be true or false, or an object with remind_every and remind_for.");
      else if (on) options.ack = true;
      else if (remindEvery || remindFor)
        fail(remindEvery ?? (remindFor as Given), "needs ack: reminders stop when someone acknowledges.");
    }
  }
  readReminders(remindEvery, remindFor, options, problems);
  const escalate = found.get("escalate");
  if (escalate) {
    const steps = readEscalation(escalate, problems);
    if (steps !== undefined && steps.length > 0) {
      options.ack = true;
      options.escalate = steps;
    }
  }

  const click = found.get("click");
  if (click) {
    const url = typeof click.value === "string" ? click.value.trim() : "";
    if (isButtonLink(url)) options.click = url;
    else fail(click, URL_RULE);
  }

  if (problems.length > 0) throw new OptionsError(problems);
  return options;
}

/**
 * A duration in seconds: a whole number of seconds, or a string of them ("300") or in hours,
 * minutes and seconds ("5m", "1h30m", "90s"). Undefined for anything else.
 */
export function readDuration(value: unknown): number | undefined {
  if (typeof value === "number") return Number.isSafeInteger(value) && value >= 0 ? value : undefined;
  if (typeof value !== "string") return undefined;
  const text = value.trim().toLowerCase();
  if (/^\d{1,9}$/.test(text)) return Number(text);
  const parts = /^(?:(\d{1,5})h)?(?:(\d{1,7})m)?(?:(\d{1,9})s)?$/.exec(text);
  if (parts === null || text === "") return undefined;
  const [, h = "0", m = "0", sec = "0"] = parts;
  return Number(h) * 3600 + Number(m) * 60 + Number(sec);
}

/** The reminders' schedule (remind_every, remind_for): they make the message acknowledgeable. */
function readReminders(
  every: Given | undefined,
  until: Given | undefined,
  options: MessageOptions,
  problems: OptionProblem[],
): void {
  if (!every && !until) return;
  const rule = `seconds as a whole number, or a string such as "90s", "5m" or "1h".`;
  const everySeconds = every ? readDuration(every.value) : undefined;
  const forSeconds = until ? readDuration(until.value) : undefined;
  if (every && everySeconds === undefined) problems.push({ field: every.field, message: `must be ${rule}` });
  if (until && forSeconds === undefined) problems.push({ field: until.field, message: `must be ${rule}` });
  if (!every) {
    if (until) problems.push({ field: until.field, message: "needs remind_every (how often to remind)." });
    return;
  }
  if (everySeconds === undefined || (until && forSeconds === undefined)) return;
  if (everySeconds < REMIND_EVERY_MIN || everySeconds > REMIND_FOR_MAX) {
    problems.push({
      field: every.field,
      message: `must be between ${REMIND_EVERY_MIN} seconds and 24 hours.`,
    });
    return;
  }
  const length = forSeconds ?? Math.max(REMIND_FOR_DEFAULT, everySeconds);
  if (until && (length < everySeconds || length > REMIND_FOR_MAX)) {
    problems.push({
      field: until.field,
      message: "must be at least remind_every and at most 24 hours.",
    });
    return;
  }
  options.ack = true;
  options.remind_every = everySeconds;
  options.remind_for = length;
}

/**
 * An escalation: a list of `{"after": 600, "to": "<dock_id>"}` (`after` as remind_every takes it),
 * or a string of `after:dock_id` pairs separated by commas (a header or query parameter:
 * `10m:<dock_id>,30m:<dock_id>`). At most MAX_ESCALATION_STEPS, `after` from 30 s to 24 h and
 * each later than the one before.
 */
function readEscalation(given: Given, problems: OptionProblem[]): EscalationStep[] | undefined {
  const rule = `must be a list of {"after": seconds or "10m", "to": "<dock_id>"} (or "10m:<dock_id>,30m:<dock_id>"), at most ${MAX_ESCALATION_STEPS} steps, each after 30 s to 24 h and later than the one before.`;
  let raw: unknown[];
  if (typeof given.value === "string") {
    raw = given.value
      .split(",")
      .map((pair) => pair.trim())
      .filter((pair) => pair !== "")
      .map((pair) => {
        const at = pair.lastIndexOf(":");
        return at < 0 ? null : { after: pair.slice(0, at).trim(), to: pair.slice(at + 1).trim() };
      });
  } else if (Array.isArray(given.value)) raw = given.value;
  else {
    problems.push({ field: given.field, message: rule });
    return undefined;
  }
  const steps: EscalationStep[] = [];
  for (const step of raw) {
    const fields = typeof step === "object" && step !== null ? (step as Record<string, unknown>) : {};
    const after = readDuration(fields.after);
    const to = typeof fields.to === "string" ? fields.to : "";
    const last = steps.at(-1);
    if (
      after === undefined ||
      after < REMIND_EVERY_MIN ||
      after > REMIND_FOR_MAX ||
      !DOCK_ID_PATTERN.test(to) ||
      Object.keys(fields).some((name) => name !== "after" && name !== "to") ||
      (last !== undefined && after <= last.after)
    ) {
      problems.push({ field: given.field, message: rule });
      return undefined;
    }
    steps.push({ after, to });
  }
  if (steps.length > MAX_ESCALATION_STEPS) {
    problems.push({ field: given.field, message: rule });
    return undefined;
  }
  return steps;
}

/** Whether Telegram should notify with a sound: `silent` wins, else min and low are silent. */
export function isSilent(options: MessageOptions): boolean {
  return options.silent ?? (options.priority === "min" || options.priority === "low");
}

/** A visible mark before the Dock's name for the priorities above default. */
export const PRIORITY_MARKERS: Partial<Record<Priority, string>> = { high: "❗", urgent: "🚨" };

let shortcodes: Promise<Map<string, string>> | undefined;

/** GitHub's emoji short codes (gemoji, as ntfy and mostly Slack use), loaded on first use. */
export function emojiShortcodes(): Promise<Map<string, string>> {
  shortcodes ??= import("gemoji").then(({ gemoji }) => {
    const map = new Map<string, string>();
    for (const { emoji, names } of gemoji) for (const name of names) map.set(name, emoji);
    return map;
  });
  return shortcodes;
}

/** A free tag as a Telegram hashtag: letters, digits and underscores. */
function hashtag(tag: string): string {
  const word = tag.replace(/^#/, "").replace(/[^\p{L}\p{N}_]+/gu, "_");
  return `#${/\p{L}/u.test(word) ? word : `tag_${word}`}`;
}

/**
 * What is wrong with the links of a message's text: one whose text is an address but goes
 * elsewhere (see deceptiveLink), or an app link other than tg://resolve (see isAllowedAppLink).
 * Telegram would show both; a reader would be misled by the first, acted upon by the second.
 */
function linkProblems(body: FormattedText): string[] {
  const problems: string[] = [];
  for (const entity of body.entities) {
    if (entity.type !== "text_link" || entity.url === undefined) continue;
    const url = entity.url;
    if (/^(tg|ton):/i.test(url) && !isAllowedAppLink(url)) {
      problems.push(
        `has a link to ${url.split(/[?#]/)[0]?.slice(0, 64)}: the only tg: links a message may carry are tg://resolve?domain=… (a chat by its username).`,
      );
      continue;
    }
    const lie = deceptiveLink(body.text.slice(entity.offset, entity.offset + entity.length), url);
    if (lie !== undefined) problems.push(`has a link where ${lie}`);
  }
  return problems;
}

/** A format in which text is parsed into Telegram's text and entities. */
export type ParsedFormat = Exclude<Format, "text">;

/**
 * Reads a text in its format: Telegram's text and entities. Throws EntityParseError for HTML or
 * MarkdownV2 that does not parse (Markdown always reads); a reader may refuse a text with an
 * OptionsError naming `msg` (the HTTP edge's, when parsing it would take too long).
 */
export type FormatReader = (format: ParsedFormat, source: string) => Promise<FormattedText>;

/** The text in its format, parsed here and now (see FormatReader). */
export async function readFormat(format: ParsedFormat, source: string): Promise<FormattedText> {
  if (format === "markdown") return markdownToEntities(await markdownParser(), source);
  return tidyEntities(format === "html" ? parseHtml(source) : parseMarkdownV2(source));
}

/**
 * Everything needed to show the message, decided now: the body parsed in its format by `read` (an
 * error names `msg`), tags split into emoji and hashtags. Null for a plain message with no options.
 */
export async function prepareContent(
  msg: string,
  options: MessageOptions,
  read: FormatReader = readFormat,
): Promise<MessageContent | null> {
  if (Object.keys(options).length === 0) return null;
  const content: MessageContent = { options };
  const format = options.format ?? "text";
  if (format !== "text") {
    let body: FormattedText;
    try {
      body = await read(format, msg);
    } catch (error) {
      if (!(error instanceof EntityParseError)) throw error;
      const hint =
        format === "html"
          ? " In Telegram HTML, write <, > and & in text as &lt;, &gt; and &amp;."
          : " In MarkdownV2, escape any of _*[]()~`>#+-=|{}.! in text with a backslash.";
      const name = format === "html" ? "Telegram HTML" : "Telegram MarkdownV2";
      throw new OptionsError([{ field: "msg", message: `is not valid ${name}: ${error.message}.${hint}` }]);
    }
    // All markup and no text (an empty link, say): the source is shown as it was written.
    // A link to a user (tg://user?id=…) stays text: Telegram refuses a mention of someone the bot
    // has not met.
    const entities = body.entities.filter((entity) => entity.type !== "text_mention");
    content.body = body.text === "" ? { text: msg.trim(), entities: [] } : { text: body.text, entities };
    const problems = linkProblems(content.body);
    if (problems.length > 0) throw new OptionsError(problems.map((message) => ({ field: "msg", message })));
  }
  if (options.tags) {
    const codes = await emojiShortcodes();
    const emoji: string[] = [];
    const hashtags: string[] = [];
    for (const tag of options.tags) {
      const found = codes.get(tag.toLowerCase().replace(/^:|:$/g, ""));
      if (found !== undefined) emoji.push(found);
      else hashtags.push(hashtag(tag));
    }
    if (emoji.length > 0) content.emoji = emoji.join("");
    if (hashtags.length > 0) content.hashtags = hashtags;
  }
  return content;
}
