import { randomBytes } from "node:crypto";
import { EventEmitter } from "node:events";
import type { MessageEntity } from "../domain/telegram-format.ts";
import { SANDBOX_BOT_ID, SANDBOX_BOT_NAME, SANDBOX_BOT_USERNAME } from "../telegram/sandbox-bot.ts";
import { Faults } from "./faults.ts";
import { SendLimiter } from "./limits.ts";
import { isInlineKeyboard, type ReplyMarkup } from "./markup.ts";
import { UpdateQueue, type UpdateQueueState } from "./updates.ts";
import { type WebhookReplyHandler, WebhookSender } from "./webhook.ts";

/** A simulated person. */
export interface SimUser {
  id: number;
  is_bot: false;
  first_name: string;
  last_name?: string;
  username?: string;
  language_code?: string;
}

/** Where the bot stands in a chat; in a private chat "kicked" means the person blocked the bot. */
export type BotStatus = "member" | "administrator" | "left" | "kicked";

/** A private chat with one person, or a group of people the bot may be in. */
export interface SimChat {
  id: number;
  type: "private" | "group" | "supergroup";
  title?: string;
  /** The person of a private chat (its id equals the chat id, as on Telegram). */
  userId?: number;
  creatorId?: number;
  members: number[];
  admins: number[];
  botStatus: BotStatus;
  /** Identifies the chat in callback queries (Telegram's `chat_instance`). */
  instance: string;
  /**
   * A supergroup's next message id: it numbers its own messages. Private chats and basic groups
   * take theirs from the bot's one sequence instead (`Emulator`), as on Telegram.
   */
  nextMessageId: number;
  messages: StoredMessage[];
  /** The reply keyboard the bot last put up here, until removed. */
  keyboard: ReplyMarkup | null;
  /** A group upgraded to a supergroup: the new chat's id (this one can no longer be written to). */
  migratedTo?: number;
}

/** A Bot API Message object; the fields we produce are listed, the rest pass through. */
export interface Message {
  message_id: number;
  from: SimUser | BotUser;
  chat: Record<string, unknown>;
  date: number;
  text?: string;
  entities?: MessageEntity[];
  reply_markup?: ReplyMarkup;
  edit_date?: number;
  reply_to_message?: Message;
  [field: string]: unknown;
}

/** A message in a chat's history, and the reply markup the bot sent with it whatever its kind. */
export interface StoredMessage {
  message: Message;
  markup?: ReplyMarkup;
  disableNotification?: boolean;
}

export interface BotUser {
  id: number;
  is_bot: true;
  first_name: string;
  username: string;
}

/** Something that happened in the sandbox, for the event stream and the chat page. */
export type SandboxEvent =
  | { type: "message" | "message_edited"; chat_id: number; message: Message }
  | { type: "message_deleted"; chat_id: number; message_id: number }
  | {
      type: "callback_answer";
      callback_query_id: string;
      chat_id: number | null;
      text?: string;
      show_alert: boolean;
      url?: string;
    }
  | { type: "chat_updated" | "chat_created"; chat: ChatView }
  | { type: "user_created"; user: SimUser }
  | { type: "reset" };

/** A chat as the control API shows it. */
export interface ChatView {
  id: number;
  type: SimChat["type"];
  title?: string;
  user_id?: number;
  creator_id?: number;
  members: number[];
  admins: number[];
  bot_status: BotStatus;
  blocked: boolean;
  reply_keyboard: ReplyMarkup | null;
  message_count: number;
  migrated_to_chat_id?: number;
}

/** A callback query the bot was sent, and the answer it gave. */
export interface CallbackQueryRecord {
  id: string;
  chatId: number | null;
  data?: string;
  answer?: { text?: string; show_alert: boolean; url?: string };
}

/** A command the bot registered with setMyCommands. */
export interface BotCommand {
  command: string;
  description: string;
}

/**
 * What of the emulator outlives a restart of the built-in sandbox, as plain data (persistence.ts
 * keeps it in a file). Callback queries, faults, counters, rate-limit buckets and the webhook are
 * left out: they belong to one run.
 */
export interface EmulatorState {
  users: SimUser[];
  chats: SimChat[];
  /**
   * The counters new ids are taken from (a group's id is the negative of its counter); `message`:
   * the bot's sequence of message ids in private chats and basic groups (absent in a file written
   * before the sandbox kept one: it then starts after every id those chats hold).
   */
  nextIds: { user: number; group: number; supergroup: number; message?: number };
  updates: UpdateQueueState;
  /** setMyCommands per `scope|language`. */
  commands: [string, BotCommand[]][];
}

