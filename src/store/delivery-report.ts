import type { Db } from "./db.ts";
import type { DeliveryState } from "./schema.ts";

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
  createdAt: number;
  subscribers: number;
  /** How many deliveries are in each state (states with none are left out). */
  states: Partial<Record<DeliveryState, number>>;
  deliveries: DeliveryLine[];
}

/** Deliveries listed per message on the card; the counts always cover them all. */
const DELIVERIES_SHOWN = 20;

/**
 * Read-only view of the outbox for the console: a Dock's latest messages and their delivery
 * states, as the dispatcher leaves them in the `deliveries` table.
 */
export class DeliveryReport {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /** The Dock's `limit` newest messages, newest first. */
  async recent(dockId: string, limit: number): Promise<MessageReport[]> {
    const messages = await this.#db.kysely
      .selectFrom("messages")
      .select(["id", "text", "created_at", "subscribers"])
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
