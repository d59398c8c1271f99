import { type Kysely, sql } from "kysely";
import type { EscalationStep, MessageContent, MessageOptions } from "../domain/message-options.ts";
import type { ReminderKind } from "../domain/render.ts";
import type { Database, DeliveryState, ReminderEnd } from "./schema.ts";

/*
 * A message's reminders' schedule and the changes that ring, as the transactions that accept,
 * change, acknowledge and delete messages keep them (store/reminders.ts says how reminders are
 * sent). Apart from reminders.ts because messages are accepted in SQLite's thread, which needs
 * only this.
 */

/** How often and how long, in seconds (as the options say). */
export interface RemindSchedule {
  every: number;
  for: number;
}

function optionsOf(content: string | MessageContent | null): MessageOptions {
  if (content === null) return {};
  return (typeof content === "string" ? (JSON.parse(content) as MessageContent) : content).options;
}

/** The schedule a message's content asks for; null when it asks for none. */
export function remindSchedule(content: string | MessageContent | null): RemindSchedule | null {
  const options = optionsOf(content);
  if (options.ack !== true || options.remind_every === undefined) return null;
  return { every: options.remind_every, for: options.remind_for ?? options.remind_every };
}

/** (Re)starts a message's reminders from `now`: the first round a `remind_every` later. */
export async function startReminders(
  tx: Kysely<Database>,
  messageId: string,
  schedule: RemindSchedule,
  now: number,
): Promise<void> {
  await tx
    .updateTable("messages")
    .set({
      remind_next_at: now + schedule.every * 1000,
      remind_until: now + schedule.for * 1000,
      remind_rounds: 0,
      remind_ended: null,
    })
    .where("id", "=", messageId)
    .execute();
  // Snoozes were of the reminders before: these start with everyone.
  await tx.deleteFrom("reminder_snoozes").where("message_id", "=", messageId).execute();
}

/**
 * Ends a message's reminders, in the caller's transaction (which holds the message's exclusive
 * lock): no round comes any more, none queued is sent, and — unless they ran out (`expired`: the
 * last stays, saying nobody took it) — those in the chats are deleted. An acknowledgement or a
 * deletion also takes the changes that rang (nothing is left to hear); a resolve only the
 * reminders (a change that rang a moment before is still to be heard). True when they were going on.
 */
export async function endReminders(
  tx: Kysely<Database>,
  messageId: string,
  why: ReminderEnd,
  now: number,
): Promise<boolean> {
  const ended = await tx
    .updateTable("messages")
    .set({ remind_next_at: null, remind_ended: why })
    .where("id", "=", messageId)
    .where("remind_next_at", "is not", null)
    .executeTakeFirst();
  await clearReminders(tx, messageId, why, now);
  return ended.numUpdatedRows > 0n;
}

async function clearReminders(tx: Kysely<Database>, messageId: string, why: ReminderEnd, now: number) {
  const kinds: ReminderKind[] =
    why === "acknowledged" || why === "deleted" ? ["remind", "raised", "repeated", "refired"] : ["remind"];
  await tx
    .updateTable("reminders")
    .set({ state: "gone", last_error: `not needed any more: ${why}`, lease_until: null, updated_at: now })
    .where("message_id", "=", messageId)
    .where("state", "=", "queued")
    .where("kind", "in", kinds)
    .execute();
  if (why === "expired") return;
  await tx
    .updateTable("reminders")
    .set({ cleanup: 1, next_attempt_at: now, lease_until: null, updated_at: now })
    .where("message_id", "=", messageId)
    .where("telegram_message_id", "is not", null)
    .where("cleanup", "=", 0)
    .where("kind", "in", kinds)
    .execute();
}

/** A message as it was before a change (reviseMessage reads it under its lock). */
export interface BeforeChange {
  text: string;
  content: string | null;
  acked_at: number | null;
  remind_next_at: number | null;
  reminded: number;
  escalate_next_at: number | null;
  escalate_step: number;
}

/** How loud each priority is: a change to a louder one rings. */
const LOUDNESS = { min: 0, low: 1, default: 2, high: 3, urgent: 4 } as const;

