import type { Kysely, Transaction } from "kysely";
import type { DockRole } from "../domain/dock-roles.ts";
import { randomBase62 } from "../domain/ids.ts";
import { type ConsoleRole, type OwnerPolicy, type OwnerRole, roleOf } from "../domain/owners.ts";
import { sha256Hex } from "../domain/secrets.ts";
import type { TelegramIdentity } from "../domain/telegram-identity.ts";
import { writeAudit, writeAuditBy } from "./audit.ts";
import type { Db } from "./db.ts";
import type { Database, OwnerInviteKind } from "./schema.ts";
import { knowUser, rememberName } from "./users.ts";

/** How long an invitation to become an owner (or a Dock's co-owner) can be used. */
export const INVITE_TTL_MS = 7 * 24 * 60 * 60 * 1000;
/** How long a claim link printed at start can be used (a restart prints a new one). */
export const CLAIM_TTL_MS = 24 * 60 * 60 * 1000;

/** A person's names as the bot last saw them. */
export interface PersonNames {
  first_name: string | null;
  username: string | null;
}

/** Someone allowed into the console, as the administrators' list shows them. */
export interface Owner {
  id: number;
  firstName: string | null;
  username: string | null;
  role: ConsoleRole;
  /**
   * `config`: named by OWNERS (the console cannot remove them); `store`: a row of `owners`;
   * `co_owner`: no owner, let in for the Docks shared with them (their owners remove them).
   */
  source: "config" | "store" | "co_owner";
  addedAt: number | null;
  addedBy: number | null;
  /** Docks they own; for a co-owner, the Docks shared with them. */
  docks: number;
}

/** An invitation not used, revoked or expired yet. */
export interface PendingInvite {
  id: string;
  createdBy: number | null;
  createdAt: number;
  expiresAt: number;
}

/** A co-owner invitation not used, withdrawn or expired yet: the role it gives on its Dock. */
export interface PendingCoOwnerInvite extends PendingInvite {
  role: DockRole;
}

/** A link's state as the person who opened it sees it in the bot. */
export type InviteState = "pending" | "used" | "revoked" | "expired" | "unknown" | "already_claimed";

/** What a co-owner invitation gives: a role on a Dock (named as it is now). */
export interface SharedDock {
  dockId: string;
  dockName: string;
  role: DockRole;
}

/** What a link stands for, as the bot asks about it. */
export interface LinkState {
  state: InviteState;
  createdBy: number | null;
  /** A co-owner invitation's Dock and role; null for the other kinds. */
  shares: SharedDock | null;
}

/** What pressing Yes on a claim or an invitation did. */
export type RedeemOutcome =
  | { result: "admin" | "owner" }
  | { result: "already_owner"; role: OwnerRole }
  | ({ result: "co_owner" | "already_co_owner" } & SharedDock)
  | { result: InviteState };

