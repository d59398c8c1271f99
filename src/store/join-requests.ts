import type { Kysely, Transaction } from "kysely";
import { randomBase62 } from "../domain/ids.ts";
import { writeAuditBy } from "./audit.ts";
import { chatName } from "./chats.ts";
import type { Db } from "./db.ts";
import { banChat, isBanned } from "./dock-bans.ts";
import { audienceChanged } from "./dock-stamps.ts";
import { queueNotice, queueRequestCopies, requeueRequestCopies } from "./notices.ts";
import type { Database, JoinRequestState } from "./schema.ts";
import { activate } from "./subscriptions.ts";

/** A join request with everything its copies in the bot and the console's queue show. */
export interface JoinRequest {
  id: string;
  dockId: string;
  dockName: string;
  chatId: number;
  chatType: string;
  /** The chat as the console names it: a group's title, a person's name (null: unknown). */
  chatName: string | null;
  /** Who asked: the person, or in a group the administrator who asked for it. */
  requester: { id: number; name: string | null };
  /** A group's member count when it asked; null in private. */
  memberCount: number | null;
  /** The invite link it came through; null: the Dock ID. */
  invite: { id: string; name: string | null } | null;
  state: JoinRequestState;
  createdAt: number;
  expiresAt: number;
  decidedBy: { id: number; name: string | null } | null;
  decidedAt: number | null;
}

/** Who asks to join: the chat, who asked in it, and how they came. */
export interface Asking {
  dockId: string;
  chatId: number;
  chatType: string;
  userId: number;
  inviteId: string | null;
  memberCount: number | null;
}

/** What asking to join came to. */
export type AskOutcome =
  | { kind: "sent"; request: JoinRequest }
  /** The chat has a request waiting already. */
  | { kind: "pending"; request: JoinRequest }
  | { kind: "subscribed" }
  | { kind: "banned" }
  /** The invite link it came through no longer works (revoked, expired, used up). */
  | { kind: "link_refused" };

/** What a decision came to: made now, or the request had already ended (how, by whom). */
export type DecideOutcome =
  | { kind: "decided"; request: JoinRequest }
  | { kind: "ended"; request: JoinRequest }
  | { kind: "not_found" };

/**
 * Thrown to roll back a transaction that found there was nothing to do: what to answer, or null
 * when the chat has a request waiting (read once the transaction is over).
 */
class Nothing {
  readonly outcome: AskOutcome | null;
  constructor(outcome: AskOutcome | null) {
    this.outcome = outcome;
  }
}

/** The join request and what is shown with it, read in one query. */
function requestQuery(db: Kysely<Database>) {
  return db
    .selectFrom("join_requests as r")
    .innerJoin("docks", "docks.id", "r.dock_id")
    .leftJoin("users as asker", "asker.telegram_id", "r.user_id")
    .leftJoin("users as member", "member.telegram_id", "r.chat_id")
    .leftJoin("chats", "chats.chat_id", "r.chat_id")
    .leftJoin("dock_invites", "dock_invites.id", "r.invite_id")
    .leftJoin("users as decider", "decider.telegram_id", "r.decided_by")
    .select([
      "r.id",
      "r.dock_id",
      "docks.name as dock_name",
      "r.chat_id",
      "r.chat_type",
      "r.user_id",
      "r.member_count",
      "r.invite_id",
      "r.state",
      "r.created_at",
      "r.expires_at",
      "r.decided_by",
      "r.decided_at",
      "asker.first_name as asker_first_name",
      "asker.username as asker_username",
      "member.first_name as member_first_name",
      "member.username as member_username",
      "chats.title",
      "dock_invites.name as invite_name",
      "decider.first_name as decider_first_name",
      "decider.username as decider_username",
    ]);
}

type RequestRow = Awaited<ReturnType<ReturnType<typeof requestQuery>["executeTakeFirstOrThrow"]>>;

