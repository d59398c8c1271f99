import { randomBase62 } from "../domain/ids.ts";
import { type OwnerPolicy, type OwnerRole, roleOf } from "../domain/owners.ts";
import { sha256Hex } from "../domain/secrets.ts";
import type { TelegramIdentity } from "../domain/telegram-identity.ts";
import type { Db } from "./db.ts";
import type { OwnerInviteKind } from "./schema.ts";
import { rememberName } from "./users.ts";

/** How long an invitation to become an owner can be used. */
export const INVITE_TTL_MS = 7 * 24 * 60 * 60 * 1000;
/** How long a claim link printed at start can be used (a restart prints a new one). */
export const CLAIM_TTL_MS = 24 * 60 * 60 * 1000;

/** Someone allowed into the console, as the administrators' list shows them. */
export interface Owner {
  id: number;
  firstName: string | null;
  username: string | null;
  role: OwnerRole;
  /** `config`: named by OWNERS (the console cannot remove them); `store`: a row of `owners`. */
  source: "config" | "store";
  addedAt: number | null;
  addedBy: number | null;
  docks: number;
}

/** An invitation not used, revoked or expired yet. */
export interface PendingInvite {
  id: string;
  createdBy: number | null;
  createdAt: number;
  expiresAt: number;
}

/** A link's state as the person who opened it sees it in the bot. */
export type InviteState = "pending" | "used" | "revoked" | "expired" | "unknown" | "already_claimed";

/** What pressing Yes on a claim or an invitation did. */
export type RedeemOutcome =
  | { result: "admin" | "owner" }
  | { result: "already_owner"; role: OwnerRole }
  | { result: InviteState };

/** Why removing an owner did nothing. */
export type RemoveOutcome = "removed" | "not_found" | "configured" | "last_admin";

/**
 * Who may own Docks, as the store knows it: the owners (with their role), the instance's claim,
 * and the single-use links that make an owner (the claim link, invitations). OWNERS is applied on
 * top of it through the policy (domain/owners.ts), so every answer here already counts it.
 */
export class OwnerRepository {
  readonly #db: Db;
  readonly #now: () => number;
  readonly policy: OwnerPolicy;

  constructor(db: Db, policy: OwnerPolicy, now: () => number = Date.now) {
    this.#db = db;
    this.policy = policy;
    this.#now = now;
  }

  /** The person's role in the console, or null when they may not use it. */
  async roleOf(userId: number): Promise<OwnerRole | null> {
    const row = await this.#db.kysely
      .selectFrom("owners")
      .select("role")
      .where("telegram_id", "=", userId)
      .executeTakeFirst();
    return roleOf(this.policy, userId, row?.role ?? null);
  }

  /**
   * Whether the instance waits for its first administrator: OWNERS unset with a real bot, and
   * nobody has claimed it (an instance upgraded with Docks counts as claimed).
   */
  async awaitsClaim(): Promise<boolean> {
    if (!this.policy.claimable) return false;
    const row = await this.#db.kysely.selectFrom("instance").select("claimed_at").executeTakeFirst();
    return row?.claimed_at == null;
  }

  /** Everyone allowed in besides an open instance's anyone: OWNERS' administrators, then the rows. */
  async list(): Promise<Owner[]> {
    const rows = await this.#db.kysely
      .selectFrom("owners")
      .leftJoin("users", "users.telegram_id", "owners.telegram_id")
      .select((eb) => [
        "owners.telegram_id",
        "owners.role",
        "owners.added_at",
        "owners.added_by",
        "users.first_name",
        "users.username",
        eb
          .selectFrom("docks")
          .select((d) => d.fn.countAll<number>().as("n"))
          .whereRef("docks.owner_id", "=", "owners.telegram_id")
          .as("docks"),
      ])
      .orderBy("owners.added_at")
      .orderBy("owners.telegram_id")
      .execute();
    const stored = new Map(rows.map((row) => [row.telegram_id, row]));
    const configured = [...this.policy.admins].map(async (id): Promise<Owner> => {
      const row = stored.get(id);
      const names = row ?? (await this.#names(id));
      return {
        id,
        firstName: names?.first_name ?? null,
        username: names?.username ?? null,
        role: "admin",
        source: "config",
        addedAt: null,
        addedBy: null,
        docks: row ? Number(row.docks) : await this.#dockCount(id),
      };
    });
    return [
      ...(await Promise.all(configured)),
      ...rows
        .filter((row) => !this.policy.admins.has(row.telegram_id))
        .map(
          (row): Owner => ({
            id: row.telegram_id,
            firstName: row.first_name ?? null,
            username: row.username ?? null,
            role: row.role,
            source: "store",
            addedAt: row.added_at,
            addedBy: row.added_by,
            docks: Number(row.docks ?? 0),
          }),
        ),
    ];
  }

  /** A person's names as the bot last saw them (an inviter named in the bot's question). */
  namesOf(id: number): Promise<{ first_name: string | null; username: string | null } | undefined> {
    return this.#names(id);
  }

  #names(id: number) {
    return this.#db.kysely
      .selectFrom("users")
      .select(["first_name", "username"])
      .where("telegram_id", "=", id)
      .executeTakeFirst();
  }

