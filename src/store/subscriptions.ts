import type { Kysely, Transaction } from "kysely";
import { type AuditBy, writeAuditBy } from "./audit.ts";
import { chatName, followTitle, rememberTitle } from "./chats.ts";
import type { Db } from "./db.ts";
import { useInviteLink } from "./invite-links.ts";
import { queueNotice } from "./notices.ts";
import { cancelForSubscriber, followChat } from "./outbox.ts";
import type { Database, SubscriptionState } from "./schema.ts";
import { rememberName } from "./users.ts";

/** An active subscription of a chat, with what the bot shows about its Dock. */
export interface ChatSubscription {
  dockId: string;
  dockName: string;
  subscribedAt: number;
}

/** One chat that receives (or, blocked, no longer can receive) a Dock's messages. */
export interface Subscriber {
  chatId: number;
  chatType: string;
  state: SubscriptionState;
  /** Known when the chat is a private chat with someone who signed in to the console. */
  firstName: string | null;
  username: string | null;
  /** A group's, supergroup's or channel's title as the bot last saw it; null in private or when unknown. */
  title: string | null;
  /** The chat as the console names it (store/chats.ts); null: unknown. */
  name: string | null;
  since: number;
  /** The invite link it joined through; null: by the Dock ID (or before invite links). */
  invite: { id: string; name: string | null } | null;
}

/** Thrown to roll a link's use back: the chat it would count was subscribed already. */
const ALREADY = Symbol("already subscribed");

/** What Telegram calls a chat: a person's names in private, a group's title. */
export interface ChatNames {
  firstName?: string | undefined;
  username?: string | undefined;
  title?: string | undefined;
}

/** A chat joining a Dock: by its ID (`inviteId` null), through an invite link, or approved. */
export interface Joining {
  dockId: string;
  chatId: number;
  chatType: string;
  inviteId: string | null;
}

/**
 * Makes a chat's subscription active in `db` (a transaction, when the join goes with other
 * writes: a link's use, a request's approval); true when it was not active before. No
 * read-then-write: two presses of Yes at the same moment must both succeed, one of them finding
 * the work done. A chat coming back after it left starts afresh, through the link it came by (or
 * none); unblocking resumes (see SubscriptionsTable).
 */
export async function activate(
  db: Kysely<Database>,
  joining: Joining,
  now: number,
  /** The built-in sandbox plays Telegram: the chat is one of its (migration 0022). */
  sandbox: boolean,
): Promise<boolean> {
  const { dockId, chatId, chatType, inviteId } = joining;
  const reactivated = await db
    .updateTable("subscriptions")
    .set((eb) => ({
      state: "active",
      chat_type: chatType,
      updated_at: now,
      sandbox: sandbox ? 1 : 0,
      active_since: eb.case().when("state", "=", "removed").then(now).else(eb.ref("active_since")).end(),
      invite_id:
        inviteId !== null
          ? inviteId
          : eb.case().when("state", "=", "removed").then(null).else(eb.ref("invite_id")).end(),
    }))
    .where("dock_id", "=", dockId)
    .where("chat_id", "=", chatId)
    .where("state", "!=", "active")
    .executeTakeFirst();
  if (reactivated.numUpdatedRows > 0n) return true;
  const inserted = await db
    .insertInto("subscriptions")
    .values({
      dock_id: dockId,
      chat_id: chatId,
      chat_type: chatType,
      state: "active",
      created_at: now,
      updated_at: now,
      active_since: now,
      invite_id: inviteId,
      sandbox: sandbox ? 1 : 0,
    })
    .onConflict((oc) => oc.columns(["dock_id", "chat_id"]).doNothing())
    .executeTakeFirst();
  return Number(inserted.numInsertedOrUpdatedRows ?? 0n) > 0;
}

/**
 * Removes a chat from a Dock in `db` (a transaction): what was queued for it is not sent, and it
 * is told (once) that it was removed; a chat that had blocked the bot is not told (it cannot be).
 * True when it was subscribed.
 */
export async function removeChat(
  tx: Transaction<Database>,
  dockId: string,
  chatId: number,
  now: number,
): Promise<boolean> {
  const before = await tx
    .selectFrom("subscriptions")
    .select("state")
    .where("dock_id", "=", dockId)
    .where("chat_id", "=", chatId)
    .executeTakeFirst();
  if (before === undefined || before.state === "removed") return false;
  const removed = await tx
    .updateTable("subscriptions")
    .set({ state: "removed", updated_at: now })
    .where("dock_id", "=", dockId)
    .where("chat_id", "=", chatId)
    .where("state", "=", before.state)
    .executeTakeFirst();
  // Removed by someone else at the same moment: they tell it.
  if (removed.numUpdatedRows === 0n) return false;
  // Messages already queued for the chat are not sent either: removal takes effect now.
  await cancelForSubscriber(tx, dockId, chatId, now);
  const dock = await tx.selectFrom("docks").select("name").where("id", "=", dockId).executeTakeFirst();
  if (dock !== undefined && before.state === "active")
    await queueNotice(tx, { chatId, kind: "removed", dockName: dock.name }, now);
  return true;
}

