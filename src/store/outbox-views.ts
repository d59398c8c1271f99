import type { MessageContent } from "../domain/message-options.ts";
import type { Db } from "./db.ts";
import { parseIds } from "./outbox.ts";
import type { DeliveryState } from "./schema.ts";

/** The latest edit or delete of a copy: where it stands and what it came to. */
export interface CopyChange {
  state: DeliveryState;
  /** edited, unchanged, resent; deleted, already_deleted, not_deleted (once done). */
  outcome: string | null;
  lastError: string | null;
  updatedAt: number;
}

/** How the API and the console name where an edit or a delete stands. */
export type ChangeState = "queued" | "done" | "failed" | "gone";

export function changeState(state: DeliveryState): ChangeState {
  if (state === "queued" || state === "sending") return "queued";
  return state === "sent" ? "done" : state;
}

/** The copies' latest edits and deletes, counted by where they stand. */
export interface ChangeCounts {
  edits: Record<"pending" | "edited" | "unchanged" | "resent" | "failed" | "gone", number>;
  deletes: Record<"pending" | "deleted" | "already_deleted" | "not_deleted" | "gone", number>;
}

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
    edit: CopyChange | null;
    delete: CopyChange | null;
  }[];
  /** What the Dock's callback URL was sent about this message. */
  events: { type: string; state: string; attempts: number; lastError: string | null; updatedAt: number }[];
}

/** One recipient's delivery of a message, as the owner sees it on the Dock card. */
export interface DeliveryLine {
  chatId: number;
  state: DeliveryState;
  lastError: string | null;
  updatedAt: number;
  edit: CopyChange | null;
  delete: CopyChange | null;
}

/** A recent message of a Dock with where each of its deliveries stands. */
export interface MessageReport {
  id: string;
  text: string;
  /** How the message is shown beyond its text; null for plain text. */
  content: MessageContent | null;
  createdAt: number;
  subscribers: number;
  key: string | null;
  revision: number;
  revisedAt: number | null;
  deletedAt: number | null;
  acknowledged: { name: string; at: number } | null;
  /** How many copies are in each state (states with none are left out). */
  states: Partial<Record<DeliveryState, number>>;
  changes: ChangeCounts;
  deliveries: DeliveryLine[];
}

const parseContent = (json: string | null): MessageContent | null =>
  json === null ? null : (JSON.parse(json) as MessageContent);

/** Nothing changed yet. */
const noChanges = (): ChangeCounts => ({
  edits: { pending: 0, edited: 0, unchanged: 0, resent: 0, failed: 0, gone: 0 },
  deletes: { pending: 0, deleted: 0, already_deleted: 0, not_deleted: 0, gone: 0 },
});

interface ChangeRow {
  id: number;
  kind: string;
  target_id: number | null;
  telegram_message_ids?: string | null;
  state: DeliveryState;
  outcome: string | null;
  last_error: string | null;
  updated_at: number;
}

