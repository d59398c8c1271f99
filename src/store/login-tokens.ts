import { randomBase62 } from "../domain/ids.ts";
import { sha256Hex } from "../domain/secrets.ts";
import type { Db } from "./db.ts";

/** How long a console sign-in waits for its confirmation in the bot. */
export const LOGIN_TOKEN_TTL_MS = 10 * 60 * 1000;

/** The deep-link payload that asks the bot to confirm a sign-in: `login_<token>` (28 characters). */
export const LOGIN_PAYLOAD_PREFIX = "login_";

export type LoginTokenState = "pending" | "confirmed" | "expired" | "used" | "unknown";

export interface TelegramIdentity {
  id: number;
  first_name?: string | undefined;
  username?: string | undefined;
}

/**
 * Console sign-in through the bot: the console creates a single-use token, the person confirms it
 * in Telegram (which proves who they are), the console exchanges it once for a session.
 */
export class LoginTokenRepository {
  readonly #db: Db;
  readonly #now: () => number;

  constructor(db: Db, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
  }

  async create(): Promise<{ token: string; expiresAt: number }> {
    const token = randomBase62(128);
    const now = this.#now();
    const expiresAt = now + LOGIN_TOKEN_TTL_MS;
    await this.#db.kysely
      .insertInto("login_tokens")
      .values({
        token_hash: sha256Hex(token),
        created_at: now,
        expires_at: expiresAt,
        confirmed_by: null,
        confirmed_at: null,
        consumed_at: null,
      })
      .execute();
    return { token, expiresAt };
  }

  async state(
    token: string,
    db: Pick<Db["kysely"], "selectFrom"> = this.#db.kysely,
  ): Promise<LoginTokenState> {
    const row = await db
      .selectFrom("login_tokens")
      .selectAll()
      .where("token_hash", "=", sha256Hex(token))
      .executeTakeFirst();
    if (!row) return "unknown";
    if (row.consumed_at !== null) return "used";
    if (row.expires_at <= this.#now()) return "expired";
    return row.confirmed_by === null ? "pending" : "confirmed";
  }

  /**
   * Records that `user` confirmed the sign-in in the bot, and remembers their Telegram name.
   * Returns the token's state afterwards; only a pending token becomes confirmed.
   */
  async confirm(token: string, user: TelegramIdentity): Promise<LoginTokenState> {
    const now = this.#now();
    return this.#db.kysely.transaction().execute(async (tx) => {
      const result = await tx
        .updateTable("login_tokens")
        .set({ confirmed_by: user.id, confirmed_at: now })
        .where("token_hash", "=", sha256Hex(token))
        .where("confirmed_by", "is", null)
        .where("consumed_at", "is", null)
        .where("expires_at", ">", now)
        .executeTakeFirst();
      // Not pending: say what it is instead (read in this transaction).
      if (result.numUpdatedRows === 0n) return this.state(token, tx);
      await tx
        .insertInto("users")
        .values({
          telegram_id: user.id,
          first_name: user.first_name ?? null,
          username: user.username ?? null,
          created_at: now,
        })
        .onConflict((oc) =>
          oc
            .column("telegram_id")
            .doUpdateSet({ first_name: user.first_name ?? null, username: user.username ?? null }),
        )
        .execute();
      return "confirmed";
    });
  }

  /** Exchanges a confirmed, unexpired token for the Telegram user id, once; null otherwise. */
  async consume(token: string): Promise<number | null> {
    const now = this.#now();
    const row = await this.#db.kysely
      .updateTable("login_tokens")
      .set({ consumed_at: now })
      .where("token_hash", "=", sha256Hex(token))
      .where("confirmed_by", "is not", null)
      .where("consumed_at", "is", null)
      .where("expires_at", ">", now)
      .returning("confirmed_by")
      .executeTakeFirst();
    return row?.confirmed_by ?? null;
  }

  /** Removes tokens that expired more than a day ago. */
  async prune(): Promise<number> {
    const result = await this.#db.kysely
      .deleteFrom("login_tokens")
      .where("expires_at", "<", this.#now() - 24 * 60 * 60 * 1000)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