function toRequest(row: RequestRow): JoinRequest {
  return {
    id: row.id,
    dockId: row.dock_id,
    dockName: row.dock_name,
    chatId: Number(row.chat_id),
    chatType: row.chat_type,
    chatName: chatName(row.title, row.member_first_name, row.member_username),
    requester: { id: Number(row.user_id), name: chatName(null, row.asker_first_name, row.asker_username) },
    memberCount: row.member_count,
    invite: row.invite_id === null ? null : { id: row.invite_id, name: row.invite_name },
    state: row.state,
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
    decidedBy:
      row.decided_by === null
        ? null
        : {
            id: Number(row.decided_by),
            name: chatName(null, row.decider_first_name, row.decider_username),
          },
    decidedAt: row.decided_at === null ? null : Number(row.decided_at),
  };
}

/**
 * Join requests (issue 37): a chat asks to join a Dock (an `approval` Dock, or an invite link that
 * asks); each of the Dock's deciders gets a copy in the bot (store/notices.ts); one decides — the
 * first decision wins, a conditional update — and every copy then shows it, the requester is told,
 * and an approval subscribes the chat in the same transaction. Unanswered, a request expires after
 * `ttlMs` (expireDue, run by the notice sender's sweep).
 */
export class JoinRequestRepository {
  readonly #db: Db;
  readonly #now: () => number;
  readonly #ttlMs: number;
  /** The built-in sandbox plays Telegram: chats approved are its (migration 0022). */
  readonly #sandbox: boolean;

  constructor(db: Db, options: { ttlMs: number; now?: () => number; sandbox?: boolean }) {
    this.#db = db;
    this.#ttlMs = options.ttlMs;
    this.#now = options.now ?? Date.now;
    this.#sandbox = options.sandbox ?? false;
  }

