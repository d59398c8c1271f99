import type { MessageContent } from "../domain/message-options.ts";
import { type ChangeCounts, type CopyChange, latestChanges } from "./copy-changes.ts";
import type { Db } from "./db.ts";
import { type EscalationStatus, escalationStatus } from "./escalations.ts";
import {
  type HistoryPage,
  type HistoryQuery,
  type MessageDetail,
  messageDetail,
  messageHistory,
  parseContent,
} from "./message-history.ts";
import { parseIds } from "./outbox.ts";
import { type ReminderStatus, reminderStatus } from "./reminders.ts";
import type { DeliveryState } from "./schema.ts";
import { addUncreatedCopies } from "./uncreated-copies.ts";

export interface MessageStatus {
  id: string;
  /** How the message is shown beyond its text; null for plain text. */
  content: MessageContent | null;
  key: string | null;
  revision: number;
  revisedAt: number | null;
  deletedAt: number | null;
  acknowledged: { by: { id: number; name: string }; at: number } | null;
  createdAt: number;
  subscribers: number;
  counts: Record<"queued" | "sent" | "failed" | "gone", number>;
  changes: ChangeCounts;
  deliveries: {
    chatId: number;
    state: DeliveryState;
    attempts: number;
    lastError: string | null;
    telegramMessageIds: number[];
    updatedAt: number;
    /** The revision the copy shows (once sent). */
    revision: number | null;
    /** Attempts whose outcome was never recorded: the chat may hold a copy from each (outbox.ts). */
    unknownAttempts: number;
    /** Copies from such attempts that Telegram named since, still to be removed. */
    strayTelegramMessageIds: number[];
    edit: CopyChange | null;
    delete: CopyChange | null;
  }[];
  /** What the Dock's callback URL was sent about this message. */
  events: { type: string; state: string; attempts: number; lastError: string | null; updatedAt: number }[];
  /** Its reminders until acknowledged (store/reminders.ts); null when it asked for none. */
  reminders: ReminderStatus | null;
  /** Its escalation (store/escalations.ts); null when it has none and no step of one added it. */
  escalation: EscalationStatus | null;
}

/**
 * What the outbox looks like from outside, read-only: a message's status (the send API's
 * `GET /messages/:id`), the backlog (metrics), a Dock's message history and a message's copies (the
 * console; message-history.ts). The states are the ones outbox.ts moves deliveries through.
 */
export class OutboxViews {
  readonly #db: Db;
  readonly #now: () => number;

  constructor(db: Db, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
  }

  /**
   * Queue depth and the age of the oldest queued delivery (for metrics). Messages not fanned out
   * yet count with the subscribers they were accepted for. Those can be millions (Telegram down
   * for hours): they are summed `chunk` rows per statement, so that on SQLite, whose one
   * connection the accepts share, no send waits for more than one chunk.
   */
  async backlog(chunk = 20_000): Promise<{ queued: number; oldestCreatedAt: number | null }> {
    let queued = 0;
    let oldest: number | null = null;
    const seen = (createdAt: unknown) => {
      if (createdAt !== null) oldest = Math.min(oldest ?? Number.POSITIVE_INFINITY, Number(createdAt));
    };
    for (let after = 0; ; ) {
      const part = await this.#db.kysely
        .selectFrom((db) =>
          db
            .selectFrom("fanouts")
            .select(["id", "subscribers", "created_at"])
            .where("id", ">", after)
            .orderBy("id")
            .limit(chunk)
            .as("part"),
        )
        .select((eb) => [
          eb.fn.countAll<number>().as("rows"),
          eb.fn.sum<number>("subscribers").as("n"),
          eb.fn.min("created_at").as("oldest"),
          eb.fn.max("id").as("last"),
        ])
        .executeTakeFirstOrThrow();
      queued += Number(part.n ?? 0);
      seen(part.oldest);
      if (Number(part.rows) < chunk) break;
      after = Number(part.last);
    }
    // Read last: a message fanned out meanwhile is counted twice (as waiting and as deliveries)
    // rather than not at all.
    const row = await this.#db.kysely
      .selectFrom("deliveries")
      .select((eb) => [eb.fn.countAll<number>().as("n"), eb.fn.min("created_at").as("oldest")])
      .where("state", "in", ["queued", "sending"])
      .executeTakeFirstOrThrow();
    queued += Number(row.n);
    seen(row.oldest);
    return { queued, oldestCreatedAt: oldest };
  }

