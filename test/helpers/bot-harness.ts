import type { Db } from "../../src/store/db.ts";

/** A message as the sandbox's chat history shows it (both sides; `reply_markup` of any kind). */
export interface ChatMessage {
  message_id: number;
  from: { id: number; is_bot: boolean; first_name: string };
  text?: string;
  edit_date?: number;
  // biome-ignore lint/suspicious/noExplicitAny: tests read whatever markup the bot sent.
  reply_markup?: any;
  reply_to_message?: { message_id: number };
}

/** How long a test waits for the bot before failing with what the chat shows (unless told otherwise). */
const WAIT_MS = 10_000;

/**
 * Plays the people of the sandbox through its control API (`<root>/api/…`), as a person in the
 * Telegram app would, and waits for the bot's answers by polling the chat history.
 */
export class People {
  readonly root: string;
  readonly #waitMs: number;

  /**
   * `waitMs`: how long to wait for each answer of the bot. Longer for a test that has many people
   * talk to the bot at once: it takes their updates one after another.
   */
  constructor(root: string, options: { waitMs?: number } = {}) {
    this.root = root;
    this.#waitMs = options.waitMs ?? WAIT_MS;
  }

  /** Calls the control API; any answer outside 2xx fails the test with the sandbox's message. */
  // biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON the API answered.
  async control<T = any>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await fetch(`${this.root}/api${path}`, {
      method,
      ...(body === undefined
        ? {}
        : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`sandbox ${method} ${path} answered ${response.status}: ${text}`);
    return (text === "" ? null : JSON.parse(text)) as T;
  }

  /** A new simulated person; returns their id (also the id of their private chat with the bot). */
  async person(firstName: string, username?: string): Promise<number> {
    const user = await this.control<{ id: number }>("POST", "/users", {
      first_name: firstName,
      ...(username ? { username } : {}),
    });
    return user.id;
  }

  /** The person opens `t.me/<bot>?start=<payload>` (or just the bot). */
  start(userId: number, payload?: string): Promise<ChatMessage> {
    return this.control("POST", `/users/${userId}/start`, payload === undefined ? undefined : { payload });
  }

  /** A person writes in a chat (`from` in groups; `replyTo` answers a message, e.g. a force_reply prompt). */
  say(chatId: number, text: string, options: { from?: number; replyTo?: number } = {}): Promise<ChatMessage> {
    return this.control("POST", `/chats/${chatId}/messages`, {
      text,
      ...(options.from !== undefined ? { from: options.from } : {}),
      ...(options.replyTo !== undefined ? { reply_to_message_id: options.replyTo } : {}),
    });
  }

  /** Presses a reply-keyboard button the bot put up. */
  keyboard(chatId: number, text: string, from?: number): Promise<ChatMessage> {
    return this.control("POST", `/chats/${chatId}/keyboard`, {
      text,
      ...(from !== undefined ? { from } : {}),
    });
  }

  /** Presses an inline button by its label; returns the callback query id. */
  async press(chatId: number, message: ChatMessage, label: string, from?: number): Promise<string> {
    // biome-ignore lint/suspicious/noExplicitAny: inline keyboard rows as the bot sent them.
    const rows: any[][] = message.reply_markup?.inline_keyboard ?? [];
    const row = rows.findIndex((buttons) => buttons.some((button) => button.text === label));
    if (row < 0)
      throw new Error(`message ${message.message_id} has no button "${label}": ${JSON.stringify(rows)}`);
    const column = (rows[row] as { text: string }[]).findIndex((button) => button.text === label);
    const answer = await this.control<{ callback_query_id: string }>(
      "POST",
      `/chats/${chatId}/messages/${message.message_id}/press`,
      { row, column, ...(from !== undefined ? { from } : {}) },
    );
    return answer.callback_query_id;
  }

  history(chatId: number): Promise<ChatMessage[]> {
    return this.control("GET", `/chats/${chatId}/messages`);
  }

  /** Polls until `check` gives a value; fails after a bounded wait, saying what it waited for. */
  async waitFor<T>(
    what: string,
    check: () => Promise<T | undefined>,
    context?: () => Promise<unknown>,
  ): Promise<T> {
    const deadline = Date.now() + this.#waitMs;
    for (;;) {
      const value = await check();
      if (value !== undefined) return value;
      if (Date.now() > deadline) {
        const seen = context ? `; last seen: ${JSON.stringify(await context())}` : "";
        throw new Error(`waited ${this.#waitMs / 1000}s for ${what}${seen}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  /** The bot's next message in the chat after the message `after` (a person's, usually). */
  botReply(chatId: number, after: { message_id: number }, what = "the bot's reply"): Promise<ChatMessage> {
    return this.botMessages(chatId, after, 1, what).then((messages) => messages[0] as ChatMessage);
  }

  /** The bot's next `count` messages in the chat after the message `after`. */
  botMessages(
    chatId: number,
    after: { message_id: number },
    count: number,
    what = "the bot's replies",
  ): Promise<ChatMessage[]> {
    const replies = async () =>
      (await this.history(chatId)).filter((m) => m.from.is_bot && m.message_id > after.message_id);
    return this.waitFor(
      `${what} in chat ${chatId}`,
      async () => {
        const found = await replies();
        return found.length >= count ? found.slice(0, count) : undefined;
      },
      () => this.history(chatId).then((all) => all.slice(-5)),
    );
  }

  /** The message once the bot has edited it (its buttons pressed), as the chat now shows it. */
  edited(chatId: number, message: ChatMessage, what = "the bot to edit its message"): Promise<ChatMessage> {
    const current = async () => (await this.history(chatId)).find((m) => m.message_id === message.message_id);
    return this.waitFor(
      `${what} (message ${message.message_id} in chat ${chatId})`,
      async () => {
        const now = await current();
        return now?.edit_date !== undefined && now.text !== message.text ? now : undefined;
      },
      current,
    );
  }

  /** The bot's answer to a button press, once it came. */
  callbackAnswer(id: string): Promise<{ text?: string; show_alert?: boolean }> {
    return this.waitFor(`the bot to answer button press ${id}`, async () => {
      const query = await this.control<{
        answered: boolean;
        answer: { text?: string; show_alert?: boolean } | null;
      }>("GET", `/callback-queries/${id}`);
      return query.answered ? (query.answer ?? {}) : undefined;
    });
  }
}

/** Every subscription in the database, in a stable order, as `[dock_id, chat_id, chat_type, state]`. */
export async function subscriptionRows(db: Db): Promise<[string, number, string, string][]> {
  const rows = await db.kysely
    .selectFrom("subscriptions")
    .select(["dock_id", "chat_id", "chat_type", "state"])
    .orderBy("dock_id")
    .orderBy("chat_id")
    .execute();
  return rows.map((row) => [row.dock_id, Number(row.chat_id), row.chat_type, row.state]);
}