/** Who receives a Dock's messages: one row per Dock × chat. */
export class SubscriptionRepository {
  readonly #db: Db;
  readonly #now: () => number;
  /** The built-in sandbox plays Telegram: chats subscribing are its (migration 0022). */
  readonly #sandbox: boolean;

  constructor(db: Db, now: () => number = Date.now, options: { sandbox?: boolean } = {}) {
    this.#db = db;
    this.#now = now;
    this.#sandbox = options.sandbox ?? false;
  }

  /**
   * Subscribes a chat (or reactivates its subscription); true when it was not active before.
   * `names` is what Telegram calls the chat: a person's name in private, a group's title.
   */
  async subscribe(dockId: string, chatId: number, chatType: string, names?: ChatNames): Promise<boolean> {
    const now = this.#now();
    await this.rememberNames(chatId, chatType, names);
    return activate(this.#db.kysely, { dockId, chatId, chatType, inviteId: null }, now, this.#sandbox);
  }

  /**
   * Subscribes a chat through an invite link: the link's use is counted with the subscription, or
   * neither happens. `refused`: the link no longer works (revoked, expired, used up: possibly by
   * someone else a moment ago); `already`: the chat was subscribed, and no use is counted.
   */
  async joinThrough(joining: Joining & { inviteId: string }): Promise<"joined" | "already" | "refused"> {
    const now = this.#now();
    const outcome = await this.#db.kysely
      .transaction()
      .execute(async (tx) => {
        if (!(await useInviteLink(tx, joining.inviteId, now))) return "refused" as const;
        if (!(await activate(tx, joining, now, this.#sandbox))) throw ALREADY;
        return "joined" as const;
      })
      .catch((error: unknown) => {
        if (error === ALREADY) return "already" as const;
        throw error;
      });
    return outcome;
  }

  /**
   * Remembers the name Telegram shows for a chat, so that the Dock's owner sees who it is (the
   * console's subscriber list, a join request), not a number.
   */
  async rememberNames(chatId: number, chatType: string, names: ChatNames | undefined): Promise<void> {
    if (names !== undefined && chatType === "private") {
      await rememberName(
        this.#db.kysely,
        { id: chatId, firstName: names.firstName, username: names.username },
        this.#now(),
      );
    } else if (names?.title !== undefined) {
      await this.nameChat(chatId, names.title);
    }
  }

  /**
   * A group's, supergroup's or channel's title as the bot sees it now (added, renamed): every Dock
   * it subscribes to shows the new one.
   */
  async nameChat(chatId: number, title: string | undefined): Promise<void> {
    await this.#db.kysely.transaction().execute(async (tx) => {
      const now = this.#now();
      if (!(await rememberTitle(tx, chatId, title, now))) return;
      // What the console shows of the chat's subscriptions changed: their time says so (the live
      // stream watches it, store/dock-stamps.ts).
      await tx.updateTable("subscriptions").set({ updated_at: now }).where("chat_id", "=", chatId).execute();
    });
  }

  /** The subscription state of one chat for one Dock, or undefined when it never subscribed. */
  async state(dockId: string, chatId: number): Promise<SubscriptionState | undefined> {
    const row = await this.#db.kysely
      .selectFrom("subscriptions")
      .select("state")
      .where("dock_id", "=", dockId)
      .where("chat_id", "=", chatId)
      .executeTakeFirst();
    return row?.state;
  }

  /** What a chat receives: its active subscriptions, oldest first (the order the bot lists them in). */
  async listActive(chatId: number): Promise<ChatSubscription[]> {
    const rows = await this.#db.kysely
      .selectFrom("subscriptions")
      .innerJoin("docks", "docks.id", "subscriptions.dock_id")
      .select(["subscriptions.dock_id", "docks.name", "subscriptions.created_at"])
      .where("subscriptions.chat_id", "=", chatId)
      .where("subscriptions.state", "=", "active")
      .orderBy("subscriptions.created_at")
      .orderBy("subscriptions.id")
      .execute();
    return rows.map((row) => ({ dockId: row.dock_id, dockName: row.name, subscribedAt: row.created_at }));
  }

  /**
   * Moves a chat's subscriptions from one state to another, leaving the rest alone: blocking the
   * bot pauses only the active ones, and unblocking resumes only those, never the ones the person
   * removed. Returns how many changed.
   */
  async transition(
    chatId: number,
    from: SubscriptionState,
    to: SubscriptionState,
    dockId?: string,
  ): Promise<number> {
    let query = this.#db.kysely
      .updateTable("subscriptions")
      .set({ state: to, updated_at: this.#now() })
      .where("chat_id", "=", chatId)
      .where("state", "=", from);
    if (dockId !== undefined) query = query.where("dock_id", "=", dockId);
    const result = await query.executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  /**
   * The bot is back in a group: its subscriptions a block had paused resume — those to private
   * Docks only with `privateToo` (an administrator of the group brought the bot back). How many
   * resumed, and how many stay paused.
   */
  async resumeGroup(chatId: number, privateToo: boolean): Promise<{ resumed: number; paused: number }> {
    let query = this.#db.kysely
      .updateTable("subscriptions")
      .set({ state: "active", updated_at: this.#now() })
      .where("chat_id", "=", chatId)
      .where("state", "=", "blocked");
    if (!privateToo)
      query = query.where("dock_id", "in", (eb) =>
        eb.selectFrom("docks").select("docks.id").where("docks.visibility", "=", "open"),
      );
    const resumed = Number((await query.executeTakeFirst()).numUpdatedRows);
    const paused = await this.#db.kysely
      .selectFrom("subscriptions")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("chat_id", "=", chatId)
      .where("state", "=", "blocked")
      .executeTakeFirstOrThrow();
    return { resumed, paused: Number(paused.n) };
  }

  /** A Dock's subscribers, active and blocked (removed ones are gone), oldest first. */
  async list(dockId: string): Promise<Subscriber[]> {
    const rows = await this.#db.kysely
      .selectFrom("subscriptions")
      // A private chat's id is the person's user id, so people who use the console get a name.
      .leftJoin("users", "users.telegram_id", "subscriptions.chat_id")
      .leftJoin("chats", "chats.chat_id", "subscriptions.chat_id")
      .leftJoin("dock_invites", "dock_invites.id", "subscriptions.invite_id")
      .select([
        "subscriptions.chat_id",
        "subscriptions.chat_type",
        "subscriptions.state",
        "subscriptions.created_at",
        "subscriptions.invite_id",
        "users.first_name",
        "users.username",
        "chats.title",
        "dock_invites.name as invite_name",
      ])
      .where("subscriptions.dock_id", "=", dockId)
      .where("subscriptions.state", "!=", "removed")
      .orderBy("subscriptions.id")
      .execute();
    return rows.map((row) => ({
      chatId: row.chat_id,
      chatType: row.chat_type,
      state: row.state,
      firstName: row.first_name,
      username: row.username,
      title: row.title,
      name: chatName(row.title, row.first_name, row.username),
      since: row.created_at,
      invite: row.invite_id === null ? null : { id: row.invite_id, name: row.invite_name },
    }));
  }

  /**
   * The owner removes a chat from a Dock: it stops receiving at once, and the bot tells it once
   * (a notice queued in the same transaction). True when it was subscribed. `by`: who removed it,
   * for the Dock's audit log.
   */
  async remove(dockId: string, chatId: number, by?: AuditBy): Promise<boolean> {
    const now = this.#now();
    return this.#db.kysely.transaction().execute(async (tx) => {
      const removed = await removeChat(tx, dockId, chatId, now);
      if (removed && by) await writeAuditBy(tx, dockId, by, "subscriber_removed", { chat_id: chatId }, now);
      return removed;
    });
  }

  /**
   * A group became a supergroup, which on Telegram is a new chat with a new id (`from` → `to`): its
   * subscriptions, its title and its queued deliveries follow it, states, times and order
   * unchanged. Safe to repeat (the bot's update and a refused send can both report the same move).
   */
  async moveChat(from: number, to: number): Promise<number> {
    const now = this.#now();
    return this.#db.kysely.transaction().execute(async (tx) => {
      // Should the new chat already be subscribed to a Dock, that subscription stands.
      await tx
        .deleteFrom("subscriptions")
        .where("chat_id", "=", from)
        .where("dock_id", "in", (eb) =>
          eb.selectFrom("subscriptions as s").select("s.dock_id").where("s.chat_id", "=", to),
        )
        .execute();
      const moved = await tx
        .updateTable("subscriptions")
        .set({ chat_id: to, chat_type: "supergroup", updated_at: now })
        .where("chat_id", "=", from)
        .executeTakeFirst();
      await followChat(tx, from, to, now);
      await followTitle(tx, from, to, now);
      return Number(moved.numUpdatedRows);
    });
  }
}
