import {
  checkLink,
  ENTITY_TYPES,
  EntityParseError,
  type FormattedText,
  finishText,
  type MessageEntity,
  parseText,
} from "../domain/telegram-format.ts";
import type { Emulator, Message, SimChat, StoredMessage } from "./emulator.ts";
import { historyView } from "./emulator.ts";
import { BotApiError, badRequest, CHAT_NOT_FOUND, forbidden, NOT_FOUND, tooManyRequests } from "./errors.ts";
import { isInlineKeyboard, parseReplyMarkup, type ReplyMarkup } from "./markup.ts";
import type { Params } from "./params.ts";

/** Telegram's limit on a message text, in UTF-16 code units after entities are parsed. */
export const MAX_TEXT_LENGTH = 4096;

/** Telegram's limit on a callback query answer's text. */
const MAX_CALLBACK_ANSWER = 200;

/** A bot may delete a message only while it is younger than this (Telegram's 48 hours). */
export const DELETE_WINDOW_SECONDS = 48 * 60 * 60;

/** A Bot API method: reads its parameters, changes the sandbox, returns the `result`. */
export type BotMethod = (emulator: Emulator, params: Params, signal: AbortSignal) => unknown;

const NOT_MODIFIED =
  "message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message";

function chatIdOf(params: Params): number {
  if (!params.has("chat_id")) throw badRequest("chat_id is empty");
  const raw = params.string("chat_id") as string;
  if (!/^-?\d{1,16}$/.test(raw.trim())) throw CHAT_NOT_FOUND();
  return Number(raw);
}

/**
 * The chat a call addresses; 400 when Telegram would not know it. `write` also answers 403 when
 * the bot may not write there; `send` leaves that check for later, as sendMessage checks its
 * text first.
 */
function chatFor(emulator: Emulator, params: Params, access: "read" | "send" | "write"): SimChat {
  const id = chatIdOf(params);
  const chat = emulator.chats.get(id);
  if (chat === undefined) {
    // Telegram knows people who never opened the bot, but the bot may not start the conversation.
    if (emulator.users.has(id) && access !== "read")
      throw forbidden("bot can't initiate conversation with a user");
    throw CHAT_NOT_FOUND();
  }
  if (access === "write") checkCanWrite(chat);
  return chat;
}

function checkCanWrite(chat: SimChat): void {
  if (chat.type === "private") {
    if (chat.botStatus === "kicked") throw forbidden("bot was blocked by the user");
    return;
  }
  if (chat.migratedTo !== undefined) {
    throw new BotApiError(400, "Bad Request: group chat was upgraded to a supergroup chat", {
      migrate_to_chat_id: chat.migratedTo,
    });
  }
  const kind = chat.type === "group" ? "group chat" : "supergroup chat";
  if (chat.botStatus === "kicked") throw forbidden(`bot was kicked from the ${kind}`);
  if (chat.botStatus === "left") throw forbidden(`bot is not a member of the ${kind}`);
}

function explicitEntities(params: Params, field: string): MessageEntity[] {
  const raw = params.json(field, "can't parse entities JSON object");
  if (!Array.isArray(raw)) throw badRequest("can't parse entities JSON object");
  return raw.map((entity) => {
    if (typeof entity !== "object" || entity === null) throw badRequest("can't parse entities JSON object");
    const { type, offset, length } = entity as Record<string, unknown>;
    if (typeof type !== "string" || !ENTITY_TYPES.has(type)) {
      throw badRequest("can't parse entities: Unsupported type specified");
    }
    if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || (offset as number) < 0) {
      throw badRequest("can't parse entities: Wrong offset or length specified");
    }
    if (type === "text_link" && typeof (entity as { url?: unknown }).url !== "string") {
      throw badRequest('can\'t parse entities: Field "url" must be of type String');
    }
    if (type === "text_link") {
      // As Telegram: a URL it does not take is refused, a bare domain gets http://.
      const url = checkLink((entity as { url: string }).url);
      if (url === undefined) throw badRequest("can't parse entities: Wrong URL specified");
      return { ...(entity as MessageEntity), url };
    }
    return entity as MessageEntity;
  });
}

