import type { Kysely } from "kysely";
import { type AuditBy, writeAuditBy } from "./audit.ts";
import { chatName } from "./chats.ts";
import type { Db } from "./db.ts";
import { audienceChanged } from "./dock-stamps.ts";
import type { Database } from "./schema.ts";

/** A chat banned from a Dock, as the console lists it. */
export interface DockBan {
  chatId: number;
  /** The chat as the console names it (store/chats.ts); null: unknown. */
  name: string | null;
  bannedBy: number | null;
  bannedAt: number;
}

/** Whether the chat is banned from the Dock: it may neither join nor ask to. `db` may be a transaction. */
export async function isBanned(db: Kysely<Database>, dockId: string, chatId: number): Promise<boolean> {
  const row = await db
    .selectFrom("dock_bans")
    .select("chat_id")
    .where("dock_id", "=", dockId)
    .where("chat_id", "=", chatId)
    .executeTakeFirst();
  return row !== undefined;
}

/** Bans the chat from the Dock in `db` (a transaction); true when it was not banned before. */
export async function banChat(
  db: Kysely<Database>,
  dockId: string,
  chatId: number,
  by: number | null,
  now: number,
): Promise<boolean> {
  const result = await db
    .insertInto("dock_bans")
    .values({ dock_id: dockId, chat_id: chatId, banned_by: by, banned_at: now })
    .onConflict((oc) => oc.columns(["dock_id", "chat_id"]).doNothing())
    .executeTakeFirst();
  if (Number(result.numInsertedOrUpdatedRows ?? 0n) === 0) return false;
  await audienceChanged(db, dockId, now);
  return true;
}

/** A Dock's banned chats: listed (named as the console names chats) and unbanned. */
export class DockBanRepository {
  readonly #db: Db;
  readonly #now: () => number;

  constructor(db: Db, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
  }

  /** The Dock's banned chats, the latest first. */
  async list(dockId: string): Promise<DockBan[]> {
    const rows = await this.#db.kysely
      .selectFrom("dock_bans")
      .leftJoin("users", "users.telegram_id", "dock_bans.chat_id")
      .leftJoin("chats", "chats.chat_id", "dock_bans.chat_id")
      .select([
        "dock_bans.chat_id",
        "dock_bans.banned_by",
        "dock_bans.banned_at",
        "users.first_name",
        "users.username",
        "chats.title",
      ])
      .where("dock_bans.dock_id", "=", dockId)
      .orderBy("dock_bans.banned_at", "desc")
      .orderBy("dock_bans.chat_id")
      .execute();
    return rows.map((row) => ({
      chatId: Number(row.chat_id),
      name: chatName(row.title, row.first_name, row.username),
      bannedBy: row.banned_by === null ? null : Number(row.banned_by),
      bannedAt: Number(row.banned_at),
    }));
  }

  /**
   * Lets the chat join (or ask) again, as `by`, whose entry in the audit log is written in the
   * same transaction; false when it was not banned.
   */
  async unban(dockId: string, chatId: number, by: AuditBy): Promise<boolean> {
    const now = this.#now();
    return this.#db.kysely.transaction().execute(async (tx) => {
      const result = await tx
        .deleteFrom("dock_bans")
        .where("dock_id", "=", dockId)
        .where("chat_id", "=", chatId)
        .executeTakeFirst();
      if (result.numDeletedRows === 0n) return false;
      await audienceChanged(tx, dockId, now);
      await writeAuditBy(tx, dockId, by, "subscriber_unbanned", { chat_id: chatId }, now);
      return true;
    });
  }
}