/** Whether Telegram notifies with a sound (message-options.ts isSilent, kept out of SQLite's thread). */
function rings(options: MessageOptions): boolean {
  return !(options.silent ?? (options.priority === "min" || options.priority === "low"));
}

/**
 * Whether a change must be heard, not only seen: an edit in place makes no sound in Telegram. A
 * higher priority (`raised`: warning → critical), the same alert (asking for `ack`, or high or
 * urgent) sent again by its key while nobody has taken it (`repeated`: an integration's repeat
 * notification), or sent again asking for
 * an acknowledgement after someone took it (`refired`). Never for a change that is silent itself.
 */
export function ringOf(
  before: BeforeChange,
  after: { text: string; content: string | null; byKey: boolean; askAgain: boolean },
): Exclude<ReminderKind, "remind"> | null {
  const old = optionsOf(before.content);
  const now = optionsOf(after.content);
  if (!rings(now)) return null;
  if (LOUDNESS[now.priority ?? "default"] > LOUDNESS[old.priority ?? "default"]) return "raised";
  if (!after.byKey) return null;
  // A status kept up to date by its key (the same text every few minutes) is no alarm: only an
  // alert — one that asks to be acknowledged, or is high or urgent — rings when repeated.
  const alert = now.ack === true || LOUDNESS[now.priority ?? "default"] >= LOUDNESS.high;
  if (alert && before.acked_at === null && before.text === after.text && before.content === after.content)
    return "repeated";
  if (before.acked_at !== null && after.askAgain) return "refired";
  return null;
}

/**
 * After a message took new content (reviseMessage: an edit, or a replacement by key), in the same
 * transaction: its reminders follow what it asks now, and a change that must be heard rings (a
 * reply with sound to each copy in a chat, sent like a reminder).
 *
 * No longer asking (no `ack`, no schedule), or the key's last change (`final`): the reminders end,
 * resolved. Asking, and not going on (they ended, or the replacement asked for an acknowledgement
 * anew): they start over. Asking while they go on (an alert still firing, sent again): they keep
 * their rhythm — a group that changes every few minutes would otherwise never be reminded of.
 */
export async function reviseReminders(
  tx: Kysely<Database>,
  messageId: string,
  before: BeforeChange,
  after: { text: string; content: string | null; final: boolean; byKey: boolean; askAgain: boolean },
  now: number,
): Promise<void> {
  const schedule = after.final ? null : remindSchedule(after.content);
  if (schedule === null) {
    if (before.remind_next_at !== null) await endReminders(tx, messageId, "resolved", now);
    else if (before.reminded === 1) await clearReminders(tx, messageId, "resolved", now);
  } else if (
    before.acked_at !== null
      ? after.askAgain
      : before.remind_next_at === null && remindSchedule(before.content) === null
  ) {
    // Firing anew after someone took it, or asking for the first time (a schedule that ran out or
    // ended stays ended: a typo fixed later must not start an hour of reminders again).
    await startReminders(tx, messageId, schedule, now);
  }
  const steps = after.final ? [] : escalationSteps(after.content);
  if (steps.length === 0) {
    if (before.escalate_next_at !== null) await endEscalation(tx, messageId);
  } else if (
    before.acked_at !== null ? after.askAgain : before.escalate_next_at === null && before.escalate_step === 0
  ) {
    // Firing anew after someone took it (or asking for the first time): from the first step.
    await startEscalation(tx, messageId, steps, now);
  }
  const ring = after.final ? null : ringOf(before, after);
  // A repeat is a reminder of sorts (a snoozed chat does not hear it); a raise or a new firing is news.
  if (ring !== null)
    await queueReminders(tx, messageId, { kind: ring, round: 0, skipSnoozed: ring === "repeated" }, now);
}

/**
 * Queues a reminder (or a change that rings) to every copy of the message in a chat: sent, in an
 * active subscription, and — for a reminder — not snoozed there. Returns how many.
 */
