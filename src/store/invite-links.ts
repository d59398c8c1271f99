import type { Kysely } from "kysely";
import { type InviteLinkRules, type InviteLinkState, inviteLinkState } from "../domain/audience.ts";
import { randomBase62 } from "../domain/ids.ts";
import { decryptSecret, encryptSecret, sha256Hex } from "../domain/secrets.ts";
import { type AuditBy, writeAuditBy } from "./audit.ts";
import { chatName } from "./chats.ts";
import type { Db } from "./db.ts";
import { audienceChanged } from "./dock-stamps.ts";
import type { Database } from "./schema.ts";

/** An invite link of a Dock, with its token (the link is built from it where the bot's name is known). */
export interface InviteLink extends InviteLinkRules {
  id: string;
  dockId: string;
  /** The token of the link's `/start join_<token>`: show it to the Dock's owner only. */
  token: string;
  /** Who made it: their Telegram id and name as the bot last saw it; null: the operator's CLI. */
  creator: { id: number; name: string | null } | null;
  createdAt: number;
  uses: number;
  revokedAt: number | null;
  state: InviteLinkState;
}

/** The columns a link is read from (with its creator's names). */
function linkQuery(db: Kysely<Database>) {
  return db
    .selectFrom("dock_invites")
    .leftJoin("users", "users.telegram_id", "dock_invites.created_by")
    .select([
      "dock_invites.id",
      "dock_invites.dock_id",
      "dock_invites.token_sealed",
      "dock_invites.name",
      "dock_invites.created_by",
      "dock_invites.created_at",
      "dock_invites.expires_at",
      "dock_invites.usage_limit",
      "dock_invites.uses",
      "dock_invites.approval",
      "dock_invites.revoked_at",
      "users.first_name",
      "users.username",
    ]);
}

type LinkRow = Awaited<ReturnType<ReturnType<typeof linkQuery>["executeTakeFirstOrThrow"]>>;

/**
 * A Dock's invite links (issue 37): made by its owner (or the operator), listed with their uses,
 * revoked (who joined through a link stays). Whoever opens one in the bot is found by the
 * token's hash; joining through it counts a use in the transaction that subscribes (`use`).
 */
export class InviteLinkRepository {
  readonly #db: Db;
  readonly #key: Buffer;
  readonly #now: () => number;

  constructor(db: Db, encryptionKey: Buffer, now: () => number = Date.now) {
    this.#db = db;
    this.#key = encryptionKey;
    this.#now = now;
  }

  #toLink(row: LinkRow): InviteLink {
    const link = {
      id: row.id,
      dockId: row.dock_id,
      token: decryptSecret(row.token_sealed, this.#key),
      name: row.name,
      creator:
        row.created_by === null
          ? null
          : { id: Number(row.created_by), name: chatName(null, row.first_name, row.username) },
      createdAt: Number(row.created_at),
      expiresAt: row.expires_at === null ? null : Number(row.expires_at),
      usageLimit: row.usage_limit,
      uses: Number(row.uses),
      approval: Number(row.approval) === 1,
      revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
    };
    return { ...link, state: inviteLinkState(link, this.#now()) };
  }

  /**
   * A new link of the Dock, made by `by` (actor null: the operator); the audit log's entry (never
   * the token) is written in its transaction.
   */
  async create(dockId: string, by: AuditBy, rules: InviteLinkRules): Promise<InviteLink> {
    const token = randomBase62(128);
    const id = `dinv_${randomBase62(64)}`;
    const now = this.#now();
    await this.#db.kysely.transaction().execute(async (tx) => {
      await tx
        .insertInto("dock_invites")
        .values({
          id,
          dock_id: dockId,
          token_hash: sha256Hex(token),
          token_sealed: encryptSecret(token, this.#key),
          name: rules.name,
          created_by: by.actor,
          created_at: now,
          expires_at: rules.expiresAt,
          usage_limit: rules.usageLimit,
          approval: rules.approval ? 1 : 0,
          revoked_at: null,
          updated_at: now,
        })
        .execute();
      await audienceChanged(tx, dockId, now);
      await writeAuditBy(
        tx,
        dockId,
        by,
        "invite_created",
        {
          invite_id: id,
          name: rules.name,
          usage_limit: rules.usageLimit,
          expires_at: rules.expiresAt,
          approval: rules.approval,
        },
        now,
      );
    });
    return (await this.get(dockId, id)) as InviteLink;
  }

  /** The Dock's links, newest first, revoked ones included. */
  async list(dockId: string): Promise<InviteLink[]> {
    const rows = await linkQuery(this.#db.kysely)
      .where("dock_invites.dock_id", "=", dockId)
      .orderBy("dock_invites.created_at", "desc")
      .orderBy("dock_invites.id")
      .execute();
    return rows.map((row) => this.#toLink(row));
  }

  async get(dockId: string, id: string): Promise<InviteLink | undefined> {
    const row = await linkQuery(this.#db.kysely)
      .where("dock_invites.dock_id", "=", dockId)
      .where("dock_invites.id", "=", id)
      .executeTakeFirst();
    return row && this.#toLink(row);
  }

  /** The link whose token this is, whatever its state; undefined: no such link. */
  async find(token: string): Promise<InviteLink | undefined> {
    const row = await linkQuery(this.#db.kysely)
      .where("dock_invites.token_hash", "=", sha256Hex(token))
      .executeTakeFirst();
    return row && this.#toLink(row);
  }

  /**
   * Revokes the link as `by`: nobody joins through it any more; the audit log's entry is written in
   * its transaction. The link as it was, or undefined when it was not active.
   */
  async revoke(dockId: string, id: string, by: AuditBy): Promise<InviteLink | undefined> {
    const now = this.#now();
    const revoked = await this.#db.kysely.transaction().execute(async (tx) => {
      const result = await tx
        .updateTable("dock_invites")
        .set({ revoked_at: now, updated_at: now })
        .where("dock_id", "=", dockId)
        .where("id", "=", id)
        .where("revoked_at", "is", null)
        .returning(["name", "uses"])
        .executeTakeFirst();
      if (result === undefined) return false;
      await audienceChanged(tx, dockId, now);
      await writeAuditBy(
        tx,
        dockId,
        by,
        "invite_revoked",
        { invite_id: id, name: result.name, uses: Number(result.uses) },
        now,
      );
      return true;
    });
    return revoked ? this.get(dockId, id) : undefined;
  }
}

/**
 * Counts one use of the link in `db` (the transaction that subscribes through it), if it still
 * works: not revoked, not expired, under its limit. A conditional update, so two chats taking a
 * link's last use at once cannot both have it. False: it no longer works.
 */
export async function useInviteLink(db: Kysely<Database>, id: string, now: number): Promise<boolean> {
  const used = await db
    .updateTable("dock_invites")
    .set((eb) => ({ uses: eb("uses", "+", 1), updated_at: now }))
    .where("id", "=", id)
    .where("revoked_at", "is", null)
    .where((eb) => eb.or([eb("expires_at", "is", null), eb("expires_at", ">", now)]))
    .where((eb) => eb.or([eb("usage_limit", "is", null), eb("uses", "<", eb.ref("usage_limit"))]))
    .returning("dock_id")
    .executeTakeFirst();
  if (used === undefined) return false;
  await audienceChanged(db, used.dock_id, now);
  return true;
}
