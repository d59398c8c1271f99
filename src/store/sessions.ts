import { randomBase62 } from "../domain/ids.ts";
import { type ConsoleRole, type OwnerPolicy, roleOf } from "../domain/owners.ts";
import { sha256Hex } from "../domain/secrets.ts";
import type { TelegramIdentity } from "../domain/telegram-identity.ts";
import type { Db } from "./db.ts";

/** `last_seen_at` is written at most this often per session, so browsing costs no write per request. */
const SEEN_PRECISION_MS = 60_000;

/** The signed-in person behind a valid session. */
export interface SessionUser {
  id: number;
  firstName: string | null;
  username: string | null;
  /** What they may do in the console (see domain/owners.ts). */
  role: ConsoleRole;
}

export interface Session {
  user: SessionUser;
  createdAt: number;
  expiresAt: number;
}

/**
 * Console sessions. The browser holds a random token in a cookie; the database holds only its hash,
 * so a copy of the database signs nobody in. A session ends when it expires or is revoked
 * (sign-out, or sign-out everywhere), and the check happens on every request — including whether
 * the person may still use the console at all (OWNERS, the owners an administrator keeps, the
 * Docks shared with them), so a removed owner's session stops working with their next request.
 */
export class SessionRepository {
  readonly #db: Db;
  readonly #now: () => number;
  readonly #policy: OwnerPolicy;

  /** `policy`: who may use the console (OwnerRepository's); a session of anyone else is none. */
  constructor(db: Db, policy: OwnerPolicy, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
    this.#policy = policy;
  }

  /**
   * Starts a session for a Telegram user who proved who they are. Names given with the identity
   * replace the stored ones; an identity with only an id keeps them.
   */
  async create(user: TelegramIdentity, ttlMs: number): Promise<{ token: string; expiresAt: number }> {
    const token = randomBase62(192);
    const now = this.#now();
    const expiresAt = now + ttlMs;
    const userId = user.id;
    const names = { first_name: user.first_name ?? null, username: user.username ?? null };
    const known = user.first_name !== undefined || user.username !== undefined;
    await this.#db.kysely.transaction().execute(async (tx) => {
      await tx
        .insertInto("users")
        .values({ telegram_id: userId, ...names, created_at: now })
        .onConflict((oc) =>
          known ? oc.column("telegram_id").doUpdateSet(names) : oc.column("telegram_id").doNothing(),
        )
        .execute();
      await tx
        .insertInto("sessions")
        .values({
          token_hash: sha256Hex(token),
          user_id: userId,
          created_at: now,
          expires_at: expiresAt,
          last_seen_at: now,
          revoked_at: null,
        })
        .execute();
    });
    return { token, expiresAt };
  }

  /** The session's user when the token belongs to an unexpired, unrevoked session; otherwise null. */
  async get(token: string): Promise<Session | null> {
    const now = this.#now();
    const row = await this.#db.kysely
      .selectFrom("sessions")
      .innerJoin("users", "users.telegram_id", "sessions.user_id")
      // On a real bot a row made for one of the sandbox's people lets nobody in (OwnerPolicy.sandbox).
      .leftJoin("owners", (join) => {
        const on = join.onRef("owners.telegram_id", "=", "sessions.user_id");
        return this.#policy.sandbox ? on : on.on("owners.sandbox", "=", 0);
      })
      .select((eb) => [
        "owners.role",
        // Only asked of someone who is no owner on a closed instance, but one index seek either way.
        eb
          .exists(
            eb
              .selectFrom("co_owners")
              .select("co_owners.dock_id")
              .whereRef("co_owners.telegram_id", "=", "sessions.user_id"),
          )
          .as("co_owns"),
        "sessions.token_hash",
        "sessions.user_id",
        "sessions.created_at",
        "sessions.expires_at",
        "sessions.last_seen_at",
        "users.first_name",
        "users.username",
      ])
      .where("sessions.token_hash", "=", sha256Hex(token))
      .where("sessions.revoked_at", "is", null)
      .where("sessions.expires_at", ">", now)
      .executeTakeFirst();
    if (!row) return null;
    const role = roleOf(this.#policy, row.user_id, row.role ?? null, Boolean(row.co_owns));
    if (role === null) {
      // No longer allowed (removed, or the configuration changed): the session ends for good, so
      // that being let in again later does not bring old sessions back.
      await this.revoke(token);
      return null;
    }
    if (now - row.last_seen_at >= SEEN_PRECISION_MS) {
      await this.#db.kysely
        .updateTable("sessions")
        .set({ last_seen_at: now })
        .where("token_hash", "=", row.token_hash)
        .execute();
    }
    return {
      user: { id: row.user_id, firstName: row.first_name, username: row.username, role },
      createdAt: row.created_at,
      expiresAt: row.expires_at,
    };
  }

  /**
   * Which of these sessions (by the hash of their token) are still on: neither revoked nor
   * expired. One query for any number (the console's live streams ask every second).
   */
  async stillOpen(tokenHashes: readonly string[]): Promise<Set<string>> {
    if (tokenHashes.length === 0) return new Set();
    const rows = await this.#db.kysely
      .selectFrom("sessions")
      .select("token_hash")
      .where("token_hash", "in", [...tokenHashes])
      .where("revoked_at", "is", null)
      .where("expires_at", ">", this.#now())
      .execute();
    return new Set(rows.map((row) => row.token_hash));
  }

  /** Ends one session at once; true when it was still active. */
  async revoke(token: string): Promise<boolean> {
    const result = await this.#db.kysely
      .updateTable("sessions")
      .set({ revoked_at: this.#now() })
      .where("token_hash", "=", sha256Hex(token))
      .where("revoked_at", "is", null)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** Ends every session of a user (sign out everywhere); returns how many were active. */
  async revokeAll(userId: number): Promise<number> {
    const result = await this.#db.kysely
      .updateTable("sessions")
      .set({ revoked_at: this.#now() })
      .where("user_id", "=", userId)
      .where("revoked_at", "is", null)
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  }
}
