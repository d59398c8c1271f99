import { type Kysely, sql } from "kysely";
import type { Db } from "./db.ts";
import type { Database, NoticeKind, NoticeState } from "./schema.ts";

/** A one-off notice: what to tell a chat, rendered by the bot (src/bot/texts.ts) when it goes. */
export interface NoticeText {
  chatId: number;
  kind: Exclude<NoticeKind, "request_copy">;
  /** The Dock's name at the time: the Dock may be gone when the notice is sent. */
  dockName: string;
  /** `request_outcome`: approved, declined or expired. */
  detail?: string;
}

/**
 * Queues a one-off notice in `db`, the transaction of what it tells (a removal, a request's end,
 * a Dock deleted): it is sent if and only if that commits, once (bar a crash mid-send).
 */
export async function queueNotice(db: Kysely<Database>, notice: NoticeText, now: number): Promise<void> {
  await db
    .insertInto("bot_notices")
    .values({
      chat_id: notice.chatId,
      kind: notice.kind,
      request_id: null,
      dock_name: notice.dockName,
      detail: notice.detail ?? null,
      message_id: null,
      state: "queued",
      next_attempt_at: now,
      lease_until: null,
      last_error: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
}

/**
 * Queues a one-off notice to every active subscriber of a Dock in `db`, in one statement however
 * many there are (a Dock deleted: its subscribers are told).
 */
export async function queueNoticeToSubscribers(
  db: Kysely<Database>,
  dockId: string,
  notice: Omit<NoticeText, "chatId">,
  now: number,
): Promise<void> {
  await db
    .insertInto("bot_notices")
    .columns([
      "chat_id",
      "kind",
      "dock_name",
      "detail",
      "state",
      "next_attempt_at",
      "created_at",
      "updated_at",
    ])
    .expression((eb) =>
      eb
        .selectFrom("subscriptions")
        // Typed in SQL: PostgreSQL would take the bare parameters of a select list for text.
        .select([
          "subscriptions.chat_id",
          sql<NoticeKind>`cast(${notice.kind} as text)`.as("kind"),
          sql<string>`cast(${notice.dockName} as text)`.as("dock_name"),
          sql<string | null>`cast(${notice.detail ?? null} as text)`.as("detail"),
          sql<NoticeState>`cast(${"queued"} as text)`.as("state"),
          sql<number>`cast(${now} as bigint)`.as("next_attempt_at"),
          sql<number>`cast(${now} as bigint)`.as("created_at"),
          sql<number>`cast(${now} as bigint)`.as("updated_at"),
        ])
        .where("subscriptions.dock_id", "=", dockId)
        .where("subscriptions.state", "=", "active"),
    )
    .execute();
}

/** Queues a copy of a new join request for each decider, in the transaction that makes it. */
export async function queueRequestCopies(
  db: Kysely<Database>,
  requestId: string,
  deciders: readonly number[],
  now: number,
): Promise<void> {
  if (deciders.length === 0) return;
  await db
    .insertInto("bot_notices")
    .values(
      deciders.map((chatId) => ({
        chat_id: chatId,
        kind: "request_copy" as const,
        request_id: requestId,
        dock_name: null,
        detail: null,
        message_id: null,
        state: "queued" as const,
        next_attempt_at: now,
        lease_until: null,
        last_error: null,
        created_at: now,
        updated_at: now,
      })),
    )
    .execute();
}

/**
 * The request changed (decided, expired): every copy of it is to show that. A copy sent is queued
 * to be edited; one being sent right now is left to its sender, who finds its version moved on
 * and queues it again once sent. Copies that could not be sent stay as they are.
 */
export async function requeueRequestCopies(
  db: Kysely<Database>,
  requestId: string,
  now: number,
): Promise<void> {
  await db
    .updateTable("bot_notices")
    .set((eb) => ({
      version: eb("version", "+", 1),
      state: eb
        .case()
        .when("state", "=", "done")
        .then("queued")
        .else(eb.ref("state"))
        .end()
        .$castTo<NoticeState>(),
      next_attempt_at: now,
      updated_at: now,
    }))
    .where("request_id", "=", requestId)
    .where("state", "!=", "failed")
    .execute();
}

/** A notice claimed for sending, with the lease and version its settling presents. */
export interface ClaimedNotice {
  id: number;
  chatId: number;
  kind: NoticeKind;
  requestId: string | null;
  dockName: string | null;
  detail: string | null;
  messageId: number | null;
  version: number;
  attempts: number;
  createdAt: number;
  lease: number;
}

/**
 * The bot's notices as a queue (see BotNoticesTable): claimed with a lease, settled presenting
 * it, queued again when the lease ran out (a sender that died). Any instance may send them: claims
 * are conditional updates, so one notice has one sender at a time.
 */
export class NoticeQueue {
  readonly #db: Db;
  readonly #now: () => number;
  readonly #listeners = new Set<() => void>();

  constructor(db: Db, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
  }

  /** Calls `listener` when this process queued notices (the sender looks at once, not at its next sweep). */
  onQueued(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Says that notices were queued here (after their transaction committed). */
  queued(): void {
    for (const listener of this.#listeners) listener();
  }

  /** The ids of notices due now, oldest first. */
  async due(limit: number): Promise<number[]> {
    const rows = await this.#db.kysely
      .selectFrom("bot_notices")
      .select("id")
      .where("state", "=", "queued")
      .where("next_attempt_at", "<=", this.#now())
      .orderBy("id")
      .limit(limit)
      .execute();
    return rows.map((row) => Number(row.id));
  }

  /** When the next queued notice is due (ms), or null when none waits. */
  async nextDue(): Promise<number | null> {
    const row = await this.#db.kysely
      .selectFrom("bot_notices")
      .select((eb) => eb.fn.min("next_attempt_at").as("at"))
      .where("state", "=", "queued")
      .executeTakeFirst();
    return row?.at == null ? null : Number(row.at);
  }

  /** Takes a notice for sending until `lease`; undefined when someone else has it (or it is gone). */
  async claim(id: number, lease: number): Promise<ClaimedNotice | undefined> {
    const row = await this.#db.kysely
      .updateTable("bot_notices")
      .set((eb) => ({
        state: "sending",
        lease_until: lease,
        attempts: eb("attempts", "+", 1),
        updated_at: this.#now(),
      }))
      .where("id", "=", id)
      .where("state", "=", "queued")
      .returning([
        "id",
        "chat_id",
        "kind",
        "request_id",
        "dock_name",
        "detail",
        "message_id",
        "version",
        "attempts",
        "created_at",
      ])
      .executeTakeFirst();
    if (row === undefined) return undefined;
    return {
      id: Number(row.id),
      chatId: Number(row.chat_id),
      kind: row.kind,
      requestId: row.request_id,
      dockName: row.dock_name,
      detail: row.detail,
      messageId: row.message_id === null ? null : Number(row.message_id),
      version: Number(row.version),
      attempts: Number(row.attempts),
      createdAt: Number(row.created_at),
      lease,
    };
  }

  /**
   * Sent (or edited). A copy's message is recorded whatever raced; its request changed meanwhile
   * (the version moved on), it is queued again to show the change. False: the lease was lost.
   */
  async done(notice: ClaimedNotice, messageId: number | null = notice.messageId): Promise<boolean> {
    const now = this.#now();
    if (messageId !== null && messageId !== notice.messageId) {
      await this.#db.kysely
        .updateTable("bot_notices")
        .set({ message_id: messageId })
        .where("id", "=", notice.id)
        .execute();
    }
    const result = await this.#db.kysely
      .updateTable("bot_notices")
      .set((eb) => ({
        state: eb
          .case()
          .when("version", "=", notice.version)
          .then("done")
          .else("queued")
          .end()
          .$castTo<NoticeState>(),
        lease_until: null,
        last_error: null,
        next_attempt_at: now,
        updated_at: now,
      }))
      .where("id", "=", notice.id)
      .where("state", "=", "sending")
      .where("lease_until", "=", notice.lease)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** Not sent this time: tried again at `at`. */
  async retry(notice: ClaimedNotice, at: number, error: string): Promise<boolean> {
    return this.#settle(notice, { state: "queued", next_attempt_at: at, last_error: error });
  }

  /**
   * Never tried: its sender stopped before the notice's turn came. Queued again, due now, and its
   * claim not counted as an attempt (the backoff of later failures stays as it was).
   */
  async putBack(notice: ClaimedNotice, reason: string): Promise<boolean> {
    const result = await this.#db.kysely
      .updateTable("bot_notices")
      .set((eb) => ({
        state: "queued",
        next_attempt_at: this.#now(),
        last_error: reason,
        attempts: eb("attempts", "-", 1),
        lease_until: null,
        updated_at: this.#now(),
      }))
      .where("id", "=", notice.id)
      .where("state", "=", "sending")
      .where("lease_until", "=", notice.lease)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** Not sent, for good (the chat is gone, Telegram refuses it, or it is too old to matter). */
  async failed(notice: ClaimedNotice, error: string): Promise<boolean> {
    return this.#settle(notice, { state: "failed", last_error: error });
  }

  async #settle(
    notice: ClaimedNotice,
    values: { state: "queued" | "failed"; last_error: string; next_attempt_at?: number },
  ): Promise<boolean> {
    const result = await this.#db.kysely
      .updateTable("bot_notices")
      .set({ ...values, lease_until: null, updated_at: this.#now() })
      .where("id", "=", notice.id)
      .where("state", "=", "sending")
      .where("lease_until", "=", notice.lease)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** Notices left `sending` by a sender that died: queued again once their lease has passed. */
  async requeueExpired(): Promise<number> {
    const now = this.#now();
    const result = await this.#db.kysely
      .updateTable("bot_notices")
      .set({ state: "queued", lease_until: null, next_attempt_at: now, updated_at: now })
      .where("state", "=", "sending")
      .where("lease_until", "<", now)
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  /** Removes one-off notices sent or given up on before `cutoff` (copies go with their requests). */
  async prune(cutoff: number): Promise<number> {
    const result = await this.#db.kysely
      .deleteFrom("bot_notices")
      .where("kind", "!=", "request_copy")
      .where("state", "in", ["done", "failed"])
      .where("updated_at", "<", cutoff)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