/** Text and entities of a send or edit, checked the way Telegram checks them. */
function formattedText(
  params: Params,
  textField: string,
  entitiesField: string,
  modeField: string,
): FormattedText {
  const text = params.string(textField) ?? "";
  let formatted: FormattedText;
  if (params.has(entitiesField)) {
    formatted = { text, entities: explicitEntities(params, entitiesField) };
  } else if (params.has(modeField)) {
    let parsed: FormattedText | undefined;
    try {
      parsed = parseText(text, params.string(modeField) as string);
    } catch (error) {
      if (error instanceof EntityParseError) throw badRequest(`can't parse entities: ${error.message}`);
      throw error;
    }
    if (parsed === undefined) throw badRequest("unsupported parse_mode");
    formatted = parsed;
  } else {
    formatted = { text, entities: [] };
  }
  const finished = finishText(formatted);
  if (finished.text === "") throw badRequest("message text is empty");
  if (finished.text.length > MAX_TEXT_LENGTH) throw badRequest("message is too long");
  return finished;
}

function replyTarget(chat: SimChat, params: Params): StoredMessage | undefined {
  const reply = params.json("reply_parameters", "can't parse reply parameters JSON object") as
    | { message_id?: unknown; chat_id?: unknown; allow_sending_without_reply?: unknown }
    | undefined;
  const id = reply?.message_id ?? params.integer("reply_to_message_id");
  if (id === undefined) return undefined;
  if (reply !== undefined && (typeof reply !== "object" || reply === null || !Number.isSafeInteger(id))) {
    throw badRequest("can't parse reply parameters JSON object");
  }
  const target = chat.messages.find((stored) => stored.message.message_id === id);
  const allowWithout =
    reply?.allow_sending_without_reply === true || params.boolean("allow_sending_without_reply");
  if (target === undefined && !allowWithout) throw badRequest("message to be replied not found");
  return target;
}

/** What Telegram puts in `reply_to_message`: the replied message without its own reply. */
export function quoted(message: Message): Message {
  const { reply_to_message: _nested, ...rest } = message;
  return rest;
}

/**
 * Takes the call's place in the flood limits (limits.ts), or answers 429 with `retry_after`.
 * Sends, edits and deletes share the same windows, as on Telegram; edits and deletes have no
 * `allow_paid_broadcast`.
 */
function checkFlood(emulator: Emulator, chat: SimChat, paidBroadcast: boolean): void {
  const retryAfter = emulator.limiter.take(chat.id, chat.type === "private", paidBroadcast);
  if (retryAfter > 0) throw tooManyRequests(retryAfter);
}

/** Where the person's keyboard stands after the bot sent this markup. */
function applyKeyboard(emulator: Emulator, chat: SimChat, markup: ReplyMarkup | undefined): void {
  if (markup === undefined || isInlineKeyboard(markup) || "force_reply" in markup) return;
  chat.keyboard = "remove_keyboard" in markup ? null : markup;
  emulator.emit({ type: "chat_updated", chat: emulator.chatView(chat) });
}

function sendMessage(emulator: Emulator, params: Params): Message {
  emulator.stats.send_message++;
  const chat = chatFor(emulator, params, "send");
  const { text, entities } = formattedText(params, "text", "entities", "parse_mode");
  const markup = parseReplyMarkup(
    params.json("reply_markup", "can't parse reply keyboard markup JSON object"),
  );
  const replyTo = replyTarget(chat, params);
  checkCanWrite(chat);
  checkFlood(emulator, chat, params.boolean("allow_paid_broadcast"));
  const preview = params.json("link_preview_options", "can't parse link preview options JSON object");
  const fields: Partial<Message> = {
    text,
    ...(entities.length ? { entities } : {}),
    ...(preview !== undefined ? { link_preview_options: preview } : {}),
    ...(params.boolean("protect_content") ? { has_protected_content: true } : {}),
    ...(replyTo ? { reply_to_message: quoted(replyTo.message) } : {}),
    ...(isInlineKeyboard(markup) ? { reply_markup: markup } : {}),
  };
  const stored = emulator.appendMessage(chat, emulator.bot, fields, {
    ...(markup ? { markup } : {}),
    ...(params.boolean("disable_notification") ? { disableNotification: true } : {}),
  });
  applyKeyboard(emulator, chat, markup);
  return stored.message;
}

