import type { Kysely } from "kysely";
import type { EscalationStep, MessageContent } from "../domain/message-options.ts";
import type { Db } from "./db.ts";
import { queueEvent } from "./events.ts";
import { endEscalation, endReminders, escalationSteps } from "./reminder-schedule.ts";
import { copiesAffected, queueChange } from "./revise.ts";
import type { Database } from "./schema.ts";

/*
 * Escalation while nobody acknowledges (`"escalate": [{"after": 600, "to": "<dock_id>"}]`).
 *
 * The message escalated keeps its next step on its row (`escalate_next_at`, `escalate_step`).
 * When a step is due and the message is still unacknowledged, a message is added to the step's
 * Dock — the same text and buttons, saying where it came from — under an idempotency key of its
 * own (`escalation:<message id>:<step>`), then linked to the first (`escalated_from`) and the
 * step moved on, under the first's lock: a crash between the two adds nothing twice (the retry is
 * a replay). The first message and those its escalation made are one chain: an acknowledgement of
 * any of them acknowledges them all (message-changes.ts), and ends the escalation.
 */

/** A step due: what to add to its Dock. */
export interface DueStep {
  messageId: string;
  /** 0-based. */
  step: number;
  to: string;
  after: number;
  text: string;
  content: MessageContent;
  fromDockName: string;
  /** The step's Dock has a callback URL (its sender hears of the message's delivery). */
  watched: boolean;
}

/** The escalations' steps, taken when due. */
export class Escalations {
  readonly #db: Db;
  readonly #now: () => number;

  constructor(db: Db, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
  }

  /** Messages whose next step is due, soonest first. */
  async due(limit: number): Promise<string[]> {
    const rows = await this.#db.kysely
      .selectFrom("messages")
      .select("id")
      .where("escalate_next_at", "is not", null)
      .where("escalate_next_at", "<=", this.#now())
      .orderBy("escalate_next_at")
      .limit(limit)
      .execute();
    return rows.map((row) => row.id);
  }

  /** When the next step of any escalation is due; null: none waits. */
  async nextDue(): Promise<number | null> {
    const row = await this.#db.kysely
      .selectFrom("messages")
      .select((eb) => eb.fn.min("escalate_next_at").as("at"))
      .where("escalate_next_at", "is not", null)
      .executeTakeFirst();
    return row?.at == null ? null : Number(row.at);
  }

  /**
   * The message's step, if due and the message still wants it (unacknowledged, not deleted, still
   * asking): what to add, and where. Ends the escalation when it no longer asks.
   */
  async next(messageId: string): Promise<DueStep | undefined> {
    const now = this.#now();
    const row = await this.#db.kysely
      .selectFrom("messages")
      .innerJoin("docks", "docks.id", "messages.dock_id")
      .select([
        "messages.text",
        "messages.content",
        "messages.acked_at",
        "messages.deleted_at",
        "messages.escalate_next_at",
        "messages.escalate_step",
        "docks.name",
      ])
      .where("messages.id", "=", messageId)
      .executeTakeFirst();
    if (row?.escalate_next_at == null || Number(row.escalate_next_at) > now) return undefined;
    const steps = escalationSteps(row.content);
    const step = steps[row.escalate_step];
    if (row.acked_at !== null || row.deleted_at !== null || step === undefined || row.content === null) {
      await endEscalation(this.#db.kysely, messageId);
      return undefined;
    }
    const target = await this.#db.kysely
      .selectFrom("docks")
      .select("callback_url")
      .where("id", "=", step.to)
      .executeTakeFirst();
    const content = JSON.parse(row.content) as MessageContent;
    const { escalate: _steps, ...options } = content.options;
    return {
      messageId,
      step: row.escalate_step,
      to: step.to,
      after: step.after,
      text: row.text,
      content: { ...content, options, escalated: { from: row.name, after: step.after } },
      fromDockName: row.name,
      watched: target !== undefined && target.callback_url !== null,
    };
  }

  /**
   * The step's message was added (`escalatedId`, or null when the step could not be taken: its
   * Dock is gone): linked to the message it escalates, the next step scheduled, and the sender
   * told (`message.escalated`). Under the message's lock; false when another already recorded
   * this step. If the message was acknowledged meanwhile, the new one is acknowledged too.
   */
  async done(
    due: DueStep,
    escalatedId: string | null,
    subscribers: number,
    note: string | null,
  ): Promise<boolean> {
    const now = this.#now();
    return this.#db.kysely.transaction().execute(async (tx) => {
      // In the order every chain's locks are taken (message-changes.ts chainOf).
      for (const id of [due.messageId, ...(escalatedId === null ? [] : [escalatedId])].sort())
        await this.#db.messageLocks.exclusive(tx, id);
      const row = await tx
        .selectFrom("messages")
        .select([
          "dock_id",
          "key",
          "revision",
          "content",
          "escalate_step",
          "acked_by",
          "acked_name",
          "acked_at",
        ])
        .where("id", "=", due.messageId)
        .executeTakeFirst();
      if (row === undefined || row.escalate_step !== due.step) return false;
      const steps = escalationSteps(row.content);
      const next = steps[due.step + 1];
      const created = await tx
        .selectFrom("messages")
        .select("created_at")
        .where("id", "=", due.messageId)
        .executeTakeFirstOrThrow();
      await tx
        .updateTable("messages")
        .set({
          escalate_step: due.step + 1,
          escalate_next_at:
            next === undefined || row.acked_at !== null
              ? null
              : Number(created.created_at) + next.after * 1000,
        })
        .where("id", "=", due.messageId)
        .execute();
      if (escalatedId !== null) {
        const linked = await tx
          .updateTable("messages")
          .set((eb) => ({
            escalated_from: due.messageId,
            escalation_step: due.step + 1,
            // Taken while the step was on its way: the new one says so too (its copies edited).
            ...(row.acked_at === null
              ? {}
              : {
                  acked_by: row.acked_by,
                  acked_name: row.acked_name,
                  acked_at: row.acked_at,
                  revision: eb("revision", "+", 1),
                  revised_at: now,
                }),
          }))
          .where("id", "=", escalatedId)
          .returning(["dock_id"])
          .executeTakeFirst();
        if (linked !== undefined && row.acked_at !== null) {
          await endReminders(tx, escalatedId, "acknowledged", now);
          const affected = await copiesAffected(tx, escalatedId);
          await queueChange(
            tx,
            { messageId: escalatedId, dockId: linked.dock_id, kind: "edit", copies: affected.edits },
            now,
          );
        }
      }
      await queueEvent(
        tx,
        {
          dockId: row.dock_id,
          messageId: due.messageId,
          type: "message.escalated",
          data: {
            message: { id: due.messageId, key: row.key, revision: row.revision },
            escalation: {
              step: due.step + 1,
              after: due.after,
              to: due.to,
              message_id: escalatedId,
              subscribers,
              ...(note === null ? {} : { note }),
              at: new Date(now).toISOString(),
            },
          },
        },
        now,
      );
      return true;
    });
  }

