import type { Kysely } from "kysely";
import type { EscalationStep, MessageContent } from "../domain/message-options.ts";
import type { Db } from "./db.ts";
import { endEscalation, escalationSteps } from "./reminder-schedule.ts";
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
  /** Which run of the message's escalation (startEscalation), and its step in it (0-based). */
  run: number;
  step: number;
  to: string;
  after: number;
  text: string;
  content: MessageContent;
  fromDockName: string;
  /** The step's Dock has a callback URL (its sender hears of the message's delivery). */
  watched: boolean;
  /** The sending Dock's owner may still escalate to it (mayEscalate). */
  allowed: boolean;
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
        "messages.dock_id",
        "messages.text",
        "messages.content",
        "messages.acked_at",
        "messages.deleted_at",
        "messages.escalate_next_at",
        "messages.escalate_step",
        "messages.escalate_run",
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
    const content = JSON.parse(row.content) as MessageContent;
    const { escalate: _steps, ...options } = content.options;
    const target = await this.#db.kysely
      .selectFrom("docks")
      .select("callback_url")
      .where("id", "=", step.to)
      .executeTakeFirst();
    return {
      messageId,
      run: row.escalate_run,
      step: row.escalate_step,
      to: step.to,
      after: step.after,
      text: row.text,
      content: { ...content, options, escalated: { from: row.name, after: step.after } },
      fromDockName: row.name,
      watched: target !== undefined && target.callback_url !== null,
      // Asked again when the step is taken: the owner's role may have changed since the send.
      allowed: await mayEscalate(this.#db.kysely, row.dock_id, [step.to]),
    };
  }

  /** The step could not be taken now (the Dock's rate): tried again at `at`. */
  async later(due: DueStep, at: number): Promise<void> {
    await this.#db.kysely
      .updateTable("messages")
      .set({ escalate_next_at: at })
      .where("id", "=", due.messageId)
      .where("escalate_run", "=", due.run)
      .where("escalate_step", "=", due.step)
      .where("escalate_next_at", "is not", null)
      .execute();
  }
}

/**
 * Whether messages of the Dock `from` may escalate to each Dock of `to`: its owner is an owner or
 * editor of each (a Dock's team decides where its alerts may go), and none is `from` itself.
 * False when any is missing.
 */
export async function mayEscalate(
  kysely: Kysely<Database>,
  from: string,
  to: readonly string[],
): Promise<boolean> {
  const source = await kysely
    .selectFrom("docks")
    .select("owner_id")
    .where("id", "=", from)
    .executeTakeFirst();
  if (source === undefined) return false;
  const owner = Number(source.owner_id);
  for (const target of new Set(to)) {
    if (target === from) return false;
    const row = await kysely
      .selectFrom("docks")
      .leftJoin("co_owners", (join) =>
        join.onRef("co_owners.dock_id", "=", "docks.id").on("co_owners.telegram_id", "=", owner),
      )
      .select(["docks.owner_id", "co_owners.role"])
      .where("docks.id", "=", target)
      .executeTakeFirst();
    if (row === undefined) return false;
    if (Number(row.owner_id) !== owner && row.role !== "owner" && row.role !== "editor") return false;
  }
  return true;
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
