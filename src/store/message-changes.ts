import type { Transaction } from "kysely";
import type { MessageContent } from "../domain/message-options.ts";
import { snoozeUntil } from "../domain/render.ts";
import { type AuditBy, writeAuditBy } from "./audit.ts";
import type { Db } from "./db.ts";
import { queueEvent } from "./events.ts";
import { noteStray, parseIds, queueDeletes } from "./outbox.ts";
import { endEscalation, endReminders, endStepsReminders, escalationSteps } from "./reminder-schedule.ts";
import { copiesAffected, queueChange, type Revised, reviseMessage } from "./revise.ts";
import { Rollups, Tallies } from "./rollups.ts";
import type { Database } from "./schema.ts";

export type { Revised } from "./revise.ts";

/** A message as its sender may change it. */
export interface CurrentMessage {
  id: string;
  dockId: string;
  text: string;
  content: string | null;
  key: string | null;
  revision: number;
  deletedAt: number | null;
  /** Added by a step of another message's escalation (that one's ID); null otherwise. */
  escalatedFrom: string | null;
}

/** What deleting a message did. */
export type Deleted =
  | { kind: "deleted"; deleting: number; cancelled: number }
  | { kind: "missing" }
  | { kind: "already_deleted" };

/** How a press of Acknowledge ended: the first, or after someone else's; or it acknowledges nothing. */
export type Acknowledged =
  | { kind: "first"; at: number; dockId: string; others: string[] }
  | { kind: "already"; name: string; at: number }
  | { kind: "missing" }
  | { kind: "deleted" }
  | { kind: "not_ackable" };

/**
 * Changes to messages already accepted: edits (PATCH /messages/:id), deletion, acknowledgement.
 * Replacing by key is an edit too, made where messages are accepted (accept-batch.ts, with
 * reviseMessage). Every change takes a new revision and queues the work on the copies through the
 * outbox (outbox.ts: queueChange, queueDeletes); the dispatcher fans them out to the copies.
 */
export class MessageChanges {
  readonly #db: Db;
  readonly #now: () => number;
  readonly #listeners = new Set<(dockIds: string[]) => void>();
  /** Every change counts as `changed` in its Dock's day (the console's live stream watches it). */
  readonly #rollups: Rollups;

  constructor(db: Db, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
    this.#rollups = new Rollups(db.kysely);
  }

