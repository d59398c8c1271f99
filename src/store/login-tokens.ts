import { hash } from "node:crypto";
import { base62Of, randomBase62 } from "../domain/ids.ts";
import { sha256Hex } from "../domain/secrets.ts";
import type { TelegramIdentity } from "../domain/telegram-identity.ts";
import type { Db } from "./db.ts";
import { rememberName } from "./users.ts";

/** How long a console sign-in waits for its confirmation in the bot. */
export const LOGIN_TOKEN_TTL_MS = 10 * 60 * 1000;

/** The deep-link payload that asks the bot to confirm a sign-in: `login_<token>` (28 characters). */
export const LOGIN_PAYLOAD_PREFIX = "login_";

/**
 * `declined`: the person pressed No in the bot, or the browser said "That's not me" (see cancel);
 * the sign-in can no longer be confirmed nor finished.
 */
export type LoginTokenState = "pending" | "confirmed" | "declined" | "expired" | "used" | "unknown";

/**
 * A token's state as one Telegram user sees it in the bot: `confirmed_elsewhere` when someone else
 * confirmed it (the console then names them, and its owner can say "That's not me").
 */
export type LoginTokenStateFor = LoginTokenState | "confirmed_elsewhere";

/** Who confirmed a sign-in, as Telegram named them when they pressed Yes. */
export interface Confirmer {
  /** Telegram user id. */
  id: number;
  firstName: string | null;
  username: string | null;
}

/**
 * The token in a sign-in's link (and QR code), worked out from the secret only the browser that
 * started the sign-in holds (its HttpOnly cookie). The bot confirms the link's token; the console
 * exchanges it only for whoever presents the secret. Seeing the link or the QR code (over a
 * shoulder, on a screenshot) does not give the secret: the token is a hash of it. 22 base62
 * characters, like every other token in a link.
 */
export function linkTokenFor(browserSecret: string): string {
  return base62Of(hash("sha512", `dock-notify sign-in link\n${browserSecret}`, "buffer"), 22);
}

/**
 * Console sign-in through the bot: the console creates a single-use token, the person confirms it
 * in Telegram (which proves who they are), the browser that started it is shown who confirmed and
 * either exchanges it once for a session or cancels it.
 */
export class LoginTokenRepository {
  readonly #db: Db;
  readonly #now: () => number;

  constructor(db: Db, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
  }

  /**
   * A new sign-in: `token` goes in the link to the bot, `browserSecret` in the HttpOnly cookie of
   * the browser that asked (see linkTokenFor).
   */
  async create(): Promise<{ token: string; browserSecret: string; expiresAt: number }> {
    const browserSecret = randomBase62(128);
    const token = linkTokenFor(browserSecret);
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
    return { token, browserSecret, expiresAt };
  }

  async state(token: string): Promise<LoginTokenState> {
    return this.#stateOf(await this.#row(token));
  }

  /** The token's state as `userId` sees it in the bot (see LoginTokenStateFor). */
  async stateFor(
    token: string,
    userId: number,
    db: Pick<Db["kysely"], "selectFrom"> = this.#db.kysely,
  ): Promise<LoginTokenStateFor> {
    const row = await this.#row(token, db);
    const state = this.#stateOf(row);
    return state === "confirmed" && row?.confirmed_by !== userId ? "confirmed_elsewhere" : state;
  }

  #row(token: string, db: Pick<Db["kysely"], "selectFrom"> = this.#db.kysely) {
    return db
      .selectFrom("login_tokens")
      .select(["confirmed_by", "consumed_at", "expires_at"])
      .where("token_hash", "=", sha256Hex(token))
      .executeTakeFirst();
  }

  /**
   * The token's state and, while it is confirmed, who confirmed it: the console shows that name
   * before the session starts, so a browser is never signed in to someone else's account unseen.
   */
  async confirmation(token: string): Promise<{ state: LoginTokenState; confirmer: Confirmer | null }> {
    const row = await this.#db.kysely
      .selectFrom("login_tokens")
      .leftJoin("users", "users.telegram_id", "login_tokens.confirmed_by")
      .select([
        "login_tokens.confirmed_by",
        "login_tokens.consumed_at",
        "login_tokens.expires_at",
        "users.first_name",
        "users.username",
      ])
      .where("login_tokens.token_hash", "=", sha256Hex(token))
      .executeTakeFirst();
    const state = this.#stateOf(row);
    const confirmer =
      state === "confirmed" && row?.confirmed_by != null
        ? { id: row.confirmed_by, firstName: row.first_name ?? null, username: row.username ?? null }
        : null;
    return { state, confirmer };
  }

  #stateOf(
    row: { confirmed_by: number | null; consumed_at: number | null; expires_at: number } | undefined,
  ): LoginTokenState {
    if (!row) return "unknown";
    // Consumed without a confirmation: declined in the bot or cancelled in the console.
    if (row.consumed_at !== null) return row.confirmed_by === null ? "declined" : "used";
    if (row.expires_at <= this.#now()) return "expired";
    return row.confirmed_by === null ? "pending" : "confirmed";
  }

  /**
   * Records that `user` confirmed the sign-in in the bot, and remembers their Telegram name.
   * Returns the token's state afterwards as `user` sees it; only a pending token becomes confirmed.
   */
  async confirm(token: string, user: TelegramIdentity): Promise<LoginTokenStateFor> {
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
      if (result.numUpdatedRows === 0n) return this.stateFor(token, user.id, tx);
      await rememberName(tx, { id: user.id, firstName: user.first_name, username: user.username }, now);
      return "confirmed";
    });
  }

  /**
   * Telegram user `userId` pressed No: a pending token can no longer be confirmed, and the console
   * that waits for it learns so (state `declined`). Returns the token's state afterwards, as that
   * person sees it (a token someone else confirmed first is `confirmed_elsewhere`).
   */
  async decline(token: string, userId: number): Promise<LoginTokenStateFor> {
    const now = this.#now();
    const result = await this.#db.kysely
      .updateTable("login_tokens")
      .set({ consumed_at: now })
      .where("token_hash", "=", sha256Hex(token))
      .where("confirmed_by", "is", null)
      .where("consumed_at", "is", null)
      .where("expires_at", ">", now)
      .executeTakeFirst();
    return result.numUpdatedRows === 0n ? this.stateFor(token, userId) : "declined";
  }

  /**
   * The browser that started the sign-in said "That's not me" (or replaced it with a new one): the
   * token is declined for good, pending or already confirmed, and can never be exchanged. Forgets
   * who confirmed it, so its state reads `declined`. Returns the token's state afterwards.
   */
  async cancel(token: string): Promise<LoginTokenState> {
    const now = this.#now();
    const result = await this.#db.kysely
      .updateTable("login_tokens")
      .set({ consumed_at: now, confirmed_by: null })
      .where("token_hash", "=", sha256Hex(token))
      .where("consumed_at", "is", null)
      .where("expires_at", ">", now)
      .executeTakeFirst();
    return result.numUpdatedRows === 0n ? this.state(token) : "declined";
  }

  /**
   * Exchanges a confirmed, unexpired token for the Telegram user id, once; null otherwise. With
   * `confirmedBy`, only a token that this user confirmed (the one the console showed).
   */
  async consume(token: string, confirmedBy?: number): Promise<number | null> {
    const now = this.#now();
    const row = await this.#db.kysely
      .updateTable("login_tokens")
      .set({ consumed_at: now })
      .where("token_hash", "=", sha256Hex(token))
      .where("confirmed_by", confirmedBy === undefined ? "is not" : "=", confirmedBy ?? null)
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