/** Counters for tests and benchmarks ("no 429 was ever answered"). */
export interface Stats {
  calls: Record<string, number>;
  send_message: number;
  /** editMessageText and editMessageReplyMarkup calls. */
  edit_message: number;
  /** deleteMessage calls. */
  delete_message: number;
  too_many_requests: number;
  errors: number;
  /** The most messages the bot got through in any one second (sliding), limits on or off. */
  peak_per_second: number;
}

export interface EmulatorOptions {
  /** Answer 429 when the bot sends faster than Telegram allows. */
  rateLimits: boolean;
  /** Messages kept per chat; older ones are trimmed. */
  historyLimit: number;
  /** Clock for dates and rate limits (milliseconds). */
  now?: () => number;
  /** Random source for fault rates. */
  random?: () => number;
  /** People the sandbox holds at most (SANDBOX_MAX_PEOPLE); chats at most twice as many. */
  maxPeople?: number;
  /** Every Bot API call takes this long to answer, half on the way in and half out (SANDBOX_LATENCY_MS). */
  latencyMs?: number;
}

/**
 * People the sandbox holds at most by default, so a runaway script cannot exhaust memory; chats at
 * most twice as many. A load test raises it (SANDBOX_MAX_PEOPLE).
 */
export const DEFAULT_MAX_PEOPLE = 10_000;
const MAX_CALLBACK_QUERIES = 1_000;

/** Every counter at zero (the peak rate lives in the limiter). */
function zeroStats(): Omit<Stats, "peak_per_second"> {
  return { calls: {}, send_message: 0, edit_message: 0, delete_message: 0, too_many_requests: 0, errors: 0 };
}

const FIRST_USER_ID = 100_000_001;
const FIRST_GROUP_ID = 4_000_000_001;
const FIRST_SUPERGROUP_ID = -1_001_000_000_001;

/**
 * The whole simulated Telegram behind the sandbox: people, chats with their history, the bot's
 * update queue and webhook, limits, faults and counters. The Bot API (bot-methods.ts) and the
 * people's actions (people.ts) change it; the control API and chat page read it.
 */
export class Emulator {
  readonly users = new Map<number, SimUser>();
  readonly chats = new Map<number, SimChat>();
  readonly updates = new UpdateQueue();
  readonly webhook: WebhookSender;
  readonly limiter: SendLimiter;
  readonly faults: Faults;
  readonly callbackQueries = new Map<string, CallbackQueryRecord>();
  /** Commands per scope and language (`scope|language`). */
  readonly commands = new Map<string, BotCommand[]>();
  readonly events = new EventEmitter<{ event: [SandboxEvent] }>();
  readonly historyLimit: number;
  readonly now: () => number;
  readonly maxPeople: number;
  /** What every Bot API call waits before it is answered: a real network's round trip (bot-api.ts). */
  latencyMs: number;
  #stats = zeroStats();
  #nextUserId = FIRST_USER_ID;
  #nextGroupId = FIRST_GROUP_ID;
  #nextSupergroupId = FIRST_SUPERGROUP_ID;
  /**
   * Message ids as the bot sees them in private chats and basic groups: Telegram numbers those in
   * one sequence per account, across all of its chats, with the person's messages too (each side
   * of a private chat sees its own ids). So the bot's two messages in one chat are seldom
   * consecutive, and the id before its message may be anyone's in any chat. Supergroups and
   * channels number their own messages, one sequence per chat that every member sees.
   */
  #nextBoxMessageId = 1;
  readonly #changeListeners: (() => void)[] = [];

  constructor(options: EmulatorOptions, onWebhookReply: WebhookReplyHandler) {
    this.now = options.now ?? Date.now;
    this.historyLimit = options.historyLimit;
    this.maxPeople = options.maxPeople ?? DEFAULT_MAX_PEOPLE;
    this.latencyMs = options.latencyMs ?? 0;
    this.limiter = new SendLimiter({ enabled: options.rateLimits, now: this.now });
    this.faults = new Faults(options.random);
    this.webhook = new WebhookSender(this.updates, onWebhookReply);
    this.updates.onChange(() => this.changed());
    // Every SSE client listens; the default limit of 10 would warn about a leak that is not one.
    this.events.setMaxListeners(0);
  }

  /** The counters (live: callers increment them), with the peak rate read from the limiter. */
  get stats(): Stats {
    const stats = this.#stats as Stats;
    stats.peak_per_second = this.limiter.peak;
    return stats;
  }

