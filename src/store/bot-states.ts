import type { Db } from "./db.ts";

/** A conversation step the bot is in with one person in one chat, and what it needs to finish. */
export interface BotState {
  state: string;
  data: unknown;
  expiresAt: number;
}

/**
 * What the bot waits for from a person in a chat (e.g. "send me a Dock ID"). Kept in the database
 * with an expiry, so a conversation survives a restart and any instance can finish it.
 */
export class BotStateRepository {
  readonly #db: Db;
  readonly #now: () => number;

  constructor(db: Db, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
  }

  /** Starts (or replaces) the person's conversation step in this chat for `ttlMs`. */
  async set(chatId: number, userId: number, state: string, data: unknown, ttlMs: number): Promise<void> {
    const values = {
      state,
      data: data === undefined ? null : JSON.stringify(data),
      expires_at: this.#now() + ttlMs,
    };
    await this.#db.kysely
      .insertInto("bot_states")
      .values({ chat_id: chatId, user_id: userId, ...values })
      .onConflict((oc) => oc.columns(["chat_id", "user_id"]).doUpdateSet(values))
      .execute();
  }

  /** The person's current step in this chat; an expired one counts as none. */
  async get(chatId: number, userId: number): Promise<BotState | undefined> {
    const row = await this.#db.kysely
      .selectFrom("bot_states")
      .select(["state", "data", "expires_at"])
      .where("chat_id", "=", chatId)
      .where("user_id", "=", userId)
      .where("expires_at", ">", this.#now())
      .executeTakeFirst();
    if (!row) return undefined;
    return {
      state: row.state,
      data: row.data === null ? null : JSON.parse(row.data),
      expiresAt: row.expires_at,
    };
  }

  /** Ends the person's step in this chat; true when there was an unexpired one. */
  async clear(chatId: number, userId: number): Promise<boolean> {
    const result = await this.#db.kysely
      .deleteFrom("bot_states")
      .where("chat_id", "=", chatId)
      .where("user_id", "=", userId)
      .returning("expires_at")
      .execute();
    return result.some((row) => row.expires_at > this.#now());
  }

  /** Removes expired steps; the bot calls it now and then so the table stays small. */
  async prune(): Promise<number> {
    const result = await this.#db.kysely
      .deleteFrom("bot_states")
      .where("expires_at", "<=", this.#now())
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
