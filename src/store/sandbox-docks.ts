import type { Transaction } from "kysely";
import type { OwnerPolicy } from "../domain/owners.ts";
import { writeAudit } from "./audit.ts";
import type { Db } from "./db.ts";
import { moveDocks } from "./docks.ts";
import { cancelForSubscriber } from "./outbox.ts";
import type { Database } from "./schema.ts";

/** A Dock made while the sandbox played Telegram, as the first administrator is offered it. */
export interface SandboxDock {
  id: string;
  name: string;
  /** The sandbox's person who owns it (e.g. 100000001). */
  ownerId: number;
  /** Its subscriptions: chats of the sandbox (ended when the real bot started), not carried over. */
  subscribers: number;
}

/**
 * The Docks of the sandbox's people once a real bot runs (issue 38): whoever tried Dock Notify in
 * the sandbox made Docks as its person `100000001`, whom nobody is on the real bot. An
 * administrator takes them over (they become theirs, with their secret keys, credentials, settings
 * and history) or dismisses the offer for good. Their subscriptions are not carried over: they are
 * the sandbox's chats, which do not exist on the real bot (and whose ids real chats may have).
 */
export class SandboxDocks {
  readonly #db: Db;
  readonly #policy: OwnerPolicy;
  readonly #now: () => number;

  constructor(db: Db, policy: OwnerPolicy, now: () => number = Date.now) {
    this.#db = db;
    this.#policy = policy;
    this.#now = now;
  }