/** Why removing an owner did nothing. */
export type RemoveOutcome = "removed" | "not_found" | "configured" | "last_admin" | "open";

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

  /**
   * The person's role in the console, or null when they may not use it: on a closed instance,
   * someone who is no owner gets in as a `co_owner` while a Dock is shared with them.
   */
  async roleOf(userId: number): Promise<ConsoleRole | null> {
    let query = this.#db.kysely.selectFrom("owners").select("role").where("telegram_id", "=", userId);
    // On a real bot the sandbox's people are nobody: a real person may have the same id.
    if (!this.policy.sandbox) query = query.where("sandbox", "=", 0);
    const row = await query.executeTakeFirst();
    const role = roleOf(this.policy, userId, row?.role ?? null);
    if (role !== null) return role;
    const shared = await this.#db.kysely
      .selectFrom("co_owners")
      .select("dock_id")
      .where("telegram_id", "=", userId)
      .executeTakeFirst();
    return roleOf(this.policy, userId, null, shared !== undefined);
  }

  /**
   * Whether the instance waits for its first administrator: OWNERS unset with a real bot, and
   * nobody has claimed it (an instance upgraded with Docks counts as claimed; an administrator
   * added with the CLI claims it).
   */
  async awaitsClaim(db: Kysely<Database> = this.#db.kysely): Promise<boolean> {
    if (!this.policy.claimable) return false;
    const row = await db.selectFrom("instance").select("claimed_at").executeTakeFirst();
    return row?.claimed_at == null;
  }

  /**
   * Whether a closed instance has nobody to manage its owners: no administrator by OWNERS or in
   * the store, and no claim to come (an upgraded instance, until the operator names one).
   */
  async lacksAdministrator(): Promise<boolean> {
    if (this.policy.open || this.policy.admins.size > 0 || (await this.awaitsClaim())) return false;
    const row = await this.#db.kysely
      .selectFrom("owners")
      .select("telegram_id")
      .where("role", "=", "admin")
      .executeTakeFirst();
    return row === undefined;
  }

  /**
   * For the console's live stream (http/console/live.ts): a stamp of what the Owners page shows,
   * which changes when an owner is added, removed or changes role, an invitation is made, used or
   * withdrawn, or a Dock is made or deleted anywhere (the page counts each owner's Docks); and who
   * may see that page (the administrators, OWNERS' included). Three small reads: owners are a team.
   */
  async liveStamp(): Promise<{ stamp: string; admins: ReadonlySet<number> }> {
    const owners = await this.#db.kysely
      .selectFrom("owners")
      .select(["telegram_id", "role", "added_at"])
      .orderBy("telegram_id")
      .execute();
    const invites = await this.#db.kysely
      .selectFrom("owner_invites")
      .select((eb) => [
        eb.fn.countAll<number>().as("n"),
        eb.fn.max("created_at").as("made"),
        eb.fn.max("used_at").as("used"),
        eb.fn.max("revoked_at").as("revoked"),
      ])
      .where("kind", "=", "invite")
      .executeTakeFirstOrThrow();
    const docks = await this.#db.kysely
      .selectFrom("docks")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .executeTakeFirstOrThrow();
    // Who is let in as a co-owner changes with the rows of co_owners (a role change does not).
    const shared = await this.#db.kysely
      .selectFrom("co_owners")
      .select((eb) => [eb.fn.countAll<number>().as("n"), eb.fn.max("added_at").as("added")])
      .executeTakeFirstOrThrow();
    const admins = new Set(this.policy.admins);
    for (const owner of owners) if (owner.role === "admin") admins.add(Number(owner.telegram_id));
    const people = owners.map((owner) => `${owner.telegram_id}:${owner.role}:${owner.added_at}`).join(",");
    return {
      stamp: `${people}/${invites.n}:${invites.made}:${invites.used}:${invites.revoked}/${docks.n}/${shared.n}:${shared.added}`,
      admins,
    };
  }

  /**
   * Everyone allowed in besides an open instance's anyone: OWNERS' administrators, then the rows,
   * then (on a closed instance) those let in only as co-owners of some Docks.
   */
  async list(): Promise<Owner[]> {
    let query = this.#db.kysely.selectFrom("owners");
    // On a real bot the sandbox's people may not sign in: they are not listed.
    if (!this.policy.sandbox) query = query.where("owners.sandbox", "=", 0);
    const rows = await query
      .leftJoin("users", "users.telegram_id", "owners.telegram_id")
      .select([
        "owners.telegram_id",
        "owners.role",
        "owners.added_at",
        "owners.added_by",
        "users.first_name",
        "users.username",
      ])
      .orderBy("owners.added_at")
      .orderBy("owners.telegram_id")
      .execute();
    const configured = [...this.policy.admins];
    const [counts, names] = await Promise.all([
      this.#dockCounts([...configured, ...rows.map((row) => row.telegram_id)]),
      this.#names(configured),
    ]);
    return [
      ...configured.map(
        (id): Owner => ({
          id,
          firstName: names.get(id)?.first_name ?? null,
          username: names.get(id)?.username ?? null,
          role: "admin",
          source: "config",
          addedAt: null,
          addedBy: null,
          docks: counts.get(id) ?? 0,
        }),
      ),
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
            docks: counts.get(row.telegram_id) ?? 0,
          }),
        ),
      ...(await this.#coOwnersOnly(rows.map((row) => row.telegram_id))),
    ];
  }

  /**
   * On a closed instance, the people let in only as co-owners: neither OWNERS' administrators nor
   * in `owners` (`stored`), with how many Docks are shared with them. An open instance lets them in
   * as owners anyway.
   */
  async #coOwnersOnly(stored: number[]): Promise<Owner[]> {
    if (this.policy.open) return [];
    const rows = await this.#db.kysely
      .selectFrom("co_owners")
      .leftJoin("users", "users.telegram_id", "co_owners.telegram_id")
      .select((eb) => [
        "co_owners.telegram_id",
        "users.first_name",
        "users.username",
        eb.fn.countAll<number>().as("n"),
        eb.fn.min("co_owners.added_at").as("added"),
      ])
      .groupBy(["co_owners.telegram_id", "users.first_name", "users.username"])
      .orderBy("added")
      .orderBy("co_owners.telegram_id")
      .execute();
    const known = new Set([...this.policy.admins, ...stored]);
    return rows
      .filter((row) => !known.has(Number(row.telegram_id)))
      .map((row) => ({
        id: Number(row.telegram_id),
        firstName: row.first_name ?? null,
        username: row.username ?? null,
        role: "co_owner",
        source: "co_owner",
        addedAt: row.added === null ? null : Number(row.added),
        addedBy: null,
        docks: Number(row.n),
      }));
  }

  /** How many Docks each of these people owns (absent: none). */
  async #dockCounts(ids: number[]): Promise<Map<number, number>> {
    if (ids.length === 0) return new Map();
    const rows = await this.#db.kysely
      .selectFrom("docks")
      .select((eb) => ["owner_id", eb.fn.countAll<number>().as("n")])
      .where("owner_id", "in", ids)
      .groupBy("owner_id")
      .execute();
    return new Map(rows.map((row) => [row.owner_id, Number(row.n)]));
  }

  async #names(ids: number[]): Promise<Map<number, PersonNames>> {
    if (ids.length === 0) return new Map();
    const rows = await this.#db.kysely
      .selectFrom("users")
      .select(["telegram_id", "first_name", "username"])
      .where("telegram_id", "in", ids)
      .execute();
    return new Map(rows.map((row) => [row.telegram_id, row]));
  }

  /** A person's names as the bot last saw them (an inviter named in the bot's question). */
  async namesOf(id: number): Promise<PersonNames | undefined> {
    return (await this.#names([id])).get(id);
  }

  /**
   * Takes the instance's row lock first thing in a transaction that changes who administers: on
   * PostgreSQL two of them (two administrators removing each other) then run one after the other,
   * so "an administrator stays" cannot pass in both. SQLite's transactions run one at a time anyway.
   */
  async #serialize(tx: Transaction<Database>): Promise<void> {
    await tx.updateTable("instance").set({ id: 1 }).where("id", "=", 1).execute();
  }

  /** Whether an administrator is left once `userId` is not one (OWNERS' count too). */
  async #anotherAdmin(tx: Transaction<Database>, userId: number): Promise<boolean> {
    if (this.policy.admins.size > 0) return true;
    const row = await tx
      .selectFrom("owners")
      .select("telegram_id")
      .where("role", "=", "admin")
      .where("telegram_id", "!=", userId)
      .executeTakeFirst();
    return row !== undefined;
  }

  /**
   * Makes `userId` an owner or an administrator (the operator's `owners add`), or changes their
   * role. Adding an administrator claims the instance; making the last administrator an owner is
   * refused.
   */
  async add(userId: number, role: OwnerRole, addedBy: number | null = null): Promise<"added" | "last_admin"> {
    const now = this.#now();
    return this.#db.kysely.transaction().execute(async (tx) => {
      await this.#serialize(tx);
      if (role === "owner" && !(await this.#anotherAdmin(tx, userId))) {
        const current = await tx
          .selectFrom("owners")
          .select("role")
          .where("telegram_id", "=", userId)
          .executeTakeFirst();
        if (current?.role === "admin") return "last_admin";
      }
      await knowUser(tx, userId, now);
      await tx
        .insertInto("owners")
        .values({ telegram_id: userId, role, added_by: addedBy, added_at: now })
        .onConflict((oc) => oc.column("telegram_id").doUpdateSet({ role, sandbox: 0 }))
        .execute();
      if (role === "admin") {
        await tx.updateTable("instance").set({ claimed_at: now }).where("claimed_at", "is", null).execute();
      }
      return "added";
    });
  }

  /**
   * An administrator changes someone's role in the console: only people the store holds (OWNERS'
   * administrators are the configuration's), and never the last administrator's away.
   */
  async setRole(
    userId: number,
    role: OwnerRole,
  ): Promise<"changed" | "not_found" | "configured" | "last_admin"> {
    if (this.policy.admins.has(userId)) return "configured";
    const row = await this.#db.kysely
      .selectFrom("owners")
      .select("role")
      .where("telegram_id", "=", userId)
      .executeTakeFirst();
    if (!row) return "not_found";
    return (await this.add(userId, role)) === "added" ? "changed" : "last_admin";
  }

  /**
   * Takes `userId`'s right to the console away: their sessions end and the invitations they made
   * are withdrawn, at once. Their Docks stay (they keep sending; `dock-notify docks update <id>
   * --owner <another>` gives one to someone else). Refused for OWNERS' administrators, the last
   * administrator, and anyone on an open instance (they could sign in again at once).
   */
  async remove(userId: number): Promise<RemoveOutcome> {
    if (this.policy.admins.has(userId)) return "configured";
    if (this.policy.open) return "open";
    const now = this.#now();
    return this.#db.kysely.transaction().execute(async (tx) => {
      await this.#serialize(tx);
      const row = await tx
        .selectFrom("owners")
        .select("role")
        .where("telegram_id", "=", userId)
        .executeTakeFirst();
      if (!row) return "not_found";
      if (row.role === "admin" && !(await this.#anotherAdmin(tx, userId))) return "last_admin";
      await tx.deleteFrom("owners").where("telegram_id", "=", userId).execute();
      await tx
        .updateTable("sessions")
        .set({ revoked_at: now })
        .where("user_id", "=", userId)
        .where("revoked_at", "is", null)
        .execute();
      await tx
        .updateTable("owner_invites")
        .set({ revoked_at: now })
        .where("created_by", "=", userId)
        .where("used_at", "is", null)
        .where("revoked_at", "is", null)
        .execute();
      return "removed";
    });
  }

  /**
   * A new single-use link token of `kind`; only its hash is kept. `shares`: a co-owner
   * invitation's Dock and role, recorded in the Dock's audit log with it.
   */
  async #createLink(
    kind: OwnerInviteKind,
    createdBy: number | null,
    ttlMs: number,
    shares: { dockId: string; role: DockRole } | null = null,
  ) {
    const token = randomBase62(128);
    const id = `inv_${randomBase62(64)}`;
    const now = this.#now();
    const invite: PendingInvite = { id, createdBy, createdAt: now, expiresAt: now + ttlMs };
    await this.#db.kysely.transaction().execute(async (tx) => {
      // One claim link at a time: each start prints a new one, and the ones before stop working
      // (a log kept for months holds no administrator's key; a crash loop leaves one, not many).
      if (kind === "claim") {
        await tx
          .updateTable("owner_invites")
          .set({ revoked_at: now })
          .where("kind", "=", "claim")
          .where("used_at", "is", null)
          .where("revoked_at", "is", null)
          .execute();
      }
      await tx
        .insertInto("owner_invites")
        .values({
          id,
          token_hash: sha256Hex(token),
          kind,
          created_by: createdBy,
          created_at: now,
          expires_at: invite.expiresAt,
          used_by: null,
          used_at: null,
          revoked_at: null,
          dock_id: shares?.dockId ?? null,
          dock_role: shares?.role ?? null,
        })
        .execute();
      if (shares !== null) {
        await writeAuditBy(
          tx,
          shares.dockId,
          { actor: createdBy },
          "co_owner_invited",
          { invite: id, role: shares.role },
          now,
        );
      }
    });
    return { invite, token };
  }

  /**
   * A claim link's token, for an instance that awaits its claim (see awaitsClaim). Any earlier
   * claim link stops working.
   */
  createClaim(): Promise<{ invite: PendingInvite; token: string }> {
    return this.#createLink("claim", null, CLAIM_TTL_MS);
  }

  /** An invitation made by administrator `createdBy`: its token goes in a link into the bot. */
  createInvite(createdBy: number): Promise<{ invite: PendingInvite; token: string }> {
    return this.#createLink("invite", createdBy, INVITE_TTL_MS);
  }

  /**
   * An invitation to co-own Dock `dockId` as `role`, made by `createdBy` (null: the operator's
   * command line); its token goes in a link into the bot. The caller checked that they may.
   */
  async createCoOwnerInvite(
    dockId: string,
    role: DockRole,
    createdBy: number | null,
  ): Promise<{ invite: PendingCoOwnerInvite; token: string }> {
    const made = await this.#createLink("co_owner", createdBy, INVITE_TTL_MS, { dockId, role });
    return { invite: { ...made.invite, role }, token: made.token };
  }

  /** The Dock's co-owner invitations that can still be used, newest first. */
  async pendingCoOwnerInvites(dockId: string): Promise<PendingCoOwnerInvite[]> {
    const rows = await this.#db.kysely
      .selectFrom("owner_invites")
      .select(["id", "created_by", "created_at", "expires_at", "dock_role"])
      .where("kind", "=", "co_owner")
      .where("dock_id", "=", dockId)
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
      role: row.dock_role as DockRole,
    }));
  }

  /**
   * Withdraws a pending co-owner invitation of the Dock (`actor` did: the audit log says so); false
   * when it has none by that id that could still be used.
   */
  async withdrawCoOwnerInvite(dockId: string, id: string, actor: number | null): Promise<boolean> {
    const now = this.#now();
    return this.#db.kysely.transaction().execute(async (tx) => {
      const result = await tx
        .updateTable("owner_invites")
        .set({ revoked_at: now })
        .where("id", "=", id)
        .where("kind", "=", "co_owner")
        .where("dock_id", "=", dockId)
        .where("used_at", "is", null)
        .where("revoked_at", "is", null)
        .where("expires_at", ">", now)
        .executeTakeFirst();
      if (result.numUpdatedRows === 0n) return false;
      await writeAuditBy(tx, dockId, { actor }, "co_owner_invite_withdrawn", { invite: id }, now);
      return true;
    });
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

  /**
   * What a link's token stands for now, before the person answers the bot's question (or, read in
   * `db`, the transaction that found it could not be used, why not).
   */
  async linkState(
    kind: OwnerInviteKind,
    token: string,
    db: Kysely<Database> = this.#db.kysely,
  ): Promise<LinkState> {
    const row = await db
      .selectFrom("owner_invites")
      .leftJoin("docks", "docks.id", "owner_invites.dock_id")
      .select([
        "owner_invites.used_at",
        "owner_invites.revoked_at",
        "owner_invites.expires_at",
        "owner_invites.created_by",
        "owner_invites.dock_id",
        "owner_invites.dock_role",
        "docks.name",
      ])
      .where("owner_invites.token_hash", "=", sha256Hex(token))
      .where("owner_invites.kind", "=", kind)
      .executeTakeFirst();
    if (!row) return { state: "unknown", createdBy: null, shares: null };
    // Once anyone claimed the instance, that is what every claim link's opener needs to hear.
    if (kind === "claim" && !(await this.awaitsClaim(db)))
      return { state: "already_claimed", createdBy: null, shares: null };
    const shares =
      row.dock_id !== null && row.dock_role !== null && row.name != null
        ? { dockId: row.dock_id, dockName: row.name, role: row.dock_role }
        : null;
    const known = { createdBy: row.created_by, shares };
    if (row.used_at !== null) return { state: "used", ...known };
    if (row.revoked_at !== null) return { state: "revoked", ...known };
    if (row.expires_at <= this.#now()) return { state: "expired", ...known };
    return { state: "pending", ...known };
  }

  /**
   * `user` pressed Yes on a claim link or an invitation. A claim makes exactly one administrator
   * (the instance's row is claimed by a conditional update, so of two people pressing Yes at once
   * one wins) and only while the instance may be claimed at all (OWNERS unset); an invitation makes
   * an owner. Either link works once. Someone who already may use the console keeps their role and
   * leaves the invitation for whoever it was meant for.
   */
  async redeem(kind: OwnerInviteKind, token: string, user: TelegramIdentity): Promise<RedeemOutcome> {
    if (kind === "co_owner") return this.#redeemCoOwner(token, user);
    if (kind === "claim" && !this.policy.claimable) return { result: "already_claimed" };
    const now = this.#now();
    const current = await this.roleOf(user.id);
    // A co-owner may sign in for the Docks shared with them: an invitation makes them an owner.
    if (current !== null && current !== "co_owner" && kind === "invite")
      return { result: "already_owner", role: current };
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
      // Read in this transaction: on SQLite it holds the only connection.
      if (!used) return { result: (await this.linkState(kind, token, tx)).state };
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
        .onConflict((oc) => oc.column("telegram_id").doUpdateSet({ role, sandbox: 0 }))
        .execute();
      return { result: role };
    });
  }

  /**
   * `user` pressed Yes on a co-owner invitation: they get its role on its Dock, once (the link is
   * used by a conditional update). Whoever already has a role there (its owner, a co-owner) keeps
   * it and leaves the link for whoever it was meant for. The Dock's audit log says who joined,
   * through whose invitation, in the same transaction.
   */
  async #redeemCoOwner(token: string, user: TelegramIdentity): Promise<RedeemOutcome> {
    const now = this.#now();
    return this.#db.kysely.transaction().execute(async (tx): Promise<RedeemOutcome> => {
      const link = await this.linkState("co_owner", token, tx);
      if (link.state !== "pending" || link.shares === null)
        return { result: link.state === "pending" ? "unknown" : link.state };
      const { dockId } = link.shares;
      const held = await tx
        .selectFrom("docks")
        .leftJoin("co_owners", (join) =>
          join.onRef("co_owners.dock_id", "=", "docks.id").on("co_owners.telegram_id", "=", user.id),
        )
        .select(["docks.owner_id", "co_owners.role"])
        .where("docks.id", "=", dockId)
        .executeTakeFirst();
      if (held?.owner_id === user.id) return { ...link.shares, result: "already_co_owner", role: "owner" };
      if (held?.role != null) return { ...link.shares, result: "already_co_owner", role: held.role };
      const used = await tx
        .updateTable("owner_invites")
        .set({ used_by: user.id, used_at: now })
        .where("token_hash", "=", sha256Hex(token))
        .where("kind", "=", "co_owner")
        .where("used_at", "is", null)
        .where("revoked_at", "is", null)
        .where("expires_at", ">", now)
        .returning(["id", "created_by"])
        .executeTakeFirst();
      if (!used) return { result: (await this.linkState("co_owner", token, tx)).state };
      await rememberName(tx, { id: user.id, firstName: user.first_name, username: user.username }, now);
      await tx
        .insertInto("co_owners")
        .values({
          dock_id: dockId,
          telegram_id: user.id,
          role: link.shares.role,
          added_by: used.created_by,
          added_at: now,
        })
        .execute();
      await writeAudit(
        tx,
        {
          dockId,
          actor: user.id,
          action: "co_owner_added",
          detail: { user: user.id, role: link.shares.role, invited_by: used.created_by, invite: used.id },
        },
        now,
      );
      return { ...link.shares, result: "co_owner" };
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
