import type { Db } from "./db.ts";
import { FORGOTTEN, forgetSandboxDeliveries } from "./outbox.ts";

/** What a start on a real bot ended of the sandbox's (SandboxChats.atStart). */
export interface SandboxLeft {
  /** This start is the first on a real bot after one on the sandbox. */
  wentLive: boolean;
  /** Subscriptions of the sandbox's chats ended. */
  subscriptions: number;
  /** Deliveries that will not be sent, edited or deleted (queued, or copies that went out). */
  deliveries: number;
  /** The bot's notices (to chats of the sandbox) that will not be sent or edited. */
  notices: number;
}

/** How many chats one statement names (SQLite's expression depth stays far off). */
const CHATS_PER_STATEMENT = 100;

/**
 * Nothing meant for the sandbox reaches a real chat (migration 0022). The sandbox's chats have
 * Telegram-shaped ids (`100000001`, …) that real people and groups may have, so at every start on a
 * real bot, before any worker runs:
 * - the subscriptions of the sandbox's chats end (marked `sandbox` 2: the console's offer of the
 *   sandbox's Docks counts them as not carried over), and their deliveries are forgotten;
 * - going live (the start before this one was on the sandbox), everything the outbox and the bot's
 *   notices held from before is forgotten too: it was queued for, or went out to, the sandbox's
 *   chats, and an edit of it would change, or a delete remove, a real chat's message of the same id.
 *   The sandbox's conversations with the bot (half-done subscribes) go as well.
 * Cheap when there is nothing. Going live is a conditional update of the instance row, so of two
 * replicas starting at once only one forgets, and only what was made before it started.
 */
export class SandboxChats {
  readonly #db: Db;
  readonly #sandbox: boolean;
  readonly #now: () => number;

  constructor(db: Db, options: { sandbox: boolean; now?: () => number }) {
    this.#db = db;
    this.#sandbox = options.sandbox;
    this.#now = options.now ?? Date.now;
  }

  async atStart(): Promise<SandboxLeft> {
    const now = this.#now();
    const left: SandboxLeft = { wentLive: false, subscriptions: 0, deliveries: 0, notices: 0 };
    if (this.#sandbox) {
      await this.#db.kysely
        .updateTable("instance")
        .set({ telegram: "sandbox" })
        .where("id", "=", 1)
        .execute();
      return left;
    }
    return this.#db.kysely.transaction().execute(async (tx) => {
      const flipped = await tx
        .updateTable("instance")
        .set({ telegram: "bot" })
        .where("id", "=", 1)
        .where("telegram", "=", "sandbox")
        .executeTakeFirst();
      left.wentLive = flipped.numUpdatedRows > 0n;
      if (!left.wentLive)
        await tx
          .updateTable("instance")
          .set({ telegram: "bot" })
          .where("id", "=", 1)
          .where("telegram", "is", null)
          .execute();
      const chats = await tx
        .updateTable("subscriptions")
        .set({ state: "removed", sandbox: 2, updated_at: now })
        .where("sandbox", "=", 1)
        .where("state", "!=", "removed")
        .returning(["dock_id", "chat_id"])
        .execute();
      left.subscriptions = chats.length;
      // Those that had ended in the sandbox: nothing of theirs is edited or deleted either.
      const ended = await tx
        .updateTable("subscriptions")
        .set({ sandbox: 3 })
        .where("sandbox", "=", 1)
        .returning(["dock_id", "chat_id"])
        .execute();
      const all = [...chats, ...ended].map((c) => ({ dock_id: c.dock_id, chat_id: Number(c.chat_id) }));
      for (let i = 0; i < all.length; i += CHATS_PER_STATEMENT)
        left.deliveries += await forgetSandboxDeliveries(
          tx,
          { chats: all.slice(i, i + CHATS_PER_STATEMENT) },
          now,
        );
      if (left.wentLive) {
        left.deliveries += await forgetSandboxDeliveries(tx, { before: now }, now);
        const notices = await tx
          .updateTable("bot_notices")
          .set({
            state: "failed",
            message_id: null,
            lease_until: null,
            last_error: FORGOTTEN,
            updated_at: now,
          })
          .where("state", "!=", "failed")
          .where("created_at", "<", now)
          .executeTakeFirst();
        left.notices = Number(notices.numUpdatedRows);
        await tx.deleteFrom("bot_states").execute();
      }
      return left;
    });
  }
}