  /** The Docks owned by the sandbox's people (owners marked `sandbox`, migration 0020), oldest first. */
  async #list(db = this.#db.kysely): Promise<SandboxDock[]> {
    const rows = await db
      .selectFrom("docks")
      .innerJoin("owners", "owners.telegram_id", "docks.owner_id")
      .select((eb) => [
        "docks.id",
        "docks.name",
        "docks.owner_id",
        eb
          .selectFrom("subscriptions")
          .select((sub) => sub.fn.countAll<number>().as("n"))
          .whereRef("subscriptions.dock_id", "=", "docks.id")
          // Subscribed when a real bot started, and ended then (SandboxChats), or still active.
          .where((w) => w.or([w("subscriptions.state", "=", "active"), w("subscriptions.sandbox", "=", 2)]))
          .as("subscribers"),
      ])
      .where("owners.sandbox", "=", 1)
      .orderBy("docks.created_at")
      .orderBy("docks.id")
      .execute();
    return rows.map((row) => ({
      id: row.id,
      name: row.name,
      ownerId: Number(row.owner_id),
      subscribers: Number(row.subscribers ?? 0),
    }));
  }

  /**
   * What the console offers an administrator: the sandbox's Docks, on a real bot, unless an
   * administrator dismissed the offer. Empty otherwise (in the sandbox they are simply its Docks).
   */
  async offer(): Promise<SandboxDock[]> {
    if (this.#policy.sandbox) return [];
    const instance = await this.#db.kysely
      .selectFrom("instance")
      .select("sandbox_offer_dismissed_at")
      .executeTakeFirst();
    if (instance?.sandbox_offer_dismissed_at != null) return [];
    return this.#list();
  }

  /**
   * Administrator `adminId` takes over every Dock of the sandbox's people, in one transaction: each
   * becomes theirs (its audit log says so, with how many subscriptions were dropped), its sandbox
   * subscriptions end without a word to the chats (state `removed`, queued copies not sent), its
   * co-owners (the sandbox's people too) lose their role and its open co-owner invitations are
   * withdrawn, and waiting join requests end. The sandbox's people left with no Dock are removed
   * from the owners. Answers the Docks taken over (none on a sandbox, or when there are none).
   */
  async takeOver(adminId: number): Promise<SandboxDock[]> {
    if (this.#policy.sandbox) return [];
    const now = this.#now();
    return this.#db.kysely.transaction().execute(async (tx) => {
      const docks = await this.#list(tx);
      if (docks.length === 0) return [];
      const ids = docks.map((dock) => dock.id);
      for (const from of new Set(docks.map((dock) => dock.ownerId))) {
        const theirs = docks.filter((dock) => dock.ownerId === from).map((dock) => dock.id);
        await moveDocks(tx, theirs, from, adminId, now);
      }
      const subscriptions = await tx
        .selectFrom("subscriptions")
        .select(["dock_id", "chat_id"])
        .where("dock_id", "in", ids)
        .where("state", "!=", "removed")
        .execute();
      // The sandbox's, ended when the real bot started (SandboxChats): not carried over either.
      const ended = await tx
        .selectFrom("subscriptions")
        .select("dock_id")
        .where("dock_id", "in", ids)
        .where("sandbox", "=", 2)
        .execute();
      await tx
        .updateTable("subscriptions")
        .set({ state: "removed", updated_at: now })
        .where("dock_id", "in", ids)
        .where("state", "!=", "removed")
        .execute();
      for (const { dock_id, chat_id } of subscriptions) await cancelForSubscriber(tx, dock_id, chat_id, now);
      const coOwners = await tx
        .deleteFrom("co_owners")
        .where("dock_id", "in", ids)
        .returning(["dock_id"])
        .execute();
      await revokeCoOwnerInvites(tx, ids, now);
      await tx
        .updateTable("join_requests")
        .set({ state: "expired", decided_at: now, updated_at: now })
        .where("dock_id", "in", ids)
        .where("state", "=", "pending")
        .execute();
      for (const dock of docks) {
        await writeAudit(
          tx,
          {
            dockId: dock.id,
            actor: adminId,
            action: "sandbox_taken_over",
            detail: {
              from: dock.ownerId,
              to: adminId,
              subscriptions_dropped:
                subscriptions.filter((s) => s.dock_id === dock.id).length +
                ended.filter((s) => s.dock_id === dock.id).length,
              co_owners_removed: coOwners.filter((c) => c.dock_id === dock.id).length,
            },
          },
          now,
        );
      }
      await tx
        .deleteFrom("owners")
        .where("sandbox", "=", 1)
        .where(({ not, exists, selectFrom }) =>
          not(
            exists(
              selectFrom("docks").select("docks.id").whereRef("docks.owner_id", "=", "owners.telegram_id"),
            ),
          ),
        )
        .execute();
      return docks;
    });
  }

  /**
   * On a real bot, takes away the roles the sandbox's people hold on its Docks (co-owners, and the
   * co-owner invitations still open): they were given in the sandbox, and a real person with the
   * same id would otherwise sign in as one. Each Dock's audit log says so. Answers how many roles
   * went (0 in the sandbox, and once done). Called at every start: cheap when there is nothing.
   */
  async retireSandboxRoles(): Promise<number> {
    if (this.#policy.sandbox) return 0;
    const now = this.#now();
    return this.#db.kysely.transaction().execute(async (tx) => {
      const ids = (await this.#list(tx)).map((dock) => dock.id);
      if (ids.length === 0) return 0;
      const removed = await tx
        .deleteFrom("co_owners")
        .where("dock_id", "in", ids)
        .returning(["dock_id", "telegram_id", "role"])
        .execute();
      await revokeCoOwnerInvites(tx, ids, now);
      for (const row of removed) {
        await writeAudit(
          tx,
          {
            dockId: row.dock_id,
            actor: null,
            action: "co_owner_removed",
            detail: { user: Number(row.telegram_id), role: row.role, reason: "sandbox" },
          },
          now,
        );
      }
      return removed.length;
    });
  }

  /** An administrator leaves the sandbox's Docks where they are: the console offers them no more. */
  async dismiss(): Promise<void> {
    await this.#db.kysely
      .updateTable("instance")
      .set({ sandbox_offer_dismissed_at: this.#now() })
      .where("id", "=", 1)
      .where("sandbox_offer_dismissed_at", "is", null)
      .execute();
  }
}

/** The co-owner invitations of Docks `ids` still open are revoked (the sandbox's people gave them). */
async function revokeCoOwnerInvites(tx: Transaction<Database>, ids: string[], now: number): Promise<void> {
  await tx
    .updateTable("owner_invites")
    .set({ revoked_at: now })
    .where("kind", "=", "co_owner")
    .where("dock_id", "in", ids)
    .where("used_at", "is", null)
    .where("revoked_at", "is", null)
    .execute();
}