  /** The step could not be taken now (the Dock's rate): tried again at `at`. */
  async later(due: DueStep, at: number): Promise<void> {
    await this.#db.kysely
      .updateTable("messages")
      .set({ escalate_next_at: at })
      .where("id", "=", due.messageId)
      .where("escalate_step", "=", due.step)
      .where("escalate_next_at", "is not", null)
      .execute();
  }
}

/** Where a message's escalation stands (the status API); null when it has none and is no step of one. */
export async function escalationStatus(
  kysely: Kysely<Database>,
  messageId: string,
): Promise<EscalationStatus | null> {
  const row = await kysely
    .selectFrom("messages")
    .select(["content", "escalate_next_at", "escalate_step", "escalated_from", "escalation_step"])
    .where("id", "=", messageId)
    .executeTakeFirst();
  if (row === undefined) return null;
  const steps = escalationSteps(row.content);
  if (steps.length === 0 && row.escalated_from === null) return null;
  const made = await kysely
    .selectFrom("messages")
    .select(["id", "dock_id", "escalation_step", "created_at"])
    .where("escalated_from", "=", messageId)
    .orderBy("escalation_step")
    .execute();
  return {
    steps,
    step: row.escalate_step,
    nextAt: row.escalate_next_at === null ? null : Number(row.escalate_next_at),
    escalated: made.map((m) => ({
      step: m.escalation_step ?? 0,
      dockId: m.dock_id,
      messageId: m.id,
      at: Number(m.created_at),
    })),
    from:
      row.escalated_from === null ? null : { messageId: row.escalated_from, step: row.escalation_step ?? 0 },
  };
}

export interface EscalationStatus {
  steps: EscalationStep[];
  /** Steps taken so far. */
  step: number;
  nextAt: number | null;
  /** The messages its steps added. */
  escalated: { step: number; dockId: string; messageId: string; at: number }[];
  /** This message was added by a step of another's escalation. */
  from: { messageId: string; step: number } | null;
}
