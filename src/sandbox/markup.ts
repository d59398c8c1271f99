import { checkLink } from "../domain/telegram-format.ts";
import { badRequest } from "./errors.ts";

/** A button under a message; exactly one action besides `text`. */
export interface InlineButton {
  text: string;
  callback_data?: string;
  url?: string;
  [action: string]: unknown;
}

/** A button of the keyboard that replaces the person's keyboard; pressing it sends its text. */
export interface KeyboardButton {
  text: string;
  [option: string]: unknown;
}

/** The four kinds of `reply_markup` Telegram accepts, checked and normalised. */
export type ReplyMarkup =
  | { inline_keyboard: InlineButton[][] }
  | {
      keyboard: KeyboardButton[][];
      is_persistent?: boolean;
      resize_keyboard?: boolean;
      one_time_keyboard?: boolean;
      input_field_placeholder?: string;
      selective?: boolean;
    }
  | { remove_keyboard: true; selective?: boolean }
  | { force_reply: true; input_field_placeholder?: string; selective?: boolean };

const INLINE_ACTIONS = [
  "url",
  "callback_data",
  "web_app",
  "login_url",
  "switch_inline_query",
  "switch_inline_query_current_chat",
  "switch_inline_query_chosen_chat",
  "copy_text",
  "callback_game",
  "pay",
];

/** Telegram's limit on callback data: 1–64 bytes of UTF-8. */
export const MAX_CALLBACK_DATA_BYTES = 64;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

function rows(value: unknown, field: string, kind: string): unknown[][] {
  if (!Array.isArray(value) || !value.every(Array.isArray)) {
    throw badRequest(`field "${field}" of the ${kind} must be an Array of Arrays`);
  }
  return value as unknown[][];
}

function inlineButton(raw: unknown): InlineButton {
  if (!isObject(raw))
    throw badRequest("can't parse inline keyboard button: InlineKeyboardButton must be an Object");
  if (typeof raw.text !== "string") {
    throw badRequest('can\'t parse inline keyboard button: Field "text" must be of type String');
  }
  const actions = INLINE_ACTIONS.filter((action) => raw[action] !== undefined);
  if (actions.length === 0) {
    throw badRequest("can't parse inline keyboard button: Text buttons are unallowed in the inline keyboard");
  }
  if (raw.callback_data !== undefined) {
    const data = raw.callback_data;
    if (typeof data !== "string" || data === "" || Buffer.byteLength(data) > MAX_CALLBACK_DATA_BYTES) {
      throw badRequest("BUTTON_DATA_INVALID");
    }
  }
  if (raw.url !== undefined) {
    // Telegram's check_link, as for links in text: http(s) with a dotted host, or tg:.
    const url = String(raw.url);
    const valid = /^(https?|tg):/i.test(url) && checkLink(url) !== undefined;
    if (!valid)
      throw badRequest(`inline keyboard button URL '${String(raw.url)}' is invalid: Wrong HTTP URL`);
  }
  return raw as InlineButton;
}

function keyboardButton(raw: unknown): KeyboardButton {
  if (typeof raw === "string") return { text: raw };
  if (!isObject(raw) || typeof raw.text !== "string") {
    throw badRequest('can\'t parse keyboard button: Field "text" must be of type String');
  }
  return raw as KeyboardButton;
}

/** Checks a `reply_markup` parameter the way Telegram does; undefined when there is none. */
export function parseReplyMarkup(raw: unknown): ReplyMarkup | undefined {
  if (raw === undefined) return undefined;
  if (!isObject(raw)) throw badRequest("can't parse reply keyboard markup JSON object");
  if (raw.inline_keyboard !== undefined) {
    return {
      inline_keyboard: rows(raw.inline_keyboard, "inline_keyboard", "InlineKeyboardMarkup").map((row) =>
        row.map(inlineButton),
      ),
    };
  }
  if (raw.keyboard !== undefined) {
    const placeholder = raw.input_field_placeholder;
    if (placeholder !== undefined && (typeof placeholder !== "string" || placeholder.length > 64)) {
      throw badRequest("can't parse reply keyboard markup JSON object");
    }
    return {
      ...raw,
      keyboard: rows(raw.keyboard, "keyboard", "ReplyKeyboardMarkup").map((row) => row.map(keyboardButton)),
    };
  }
  if (raw.remove_keyboard === true) return { ...raw, remove_keyboard: true };
  if (raw.force_reply === true) return { ...raw, force_reply: true };
  throw badRequest("can't parse reply keyboard markup JSON object");
}

/** Only inline keyboards belong to a message; the other kinds change the person's keyboard. */
export function isInlineKeyboard(
  markup: ReplyMarkup | undefined,
): markup is { inline_keyboard: InlineButton[][] } {
  return markup !== undefined && "inline_keyboard" in markup;
}