  resetStats(): Stats {
    this.#stats = zeroStats();
    this.limiter.peak = 0;
    return this.stats;
  }

  /** Unix time in seconds, the unit of every Bot API date. */
  date(): number {
    return Math.floor(this.now() / 1000);
  }

  get bot(): BotUser {
    return { id: SANDBOX_BOT_ID, is_bot: true, first_name: SANDBOX_BOT_NAME, username: SANDBOX_BOT_USERNAME };
  }

  /** Tells the event stream; every event but a callback answer is also a change (`onChange`). */
  emit(event: SandboxEvent): void {
    this.events.emit("event", event);
    if (event.type !== "callback_answer") this.changed();
  }

  /**
   * Calls `listener` after anything that `snapshot()` would show changed, so the plugin can keep
   * the state file up to date without polling.
   */
  onChange(listener: () => void): void {
    this.#changeListeners.push(listener);
  }

  /** Reports a change that no event announces (the bot's commands); events report their own. */
  changed(): void {
    for (const listener of this.#changeListeners) listener();
  }

  /** The state a restart keeps, as plain data: the live objects, to be serialised at once. */
  snapshot(): EmulatorState {
    return {
      users: [...this.users.values()],
      chats: [...this.chats.values()],
      nextIds: {
        user: this.#nextUserId,
        group: this.#nextGroupId,
        supergroup: this.#nextSupergroupId,
        message: this.#nextBoxMessageId,
      },
      updates: this.updates.snapshot(),
      commands: [...this.commands],
    };
  }

  /**
   * Takes over a snapshot of an earlier run, replacing people, chats, updates and commands. Call
   * before anything uses the emulator; histories longer than the history limit are trimmed.
   */
  restore(state: EmulatorState): void {
    this.users.clear();
    this.chats.clear();
    this.commands.clear();
    for (const user of state.users) this.users.set(user.id, user);
    for (const chat of state.chats) {
      if (chat.messages.length > this.historyLimit)
        chat.messages.splice(0, chat.messages.length - this.historyLimit);
      this.chats.set(chat.id, chat);
    }
    this.#nextUserId = state.nextIds.user;
    this.#nextGroupId = state.nextIds.group;
    this.#nextSupergroupId = state.nextIds.supergroup;
    this.#nextBoxMessageId =
      state.nextIds.message ??
      Math.max(
        1,
        ...state.chats.filter((chat) => chat.type !== "supergroup").map((chat) => chat.nextMessageId),
      );
    this.updates.restore(state.updates);
    for (const [key, commands] of state.commands) this.commands.set(key, commands);
  }

  /** Forgets every person, chat, update, fault and counter; the webhook is removed. */
  reset(): void {
    this.users.clear();
    this.chats.clear();
    this.updates.drop();
    this.updates.setAllowed([]);
    this.webhook.set(null);
    this.faults.clear();
    this.callbackQueries.clear();
    this.commands.clear();
    this.resetStats();
    this.emit({ type: "reset" });
  }

  addUser(fields: Omit<SimUser, "id" | "is_bot"> & { id?: number }): SimUser {
    const id = fields.id ?? this.#freeUserId();
    const user: SimUser = { id, is_bot: false, first_name: fields.first_name };
    if (fields.last_name) user.last_name = fields.last_name;
    if (fields.username) user.username = fields.username;
    if (fields.language_code) user.language_code = fields.language_code;
    this.users.set(id, user);
    this.emit({ type: "user_created", user });
    return user;
  }

  /**
   * `count` people at once, each with a private chat the bot may write to — as if each had opened
   * the bot, though the bot hears nothing of it (no `/start`, so it sends no welcome). For load
   * tests: their subscriptions are made in the service's database. Returns the people's ids, in order.
   */
  addCrowd(count: number, firstName: string): number[] {
    const ids: number[] = [];
    for (let n = 1; n <= count; n++) {
      const user = this.addUser({ first_name: `${firstName} ${n}` });
      this.privateChat(user.id, true);
      ids.push(user.id);
    }
    return ids;
  }

  #freeUserId(): number {
    while (this.users.has(this.#nextUserId)) this.#nextUserId++;
    return this.#nextUserId++;
  }

  /** The person's private chat with the bot; created on first contact when `create` is set. */
  privateChat(userId: number, create: boolean): SimChat | undefined {
    const existing = this.chats.get(userId);
    if (existing || !create) return existing;
    const chat = this.#newChat({
      id: userId,
      type: "private",
      userId,
      members: [userId],
      admins: [],
      botStatus: "member",
    });
    return chat;
  }

