import { createHash } from "node:crypto";
import type { Button, Priority } from "../domain/message-options.ts";
import { MAX_URL } from "../domain/message-options.ts";
import { isButtonUrl } from "../domain/telegram-format.ts";
import type { FormatSample, SettingsTarget, ToolAuthentication, ToolSettings } from "./settings.ts";

/*
 * The contract every inbound format (alertmanager.ts, github.ts, …, template.ts) keeps: a request
 * body as a tool sent it in, a notification in our message model out. Formats are pure functions
 * of the payload: no I/O, no clock, no randomness — the HTTP edge authenticates, reads the body and
 * stores what comes out exactly as if the sender had posted it to /webhook itself.
 */

/** A request body as it arrived, read once by the HTTP edge. */
export interface Inbound {
  /**
   * The body parsed: a JSON value for JSON (object, array, …), the fields for a form body
   * (application/x-www-form-urlencoded), undefined for anything else (XML, plain text).
   */
  body: unknown;
  /** The body as text (UTF-8, checked). */
  text: string;
  /** The Content-Type's media type, lower case, without parameters ("" when none was sent). */
  mediaType: string;
  /** The request's headers, names in lower case (as Node gives them). */
  headers: Readonly<Record<string, string | string[] | undefined>>;
}

/**
 * A notification in the message model, as a /webhook body would carry it: the options are read
 * and checked by the same code as any sender's (domain/message-options.ts readOptions), so a
 * format cannot produce what a sender could not send.
 */
export interface Notification {
  /** The text, in `options.format` (built-in formats write Telegram HTML, every payload value escaped). */
  msg: string;
  options: {
    format?: "text" | "markdown" | "html";
    title?: string;
    priority?: Priority;
    /** Emoji short codes (shown as emoji) or words (shown as hashtags); at most 10. */
    tags?: string[];
    /** An "Open" button's URL. */
    click?: string;
    /** URL buttons: at most 3 rows of 3. */
    buttons?: Button[][];
    ack?: boolean;
  };
  /**
   * A living notification's key (at most 128 characters): a later notification with the same key
   * replaces this one in place (an alert group's firing message becomes its resolved message).
   */
  key?: string;
  /**
   * The key's last word (the group resolved, the monitor is up again): the message holding the key
   * is replaced and then lets the key go, so the next time it fires is a new message (Telegram
   * notifies only for new messages, never for edits). With no message holding it, a new message.
   */
  final?: boolean;
}

/** What a format makes of a payload. */
export type Conversion =
  | { kind: "notify"; notification: Notification }
  /** Nothing to show (GitHub's ping, a workflow that has only started): answered 202, nothing stored. */
  | { kind: "skip"; reason: string };

/** The body is not what the format reads; the message says what is wrong, never quoting secrets. */
export class PayloadError extends Error {
  override name = "PayloadError";
}

/**
 * The body holds more than a format reads at once (XML of 78,000 attributes): refused before the
 * work that would hold the service, the message naming the limit.
 */
export class TooComplexError extends Error {
  override name = "TooComplexError";
}

/** One inbound format, chosen by path (`/webhook/<name>`), `?format=<name>` or detection. */
export interface InboundFormat {
  /** As in URLs: alertmanager, grafana, github, gitlab, uptime-kuma, apprise, slack, ntfy. */
  name: string;
  /** As people know the tool: "Prometheus Alertmanager". */
  label: string;
  /**
   * Whether the body is unmistakably this format (for a plain /webhook body without `msg`): true
   * only on fields no other format and no ordinary JSON has.
   */
  detect(inbound: Inbound): boolean;
  /** The notification; throws PayloadError for a body that is not this format's. */
  convert(inbound: Inbound): Conversion | Promise<Conversion>;
  /**
   * Told apart by `detect` even when the body has a string `msg` of its own (by a header, or
   * fields beside that `msg`); a body with `msg` is otherwise our own message, never a payload.
   */
  detectedWithMsg?: true;
  /** How the tool proves who it is: the door its settings name. */
  authentication: ToolAuthentication;
  /** The tool's settings, written for a Dock (the console's Integrations, docs/integrations.md). */
  settings(target: SettingsTarget): ToolSettings;
  /** A payload as the tool sends it, trimmed (the console's Try a sample offers it). */
  sample: FormatSample;
}

