import { type Kysely, sql } from "kysely";
import type { SchemaSpelling } from "../db.ts";

/**
 * Reminders until someone acknowledges (`"ack": {"remind_every": …, "remind_for": …}`).
 *
 * - `messages.remind_next_at`: when the next round of reminders is due (null: none, or they
 *   ended); `remind_until`: when they stop unacknowledged; `remind_rounds`: rounds queued so far;
 *   `remind_ended`: why they stopped (`acknowledged`, `resolved`, `deleted`, `expired`);
 *   `reminded` 1 once a reminder (or a change that rings) was queued for it. A round
 *   is one transaction that moves `remind_next_at` on and queues a reminder per copy, so a crash
 *   neither loses nor repeats one.
 * - `reminders`: one row per reminder of one copy (`copy_id`, the `send` delivery it replies to),
 *   `kind` `remind`, or a change that rings (`raised`: a higher priority; `repeated`: the same
 *   alert sent again while nobody took it; `refired`: firing again after someone took it),
 *   sent like a delivery (claimed with a lease, retried); `telegram_message_id` once sent;
 *   `cleanup` 1 while that Telegram message is still to be deleted (the next round's reminder took
 *   its place, or the reminders ended), 2 once done.
 * - `messages.escalate_next_at`, `escalate_step`: when the next step of the message's escalation
 *   is due, and which; `escalate_run`, `escalate_started_at`: which firing of the message the
 *   escalation follows (a message firing anew starts a new one), and since when; `escalated_from`, `escalation_step`: on a message an escalation made, the
 *   message it escalated and the step (an acknowledgement of any of them takes them all).
 * - `reminder_snoozes`: a person's snooze of one message's reminders in one chat, until `until`.
 */
export function reminders(spelling: SchemaSpelling) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema.alterTable("messages").addColumn("remind_next_at", "bigint").execute();
      await db.schema.alterTable("messages").addColumn("remind_until", "bigint").execute();
      await db.schema
        .alterTable("messages")
        .addColumn("remind_rounds", "integer", (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema.alterTable("messages").addColumn("remind_ended", "text").execute();
      await db.schema
        .alterTable("messages")
        .addColumn("reminded", "integer", (c) => c.notNull().defaultTo(0))
        .execute();
      // Escalation (store/escalations.ts): the next step's time and number on the message escalated;
      // on each message an escalation made, the message it came from and the step.
      await db.schema.alterTable("messages").addColumn("escalate_next_at", "bigint").execute();
      await db.schema
        .alterTable("messages")
        .addColumn("escalate_step", "integer", (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .alterTable("messages")
        .addColumn("escalate_run", "integer", (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema.alterTable("messages").addColumn("escalate_started_at", "bigint").execute();
      await db.schema.alterTable("messages").addColumn("escalated_from", "text").execute();
      await db.schema.alterTable("messages").addColumn("escalation_step", "integer").execute();
      await db.schema
        .createIndex("messages_escalate_due")
        .on("messages")
        .column("escalate_next_at")
        .where(sql.ref("escalate_next_at"), "is not", null)
        .execute();
      await db.schema
        .createIndex("messages_escalated_from")
        .on("messages")
        .column("escalated_from")
        .where(sql.ref("escalated_from"), "is not", null)
        .execute();
      await db.schema
        .createIndex("messages_remind_due")
        .on("messages")
        .column("remind_next_at")
        .where(sql.ref("remind_next_at"), "is not", null)
        .execute();

      await db.schema
        .createTable("reminders")
        .addColumn("id", sql`${spelling.increasingKey}`)
        .addColumn("message_id", "text", (c) => c.notNull().references("messages.id").onDelete("cascade"))
        .addColumn("dock_id", "text", (c) => c.notNull())
        .addColumn("chat_id", "bigint", (c) => c.notNull())
        .addColumn("copy_id", "bigint", (c) => c.notNull())
        .addColumn("kind", "text", (c) => c.notNull().defaultTo("remind"))
        .addColumn("round", "integer", (c) => c.notNull())
        .addColumn("state", "text", (c) => c.notNull())
        .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
        .addColumn("next_attempt_at", "bigint", (c) => c.notNull())
        .addColumn("lease_until", "bigint")
        .addColumn("last_error", "text")
        .addColumn("telegram_message_id", "bigint")
        .addColumn("cleanup", "integer", (c) => c.notNull().defaultTo(0))
        .addColumn("created_at", "bigint", (c) => c.notNull())
        .addColumn("updated_at", "bigint", (c) => c.notNull())
        .execute();
      // Work to do: reminders to send (by state), reminders to delete (by cleanup), each by when.
      await db.schema
        .createIndex("reminders_work")
        .on("reminders")
        .columns(["state", "next_attempt_at"])
        .execute();
      await db.schema
        .createIndex("reminders_cleanup")
        .on("reminders")
        .columns(["cleanup", "next_attempt_at"])
        .execute();
      await db.schema
        .createIndex("reminders_message")
        .on("reminders")
        .columns(["message_id", "id"])
        .execute();
      await db.schema.createIndex("reminders_copy").on("reminders").columns(["copy_id", "id"]).execute();

      await db.schema
        .createTable("reminder_snoozes")
        .addColumn("message_id", "text", (c) => c.notNull().references("messages.id").onDelete("cascade"))
        .addColumn("chat_id", "bigint", (c) => c.notNull())
        .addColumn("user_id", "bigint", (c) => c.notNull())
        .addColumn("user_name", "text", (c) => c.notNull())
        .addColumn("until", "bigint", (c) => c.notNull())
        .addColumn("created_at", "bigint", (c) => c.notNull())
        .addPrimaryKeyConstraint("reminder_snoozes_key", ["message_id", "chat_id", "user_id"])
        .execute();
    },
  };
}
