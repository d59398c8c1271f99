import type { Db } from "./db.ts";
import type { SubscriptionState } from "./schema.ts";

/** Who receives a Dock's messages: one row per Dock × chat. */
export class SubscriptionRepository {
  readonly #db: Db;
  readonly #now: () => number;

  constructor(db: Db, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
  }

  /** Subscribes a chat (or reactivates its subscription); true when it was not active before. */
  async subscribe(dockId: string, chatId: number, chatType: string): Promise<boolean> {
    const now = this.#now();
    return this.#db.kysely.transaction().execute(async (tx) => {
      const existing = await tx
        .selectFrom("subscriptions")
        .select(["id", "state"])
        .where("dock_id", "=", dockId)
        .where("chat_id", "=", chatId)
        .executeTakeFirst();
      if (existing?.state === "active") return false;
      if (existing) {
        await tx
          .updateTable("subscriptions")
          .set({ state: "active", chat_type: chatType, updated_at: now })
          .where("id", "=", existing.id)
          .execute();
      } else {
        await tx
          .insertInto("subscriptions")
          .values({
            dock_id: dockId,
            chat_id: chatId,
            chat_type: chatType,
            state: "active",
            created_at: now,
            updated_at: now,
          })
          .execute();
      }
      return true;
    });
  }

  /** Marks one subscription, or every subscription of a chat when `dockId` is omitted. */
  async setState(chatId: number, state: SubscriptionState, dockId?: string): Promise<number> {
    let query = this.#db.kysely
      .updateTable("subscriptions")
      .set({ state, updated_at: this.#now() })
      .where("chat_id", "=", chatId);
    if (dockId !== undefined) query = query.where("dock_id", "=", dockId);
    const result = await query.executeTakeFirst();
    return Number(result.numUpdatedRows);
  }
}
