import type { Transaction } from "kysely";
import type { MessageLocks } from "./db.ts";
import { endStepsReminders, remindSchedule, reviseReminders } from "./reminder-schedule.ts";
import type { Database } from "./schema.ts";

/*
 * Changing a message inside a transaction: a new revision, and its change queued to be fanned out
 * to the copies. Apart from message-changes.ts because a send with a key changes a message where
 * messages are accepted (accept-batch.ts, in SQLite's thread), which needs only this.
 */

/**
 * A change of a message to be fanned out to its copies (message-changes.ts, in its transaction):
 * one `fanouts` row, whatever the audience, which the dispatcher turns into an edit (or a delete)
 * of every copy sent when it gets to the Dock's queue (fanOut). An edit waiting there already
 * serves this change too (an edit shows the message as it is when it goes).
 */
export async function queueChange(
  tx: Transaction<Database>,
  change: { messageId: string; dockId: string; kind: "edit" | "delete"; copies: number },
  now: number,
): Promise<void> {
  if (change.kind === "edit") {
    const waiting = await tx
      .selectFrom("fanouts")
      .select("id")
      .where("message_id", "=", change.messageId)
      .where("kind", "=", "edit")
      .executeTakeFirst();
    if (waiting !== undefined) return;
  }
  await tx
    .insertInto("fanouts")
    .values({
      message_id: change.messageId,
      dock_id: change.dockId,
      created_at: now,
      subscribers: change.copies,
      kind: change.kind,
    })
    .execute();
}

/** What a change did to the copies: edits queued, copies still to be sent (they go in the new form). */
export interface Revised {
  kind: "revised";
  revision: number;
  /** Copies sent or being sent, each of which will be edited. */
  edits: number;
  /** Copies not sent yet: they go out as the message is then. */
  queued: number;
}

/**
 * A message's new text and content, as its next revision, in the caller's transaction, with an
 * edit queued for every copy sent. Undefined when the message has been deleted, has changed
 * since it was read at `revision` (the caller reads it again), or no longer holds `heldKey`;
 * `revision` null: whatever it is now (a replacement by key: the last send wins).
 */
export async function reviseMessage(
  tx: Transaction<Database>,
  change: {
    messageId: string;
    revision: number | null;
    text: string;
    content: string | null;
    /** Forget who acknowledged it: the message asks for an acknowledgement anew. */
    resetAck?: boolean;
    /** The key's last change: the message lets its key go (a later send with it is a new message). */
    releaseKey?: boolean;
    /**
     * A replacement by key: only while the message still holds this key (another transaction may
     * have let it go since it was read); undefined otherwise, as for a deleted message.
     */
    heldKey?: string;
  },
  now: number,
  locks: MessageLocks,
): Promise<Revised | undefined> {
  await locks.exclusive(tx, change.messageId);
  // As it was: whether the change rings, and what becomes of its reminders (reminder-schedule.ts).
  const before = await tx
    .selectFrom("messages")
    .select([
      "text",
      "content",
      "acked_at",
      "remind_next_at",
      "reminded",
      "escalate_next_at",
      "escalate_step",
      "escalate_run",
    ])
    .where("id", "=", change.messageId)
    .executeTakeFirst();
  if (before === undefined) return undefined;
  // Asking for an acknowledgement again forgets who took it only when the alert changed (firing
  // anew); an integration's repeat of the same alert keeps it taken.
  const askAgain =
    change.resetAck === true && (before.text !== change.text || before.content !== change.content);
  let update = tx
    .updateTable("messages")
    .set((eb) => ({
      text: change.text,
      content: change.content,
      revision: eb("revision", "+", 1),
      revised_at: now,
      ...(askAgain ? { acked_by: null, acked_name: null, acked_at: null } : {}),
      ...(change.releaseKey ? { key: null } : {}),
    }))
    .where("id", "=", change.messageId)
    .where("deleted_at", "is", null);
  if (change.revision !== null) update = update.where("revision", "=", change.revision);
  if (change.heldKey !== undefined) update = update.where("key", "=", change.heldKey);
  const updated = await update.returning(["revision", "dock_id"]).executeTakeFirst();
  if (updated === undefined) return undefined;
  await reviseReminders(
    tx,
    change.messageId,
    before,
    {
      text: change.text,
      content: change.content,
      final: change.releaseKey === true,
      byKey: change.heldKey !== undefined,
      askAgain,
    },
    now,
  );
  // Resolved (or no longer asking): what its escalation added stops reminding as well.
  if (change.releaseKey === true || remindSchedule(change.content) === null)
    await endStepsReminders(tx, change.messageId, before.escalate_run > 0, "resolved", now, (id) =>
      locks.exclusive(tx, id),
    );
  const affected = await copiesAffected(tx, change.messageId);
  await queueChange(
    tx,
    { messageId: change.messageId, dockId: updated.dock_id, kind: "edit", copies: affected.edits },
    now,
  );
  return { kind: "revised", revision: updated.revision, ...affected };
}

/** What a change of the message reaches: copies sent or being sent (edited), copies still to send. */
export async function copiesAffected(
  tx: Transaction<Database>,
  messageId: string,
): Promise<{ edits: number; queued: number }> {
  const rows = await tx
    .selectFrom("deliveries")
    .select(["state", (eb) => eb.fn.countAll<number>().as("n")])
    .where("message_id", "=", messageId)
    .where("kind", "=", "send")
    .where("state", "in", ["queued", "sending", "sent"])
    .groupBy("state")
    .execute();
  const count = (state: string) => Number(rows.find((row) => row.state === state)?.n ?? 0);
  const waiting = await tx
    .selectFrom("fanouts")
    .innerJoin("messages", "messages.id", "fanouts.message_id")
    .select("messages.subscribers")
    .where("fanouts.message_id", "=", messageId)
    .where("fanouts.kind", "=", "send")
    .executeTakeFirst();
  return {
    edits: count("sent") + count("sending"),
    queued: count("queued") + Number(waiting?.subscribers ?? 0),
  };
}