function messageToEdit(emulator: Emulator, params: Params): { chat: SimChat; stored: StoredMessage } {
  if (params.has("inline_message_id")) throw badRequest("MESSAGE_ID_INVALID");
  const chat = chatFor(emulator, params, "write");
  const id = params.integer("message_id", "message identifier is not specified");
  if (id === undefined) throw badRequest("message identifier is not specified");
  const stored = emulator.findMessage(chat, id);
  if (stored === undefined) throw badRequest("message to edit not found");
  if (stored.message.from.id !== emulator.bot.id) throw badRequest("message can't be edited");
  return { chat, stored };
}

function inlineMarkup(params: Params): ReplyMarkup | undefined {
  const markup = parseReplyMarkup(
    params.json("reply_markup", "can't parse reply keyboard markup JSON object"),
  );
  if (markup !== undefined && !isInlineKeyboard(markup)) throw badRequest("inline keyboard expected");
  return markup;
}

function finishEdit(
  emulator: Emulator,
  chat: SimChat,
  stored: StoredMessage,
  changes: Partial<Message>,
  markup: ReplyMarkup | undefined,
): Message {
  const before = JSON.stringify([
    stored.message.text,
    stored.message.entities ?? [],
    stored.message.reply_markup,
  ]);
  const after = JSON.stringify([
    changes.text ?? stored.message.text,
    changes.entities ?? stored.message.entities ?? [],
    markup,
  ]);
  // Telegram answers an edit that changes nothing without sending anything: no flood place taken.
  if (before === after) throw badRequest(NOT_MODIFIED);
  checkFlood(emulator, chat, false);
  const { reply_markup: _old, ...rest } = stored.message;
  stored.message = {
    ...rest,
    ...changes,
    ...(markup ? { reply_markup: markup } : {}),
    edit_date: emulator.date(),
  };
  if (markup) stored.markup = markup;
  else delete stored.markup;
  emulator.emit({ type: "message_edited", chat_id: chat.id, message: historyView(stored) });
  return stored.message;
}

function chatFullInfo(emulator: Emulator, chat: SimChat): Record<string, unknown> {
  return {
    ...emulator.chatObject(chat),
    accent_color_id: Math.abs(chat.id) % 7,
    max_reaction_count: 11,
    accepted_gift_types: {
      unlimited_gifts: false,
      limited_gifts: false,
      unique_gifts: false,
      premium_subscription: false,
    },
  };
}

function chatMember(emulator: Emulator, chat: SimChat, userId: number): Record<string, unknown> {
  if (userId === emulator.bot.id) {
    const status = chat.type === "private" && chat.botStatus === "kicked" ? "kicked" : chat.botStatus;
    return memberObject(emulator.bot, status);
  }
  const user = emulator.users.get(userId);
  if (user === undefined) throw badRequest("user not found");
  if (chat.type === "private") return memberObject(user, chat.userId === userId ? "member" : "left");
  if (chat.creatorId === userId) return memberObject(user, "creator");
  if (chat.admins.includes(userId)) return memberObject(user, "administrator");
  return memberObject(user, chat.members.includes(userId) ? "member" : "left");
}

const ADMIN_RIGHTS = {
  can_be_edited: false,
  is_anonymous: false,
  can_manage_chat: true,
  can_delete_messages: true,
  can_manage_video_chats: true,
  can_restrict_members: true,
  can_promote_members: false,
  can_change_info: true,
  can_invite_users: true,
  can_post_stories: false,
  can_edit_stories: false,
  can_delete_stories: false,
  can_pin_messages: true,
};

function memberObject(user: object, status: string): Record<string, unknown> {
  switch (status) {
    case "creator":
      return { status, user, is_anonymous: false };
    case "administrator":
      return { status, user, ...ADMIN_RIGHTS };
    case "kicked":
      return { status, user, until_date: 0 };
    default:
      return { status, user };
  }
}

function commandsKey(params: Params): string {
  const scope = params.json("scope", "can't parse BotCommandScope JSON object") as
    | Record<string, unknown>
    | undefined;
  const language = params.string("language_code") ?? "";
  if (language !== "" && !/^[a-z]{2}$/.test(language)) throw badRequest("invalid language code specified");
  const scopeKey =
    scope === undefined
      ? "default"
      : [scope.type, scope.chat_id, scope.user_id].filter((v) => v !== undefined).join(":");
  return `${scopeKey}|${language}`;
}

