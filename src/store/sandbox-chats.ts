import type { Transaction } from "kysely";
import type { Db } from "./db.ts";
import { FORGOTTEN, forgetSandboxDeliveries } from "./outbox.ts";
import type { Database } from "./schema.ts";

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
  /** Join requests of the sandbox's chats, ended without a word. */
  requests: number;
}

/** How many chats one statement names (SQLite's expression depth stays far off). */
const CHATS_PER_STATEMENT = 100;

type Chat = { dock_id: string; chat_id: number };

/**
 * Nothing meant for the sandbox reaches a real chat (migration 0022). The sandbox's chats have
 * Telegram-shaped ids (`100000001`, …) that real people and groups may have, so at every start on a
 * real bot, before any worker runs:
 * - the subscriptions of the sandbox's chats end (marked `sandbox` 2: the console's offer of the
 *   sandbox's Docks counts them as not carried over), and so does whatever of theirs is left: their
 *   deliveries are forgotten, their notices dropped, their join requests ended without a word;
 * - going live (the start before this one was on the sandbox), everything made since the sandbox's
 *   stretch began (`instance.sandbox_since`) is forgotten too: queued and sent copies (an edit of one
 *   would change, a delete remove, a real chat's message of the same id), the bot's notices, join
 *   requests, bans, and the conversations with the bot. What a real bot made before stays.
 * The built-in sandbox, or a service using the sandbox's public token (a rehearsal against
 * `dock-notify sandbox`), counts as the sandbox. Cheap when there is nothing. Going live is a
 * conditional update of the instance row, so of two replicas starting at once only one forgets.
 */
export class SandboxChats {
  readonly #db: Db;
  readonly #sandbox: boolean;
  /** When this process began (before it took any request): what it made itself is never forgotten. */
  readonly #bootedAt: number;
  readonly #now: () => number;

  constructor(db: Db, options: { sandbox: boolean; bootedAt: number; now?: () => number }) {
    this.#db = db;
    this.#sandbox = options.sandbox;
    this.#bootedAt = options.bootedAt;
    this.#now = options.now ?? Date.now;
  }

  async atStart(): Promise<SandboxLeft> {
    const now = this.#now();
    const left: SandboxLeft = { wentLive: false, subscriptions: 0, deliveries: 0, notices: 0, requests: 0 };
    if (this.#sandbox) {
      // The first start of a stretch on the sandbox: what is made from now on is the sandbox's.
      await this.#db.kysely
        .updateTable("instance")
        .set({ telegram: "sandbox", sandbox_since: this.#bootedAt })
        .where("id", "=", 1)
        .where((w) => w.or([w("telegram", "is", null), w("telegram", "!=", "sandbox")]))
        .execute();
      return left;
    }
    return this.#db.kysely.transaction().execute(async (tx) => {
      const flipped = await tx
        .updateTable("instance")
        // sandbox_since stays as it was: RETURNING reads the row as updated. The next stretch on
        // the sandbox sets it anew.
        .set({ telegram: "bot" })
        .where("id", "=", 1)
        .where("telegram", "=", "sandbox")
        .returning("sandbox_since")
        .executeTakeFirst();
      if (flipped === undefined)
        await tx
          .updateTable("instance")
          .set({ telegram: "bot" })
          .where("id", "=", 1)
          .where("telegram", "is", null)
          .execute();
      const active = await tx
        .updateTable("subscriptions")
        .set({ state: "removed", sandbox: 2, updated_at: now })
        .where("sandbox", "=", 1)
        .where("state", "!=", "removed")
        .returning(["dock_id", "chat_id"])
        .execute();
      left.subscriptions = active.length;
      // Those that had ended in the sandbox: nothing of theirs is edited or deleted either.
      const ended = await tx
        .updateTable("subscriptions")
        .set({ sandbox: 3 })
        .where("sandbox", "=", 1)
        .returning(["dock_id", "chat_id"])
        .execute();
      const chats = [...active, ...ended].map((c) => ({ dock_id: c.dock_id, chat_id: Number(c.chat_id) }));
      for (let i = 0; i < chats.length; i += CHATS_PER_STATEMENT)
        await forgetChats(tx, chats.slice(i, i + CHATS_PER_STATEMENT), now, left);
      if (flipped !== undefined) {
        left.wentLive = true;
        await forgetSince(
          tx,
          { since: Number(flipped.sandbox_since ?? 0), before: this.#bootedAt },
          now,
          left,
        );
      }
      return left;
    });
  }
}

/** What is left of the sandbox's chats `chats` (their subscriptions just ended) goes. */
async function forgetChats(tx: Transaction<Database>, chats: Chat[], now: number, left: SandboxLeft) {
  left.deliveries += await forgetSandboxDeliveries(tx, { chats }, now);
  const notices = await tx
    .updateTable("bot_notices")
    .set({ state: "failed", message_id: null, lease_until: null, last_error: FORGOTTEN, updated_at: now })
    .where(
      "chat_id",
      "in",
      chats.map((c) => c.chat_id),
    )
    .where("state", "!=", "failed")
    .executeTakeFirst();
  left.notices += Number(notices.numUpdatedRows);
  const requests = await tx
    .updateTable("join_requests")
    .set({ state: "expired", decided_at: now, updated_at: now })
    .where((w) => w.or(chats.map((c) => w.and([w("dock_id", "=", c.dock_id), w("chat_id", "=", c.chat_id)]))))
    .where("state", "=", "pending")
    .executeTakeFirst();
  left.requests += Number(requests.numUpdatedRows);
}

/**
 * Going live: what was made from when the sandbox's stretch began (`since`) until this process
 * began (`before`: what it took since, a real bot's, stays) goes.
 */
async function forgetSince(
  tx: Transaction<Database>,
  { since, before }: { since: number; before: number },
  now: number,
  left: SandboxLeft,
) {
  left.deliveries += await forgetSandboxDeliveries(tx, { since, before }, now);
  const notices = await tx
    .updateTable("bot_notices")
    .set({ state: "failed", message_id: null, lease_until: null, last_error: FORGOTTEN, updated_at: now })
    .where("created_at", ">=", since)
    .where("created_at", "<", before)
    .where("state", "!=", "failed")
    .executeTakeFirst();
  left.notices += Number(notices.numUpdatedRows);
  const requests = await tx
    .updateTable("join_requests")
    .set({ state: "expired", decided_at: now, updated_at: now })
    .where("created_at", ">=", since)
    .where("created_at", "<", before)
    .where("state", "=", "pending")
    .executeTakeFirst();
  left.requests += Number(requests.numUpdatedRows);
  await tx.deleteFrom("dock_bans").where("banned_at", ">=", since).where("banned_at", "<", before).execute();
  // Conversations half done (a Dock ID asked for) last minutes: they are the sandbox's.
  await tx.deleteFrom("bot_states").execute();
}