/** Each copy's latest edit and delete (rows in id order), and their counts. */
function latestChanges(
  rows: ChangeRow[],
  waiting: { edit: number | null; delete: number | null } = { edit: null, delete: null },
): {
  edits: Map<number, CopyChange>;
  deletes: Map<number, CopyChange>;
  counts: ChangeCounts;
} {
  const edits = new Map<number, CopyChange>();
  const deletes = new Map<number, CopyChange>();
  for (const row of rows) {
    if (row.target_id === null) continue;
    const change = {
      state: row.state,
      outcome: row.outcome,
      lastError: row.last_error,
      updatedAt: row.updated_at,
    };
    (row.kind === "edit" ? edits : deletes).set(Number(row.target_id), change);
  }
  // A change still waiting to be fanned out to the copies (its time given): each copy it will
  // reach has its edit (or delete) pending.
  for (const row of rows) {
    if (row.kind !== "send") continue;
    const pending = (at: number) => ({
      state: "queued" as const,
      outcome: null,
      lastError: null,
      updatedAt: at,
    });
    if (waiting.edit !== null && row.state === "sent") edits.set(Number(row.id), pending(waiting.edit));
    if (waiting.delete !== null && row.telegram_message_ids != null)
      deletes.set(Number(row.id), pending(waiting.delete));
  }
  const counts = noChanges();
  for (const edit of edits.values()) {
    if (edit.state === "queued" || edit.state === "sending") counts.edits.pending++;
    else if (edit.state === "sent") {
      const outcome = edit.outcome as "edited" | "unchanged" | "resent";
      if (outcome in counts.edits) counts.edits[outcome]++;
    } else counts.edits[edit.state === "gone" ? "gone" : "failed"]++;
  }
  for (const deletion of deletes.values()) {
    if (deletion.state === "queued" || deletion.state === "sending") counts.deletes.pending++;
    else if (deletion.state === "sent") {
      if (deletion.outcome === "already_deleted") counts.deletes.already_deleted++;
      else counts.deletes.deleted++;
    } else if (deletion.state === "failed") counts.deletes.not_deleted++;
    else counts.deletes.gone++;
  }
  return { edits, deletes, counts };
}

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
    // Waiting to be fanned out? Read before the deliveries: the fan-out deletes this row and
    // creates the deliveries in one commit, so this order never misses both.
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
      ])
      .where("message_id", "=", messageId)
      .orderBy("id")
      .execute();
    const rows = all.filter((row) => row.kind === "send");
    const changes = latestChanges(all, { edit: change("edit"), delete: change("delete") });
    const counts = { queued: 0, sent: 0, failed: 0, gone: 0 };
    for (const row of rows) counts[row.state === "sending" ? "queued" : row.state]++;
    // Deliveries not created: still to come while the message waits; otherwise those subscribers
    // left before the dispatcher got to the message.
    const missing = message.subscribers - rows.length;
    if (missing > 0) counts[waiting ? "queued" : "gone"] += missing;
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
    };
  }

  /** The Dock's `limit` newest messages, newest first. */
  async recent(dockId: string, limit: number): Promise<MessageReport[]> {
    const messages = await this.#db.kysely
      .selectFrom("messages")
      .select([
        "id",
        "text",
        "content",
        "created_at",
        "subscribers",
        "key",
        "revision",
        "revised_at",
        "deleted_at",
        "acked_name",
        "acked_at",
      ])
      .where("dock_id", "=", dockId)
      .orderBy("created_at", "desc")
      .orderBy("id", "desc")
      .limit(limit)
      .execute();
    if (messages.length === 0) return [];
    // Read before the deliveries: the fan-out deletes these rows and creates the deliveries in one
    // commit, so this order never misses both.
    const fanouts = await this.#db.kysely
      .selectFrom("fanouts")
      .select(["message_id", "kind", "created_at"])
      .where(
        "message_id",
        "in",
        messages.map((m) => m.id),
      )
      .execute();
    const waiting = new Set(fanouts.filter((row) => row.kind === "send").map((row) => row.message_id));
    const change = (messageId: string, kind: string) =>
      fanouts.find((row) => row.message_id === messageId && row.kind === kind)?.created_at ?? null;
    const deliveries = await this.#db.kysely
      .selectFrom("deliveries")
      .select([
        "id",
        "message_id",
        "kind",
        "target_id",
        "chat_id",
        "state",
        "last_error",
        "updated_at",
        "outcome",
        "telegram_message_ids",
      ])
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
          key: m.key,
          revision: m.revision,
          revisedAt: m.revised_at,
          deletedAt: m.deleted_at,
          acknowledged: m.acked_at === null ? null : { name: m.acked_name ?? "", at: Number(m.acked_at) },
          states: {},
          changes: noChanges(),
          deliveries: [],
        },
      ]),
    );
    const byMessage = new Map<string, typeof deliveries>();
    for (const d of deliveries) {
      const list = byMessage.get(d.message_id) ?? [];
      list.push(d);
      byMessage.set(d.message_id, list);
    }
    for (const [messageId, rows] of byMessage) {
      const report = reports.get(messageId);
      if (!report) continue;
      const changes = latestChanges(rows, {
        edit: change(messageId, "edit"),
        delete: change(messageId, "delete"),
      });
      report.changes = changes.counts;
      for (const d of rows) {
        if (d.kind !== "send") continue;
        report.states[d.state] = (report.states[d.state] ?? 0) + 1;
        if (report.deliveries.length < DELIVERIES_SHOWN) {
          report.deliveries.push({
            chatId: d.chat_id,
            state: d.state,
            lastError: d.last_error,
            updatedAt: d.updated_at,
            edit: changes.edits.get(Number(d.id)) ?? null,
            delete: changes.deletes.get(Number(d.id)) ?? null,
          });
        }
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