  /** A message's delivery state for its Dock; undefined when the message is not that Dock's. */
  async status(messageId: string, dockId: string): Promise<MessageStatus | undefined> {
    const message = await this.#db.kysely
      .selectFrom("messages")
      .select([
        "id",
        "created_at",
        "subscribers",
        "content",
        "key",
        "revision",
        "revised_at",
        "deleted_at",
        "acked_by",
        "acked_name",
        "acked_at",
      ])
      .where("id", "=", messageId)
      .where("dock_id", "=", dockId)
      .executeTakeFirst();
    if (!message) return undefined;
    // Waiting to be fanned out? Read before the deliveries (see addUncreatedCopies).
    const fanouts = await this.#db.kysely
      .selectFrom("fanouts")
      .select(["kind", "created_at"])
      .where("message_id", "=", messageId)
      .execute();
    const waiting = fanouts.some((row) => row.kind === "send");
    const change = (kind: string) => fanouts.find((row) => row.kind === kind)?.created_at ?? null;
    const all = await this.#db.kysely
      .selectFrom("deliveries")
      .select([
        "id",
        "kind",
        "target_id",
        "chat_id",
        "state",
        "attempts",
        "last_error",
        "telegram_message_ids",
        "updated_at",
        "revision",
        "outcome",
        "unknown_attempts",
        "stray_ids",
      ])
      .where("message_id", "=", messageId)
      .orderBy("id")
      .execute();
    const rows = all.filter((row) => row.kind === "send");
    const changes = latestChanges(all, { edit: change("edit"), delete: change("delete") });
    const counts = { queued: 0, sent: 0, failed: 0, gone: 0 };
    for (const row of rows) counts[row.state === "sending" ? "queued" : row.state]++;
    addUncreatedCopies(counts, message.subscribers, rows.length, waiting);
    const events = await this.#db.kysely
      .selectFrom("events")
      .select(["type", "state", "attempts", "last_error", "updated_at"])
      .where("message_id", "=", messageId)
      .orderBy("id")
      .execute();
    return {
      id: message.id,
      content: parseContent(message.content),
      key: message.key,
      revision: message.revision,
      revisedAt: message.revised_at,
      deletedAt: message.deleted_at,
      acknowledged:
        message.acked_at === null
          ? null
          : {
              by: { id: Number(message.acked_by), name: message.acked_name ?? "" },
              at: Number(message.acked_at),
            },
      createdAt: message.created_at,
      subscribers: message.subscribers,
      counts,
      changes: changes.counts,
      deliveries: rows.map((r) => ({
        chatId: r.chat_id,
        state: r.state,
        attempts: r.attempts,
        lastError: r.last_error,
        telegramMessageIds: parseIds(r.telegram_message_ids),
        updatedAt: r.updated_at,
        revision: r.revision,
        unknownAttempts: r.unknown_attempts,
        strayTelegramMessageIds: parseIds(r.stray_ids),
        edit: changes.edits.get(Number(r.id)) ?? null,
        delete: changes.deletes.get(Number(r.id)) ?? null,
      })),
      events: events.map((e) => ({
        type: e.type,
        state: e.state,
        attempts: e.attempts,
        lastError: e.last_error,
        updatedAt: e.updated_at,
      })),
      reminders: await reminderStatus(this.#db.kysely, messageId, this.#now()),
      escalation: await escalationStatus(this.#db.kysely, messageId),
    };
  }

  /**
   * A page of the Dock's messages, newest first, found by text or key and by where their copies
   * stand (see message-history.ts).
   */
  history(dockId: string, query: HistoryQuery): Promise<HistoryPage> {
    return messageHistory(this.#db, dockId, query);
  }

  /** One of the Dock's messages with a page of its copies; undefined when it is not that Dock's. */
  detail(
    dockId: string,
    messageId: string,
    copies: { limit: number; after: number },
  ): Promise<MessageDetail | undefined> {
    return messageDetail(this.#db, dockId, messageId, copies);
  }
}