  /** Counts a change of the Dock's message, last in its transaction (see rollups.ts). */
  #count(tx: Transaction<Database>, dockId: string, now: number): Promise<void> {
    return this.#rollups.add(tx, now, new Tallies().count(dockId, "changed"));
  }

  /** Calls `listener` after a change queued work on a Dock's copies (the dispatcher wakes on it). */
  onChanged(listener: (dockIds: string[]) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #changed(dockId: string): void {
    for (const listener of this.#listeners) {
      try {
        listener([dockId]);
      } catch {
        // A listener's trouble is its own: the change is committed either way.
      }
    }
  }

  /** The Dock's message, deleted or not; undefined when it is not the Dock's. */
  async get(dockId: string, messageId: string): Promise<CurrentMessage | undefined> {
    const row = await this.#db.kysely
      .selectFrom("messages")
      .select(["id", "dock_id", "text", "content", "key", "revision", "deleted_at", "escalated_from"])
      .where("id", "=", messageId)
      .where("dock_id", "=", dockId)
      .executeTakeFirst();
    return (
      row && {
        id: row.id,
        dockId: row.dock_id,
        text: row.text,
        content: row.content,
        key: row.key,
        revision: row.revision,
        deletedAt: row.deleted_at,
        escalatedFrom: row.escalated_from,
      }
    );
  }

  /** The Dock's message that holds `key` (not deleted), if any. */
  async byKey(dockId: string, key: string): Promise<string | undefined> {
    const row = await this.#db.kysely
      .selectFrom("messages")
      .select("id")
      .where("dock_id", "=", dockId)
      .where("key", "=", key)
      .where("deleted_at", "is", null)
      .executeTakeFirst();
    return row?.id;
  }

  /**
   * Edits the message: `make` gets it as it is and returns its new text and content (it may throw
   * to refuse). Tried again if another change lands in between. `by`: a person who edited it in the
   * console, whose entry in the Dock's audit log is written in the edit's transaction.
   */
  async revise(
    dockId: string,
    messageId: string,
    make: (current: CurrentMessage) => Promise<{ text: string; content: string | null }>,
    by?: AuditBy,
  ): Promise<Revised | { kind: "missing" } | { kind: "deleted" }> {
    for (;;) {
      const current = await this.get(dockId, messageId);
      if (current === undefined) return { kind: "missing" };
      if (current.deletedAt !== null) return { kind: "deleted" };
      const next = await make(current);
      const now = this.#now();
      const revised = await this.#db.kysely.transaction().execute(async (tx) => {
        const done = await reviseMessage(
          tx,
          { messageId, revision: current.revision, ...next },
          now,
          this.#db.messageLocks,
        );
        if (done !== undefined) {
          await this.#count(tx, dockId, now);
          // The message's id and revision, never its text: what a message says may be sensitive.
          if (by)
            await writeAuditBy(
              tx,
              dockId,
              by,
              "message_edited",
              { message_id: messageId, revision: done.revision },
              now,
            );
        }
        return done;
      });
      if (revised !== undefined) {
        this.#changed(dockId);
        return revised;
      }
    }
  }

  /**
   * Deletes the message: every copy sent is deleted (a delete queued per copy), and nothing still
   * queued is sent. Its key is free again. `by`: a person who deleted it in the console, whose
   * entry in the Dock's audit log is written in the deletion's transaction.
   */
  async delete(dockId: string, messageId: string, by?: AuditBy): Promise<Deleted> {
    const now = this.#now();
    const result = await this.#db.kysely.transaction().execute(async (tx): Promise<Deleted> => {
      await this.#db.messageLocks.exclusive(tx, messageId);
      const marked = await tx
        .updateTable("messages")
        .set({ deleted_at: now, revised_at: now })
        .where("id", "=", messageId)
        .where("dock_id", "=", dockId)
        .where("deleted_at", "is", null)
        .executeTakeFirst();
      if (marked.numUpdatedRows === 0n) {
        const exists = await tx
          .selectFrom("messages")
          .select("id")
          .where("id", "=", messageId)
          .where("dock_id", "=", dockId)
          .executeTakeFirst();
        return exists ? { kind: "already_deleted" as const } : { kind: "missing" as const };
      }
      const counts = await tx
        .selectFrom("deliveries")
        .select([
          (eb) => eb.fn.countAll<number>().filterWhere("telegram_message_ids", "is not", null).as("deleting"),
          (eb) => eb.fn.countAll<number>().filterWhere("state", "=", "queued").as("cancelled"),
        ])
        .where("message_id", "=", messageId)
        .where("kind", "=", "send")
        .executeTakeFirstOrThrow();
      const deleting = Number(counts.deleting);
      await queueDeletes(tx, { messageId, dockId, copies: deleting }, now);
      await endReminders(tx, messageId, "deleted", now);
      await endEscalation(tx, messageId);
      await endStepsReminders(tx, messageId, true, "deleted", now, (id) =>
        this.#db.messageLocks.exclusive(tx, id),
      );
      await this.#count(tx, dockId, now);
      if (by) await writeAuditBy(tx, dockId, by, "message_deleted", { message_id: messageId }, now);
      return { kind: "deleted" as const, deleting, cancelled: Number(counts.cancelled) };
    });
    if (result.kind === "deleted") this.#changed(dockId);
    return result;
  }

  /**
   * A person pressed the message's Acknowledge button. The first press (one conditional update:
   * of two at once, exactly one wins) records who and when, takes a new revision (every copy is
   * edited to say so, its button gone) and queues a `message.acknowledged` event; a later press
   * learns who was first.
   *
   * `pressed.named`: Telegram's own copy of the pressed message (in the callback query) is the
   * bot's and carries this very button. A press under a message the copy's record lacks then
   * counts too: it is a copy from an attempt whose outcome was never recorded (outbox.ts, "Copies
   * whose outcome is unknown"), and it joins the copy's strays, which its next edit removes.
   */
  async acknowledge(
    messageId: string,
    by: { id: number; name: string; username: string | null },
    pressed: { chatId: number; telegramMessageId: number; named?: boolean },
  ): Promise<Acknowledged> {
    const chatId = pressed.chatId;
    const now = this.#now();
    const result = await this.#db.kysely.transaction().execute(async (tx): Promise<Acknowledged> => {
      // The message and those its escalation made (or the one it escalated, and its others) are
      // acknowledged together (lockChain).
      const chain = await lockChain(tx, this.#db, messageId);
      const row = await tx
        .selectFrom("messages")
        .select(["acked_name", "acked_at", "deleted_at", "content"])
        .where("id", "=", messageId)
        .executeTakeFirst();
      const { copy, under } = await pressedUnder(tx, messageId, pressed);
      const stray = !under && pressed.named === true && copy !== undefined;
      if (row === undefined || !(under || stray)) return { kind: "missing" };
      if (stray) await noteStray(tx, copy.id, pressed.telegramMessageId, now);
      if (row.acked_at !== null)
        return { kind: "already", name: row.acked_name ?? "someone", at: Number(row.acked_at) };
      if (row.deleted_at !== null) return { kind: "deleted" };
      const options = row.content === null ? {} : (JSON.parse(row.content) as MessageContent).options;
      if (!options.ack) return { kind: "not_ackable" };
      const dockId = await this.#acknowledgeOne(tx, messageId, by, chatId, now);
      if (dockId !== undefined) {
        const others: string[] = [];
        for (const id of chain) {
          if (id === messageId) continue;
          const other = await this.#acknowledgeOne(tx, id, by, chatId, now);
          if (other !== undefined) others.push(other);
        }
        return { kind: "first" as const, at: now, dockId, others };
      }
      // Another press won between the read and the update (PostgreSQL: it waited for that one's commit).
      const winner = await tx
        .selectFrom("messages")
        .select(["acked_name", "acked_at"])
        .where("id", "=", messageId)
        .executeTakeFirst();
      if (winner?.acked_at == null) return { kind: "deleted" as const };
      return { kind: "already" as const, name: winner.acked_name ?? "someone", at: Number(winner.acked_at) };
    });
    if (result.kind === "first") {
      this.#changed(result.dockId);
      for (const other of result.others) this.#changed(other);
    }
    return result;
  }

  /**
   * An escalation step's message was added (`escalatedId`, or null when the step could not be
   * taken: `note` says why): linked to the message escalated, the next step scheduled (timed from
   * the run's start), and its sender told (`message.escalated`). Under the chain's locks (the
   * root's first); false when this run's step was recorded already, or the run is over. An
   * acknowledgement made meanwhile on either side is carried to the other, as if made on the chain.
   */
  async recordStep(
    due: { messageId: string; run: number; step: number; to: string; after: number },
    escalatedId: string | null,
    subscribers: number,
    note: string | null,
  ): Promise<boolean> {
    const now = this.#now();
    const result = await this.#db.kysely.transaction().execute(async (tx) => {
      await this.#db.messageLocks.exclusive(tx, due.messageId);
      if (escalatedId !== null) await this.#db.messageLocks.exclusive(tx, escalatedId);
      const row = await tx
        .selectFrom("messages")
        .select([
          "dock_id",
          "key",
          "revision",
          "content",
          "escalate_step",
          "escalate_run",
          "escalate_next_at",
          "escalate_started_at",
          "acked_by",
          "acked_name",
          "acked_at",
          "deleted_at",
        ])
        .where("id", "=", due.messageId)
        .executeTakeFirst();
      if (row === undefined || row.escalate_run !== due.run || row.escalate_step !== due.step) return null;
      // Ended meanwhile (acknowledged, resolved, deleted): no further step.
      const over = row.escalate_next_at === null || row.deleted_at !== null || row.acked_at !== null;
      const next = escalationSteps(row.content)[due.step + 1];
      await tx
        .updateTable("messages")
        .set({
          escalate_step: due.step + 1,
          escalate_next_at:
            over || next === undefined ? null : Number(row.escalate_started_at ?? now) + next.after * 1000,
        })
        .where("id", "=", due.messageId)
        .execute();
      const changed = [row.dock_id];
      if (escalatedId !== null) {
        const added = await tx
          .updateTable("messages")
          .set({ escalated_from: due.messageId, escalation_step: due.step + 1 })
          .where("id", "=", escalatedId)
          .where("escalated_from", "is", null)
          .returning(["dock_id", "acked_by", "acked_name", "acked_at"])
          .executeTakeFirst();
        if (added !== undefined) {
          changed.push(added.dock_id);
          if (row.acked_at !== null) {
            // Taken while the step was on its way: the new one says so too.
            const by = { id: Number(row.acked_by), name: row.acked_name ?? "someone", username: null };
            await this.#acknowledgeOne(tx, escalatedId, by, 0, now);
          } else if (added.acked_at !== null) {
            // Taken there before the step was recorded: the whole chain is.
            const by = { id: Number(added.acked_by), name: added.acked_name ?? "someone", username: null };
            await this.#acknowledgeOne(tx, due.messageId, by, 0, now);
            const made = await tx
              .selectFrom("messages")
              .select(["id", "dock_id"])
              .where("escalated_from", "=", due.messageId)
              .where("id", "!=", escalatedId)
              .orderBy("id")
              .execute();
            for (const other of made) {
              await this.#db.messageLocks.exclusive(tx, other.id);
              if ((await this.#acknowledgeOne(tx, other.id, by, 0, now)) !== undefined)
                changed.push(other.dock_id);
            }
          } else if (row.escalate_next_at === null || row.deleted_at !== null) {
            // Resolved or deleted while the step was on its way: the new one does not remind.
            await endReminders(tx, escalatedId, row.deleted_at !== null ? "deleted" : "resolved", now);
          }
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
      return changed;
    });
    if (result === null) return false;
    for (const dockId of new Set(result)) this.#changed(dockId);
    return true;
  }

  /**
   * Records `by` as having acknowledged the message (if nobody has, and it is not deleted), in the
   * caller's transaction under its lock: a new revision (every copy edited to say who), its
   * reminders and escalation ended, and `message.acknowledged` for its Dock. Its Dock; undefined
   * when it was taken already.
   */
  async #acknowledgeOne(
    tx: Transaction<Database>,
    messageId: string,
    by: { id: number; name: string; username: string | null },
    chatId: number,
    now: number,
  ): Promise<string | undefined> {
    const won = await tx
      .updateTable("messages")
      .set((eb) => ({
        acked_by: by.id,
        acked_name: by.name,
        acked_at: now,
        revision: eb("revision", "+", 1),
        revised_at: now,
      }))
      .where("id", "=", messageId)
      .where("acked_at", "is", null)
      .where("deleted_at", "is", null)
      .returning(["dock_id", "key", "revision", "created_at"])
      .executeTakeFirst();
    if (won === undefined) return undefined;
    await endReminders(tx, messageId, "acknowledged", now);
    await endEscalation(tx, messageId);
    const affected = await copiesAffected(tx, messageId);
    await queueChange(tx, { messageId, dockId: won.dock_id, kind: "edit", copies: affected.edits }, now);
    await queueEvent(
      tx,
      {
        dockId: won.dock_id,
        messageId,
        type: "message.acknowledged",
        data: {
          message: { id: messageId, key: won.key, revision: won.revision },
          acknowledged: {
            by: { id: by.id, name: by.name, username: by.username },
            chat_id: chatId,
            at: new Date(now).toISOString(),
          },
        },
      },
      now,
    );
    await this.#count(tx, won.dock_id, now);
    return won.dock_id;
  }

  /**
   * A person pressed a reminder's snooze button: no reminder of this message comes to that chat
   * until `until` (the person's own chat, or the group as a whole: it is one chat), the one queued
   * there is not sent, and the sender hears `message.snoozed`. Other chats go on being reminded.
   */
  async snooze(
    messageId: string,
    by: { id: number; name: string; username: string | null },
    pressed: { chatId: number; telegramMessageId: number },
    /** Minutes ("15", "60"), or "am": till the next 08:00 UTC. */
    spec: string,
  ): Promise<Snoozed> {
    const now = this.#now();
    const until = snoozeUntil(spec, now);
    const result = await this.#db.kysely.transaction().execute(async (tx): Promise<Snoozed> => {
      await this.#db.messageLocks.exclusive(tx, messageId);
      const row = await tx
        .selectFrom("messages")
        .select(["dock_id", "key", "revision", "acked_name", "acked_at", "deleted_at", "remind_next_at"])
        .where("id", "=", messageId)
        .executeTakeFirst();
      const { under } = await pressedUnder(tx, messageId, pressed);
      if (row === undefined || !under) return { kind: "missing" };
      if (row.acked_at !== null)
        return { kind: "already", name: row.acked_name ?? "someone", at: Number(row.acked_at) };
      if (row.deleted_at !== null) return { kind: "deleted" };
      if (row.remind_next_at === null) return { kind: "over" };
      await tx
        .deleteFrom("reminder_snoozes")
        .where("message_id", "=", messageId)
        .where("chat_id", "=", pressed.chatId)
        .where("user_id", "=", by.id)
        .execute();
      await tx
        .insertInto("reminder_snoozes")
        .values({
          message_id: messageId,
          chat_id: pressed.chatId,
          user_id: by.id,
          user_name: by.name,
          until,
          created_at: now,
        })
        .execute();
      await tx
        .updateTable("reminders")
        .set({ state: "gone", last_error: `snoozed by ${by.name}`, updated_at: now })
        .where("message_id", "=", messageId)
        .where("chat_id", "=", pressed.chatId)
        .where("state", "=", "queued")
        .where("kind", "in", ["remind", "repeated"])
        .execute();
      await queueEvent(
        tx,
        {
          dockId: row.dock_id,
          messageId,
          type: "message.snoozed",
          data: {
            message: { id: messageId, key: row.key, revision: row.revision },
            snoozed: {
              by: { id: by.id, name: by.name, username: by.username },
              chat_id: pressed.chatId,
              until: new Date(until).toISOString(),
              at: new Date(now).toISOString(),
            },
          },
        },
        now,
      );
      return { kind: "snoozed", until, dockId: row.dock_id };
    });
    if (result.kind === "snoozed") this.#changed(result.dockId);
    return result;
  }
}

