import type { MessageContent } from "../domain/message-options.ts";
import type { Db } from "./db.ts";
import { parseIds } from "./outbox.ts";
import type { DeliveryState } from "./schema.ts";

export interface MessageStatus {
  id: string;
  /** How the message is shown beyond its text; null for plain text. */
  content: MessageContent | null;
  createdAt: number;
  subscribers: number;
  counts: Record<"queued" | "sent" | "failed" | "gone", number>;
  deliveries: {
    chatId: number;
    state: DeliveryState;
    attempts: number;
    lastError: string | null;
    telegramMessageIds: number[];
    updatedAt: number;
  }[];
}

/** One recipient's delivery of a message, as the owner sees it on the Dock card. */
export interface DeliveryLine {
  chatId: number;
  state: DeliveryState;
  lastError: string | null;
  updatedAt: number;
}

/** A recent message of a Dock with where each of its deliveries stands. */
export interface MessageReport {
  id: string;
  text: string;
  /** How the message is shown beyond its text; null for plain text. */
  content: MessageContent | null;
  createdAt: number;
  subscribers: number;
  /** How many deliveries are in each state (states with none are left out). */
  states: Partial<Record<DeliveryState, number>>;
  deliveries: DeliveryLine[];
}

const parseContent = (json: string | null): MessageContent | null =>
  json === null ? null : (JSON.parse(json) as MessageContent);

/** Deliveries listed per message on the card; the counts always cover them all. */
const DELIVERIES_SHOWN = 20;

/**
 * What the outbox looks like from outside, read-only: a message's status (the send API's
 * `GET /messages/:id`), the backlog (metrics), a Dock's recent messages (the console's card). The
 * states are the ones outbox.ts moves deliveries through.
 */
export class OutboxViews {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
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
      .select(["id", "created_at", "subscribers", "content"])
      .where("id", "=", messageId)
      .where("dock_id", "=", dockId)
      .executeTakeFirst();
    if (!message) return undefined;
    // Waiting to be fanned out? Read before the deliveries: the fan-out deletes this row and
    // creates the deliveries in one commit, so this order never misses both.
    const waiting = await this.#db.kysely
      .selectFrom("fanouts")
      .select("id")
      .where("message_id", "=", messageId)
      .executeTakeFirst();
    const rows = await this.#db.kysely
      .selectFrom("deliveries")
      .select(["chat_id", "state", "attempts", "last_error", "telegram_message_ids", "updated_at"])
      .where("message_id", "=", messageId)
      .orderBy("id")
      .execute();
    const counts = { queued: 0, sent: 0, failed: 0, gone: 0 };
    for (const row of rows) counts[row.state === "sending" ? "queued" : row.state]++;
    // Deliveries not created: still to come while the message waits; otherwise those subscribers
    // left before the dispatcher got to the message.
    const missing = message.subscribers - rows.length;
    if (missing > 0) counts[waiting ? "queued" : "gone"] += missing;
    return {
      id: message.id,
      content: parseContent(message.content),
      createdAt: message.created_at,
      subscribers: message.subscribers,
      counts,
      deliveries: rows.map((r) => ({
        chatId: r.chat_id,
        state: r.state,
        attempts: r.attempts,
        lastError: r.last_error,
        telegramMessageIds: parseIds(r.telegram_message_ids),
        updatedAt: r.updated_at,
      })),
    };
  }

  /** The Dock's `limit` newest messages, newest first. */
  async recent(dockId: string, limit: number): Promise<MessageReport[]> {
    const messages = await this.#db.kysely
      .selectFrom("messages")
      .select(["id", "text", "content", "created_at", "subscribers"])
      .where("dock_id", "=", dockId)
      .orderBy("created_at", "desc")
      .orderBy("id", "desc")
      .limit(limit)
      .execute();
    if (messages.length === 0) return [];
    // Read before the deliveries: the fan-out deletes these rows and creates the deliveries in one
    // commit, so this order never misses both.
    const waiting = new Set(
      (
        await this.#db.kysely
          .selectFrom("fanouts")
          .select("message_id")
          .where(
            "message_id",
            "in",
            messages.map((m) => m.id),
          )
          .execute()
      ).map((row) => row.message_id),
    );
    const deliveries = await this.#db.kysely
      .selectFrom("deliveries")
      .select(["message_id", "chat_id", "state", "last_error", "updated_at"])
      .where(
        "message_id",
        "in",
        messages.map((m) => m.id),
      )
      .orderBy("id")
      .execute();
    const reports = new Map<string, MessageReport>(
      messages.map((m) => [
        m.id,
        {
          id: m.id,
          text: m.text,
          content: parseContent(m.content),
          createdAt: m.created_at,
          subscribers: m.subscribers,
          states: {},
          deliveries: [],
        },
      ]),
    );
    for (const d of deliveries) {
      const report = reports.get(d.message_id);
      if (!report) continue;
      report.states[d.state] = (report.states[d.state] ?? 0) + 1;
      if (report.deliveries.length < DELIVERIES_SHOWN) {
        report.deliveries.push({
          chatId: d.chat_id,
          state: d.state,
          lastError: d.last_error,
          updatedAt: d.updated_at,
        });
      }
    }
    for (const report of reports.values()) {
      // Deliveries not created: still to come while the message waits to be fanned out;
      // otherwise those subscribers left before the dispatcher got to it.
      const missing = report.subscribers - Object.values(report.states).reduce((a, b) => a + b, 0);
      if (missing <= 0) continue;
      const state = waiting.has(report.id) ? "queued" : "gone";
      report.states[state] = (report.states[state] ?? 0) + missing;
    }
    return [...reports.values()];
  }
}
