import type { Kysely } from "kysely";
import type { MessageContent } from "../domain/message-options.ts";
import type { Database, ReminderEnd } from "./schema.ts";

/*
 * A message's reminders' schedule, as the transactions that accept, change, acknowledge and
 * delete messages keep it (store/reminders.ts says how reminders work). Apart from reminders.ts
 * because messages are accepted in SQLite's thread, which needs only this.
 */

/** How often and how long, in seconds (as the options say). */
export interface RemindSchedule {
  every: number;
  for: number;
}

/** The schedule a message's content asks for; null when it asks for none. */
export function remindSchedule(content: string | MessageContent | null): RemindSchedule | null {
  if (content === null) return null;
  const options = (typeof content === "string" ? (JSON.parse(content) as MessageContent) : content).options;
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
}

/**
 * Ends a message's reminders, if they go on, in the caller's transaction (which holds the
 * message's exclusive lock): none is queued any more, and — unless they ran out (`expired`) — the
 * reminders in the chats are deleted. True when they were going on.
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
  if (ended.numUpdatedRows === 0n) return false;
  await tx
    .updateTable("reminders")
    .set({ state: "gone", last_error: `the reminders ended: ${why}`, lease_until: null, updated_at: now })
    .where("message_id", "=", messageId)
    .where("state", "=", "queued")
    .execute();
  if (why !== "expired") {
    await tx
      .updateTable("reminders")
      .set({ cleanup: 1, next_attempt_at: now, lease_until: null, updated_at: now })
      .where("message_id", "=", messageId)
      .where("telegram_message_id", "is not", null)
      .where("cleanup", "=", 0)
      .execute();
  }
  return true;
}

/**
 * After a message took new content (reviseMessage: an edit, or a replacement by key), in the same
 * transaction: its reminders follow what it asks now. No longer asking (no `ack`, no schedule), or
 * the key's last change (`final`): they end, resolved. Asking, and not going on (they ended, or
 * the replacement asked for an acknowledgement anew): they start over. Asking while they go on (an
 * alert still firing, sent again): they keep their rhythm — a group that changes every few
 * minutes would otherwise never be reminded of.
 */
export async function reviseReminders(
  tx: Kysely<Database>,
  messageId: string,
  content: string | null,
  final: boolean,
  now: number,
): Promise<void> {
  const schedule = final ? null : remindSchedule(content);
  if (schedule === null) {
    await endReminders(tx, messageId, "resolved", now);
    return;
  }
  const row = await tx
    .selectFrom("messages")
    .select(["remind_next_at", "acked_at"])
    .where("id", "=", messageId)
    .executeTakeFirst();
  // Still acknowledged (a replacement that asks for ack again forgets who, before this): done.
  if (row === undefined || row.acked_at !== null) return;
  if (row.remind_next_at === null) await startReminders(tx, messageId, schedule, now);
}