/** What a press of a snooze button came to. */
export type Snoozed =
  | { kind: "snoozed"; until: number; dockId: string }
  | { kind: "already"; name: string; at: number }
  | { kind: "over" }
  | { kind: "missing" }
  | { kind: "deleted" };

/**
 * Whether a press came from under a copy of the message (or a reminder of it) in a chat that
 * received it: a press arrives with whatever callback data the client sends, and a message ID
 * alone proves nothing. A copy being sent again (its first attempt's outcome unknown) may be
 * pressed where it first went. `copy`: the chat's copy, if it has one.
 */
async function pressedUnder(
  tx: Transaction<Database>,
  messageId: string,
  pressed: { chatId: number; telegramMessageId: number },
): Promise<{ copy: { id: number } | undefined; under: boolean }> {
  const copy = await tx
    .selectFrom("deliveries")
    .select(["id", "telegram_message_ids", "stray_ids"])
    .where("message_id", "=", messageId)
    .where("chat_id", "=", pressed.chatId)
    .where("kind", "=", "send")
    .where("state", "in", ["sent", "queued", "sending"])
    .executeTakeFirst();
  if (copy === undefined) return { copy: undefined, under: false };
  const known = [...parseIds(copy.telegram_message_ids), ...parseIds(copy.stray_ids)];
  if (known.includes(pressed.telegramMessageId)) return { copy: { id: Number(copy.id) }, under: true };
  const reminder = await tx
    .selectFrom("reminders")
    .select("id")
    .where("message_id", "=", messageId)
    .where("chat_id", "=", pressed.chatId)
    .where("telegram_message_id", "=", pressed.telegramMessageId)
    .executeTakeFirst();
  return { copy: { id: Number(copy.id) }, under: reminder !== undefined };
}

/**
 * Locks a message's escalation chain — the message escalated (its root) first, then the messages
 * its steps added, in ID order (the order recordStep takes them in too) — and returns its IDs.
 * The chain is read under the root's lock, so a step recorded meanwhile is seen. A message added
 * by a step not yet recorded is its own root until then (recordStep joins their acknowledgements).
 */
async function lockChain(tx: Transaction<Database>, db: Db, messageId: string): Promise<string[]> {
  const row = await tx
    .selectFrom("messages")
    .select("escalated_from")
    .where("id", "=", messageId)
    .executeTakeFirst();
  const root = row?.escalated_from ?? messageId;
  await db.messageLocks.exclusive(tx, root);
  const made = await tx.selectFrom("messages").select("id").where("escalated_from", "=", root).execute();
  const others = [...new Set([messageId, ...made.map((m) => m.id)])].filter((id) => id !== root).sort();
  for (const id of others) await db.messageLocks.exclusive(tx, id);
  return [root, ...others];
}