export async function queueReminders(
  tx: Kysely<Database>,
  messageId: string,
  what: { kind: ReminderKind; round: number; skipSnoozed: boolean },
  now: number,
): Promise<number> {
  const inserted = await tx
    .insertInto("reminders")
    .columns([
      "message_id",
      "dock_id",
      "chat_id",
      "copy_id",
      "kind",
      "round",
      "state",
      "next_attempt_at",
      "created_at",
      "updated_at",
    ])
    .expression((eb) =>
      eb
        .selectFrom("deliveries as d")
        .select([
          "d.message_id",
          "d.dock_id",
          "d.chat_id",
          "d.id",
          sql<ReminderKind>`cast(${what.kind} as text)`.as("kind"),
          sql<number>`cast(${what.round} as integer)`.as("round"),
          sql<DeliveryState>`cast(${"queued"} as text)`.as("state"),
          sql<number>`cast(${now} as bigint)`.as("next_attempt_at"),
          sql<number>`cast(${now} as bigint)`.as("created_at"),
          sql<number>`cast(${now} as bigint)`.as("updated_at"),
        ])
        .where("d.message_id", "=", messageId)
        .where("d.kind", "=", "send")
        .where("d.state", "=", "sent")
        .where("d.telegram_message_ids", "is not", null)
        .where(({ exists, selectFrom }) =>
          exists(
            selectFrom("subscriptions as s")
              .select("s.id")
              .whereRef("s.dock_id", "=", "d.dock_id")
              .whereRef("s.chat_id", "=", "d.chat_id")
              .where("s.state", "=", "active"),
          ),
        )
        .$if(what.skipSnoozed, (query) =>
          query.where(({ exists, not, selectFrom }) =>
            not(
              exists(
                selectFrom("reminder_snoozes as z")
                  .select("z.chat_id")
                  .whereRef("z.message_id", "=", "d.message_id")
                  .whereRef("z.chat_id", "=", "d.chat_id")
                  .where("z.until", ">", now),
              ),
            ),
          ),
        )
        .orderBy("d.id"),
    )
    .executeTakeFirst();
  const count = Number(inserted.numInsertedOrUpdatedRows ?? 0n);
  if (count > 0) await tx.updateTable("messages").set({ reminded: 1 }).where("id", "=", messageId).execute();
  return count;
}

/** The steps a message's content asks for; empty when none. */
export function escalationSteps(content: string | MessageContent | null): EscalationStep[] {
  if (content === null) return [];
  const options = (typeof content === "string" ? (JSON.parse(content) as MessageContent) : content).options;
  return options.ack === true ? (options.escalate ?? []) : [];
}

/**
 * (Re)starts a message's escalation from `now`: a new run (its steps' messages are new ones, not
 * the last run's), its first step after the first `after`, every step timed from now.
 */
export async function startEscalation(
  tx: Kysely<Database>,
  messageId: string,
  steps: EscalationStep[],
  now: number,
): Promise<void> {
  const first = steps[0];
  await tx
    .updateTable("messages")
    .set((eb) => ({
      escalate_next_at: first === undefined ? null : now + first.after * 1000,
      escalate_step: 0,
      escalate_run: eb("escalate_run", "+", 1),
      escalate_started_at: now,
    }))
    .where("id", "=", messageId)
    .execute();
}

/** Ends a message's escalation (acknowledged, resolved, deleted): no further step. */
export async function endEscalation(tx: Kysely<Database>, messageId: string): Promise<void> {
  await tx
    .updateTable("messages")
    .set({ escalate_next_at: null })
    .where("id", "=", messageId)
    .where("escalate_next_at", "is not", null)
    .execute();
}

/**
 * The messages a message's escalation added stop reminding too (it was resolved or deleted): each
 * locked after it (the chain's order: its root first), its reminders ended. No statement when no
 * step was ever taken.
 */
export async function endStepsReminders(
  tx: Kysely<Database>,
  messageId: string,
  stepsTaken: boolean,
  why: ReminderEnd,
  now: number,
  lock: (id: string) => Promise<void>,
): Promise<void> {
  if (!stepsTaken) return;
  const made = await tx.selectFrom("messages").select("id").where("escalated_from", "=", messageId).execute();
  for (const { id } of made.sort((a, b) => (a.id < b.id ? -1 : 1))) {
    await lock(id);
    await endReminders(tx, id, why, now);
  }
}
