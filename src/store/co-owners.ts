import type { Kysely } from "kysely";
import { type DockAction, type DockRole, rolesThatMay } from "../domain/dock-roles.ts";
import { writeAuditBy } from "./audit.ts";
import type { Db } from "./db.ts";
import type { Database } from "./schema.ts";

/** Someone with a role on a Dock: its own owner first, then its co-owners. */
export interface TeamMember {
  id: number;
  firstName: string | null;
  username: string | null;
  role: DockRole;
  /** The Dock's own owner (`docks.owner_id`): keeps the role `owner`, cannot be removed here. */
  ownsDock: boolean;
  /** When they were given their role; null for the Dock's own owner. */
  addedAt: number | null;
  addedBy: number | null;
}

/** What a change of a co-owner came to. */
export type TeamChange = "changed" | "unchanged" | "not_found" | "dock_owner";

/**
 * Who has which role on each Dock (issue 37, migration 0018): the Dock's own owner
 * (`docks.owner_id`) is its `owner`; its co-owners hold a row of `co_owners` each. Co-owners join
 * through an invitation into the bot (OwnerRepository.createCoOwnerInvite); here they are read,
 * given another role and removed. Every change is written to the Dock's audit log in its
 * transaction.
 */
export class CoOwnerRepository {
  readonly #db: Db;
  readonly #now: () => number;

  constructor(db: Db, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
  }

  /** The person's role on the Dock; null when they have none (or there is no such Dock). */
  async roleOnDock(dockId: string, userId: number): Promise<DockRole | null> {
    const row = await this.#db.kysely
      .selectFrom("docks")
      .leftJoin("co_owners", (join) =>
        join.onRef("co_owners.dock_id", "=", "docks.id").on("co_owners.telegram_id", "=", userId),
      )
      .select(["docks.owner_id", "co_owners.role"])
      .where("docks.id", "=", dockId)
      .executeTakeFirst();
    if (row === undefined) return null;
    if (Number(row.owner_id) === userId) return "owner";
    return row.role ?? null;
  }

  /**
   * Everyone whose role on the Dock allows `action`: its own owner, and the co-owners whose role
   * does (who is asked to decide a join request: `manage_subscribers`).
   */
  async whoMay(dockId: string, action: DockAction): Promise<number[]> {
    const roles = rolesThatMay(action);
    const [dock, rows] = await Promise.all([
      this.#db.kysely.selectFrom("docks").select("owner_id").where("id", "=", dockId).executeTakeFirst(),
      this.#db.kysely
        .selectFrom("co_owners")
        .select("telegram_id")
        .where("dock_id", "=", dockId)
        .where("role", "in", roles)
        .orderBy("added_at")
        .execute(),
    ]);
    if (dock === undefined) return [];
    return [Number(dock.owner_id), ...rows.map((row) => Number(row.telegram_id))];
  }

  /** The Dock's team: its own owner, then its co-owners in the order they joined. */
  async team(dockId: string): Promise<TeamMember[]> {
    const owner = await this.#db.kysely
      .selectFrom("docks")
      .leftJoin("users", "users.telegram_id", "docks.owner_id")
      .select(["docks.owner_id", "users.first_name", "users.username"])
      .where("docks.id", "=", dockId)
      .executeTakeFirst();
    if (owner === undefined) return [];
    const rows = await this.#db.kysely
      .selectFrom("co_owners")
      .leftJoin("users", "users.telegram_id", "co_owners.telegram_id")
      .select([
        "co_owners.telegram_id",
        "co_owners.role",
        "co_owners.added_at",
        "co_owners.added_by",
        "users.first_name",
        "users.username",
      ])
      .where("co_owners.dock_id", "=", dockId)
      .orderBy("co_owners.added_at")
      .orderBy("co_owners.telegram_id")
      .execute();
    return [
      {
        id: Number(owner.owner_id),
        firstName: owner.first_name ?? null,
        username: owner.username ?? null,
        role: "owner",
        ownsDock: true,
        addedAt: null,
        addedBy: null,
      },
      ...rows.map(
        (row): TeamMember => ({
          id: Number(row.telegram_id),
          firstName: row.first_name ?? null,
          username: row.username ?? null,
          role: row.role,
          ownsDock: false,
          addedAt: Number(row.added_at),
          addedBy: row.added_by === null ? null : Number(row.added_by),
        }),
      ),
    ];
  }