  addGroup(fields: {
    title: string;
    type: "group" | "supergroup";
    members: number[];
    admins: number[];
    creatorId: number;
    id?: number;
  }): SimChat {
    let id = fields.id;
    if (id === undefined) {
      if (fields.type === "group") {
        while (this.chats.has(-this.#nextGroupId)) this.#nextGroupId++;
        id = -this.#nextGroupId++;
      } else {
        while (this.chats.has(this.#nextSupergroupId)) this.#nextSupergroupId--;
        id = this.#nextSupergroupId--;
      }
    }
    return this.#newChat({ ...fields, id, botStatus: "left" });
  }

  #newChat(
    fields: Pick<SimChat, "id" | "type" | "members" | "admins" | "botStatus"> & Partial<SimChat>,
  ): SimChat {
    const chat: SimChat = {
      instance: randomBytes(8).readBigUInt64BE().toString(),
      nextMessageId: 1,
      messages: [],
      keyboard: null,
      ...fields,
    };
    this.chats.set(chat.id, chat);
    this.emit({ type: "chat_created", chat: this.chatView(chat) });
    return chat;
  }

  /** The `chat` field of messages and updates. */
  chatObject(chat: SimChat): Record<string, unknown> {
    if (chat.type !== "private") return { id: chat.id, title: chat.title, type: chat.type };
    const user = this.users.get(chat.userId as number);
    return {
      id: chat.id,
      first_name: user?.first_name,
      ...(user?.last_name ? { last_name: user.last_name } : {}),
      ...(user?.username ? { username: user.username } : {}),
      type: "private",
    };
  }

  chatView(chat: SimChat): ChatView {
    return {
      id: chat.id,
      type: chat.type,
      ...(chat.title !== undefined ? { title: chat.title } : {}),
      ...(chat.userId !== undefined ? { user_id: chat.userId } : {}),
      ...(chat.creatorId !== undefined ? { creator_id: chat.creatorId } : {}),
      members: chat.members,
      admins: chat.admins,
      bot_status: chat.botStatus,
      blocked: chat.type === "private" && chat.botStatus === "kicked",
      reply_keyboard: chat.keyboard,
      message_count: chat.messages.length,
      ...(chat.migratedTo !== undefined ? { migrated_to_chat_id: chat.migratedTo } : {}),
    };
  }

  /** Adds a message to a chat's history (trimming the oldest) and tells the event stream. */
  appendMessage(
    chat: SimChat,
    from: SimUser | BotUser,
    fields: Partial<Message>,
    extra: Omit<StoredMessage, "message"> = {},
  ): StoredMessage {
    const message: Message = {
      message_id: chat.type === "supergroup" ? chat.nextMessageId++ : this.#nextBoxMessageId++,
      from,
      chat: this.chatObject(chat),
      date: this.date(),
      ...fields,
    };
    const stored: StoredMessage = { message, ...extra };
    chat.messages.push(stored);
    if (chat.messages.length > this.historyLimit)
      chat.messages.splice(0, chat.messages.length - this.historyLimit);
    this.emit({ type: "message", chat_id: chat.id, message: historyView(stored) });
    return stored;
  }

  findMessage(chat: SimChat, messageId: number): StoredMessage | undefined {
    return chat.messages.find((stored) => stored.message.message_id === messageId);
  }

  /**
   * Removes a message from the chat for everyone (the bot's deleteMessage, or a person's) and
   * tells the event stream.
   */
  removeMessage(chat: SimChat, stored: StoredMessage): void {
    const index = chat.messages.indexOf(stored);
    if (index >= 0) chat.messages.splice(index, 1);
    this.emit({ type: "message_deleted", chat_id: chat.id, message_id: stored.message.message_id });
  }

  rememberCallbackQuery(record: CallbackQueryRecord): void {
    this.callbackQueries.set(record.id, record);
    if (this.callbackQueries.size > MAX_CALLBACK_QUERIES) {
      const oldest = this.callbackQueries.keys().next().value as string;
      this.callbackQueries.delete(oldest);
    }
  }
}

/** A message as history shows it: the Bot API form plus any reply keyboard it carried. */
export function historyView(stored: StoredMessage): Message {
  // `disable_notification` is the sandbox's addition: Telegram's Message has no field for it, but
  // the chat page shows which messages arrived without a sound.
  const silent = stored.disableNotification ? { disable_notification: true } : {};
  if (stored.markup === undefined || isInlineKeyboard(stored.markup)) {
    return stored.disableNotification ? { ...stored.message, ...silent } : stored.message;
  }
  return { ...stored.message, ...silent, reply_markup: stored.markup };
}