/**
 * How long a built-in format's text may grow: one Telegram message (4096 UTF-16 units) less room
 * for the Dock's name, the title, the priority marker and the hashtags. Lists longer than fit are
 * cut with "… and N more", and no single payload value takes more than its share.
 */
export const TEXT_BUDGET = 3500;

/**
 * At most this many formatting entities in a built-in format's text (Telegram takes 100 per
 * message; the title and hashtags take some).
 */
export const ENTITY_BUDGET = 80;

const HTML_ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" };

/** Text from a payload, safe inside Telegram HTML (and in an attribute's double quotes). */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"]/g, (c) => HTML_ESCAPES[c] as string);
}

/**
 * A payload's text cut to at most `max` UTF-16 units (never inside a surrogate pair), with an
 * ellipsis when cut; whitespace runs of a one-line field collapsed when `oneLine`.
 */
export function clip(text: string, max: number, oneLine = false): string {
  const source = oneLine ? text.replace(/\s+/g, " ").trim() : text.trim();
  if (source.length <= max) return source;
  let end = max - 1;
  const code = source.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return `${source.slice(0, end)}…`;
}

/**
 * Text from a payload field: strings made well-formed and without NUL (neither Telegram nor the
 * send path takes them), numbers and booleans as written, anything else empty.
 */
export function textOf(value: unknown): string {
  if (typeof value === "string") return value.toWellFormed().replaceAll("\u0000", "");
  return typeof value === "number" || typeof value === "boolean" ? String(value) : "";
}

/** A payload's object field, or an empty one: formats read nested fields without a check each time. */
export function fieldsOf(value: unknown): Record<string, unknown> {
  return isRecord(value) ? value : {};
}

/**
 * A payload's text escaped for Telegram HTML and clipped so that the *escaped* text fits `max`
 * (an `&` takes five units once escaped).
 */
export function escapedClip(value: string, max: number, oneLine = false): string {
  const whole = escapeHtml(clip(value, max, oneLine));
  if (whole.length <= max) return whole;
  // The longest clip whose escaped form fits (escaping only lengthens, so a binary search).
  let low = 1;
  let high = max - 1;
  let best = escapeHtml(clip(value, 1, oneLine));
  while (low <= high) {
    const room = (low + high) >>> 1;
    const escaped = escapeHtml(clip(value, room, oneLine));
    if (escaped.length <= max) {
      best = escaped;
      low = room + 1;
    } else high = room - 1;
  }
  return best;
}

/**
 * A living-notification key for a format: `<format>:<the payload's own key>`, or
 * `<format>:<SHA-256 hex of it>` when that would not fit in 128 characters (an Alertmanager group
 * key can be long); undefined for an empty one.
 */
export function livingKey(format: string, key: string): string | undefined {
  if (key.trim() === "") return undefined;
  const plain = `${format}:${key}`;
  if (plain.length <= 128 && plain.isWellFormed() && !plain.includes("\u0000")) return plain;
  return `${format}:${createHash("sha256").update(key).digest("hex")}`;
}

/** A URL button, or undefined when Telegram would refuse the URL (localhost, a dotless host, …). */
export function linkButton(text: string, url: unknown): Button | undefined {
  if (typeof url !== "string") return undefined;
  const trimmed = url.trim();
  if (trimmed.length > MAX_URL || !isButtonUrl(trimmed)) return undefined;
  // A label Telegram (and readOptions) refuses would cost the whole message: made plain instead.
  const label = clip(textOf(text).replace(/\p{Cc}/gu, " "), 64, true);
  return { text: label === "" ? "Open" : label, url: trimmed };
}

/** Buttons in rows of at most three, at most three rows, without gaps. */
export function buttonRows(buttons: (Button | undefined)[]): Button[][] | undefined {
  const kept = buttons.filter((b): b is Button => b !== undefined).slice(0, 9);
  if (kept.length === 0) return undefined;
  const rows: Button[][] = [];
  for (let i = 0; i < kept.length; i += 3) rows.push(kept.slice(i, i + 3));
  return rows;
}

/** A plain object's field, when the value is an object (not an array). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A header's value (the first, when repeated). */
export function header(inbound: Inbound, name: string): string | undefined {
  const value = inbound.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