function allowedUpdates(params: Params): string[] | undefined {
  const raw = params.json("allowed_updates", "can't parse allowed updates JSON object");
  if (raw === undefined) return undefined;
  if (!Array.isArray(raw) || !raw.every((kind) => typeof kind === "string")) {
    throw badRequest("can't parse allowed updates JSON object");
  }
  return raw;
}

/** Every Bot API method the sandbox implements, by lower-case name (Telegram ignores case). */
export const BOT_METHODS: Record<string, BotMethod> = {
  getme: (emulator) => ({
    ...emulator.bot,
    can_join_groups: true,
    can_read_all_group_messages: false,
    supports_inline_queries: false,
    can_connect_to_business: false,
    has_main_web_app: false,
  }),

  getupdates: (emulator, params, signal) => {
    if (emulator.webhook.config !== null) {
      throw new BotApiError(
        409,
        "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
      );
    }
    const offset = params.integer("offset") ?? 0;
    const limit = Math.min(100, Math.max(1, params.integer("limit") ?? 100));
    const timeout = Math.max(0, params.integer("timeout") ?? 0);
    emulator.updates.setAllowed(allowedUpdates(params));
    return emulator.updates.poll(offset, limit, timeout, signal);
  },

  setwebhook: (emulator, params) => {
    const url = params.string("url") ?? "";
    const secret = params.string("secret_token");
    if (secret !== undefined && !/^[A-Za-z0-9_-]{1,256}$/.test(secret)) {
      throw badRequest("secret token contains unallowed characters");
    }
    if (url !== "") {
      let protocol = "";
      try {
        protocol = new URL(url).protocol;
      } catch {}
      // Telegram insists on https; the sandbox also takes http, since it runs beside the bot.
      if (protocol !== "https:" && protocol !== "http:") {
        throw badRequest("bad webhook: An HTTPS URL must be provided for webhook");
      }
    }
    emulator.updates.setAllowed(allowedUpdates(params));
    if (params.boolean("drop_pending_updates")) emulator.updates.drop();
    const maxConnections = params.integer("max_connections") ?? 40;
    emulator.webhook.set(url === "" ? null : { url, secretToken: secret, maxConnections });
    return true;
  },

  deletewebhook: (emulator, params) => {
    if (params.boolean("drop_pending_updates")) emulator.updates.drop();
    emulator.webhook.set(null);
    return true;
  },

  getwebhookinfo: (emulator) => {
    const { config, lastErrorDate, lastErrorMessage } = emulator.webhook;
    const allowed = emulator.updates.allowed;
    return {
      url: config?.url ?? "",
      has_custom_certificate: false,
      pending_update_count: emulator.updates.pendingCount,
      ...(config ? { max_connections: config.maxConnections } : {}),
      ...(lastErrorDate !== undefined
        ? { last_error_date: lastErrorDate, last_error_message: lastErrorMessage }
        : {}),
      ...(config && allowed ? { allowed_updates: allowed } : {}),
    };
  },

  sendmessage: sendMessage,

  editmessagetext: (emulator, params) => {
    emulator.stats.edit_message++;
    const { chat, stored } = messageToEdit(emulator, params);
    const { text, entities } = formattedText(params, "text", "entities", "parse_mode");
    const markup = inlineMarkup(params);
    const preview = params.json("link_preview_options", "can't parse link preview options JSON object");
    const changes: Partial<Message> = {
      text,
      entities,
      ...(preview !== undefined ? { link_preview_options: preview } : {}),
    };
    const message = finishEdit(emulator, chat, stored, changes, markup);
    if (entities.length === 0) delete message.entities;
    return message;
  },

  editmessagereplymarkup: (emulator, params) => {
    emulator.stats.edit_message++;
    const { chat, stored } = messageToEdit(emulator, params);
    return finishEdit(emulator, chat, stored, {}, inlineMarkup(params));
  },

  deletemessage: (emulator, params) => {
    emulator.stats.delete_message++;
    const chat = chatFor(emulator, params, "read");
    const id = params.integer("message_id", "message identifier is not specified");
    if (id === undefined) throw badRequest("message identifier is not specified");
    const stored = emulator.findMessage(chat, id);
    if (stored === undefined) throw badRequest("message to delete not found");
    // In a group the bot may delete its own messages; other people's only as an administrator.
    if (
      chat.type !== "private" &&
      stored.message.from.id !== emulator.bot.id &&
      chat.botStatus !== "administrator"
    ) {
      throw badRequest("message can't be deleted");
    }
    if (emulator.date() - stored.message.date >= DELETE_WINDOW_SECONDS) {
      throw badRequest("message can't be deleted for everyone");
    }
    checkFlood(emulator, chat, false);
    emulator.removeMessage(chat, stored);
    return true;
  },

  answercallbackquery: (emulator, params) => {
    const id = params.string("callback_query_id") ?? "";
    const record = emulator.callbackQueries.get(id);
    if (record === undefined || record.answer !== undefined) {
      throw badRequest("query is too old and response timeout expired or query ID is invalid");
    }
    const text = params.string("text");
    if (text !== undefined && text.length > MAX_CALLBACK_ANSWER) throw badRequest("MESSAGE_TOO_LONG");
    const url = params.string("url");
    record.answer = {
      ...(text ? { text } : {}),
      show_alert: params.boolean("show_alert"),
      ...(url ? { url } : {}),
    };
    emulator.emit({
      type: "callback_answer",
      callback_query_id: id,
      chat_id: record.chatId,
      ...record.answer,
    });
    return true;
  },

  setmycommands: (emulator, params) => {
    const raw = params.json("commands", "can't parse commands JSON object");
    if (!Array.isArray(raw) || raw.length > 100) throw badRequest("can't parse commands JSON object");
    const commands = raw.map((entry) => {
      const { command, description } = (entry ?? {}) as { command?: unknown; description?: unknown };
      if (typeof command !== "string" || !/^[a-z0-9_]{1,32}$/.test(command))
        throw badRequest("BOT_COMMAND_INVALID");
      if (typeof description !== "string" || description.trim() === "" || description.length > 256) {
        throw badRequest("BOT_COMMAND_DESCRIPTION_INVALID");
      }
      return { command, description };
    });
    emulator.commands.set(commandsKey(params), commands);
    emulator.changed();
    return true;
  },

  getmycommands: (emulator, params) => emulator.commands.get(commandsKey(params)) ?? [],

  deletemycommands: (emulator, params) => {
    if (emulator.commands.delete(commandsKey(params))) emulator.changed();
    return true;
  },

  sendchataction: (emulator, params) => {
    chatFor(emulator, params, "write");
    return true;
  },

  getchat: (emulator, params) => chatFullInfo(emulator, chatFor(emulator, params, "read")),

  getchatmember: (emulator, params) => {
    const chat = chatFor(emulator, params, "read");
    const userId = params.integer("user_id", "user not found");
    if (userId === undefined) throw badRequest("user not found");
    return chatMember(emulator, chat, userId);
  },

  getchatadministrators: (emulator, params) => {
    const chat = chatFor(emulator, params, "read");
    if (chat.type === "private") throw badRequest("there are no administrators in the private chat");
    const ids = [...new Set([...(chat.creatorId !== undefined ? [chat.creatorId] : []), ...chat.admins])];
    const admins = ids.map((id) => chatMember(emulator, chat, id));
    if (chat.botStatus === "administrator") admins.push(memberObject(emulator.bot, "administrator"));
    return admins;
  },

  getchatmembercount: (emulator, params) => {
    const chat = chatFor(emulator, params, "read");
    return chat.members.length + (chat.botStatus === "member" || chat.botStatus === "administrator" ? 1 : 0);
  },
};

/** Runs one Bot API method by name, as the HTTP route and webhook replies do. */
export async function callMethod(
  emulator: Emulator,
  method: string,
  params: Params,
  signal: AbortSignal,
): Promise<unknown> {
  const name = method.toLowerCase();
  const handler = BOT_METHODS[name];
  if (handler === undefined) throw NOT_FOUND();
  return handler(emulator, params, signal);
}
