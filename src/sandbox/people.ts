import { randomBytes } from "node:crypto";
import { finishText } from "../domain/telegram-format.ts";
import { START_PAYLOAD } from "../domain/telegram-link.ts";
import { SANDBOX_BOT_USERNAME } from "../telegram/sandbox-bot.ts";
import { MAX_TEXT_LENGTH, quoted } from "./bot-methods.ts";
import type { BotStatus, Emulator, Message, SimChat, SimUser } from "./emulator.ts";

/**
 * What simulated people do, each turned into what Telegram would show the bot: messages,
 * callback queries and `my_chat_member` updates. The control API and the chat page call these.
 */

/** An action the sandbox refuses; the control API answers it with `status` and the message. */
export class ActionError extends Error {
  override name = "ActionError";
  readonly status: number;

  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

function person(emulator: Emulator, userId: number): SimUser {
  const user = emulator.users.get(userId);
  if (user === undefined) throw new ActionError(404, `no person with id ${userId}`);
  return user;
}

function chatById(emulator: Emulator, chatId: number): SimChat {
  const chat = emulator.chats.get(chatId);
  if (chat === undefined) throw new ActionError(404, `no chat with id ${chatId}`);
  return chat;
}

/** Who speaks: given explicitly, or the person of a private chat. */
function speaker(emulator: Emulator, chat: SimChat, fromId: number | undefined): SimUser {
  const id = fromId ?? chat.userId;
  if (id === undefined) throw new ActionError(400, "from is required in a group: which person speaks?");
  const user = person(emulator, id);
  if (chat.type === "private" && chat.userId !== id) {
    throw new ActionError(400, `person ${id} is not the person of private chat ${chat.id}`);
  }
  if (chat.type !== "private" && !chat.members.includes(id)) {
    throw new ActionError(400, `person ${id} is not a member of chat ${chat.id}`);
  }
  return user;
}

function myChatMember(
  emulator: Emulator,
  chat: SimChat,
  from: SimUser,
  before: BotStatus,
  after: BotStatus,
): void {
  const member = (status: BotStatus) => ({
    user: emulator.bot,
    status,
    ...(status === "kicked" ? { until_date: 0 } : {}),
  });
  emulator.updates.push("my_chat_member", {
    chat: emulator.chatObject(chat),
    from,
    date: emulator.date(),
    old_chat_member: member(before),
    new_chat_member: member(after),
  });
  emulator.emit({ type: "chat_updated", chat: emulator.chatView(chat) });
}

/**
 * In groups a bot in privacy mode (Telegram's default) sees only commands, replies to its own
 * messages and messages that mention it; as an administrator it sees everything.
 */
function botSees(emulator: Emulator, chat: SimChat, message: Message): boolean {
  if (chat.type === "private") return chat.botStatus !== "kicked";
  if (chat.botStatus === "left" || chat.botStatus === "kicked") return false;
  if (chat.botStatus === "administrator") return true;
  if (message.reply_to_message?.from.id === emulator.bot.id) return true;
  const text = message.text ?? "";
  return (message.entities ?? []).some((entity) => {
    const part = text.slice(entity.offset, entity.offset + entity.length);
    if (entity.type === "mention") return part.toLowerCase() === `@${SANDBOX_BOT_USERNAME.toLowerCase()}`;
    if (entity.type !== "bot_command") return false;
    const target = part.split("@")[1];
    return target === undefined || target.toLowerCase() === SANDBOX_BOT_USERNAME.toLowerCase();
  });
}

/** A person writes in a chat (a private chat is opened on first contact). */
export function sendText(
  emulator: Emulator,
  chatId: number,
  input: { from?: number; text: string; replyTo?: number },
): Message {
  const chat =
    emulator.chats.get(chatId) ??
    (emulator.users.has(chatId) ? emulator.privateChat(chatId, true) : undefined);
  if (chat === undefined) throw new ActionError(404, `no chat with id ${chatId}`);
  const from = speaker(emulator, chat, input.from);
  if (chat.migratedTo !== undefined) {
    throw new ActionError(409, `chat ${chat.id} was upgraded to a supergroup: write in ${chat.migratedTo}`);
  }
  if (chat.type === "private" && chat.botStatus === "kicked") {
    throw new ActionError(409, "this person has blocked the bot; unblock it (or open a start link) first");
  }
  const { text, entities } = finishText({ text: input.text, entities: [] });
  if (text === "") throw new ActionError(400, "text must not be empty");
  if (text.length > MAX_TEXT_LENGTH)
    throw new ActionError(400, `text is longer than ${MAX_TEXT_LENGTH} UTF-16 code units`);
  let replyTo: Message | undefined;
  if (input.replyTo !== undefined) {
    replyTo = emulator.findMessage(chat, input.replyTo)?.message;
    if (replyTo === undefined) throw new ActionError(404, `no message ${input.replyTo} in chat ${chat.id}`);
  }
  const stored = emulator.appendMessage(chat, from, {
    text,
    ...(entities.length ? { entities } : {}),
    ...(replyTo ? { reply_to_message: quoted(replyTo) } : {}),
  });
  if (botSees(emulator, chat, stored.message)) emulator.updates.push("message", stored.message);
  return stored.message;
}

/**
 * The person opens `t.me/<bot>?start=<payload>`: Telegram sends `/start <payload>` in the private
 * chat, unblocking the bot first if the person had blocked it (the app's "Restart").
 */
export function openStartLink(emulator: Emulator, userId: number, payload: string | undefined): Message {
  person(emulator, userId);
  if (payload !== undefined && !START_PAYLOAD.test(payload)) {
    throw new ActionError(400, "payload must be 1-64 characters of A-Z, a-z, 0-9, _ and -");
  }
  const chat = emulator.privateChat(userId, true) as SimChat;
  if (chat.botStatus === "kicked") setBlocked(emulator, userId, false);
  return sendText(emulator, chat.id, { text: payload === undefined ? "/start" : `/start ${payload}` });
}

/** The person presses an inline button under a bot message. */
export function pressInlineButton(
  emulator: Emulator,
  chatId: number,
  messageId: number,
  input: { from?: number; callbackData?: string; row?: number; column?: number },
): { callback_query_id: string } | { url: string } {
  const chat = chatById(emulator, chatId);
  const from = speaker(emulator, chat, input.from);
  const stored = emulator.findMessage(chat, messageId);
  if (stored === undefined) throw new ActionError(404, `no message ${messageId} in chat ${chatId}`);
  const keyboard = stored.message.reply_markup;
  if (keyboard === undefined || !("inline_keyboard" in keyboard)) {
    throw new ActionError(400, `message ${messageId} has no inline keyboard`);
  }
  const button =
    input.callbackData !== undefined
      ? keyboard.inline_keyboard.flat().find((b) => b.callback_data === input.callbackData)
      : keyboard.inline_keyboard[input.row ?? -1]?.[input.column ?? -1];
  if (button === undefined) throw new ActionError(404, "no such button on that message");
  if (typeof button.url === "string") return { url: button.url };
  if (button.callback_data === undefined) {
    throw new ActionError(400, "the sandbox can press only callback_data and url buttons");
  }
  const id = randomBytes(8).readBigUInt64BE().toString();
  emulator.rememberCallbackQuery({ id, chatId, data: button.callback_data });
  if (
    chat.type === "private"
      ? chat.botStatus !== "kicked"
      : chat.botStatus === "member" || chat.botStatus === "administrator"
  ) {
    emulator.updates.push("callback_query", {
      id,
      from,
      message: stored.message,
      chat_instance: chat.instance,
      data: button.callback_data,
    });
  }
  return { callback_query_id: id };
}

/**
 * The person deletes a message for everyone, as the Telegram app's "Delete for everyone": in a
 * private chat either side's message, in a group their own or (as the creator or an
 * administrator) anyone's. Telegram tells the bot nothing; the bot's later edits and deletes of
 * the message answer "message to edit not found" / "message to delete not found".
 */
export function deleteMessage(
  emulator: Emulator,
  chatId: number,
  messageId: number,
  fromId: number | undefined,
): void {
  const chat = chatById(emulator, chatId);
  const from = speaker(emulator, chat, fromId);
  const stored = emulator.findMessage(chat, messageId);
  if (stored === undefined) throw new ActionError(404, `no message ${messageId} in chat ${chatId}`);
  if (
    chat.type !== "private" &&
    stored.message.from.id !== from.id &&
    chat.creatorId !== from.id &&
    !chat.admins.includes(from.id)
  ) {
    throw new ActionError(403, `person ${from.id} is not an administrator of chat ${chatId}`);
  }
  emulator.removeMessage(chat, stored);
}

/** The person presses a button of the reply keyboard: its text is sent as a message. */
export function pressKeyboardButton(
  emulator: Emulator,
  chatId: number,
  input: { from?: number; text: string },
): Message {
  const chat = chatById(emulator, chatId);
  const keyboard = chat.keyboard;
  if (keyboard === null || !("keyboard" in keyboard))
    throw new ActionError(400, `chat ${chatId} shows no reply keyboard`);
  if (!keyboard.keyboard.flat().some((button) => button.text === input.text)) {
    throw new ActionError(404, `the reply keyboard has no button "${input.text}"`);
  }
  const message = sendText(emulator, chatId, {
    ...(input.from !== undefined ? { from: input.from } : {}),
    text: input.text,
  });
  if (keyboard.one_time_keyboard) {
    chat.keyboard = null;
    emulator.emit({ type: "chat_updated", chat: emulator.chatView(chat) });
  }
  return message;
}

/** The person blocks (or unblocks) the bot: `my_chat_member` with status "kicked" (or "member"). */
export function setBlocked(emulator: Emulator, userId: number, blocked: boolean): SimChat {
  const user = person(emulator, userId);
  const chat = emulator.privateChat(userId, true) as SimChat;
  const before = chat.botStatus;
  const after: BotStatus = blocked ? "kicked" : "member";
  if (before === after) return chat;
  chat.botStatus = after;
  myChatMember(emulator, chat, user, before, after);
  return chat;
}

/** A member adds the bot to a group, promotes it, or removes it. */
export function setBotStatus(
  emulator: Emulator,
  chatId: number,
  status: BotStatus,
  fromId: number | undefined,
): SimChat {
  const chat = chatById(emulator, chatId);
  if (chat.type === "private") throw new ActionError(400, "use block/unblock for a private chat");
  const from = speaker(emulator, chat, fromId);
  const before = chat.botStatus;
  if (before === status) return chat;
  if (
    (status === "administrator" || status === "kicked") &&
    chat.creatorId !== from.id &&
    !chat.admins.includes(from.id)
  ) {
    throw new ActionError(403, `person ${from.id} is not an administrator of chat ${chatId}`);
  }
  chat.botStatus = status;
  const joined =
    (before === "left" || before === "kicked") && (status === "member" || status === "administrator");
  myChatMember(emulator, chat, from, before, status);
  if (joined) {
    const stored = emulator.appendMessage(chat, from, {
      new_chat_members: [emulator.bot],
      new_chat_member: emulator.bot,
      new_chat_participant: emulator.bot,
    });
    emulator.updates.push("message", stored.message);
  }
  return chat;
}

/** A person's place in a group, as the control API sets it. */
export type MemberStatus = "member" | "administrator" | "left";

/**
 * Makes a person a member of a group, promotes them to administrator, demotes them, or takes them
 * out of it, as the group's creator would in Telegram: `getChatMember` (and so the bot's checks of
 * who may subscribe the group) answers accordingly from then on, and `getChatMemberCount` counts
 * them. The creator's place is not changed. Telegram tells a bot nothing of it unless the bot is an
 * administrator that asked for `chat_member` updates (ours does not).
 */
export function setMemberStatus(
  emulator: Emulator,
  chatId: number,
  userId: number,
  status: MemberStatus,
): SimChat {
  const chat = chatById(emulator, chatId);
  if (chat.type === "private") throw new ActionError(400, "a private chat has no members to change");
  if (chat.migratedTo !== undefined) {
    throw new ActionError(409, `chat ${chat.id} was upgraded to a supergroup: change ${chat.migratedTo}`);
  }
  person(emulator, userId);
  if (chat.creatorId === userId) throw new ActionError(400, `person ${userId} created chat ${chatId}`);
  const members = chat.members.filter((id) => id !== userId);
  const admins = chat.admins.filter((id) => id !== userId);
  if (status !== "left") members.push(userId);
  if (status === "administrator") admins.push(userId);
  chat.members = members;
  chat.admins = admins;
  emulator.emit({ type: "chat_updated", chat: emulator.chatView(chat) });
  return chat;
}

/**
 * A member renames a group (Telegram's default permissions let every member change a group's
 * info). Everyone sees a `new_chat_title` service message, the bot too, privacy mode or not, as
 * long as it is in the group; later messages and updates carry the new title.
 */
export function renameGroup(
  emulator: Emulator,
  chatId: number,
  title: string,
  fromId: number | undefined,
): Message {
  const chat = chatById(emulator, chatId);
  if (chat.type === "private") throw new ActionError(400, "a private chat has no title to change");
  const from = speaker(emulator, chat, fromId);
  if (chat.migratedTo !== undefined) {
    throw new ActionError(409, `chat ${chat.id} was upgraded to a supergroup: rename ${chat.migratedTo}`);
  }
  const clean = title.trim();
  if (clean === "") throw new ActionError(400, "title must not be empty");
  chat.title = clean;
  const stored = emulator.appendMessage(chat, from, { new_chat_title: clean });
  if (chat.botStatus === "member" || chat.botStatus === "administrator") {
    emulator.updates.push("message", stored.message);
  }
  emulator.emit({ type: "chat_updated", chat: emulator.chatView(chat) });
  return stored.message;
}

/**
 * A group is upgraded to a supergroup (on Telegram: by its creator or an administrator, or by
 * itself as it grows). The supergroup is a new chat with a new id, the same people and the bot in
 * the same place; the bot is told in both chats (`migrate_to_chat_id` in the old one,
 * `migrate_from_chat_id` in the new one), and writing to the old id is refused from now on with
 * `parameters.migrate_to_chat_id`.
 */
export function upgradeGroup(emulator: Emulator, chatId: number, fromId: number | undefined): SimChat {
  const group = chatById(emulator, chatId);
  if (group.type !== "group") throw new ActionError(400, `chat ${chatId} is not a basic group`);
  if (group.migratedTo !== undefined) {
    throw new ActionError(409, `chat ${chatId} was already upgraded to ${group.migratedTo}`);
  }
  const from = speaker(emulator, group, fromId);
  if (group.creatorId !== from.id && !group.admins.includes(from.id)) {
    throw new ActionError(403, `person ${from.id} is not an administrator of chat ${chatId}`);
  }
  const supergroup = emulator.addGroup({
    title: group.title ?? "",
    type: "supergroup",
    members: [...group.members],
    admins: [...group.admins],
    creatorId: group.creatorId ?? from.id,
  });
  supergroup.botStatus = group.botStatus;
  group.migratedTo = supergroup.id;
  const present = group.botStatus === "member" || group.botStatus === "administrator";
  const told = emulator.appendMessage(group, from, { migrate_to_chat_id: supergroup.id });
  if (present) emulator.updates.push("message", told.message);
  const welcomed = emulator.appendMessage(supergroup, from, { migrate_from_chat_id: group.id });
  if (present) emulator.updates.push("message", welcomed.message);
  emulator.emit({ type: "chat_updated", chat: emulator.chatView(group) });
  emulator.emit({ type: "chat_updated", chat: emulator.chatView(supergroup) });
  return supergroup;
}