  /**
   * Gives co-owner `userId` another role on the Dock (`actor` did; null: the command line). The
   * Dock's own owner keeps `owner`. Someone who is an owner no more loses the invitations they made
   * for this Dock: what they may no longer do, their links no longer do.
   */
  async setRole(dockId: string, userId: number, role: DockRole, actor: number | null): Promise<TeamChange> {
    const now = this.#now();
    return this.#db.kysely.transaction().execute(async (tx) => {
      const refused = await dockOwnerRefusal(tx, dockId, userId);
      if (refused !== null) return refused;
      const row = await tx
        .selectFrom("co_owners")
        .select("role")
        .where("dock_id", "=", dockId)
        .where("telegram_id", "=", userId)
        .executeTakeFirst();
      if (row === undefined) return "not_found";
      if (row.role === role) return "unchanged";
      await tx
        .updateTable("co_owners")
        .set({ role })
        .where("dock_id", "=", dockId)
        .where("telegram_id", "=", userId)
        .execute();
      if (role !== "owner") await this.#withdrawInvitesOf(tx, dockId, userId, now);
      await writeAuditBy(
        tx,
        dockId,
        { actor },
        "co_owner_role_changed",
        { user: userId, from: row.role, to: role },
        now,
      );
      return "changed";
    });
  }

  /**
   * Takes co-owner `userId`'s role on the Dock away (`actor` did: another owner, the operator, or
   * themselves leaving), with the invitations they made for it. Their next request finds the Dock
   * no longer theirs; on a closed instance, someone let in only as a co-owner, with no Dock shared
   * any more, is signed out by it.
   */
  async remove(dockId: string, userId: number, actor: number | null): Promise<TeamChange> {
    const now = this.#now();
    return this.#db.kysely.transaction().execute(async (tx) => {
      const refused = await dockOwnerRefusal(tx, dockId, userId);
      if (refused !== null) return refused;
      const removed = await tx
        .deleteFrom("co_owners")
        .where("dock_id", "=", dockId)
        .where("telegram_id", "=", userId)
        .returning("role")
        .executeTakeFirst();
      if (removed === undefined) return "not_found";
      await this.#withdrawInvitesOf(tx, dockId, userId, now);
      await writeAuditBy(
        tx,
        dockId,
        { actor },
        "co_owner_removed",
        { user: userId, role: removed.role },
        now,
      );
      return "changed";
    });
  }

  /** Withdraws the co-owner invitations `userId` made for the Dock that could still be used. */
  async #withdrawInvitesOf(tx: Kysely<Database>, dockId: string, userId: number, now: number): Promise<void> {
    await tx
      .updateTable("owner_invites")
      .set({ revoked_at: now })
      .where("kind", "=", "co_owner")
      .where("dock_id", "=", dockId)
      .where("created_by", "=", userId)
      .where("used_at", "is", null)
      .where("revoked_at", "is", null)
      .execute();
  }
}

/**
 * Why a change to `userId`'s place on the Dock cannot be made before looking at co-owners: the Dock
 * is not there, or `userId` is its own owner (who keeps `owner`); null when it can go on.
 */
async function dockOwnerRefusal(
  tx: Kysely<Database>,
  dockId: string,
  userId: number,
): Promise<"not_found" | "dock_owner" | null> {
  const dock = await tx.selectFrom("docks").select("owner_id").where("id", "=", dockId).executeTakeFirst();
  if (dock === undefined) return "not_found";
  return Number(dock.owner_id) === userId ? "dock_owner" : null;
}