  async #dockCount(ownerId: number): Promise<number> {
    const row = await this.#db.kysely
      .selectFrom("docks")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("owner_id", "=", ownerId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /**
   * Makes `userId` an owner (or changes their role): the operator's `owners add`, and whoever
   * becomes a Dock's owner through the CLI. Adding an administrator claims the instance.
   */
  async add(userId: number, role: OwnerRole, addedBy: number | null = null): Promise<void> {
    const now = this.#now();
    await this.#db.kysely.transaction().execute(async (tx) => {
      await tx
        .insertInto("users")
        .values({ telegram_id: userId, first_name: null, username: null, created_at: now })
        .onConflict((oc) => oc.column("telegram_id").doNothing())
        .execute();
      await tx
        .insertInto("owners")
        .values({ telegram_id: userId, role, added_by: addedBy, added_at: now })
        .onConflict((oc) => oc.column("telegram_id").doUpdateSet({ role }))
        .execute();
      if (role === "admin") {
        await tx.updateTable("instance").set({ claimed_at: now }).where("claimed_at", "is", null).execute();
      }
    });
  }

  /**
   * Takes `userId`'s right to the console away and ends their sessions at once. Their Docks stay
   * (they keep sending; the operator can move or delete them with the CLI). OWNERS' administrators
   * cannot be removed here, nor the last administrator.
   */
  async remove(userId: number): Promise<RemoveOutcome> {
    if (this.policy.admins.has(userId)) return "configured";
    const now = this.#now();
    return this.#db.kysely.transaction().execute(async (tx) => {
      const row = await tx
        .selectFrom("owners")
        .select("role")
        .where("telegram_id", "=", userId)
        .executeTakeFirst();
      if (!row) return "not_found";
      if (row.role === "admin" && this.policy.admins.size === 0) {
        const admins = await tx
          .selectFrom("owners")
          .select((eb) => eb.fn.countAll<number>().as("n"))
          .where("role", "=", "admin")
          .executeTakeFirstOrThrow();
        if (Number(admins.n) <= 1) return "last_admin";
      }
      await tx.deleteFrom("owners").where("telegram_id", "=", userId).execute();
      await tx
        .updateTable("sessions")
        .set({ revoked_at: now })
        .where("user_id", "=", userId)
        .where("revoked_at", "is", null)
        .execute();
      return "removed";
    });
  }

  /** A new single-use link token of `kind`; only its hash is kept. */
  async #createLink(kind: OwnerInviteKind, createdBy: number | null, ttlMs: number) {
    const token = randomBase62(128);
    const id = `inv_${randomBase62(64)}`;
    const now = this.#now();
    const expiresAt = now + ttlMs;
    await this.#db.kysely
      .insertInto("owner_invites")
      .values({
        id,
        token_hash: sha256Hex(token),
        kind,
        created_by: createdBy,
        created_at: now,
        expires_at: expiresAt,
        used_by: null,
        used_at: null,
        revoked_at: null,
      })
      .execute();
    return { id, token, expiresAt };
  }

  /** A claim link's token, for an instance that awaits its claim (see awaitsClaim). */
  createClaim(): Promise<{ id: string; token: string; expiresAt: number }> {
    return this.#createLink("claim", null, CLAIM_TTL_MS);
  }

  /** An invitation made by administrator `createdBy`: its token goes in a link into the bot. */
  createInvite(createdBy: number): Promise<{ id: string; token: string; expiresAt: number }> {
    return this.#createLink("invite", createdBy, INVITE_TTL_MS);
  }

  /** Invitations that can still be used, newest first. */
  async pendingInvites(): Promise<PendingInvite[]> {
    const rows = await this.#db.kysely
      .selectFrom("owner_invites")
      .select(["id", "created_by", "created_at", "expires_at"])
      .where("kind", "=", "invite")
      .where("used_at", "is", null)
      .where("revoked_at", "is", null)
      .where("expires_at", ">", this.#now())
      .orderBy("created_at", "desc")
      .execute();
    return rows.map((row) => ({
      id: row.id,
      createdBy: row.created_by,
      createdAt: row.created_at,
      expiresAt: row.expires_at,
    }));
  }

  /** Revokes a pending invitation; false when there is none by that id (or it is no longer pending). */
  async revokeInvite(id: string): Promise<boolean> {
    const result = await this.#db.kysely
      .updateTable("owner_invites")
      .set({ revoked_at: this.#now() })
      .where("id", "=", id)
      .where("kind", "=", "invite")
      .where("used_at", "is", null)
      .where("revoked_at", "is", null)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** What a link's token stands for now, before the person answers the bot's question. */
  async linkState(
    kind: OwnerInviteKind,
    token: string,
  ): Promise<{ state: InviteState; createdBy: number | null }> {
    const row = await this.#db.kysely
      .selectFrom("owner_invites")
      .select(["used_at", "revoked_at", "expires_at", "created_by"])
      .where("token_hash", "=", sha256Hex(token))
      .where("kind", "=", kind)
      .executeTakeFirst();
    if (!row) return { state: "unknown", createdBy: null };
    if (row.used_at !== null) return { state: "used", createdBy: row.created_by };
    if (row.revoked_at !== null) return { state: "revoked", createdBy: row.created_by };
    if (row.expires_at <= this.#now()) return { state: "expired", createdBy: row.created_by };
    if (kind === "claim" && !(await this.awaitsClaim())) {
      return { state: "already_claimed", createdBy: null };
    }
    return { state: "pending", createdBy: row.created_by };
  }

  /**
   * `user` pressed Yes on a claim link or an invitation. A claim makes exactly one administrator
   * (the instance's row is claimed by a conditional update, so of two people pressing Yes at once
   * one wins); an invitation makes an owner. Either link works once. Someone who already may use
   * the console keeps their role and leaves the invitation for whoever it was meant for.
   */
  async redeem(kind: OwnerInviteKind, token: string, user: TelegramIdentity): Promise<RedeemOutcome> {
    const now = this.#now();
    const current = await this.roleOf(user.id);
    if (current !== null && kind === "invite") return { result: "already_owner", role: current };
    return this.#db.kysely.transaction().execute(async (tx): Promise<RedeemOutcome> => {
      const used = await tx
        .updateTable("owner_invites")
        .set({ used_by: user.id, used_at: now })
        .where("token_hash", "=", sha256Hex(token))
        .where("kind", "=", kind)
        .where("used_at", "is", null)
        .where("revoked_at", "is", null)
        .where("expires_at", ">", now)
        .returning("created_by")
        .executeTakeFirst();
      if (!used) return { result: (await this.linkState(kind, token)).state };
      if (kind === "claim") {
        const claimed = await tx
          .updateTable("instance")
          .set({ claimed_at: now, claimed_by: user.id })
          .where("id", "=", 1)
          .where("claimed_at", "is", null)
          .executeTakeFirst();
        // Someone else's claim won: this link is spent all the same (it could never work again).
        if (claimed.numUpdatedRows === 0n) return { result: "already_claimed" };
      }
      await rememberName(tx, { id: user.id, firstName: user.first_name, username: user.username }, now);
      const role: OwnerRole = kind === "claim" ? "admin" : "owner";
      await tx
        .insertInto("owners")
        .values({ telegram_id: user.id, role, added_by: used.created_by, added_at: now })
        .onConflict((oc) => oc.column("telegram_id").doUpdateSet({ role }))
        .execute();
      return { result: role };
    });
  }

  /** Removes links that ended (used, revoked or expired) more than a day ago. */
  async prune(): Promise<number> {
    const dayAgo = this.#now() - 24 * 60 * 60 * 1000;
    const result = await this.#db.kysely
      .deleteFrom("owner_invites")
      .where((eb) =>
        eb.or([eb("expires_at", "<", dayAgo), eb("used_at", "<", dayAgo), eb("revoked_at", "<", dayAgo)]),
      )
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