  /**
   * A chat asks to join: a pending request and a copy of it for each of `deciders`, unless the chat
   * is subscribed, banned, has a request waiting, or came through a link that no longer works. A
   * request that ended before is replaced.
   */
  async ask(asking: Asking, deciders: readonly number[]): Promise<AskOutcome> {
    const stale = await this.#db.kysely
      .selectFrom("join_requests")
      .select("id")
      .where("dock_id", "=", asking.dockId)
      .where("chat_id", "=", asking.chatId)
      .where("state", "=", "pending")
      .where("expires_at", "<=", this.#now())
      .executeTakeFirst();
    // A request whose time ran out before the sweep saw it ends as it would have (its copies say so).
    if (stale !== undefined) await this.#expire(stale.id);
    const now = this.#now();
    const id = `jr_${randomBase62(64)}`;
    try {
      await this.#db.kysely.transaction().execute(async (tx) => {
        if (await isBanned(tx, asking.dockId, asking.chatId)) throw new Nothing({ kind: "banned" });
        const subscription = await tx
          .selectFrom("subscriptions")
          .select("state")
          .where("dock_id", "=", asking.dockId)
          .where("chat_id", "=", asking.chatId)
          .executeTakeFirst();
        if (subscription?.state === "active") throw new Nothing({ kind: "subscribed" });
        if (asking.inviteId !== null && !(await linkWorks(tx, asking.inviteId, now)))
          throw new Nothing({ kind: "link_refused" });
        await tx
          .deleteFrom("join_requests")
          .where("dock_id", "=", asking.dockId)
          .where("chat_id", "=", asking.chatId)
          .where("state", "!=", "pending")
          .execute();
        const inserted = await tx
          .insertInto("join_requests")
          .values({
            id,
            dock_id: asking.dockId,
            chat_id: asking.chatId,
            chat_type: asking.chatType,
            user_id: asking.userId,
            invite_id: asking.inviteId,
            member_count: asking.memberCount,
            state: "pending",
            created_at: now,
            expires_at: now + this.#ttlMs,
            decided_by: null,
            decided_at: null,
            updated_at: now,
          })
          .onConflict((oc) => oc.columns(["dock_id", "chat_id"]).doNothing())
          .executeTakeFirst();
        if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 0) throw new Nothing(null);
        await queueRequestCopies(tx, id, deciders, now);
        await audienceChanged(tx, asking.dockId, now);
      });
    } catch (error) {
      if (!(error instanceof Nothing)) throw error;
      if (error.outcome !== null) return error.outcome;
      // The insert met a request of the chat that is waiting (one that ended was deleted above).
      const waiting = await this.#pendingOf(asking.dockId, asking.chatId);
      return waiting === undefined ? this.ask(asking, deciders) : { kind: "pending", request: waiting };
    }
    return { kind: "sent", request: (await this.get(id)) as JoinRequest };
  }

  async #pendingOf(dockId: string, chatId: number): Promise<JoinRequest | undefined> {
    const row = await requestQuery(this.#db.kysely)
      .where("r.dock_id", "=", dockId)
      .where("r.chat_id", "=", chatId)
      .where("r.state", "=", "pending")
      .executeTakeFirst();
    return row && toRequest(row);
  }

  /** The request, whatever its state; undefined when there is none (or its Dock is gone). */
  async get(id: string): Promise<JoinRequest | undefined> {
    const row = await requestQuery(this.#db.kysely).where("r.id", "=", id).executeTakeFirst();
    return row && toRequest(row);
  }

  /** The Dock's requests waiting for a decision, oldest first. */
  async pending(dockId: string): Promise<JoinRequest[]> {
    const rows = await requestQuery(this.#db.kysely)
      .where("r.dock_id", "=", dockId)
      .where("r.state", "=", "pending")
      .where("r.expires_at", ">", this.#now())
      .orderBy("r.created_at")
      .orderBy("r.id")
      .execute();
    return rows.map(toRequest);
  }

  /** The chat's requests waiting for a decision, oldest first (its "My subscriptions"). */
  async pendingOfChat(chatId: number): Promise<{ dockId: string; dockName: string }[]> {
    const rows = await this.#db.kysely
      .selectFrom("join_requests")
      .innerJoin("docks", "docks.id", "join_requests.dock_id")
      .select(["join_requests.dock_id", "docks.name"])
      .where("join_requests.chat_id", "=", chatId)
      .where("join_requests.state", "=", "pending")
      .where("join_requests.expires_at", ">", this.#now())
      .orderBy("join_requests.created_at")
      .execute();
    return rows.map((row) => ({ dockId: row.dock_id, dockName: row.name }));
  }

  /**
   * Approves or declines a request of the Dock, as `by` (whom the caller checked may decide):
   * of two decisions at once the first wins and the second finds it ended. Approving subscribes
   * the chat (through its link, which counts the use: the owner decided, whatever its limit);
   * declining with `ban` also bans the chat. Every copy is queued to show the decision, the
   * requester is told, and the audit log's entries are written, all in one transaction.
   */
  async decide(
    dockId: string,
    requestId: string,
    decision: "approved" | "declined",
    by: number,
    options: { ban?: boolean } = {},
  ): Promise<DecideOutcome> {
    const now = this.#now();
    const decided = await this.#db.kysely
      .transaction()
      .execute(async (tx) =>
        decideIn(
          tx,
          { dockId, requestId, decision, by, ban: options.ban ?? false, sandbox: this.#sandbox },
          now,
        ),
      );
    if (!decided) {
      // Ended already, or its time ran out before the sweep saw it: that is what happened.
      await this.#expire(requestId);
      const request = await this.get(requestId);
      return request === undefined || request.dockId !== dockId
        ? { kind: "not_found" }
        : { kind: "ended", request };
    }
    return { kind: "decided", request: (await this.get(requestId)) as JoinRequest };
  }

  /** Ends the request if it is pending past its time; true when this call ended it. */
  async #expire(requestId: string): Promise<boolean> {
    const now = this.#now();
    return this.#db.kysely.transaction().execute(async (tx) => {
      const row = await tx
        .updateTable("join_requests")
        .set({ state: "expired", updated_at: now })
        .where("id", "=", requestId)
        .where("state", "=", "pending")
        .where("expires_at", "<=", now)
        .returning(["dock_id", "chat_id"])
        .executeTakeFirst();
      if (row === undefined) return false;
      await told(tx, requestId, row.dock_id, Number(row.chat_id), "expired", now);
      return true;
    });
  }

  /** Ends the requests whose time ran out (each once, whoever else sweeps); how many it ended. */
  async expireDue(limit = 100): Promise<number> {
    const due = await this.#db.kysely
      .selectFrom("join_requests")
      .select("id")
      .where("state", "=", "pending")
      .where("expires_at", "<=", this.#now())
      .orderBy("expires_at")
      .limit(limit)
      .execute();
    let expired = 0;
    for (const { id } of due) if (await this.#expire(id)) expired++;
    return expired;
  }

  /** Deletes requests that ended before `cutoff` (retention; their copies go with them). */
  async prune(cutoff: number): Promise<number> {
    const result = await this.#db.kysely
      .deleteFrom("join_requests")
      .where("state", "!=", "pending")
      .where("updated_at", "<", cutoff)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}

/**
 * Decides a request of the Dock in `tx` as `by`, if it is still waiting and in time (see
 * JoinRequestRepository.decide): the chat subscribed or declined (and banned, with `ban`), every
 * copy queued to show it, the requester told, the decision (and the ban) written to the audit log.
 * False: nothing was decided.
 */
export async function decideIn(
  tx: Transaction<Database>,
  decision: {
    dockId: string;
    requestId: string;
    decision: "approved" | "declined";
    by: number;
    ban: boolean;
    /** The built-in sandbox plays Telegram: a chat approved is its (migration 0022). */
    sandbox?: boolean;
  },
  now: number,
): Promise<boolean> {
  const { dockId, requestId, by } = decision;
  const row = await tx
    .updateTable("join_requests")
    .set({ state: decision.decision, decided_by: by, decided_at: now, updated_at: now })
    .where("id", "=", requestId)
    .where("dock_id", "=", dockId)
    .where("state", "=", "pending")
    .where("expires_at", ">", now)
    .returning(["chat_id", "chat_type", "invite_id"])
    .executeTakeFirst();
  if (row === undefined) return false;
  const chatId = Number(row.chat_id);
  let banned = false;
  if (decision.decision === "approved") {
    await activate(
      tx,
      { dockId, chatId, chatType: row.chat_type, inviteId: row.invite_id },
      now,
      decision.sandbox ?? false,
    );
    if (row.invite_id !== null) {
      await tx
        .updateTable("dock_invites")
        .set((eb) => ({ uses: eb("uses", "+", 1), updated_at: now }))
        .where("id", "=", row.invite_id)
        .execute();
    }
  } else if (decision.ban) {
    banned = await banChat(tx, dockId, chatId, by, now);
  }
  await told(tx, requestId, dockId, chatId, decision.decision, now);
  const actor = { actor: by };
  await writeAuditBy(
    tx,
    dockId,
    actor,
    decision.decision === "approved" ? "request_approved" : "request_declined",
    { request_id: requestId, chat_id: chatId, invite_id: row.invite_id },
    now,
  );
  if (banned) await writeAuditBy(tx, dockId, actor, "subscriber_banned", { chat_id: chatId }, now);
  return true;
}

/** The id of the chat's request to the Dock still waiting and in time, read in `tx`; undefined: none. */
export async function waitingRequest(
  tx: Transaction<Database>,
  dockId: string,
  chatId: number,
  now: number,
): Promise<string | undefined> {
  const row = await tx
    .selectFrom("join_requests")
    .select("id")
    .where("dock_id", "=", dockId)
    .where("chat_id", "=", chatId)
    .where("state", "=", "pending")
    .where("expires_at", ">", now)
    .executeTakeFirst();
  return row?.id;
}

/** The request ended: every copy is to show it, and the chat that asked is told. */
async function told(
  tx: Transaction<Database>,
  requestId: string,
  dockId: string,
  chatId: number,
  outcome: "approved" | "declined" | "expired",
  now: number,
): Promise<void> {
  await requeueRequestCopies(tx, requestId, now);
  await audienceChanged(tx, dockId, now);
  const dock = await tx.selectFrom("docks").select("name").where("id", "=", dockId).executeTakeFirst();
  if (dock !== undefined)
    await queueNotice(tx, { chatId, kind: "request_outcome", dockName: dock.name, detail: outcome }, now);
}

/** Whether an invite link still lets someone in (or ask to): not revoked, not expired, under its limit. */
async function linkWorks(db: Kysely<Database>, inviteId: string, now: number): Promise<boolean> {
  const row = await db
    .selectFrom("dock_invites")
    .select("id")
    .where("id", "=", inviteId)
    .where("revoked_at", "is", null)
    .where((eb) => eb.or([eb("expires_at", "is", null), eb("expires_at", ">", now)]))
    .where((eb) => eb.or([eb("usage_limit", "is", null), eb("uses", "<", eb.ref("usage_limit"))]))
    .executeTakeFirst();
  return row !== undefined;
}
