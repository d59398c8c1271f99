import { type ExpressionBuilder, type Kysely, sql } from "kysely";
import type { ReminderKind } from "../domain/render.ts";
import type { Db } from "./db.ts";
import { queueEvent } from "./events.ts";
import { parseIds } from "./outbox.ts";
import { endReminders, queueReminders, remindSchedule } from "./reminder-schedule.ts";
import type { Database, DeliveryState, ReminderEnd } from "./schema.ts";

/*
 * Reminders until someone acknowledges (`"ack": {"remind_every": …, "remind_for": …}`).
 *
 * A message's schedule lives on its row (migration 0024): `remind_next_at` (the next round),
 * `remind_until` (when they stop unacknowledged), `remind_rounds`. A round is one transaction
 * under the message's exclusive lock: it moves `remind_next_at` on and queues one reminder per copy
 * in a chat (`reminders`), so a crash or a new leader never loses or repeats a round. Each
 * reminder is then sent like a delivery (claimed with a lease, retried with backoff, paced with
 * everything else) as a reply with sound to its copy; once sent, the reminder before it in that
 * chat is deleted (`cleanup`), so the chat keeps one. The reminders end (`remind_ended`) on an
 * acknowledgement, a resolve (a replacement with `final`, or one that no longer asks for `ack`),
 * a deletion — each of which deletes the last reminders too — or when `remind_for` has passed
 * (`expired`: the last reminder stays, and the sender hears `message.unacknowledged`).
 */

/** A reminder claimed for its work: send it, or (`cleanup`) delete it from its chat. */
export interface ClaimedReminder {
  id: number;
  lease: number;
  messageId: string;
  dockId: string;
  chatId: number;
  chatType: string;
  kind: ReminderKind;
  /** A reminder's round (1, 2, …); 0 for a change that rings. */
  round: number;
  attempts: number;
  createdAt: number;
  /** Delete `telegramMessageId` from the chat (replaced by the next, or the reminders ended). */
  cleanup: boolean;
  telegramMessageId: number | null;
  /** The copy's first Telegram message: the reminder replies to it. */
  replyTo: number | null;
  text: string;
  content: string | null;
  /** The message no longer wants reminders (acknowledged, resolved, deleted): none is sent. */
  over: boolean;
}

/** A round's outcome (ReminderStore.round). */
export type Round =
  | { kind: "round"; dockId: string; round: number; copies: number }
  | { kind: "expired"; dockId: string }
  | { kind: "none" };

/** The reminders' rows: rounds queued, then each reminder claimed, sent, cleaned up. */
export class ReminderStore {
  readonly #db: Db;
  readonly #now: () => number;

  constructor(db: Db, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
  }

  /** Messages whose next round is due, soonest first. */
  async dueRounds(limit: number): Promise<string[]> {
    const rows = await this.#db.kysely
      .selectFrom("messages")
      .select("id")
      .where("remind_next_at", "is not", null)
      .where("remind_next_at", "<=", this.#now())
      .orderBy("remind_next_at")
      .limit(limit)
      .execute();
    return rows.map((row) => row.id);
  }

  /**
   * When something is next due — a round, an escalation's step, a reminder, a retry, a cleanup, a
   * lease running out — or null: nothing waits. One statement (it is what an idle service asks
   * every few seconds). A claim moves its row's time to its lease's end, so work under way is not
   * due again until then.
   */
  async nextDue(): Promise<number | null> {
    const row = await this.#db.kysely
      .selectNoFrom((eb) => [
        eb
          .selectFrom("messages")
          .select((m) => m.fn.min("remind_next_at").as("at"))
          .where("remind_next_at", "is not", null)
          .as("rounds"),
        eb
          .selectFrom("messages")
          .select((m) => m.fn.min("escalate_next_at").as("at"))
          .where("escalate_next_at", "is not", null)
          .as("steps"),
        eb
          .selectFrom("reminders")
          .select((r) => r.fn.min("next_attempt_at").as("at"))
          .where("state", "in", ["queued", "sending"])
          .as("sends"),
        eb
          .selectFrom("reminders")
          .select((r) => r.fn.min("next_attempt_at").as("at"))
          .where("cleanup", "=", 1)
          .as("cleanups"),
      ])
      .executeTakeFirst();
    const times = [row?.rounds, row?.steps, row?.sends, row?.cleanups].filter((at) => at != null).map(Number);
    return times.length === 0 ? null : Math.min(...times);
  }

  /**
   * The message's round, if it is due: one reminder queued per copy in a chat (those of an earlier
   * round still unsent give way), the next round scheduled, and the sender told
   * (`message.reminded`); or, `remind_for` having passed, the end (`message.unacknowledged`).
   */
  async round(messageId: string): Promise<Round> {
    const now = this.#now();
    return this.#db.kysely.transaction().execute(async (tx): Promise<Round> => {
      await this.#db.messageLocks.exclusive(tx, messageId);
      const message = await tx
        .selectFrom("messages")
        .select([
          "dock_id",
          "key",
          "revision",
          "content",
          "acked_at",
          "deleted_at",
          "remind_next_at",
          "remind_until",
          "remind_rounds",
        ])
        .where("id", "=", messageId)
        .executeTakeFirst();
      if (message?.remind_next_at == null || Number(message.remind_next_at) > now) return { kind: "none" };
      const schedule = remindSchedule(message.content);
      if (message.acked_at !== null || message.deleted_at !== null || schedule === null) {
        await endReminders(
          tx,
          messageId,
          message.acked_at !== null ? "acknowledged" : message.deleted_at !== null ? "deleted" : "resolved",
          now,
        );
        return { kind: "none" };
      }
      const reference = { id: messageId, key: message.key, revision: message.revision };
      const rounds = message.remind_rounds;
      // Rounds come every remind_every up to remind_until included; the end, just after it.
      if (Number(message.remind_next_at) > Number(message.remind_until)) {
        await endReminders(tx, messageId, "expired", now);
        await queueEvent(
          tx,
          {
            dockId: message.dock_id,
            messageId,
            type: "message.unacknowledged",
            data: {
              message: reference,
              reminders: {
                rounds,
                every: schedule.every,
                for: schedule.for,
                ended_at: new Date(now).toISOString(),
              },
            },
          },
          now,
        );
        return { kind: "expired", dockId: message.dock_id };
      }
      const round = rounds + 1;
      // A reminder of an earlier round still unsent (Telegram away) gives way to this one.
      await tx
        .updateTable("reminders")
        .set({ state: "gone", last_error: "the next round took its place", updated_at: now })
        .where("message_id", "=", messageId)
        .where("state", "=", "queued")
        .where("kind", "=", "remind")
        .execute();
      const copies = await queueReminders(tx, messageId, { kind: "remind", round, skipSnoozed: true }, now);
      // On the rhythm asked for; after a pause (the service stopped, the database away) from now,
      // so that missed rounds do not all come at once. After the last round (at remind_until at
      // the latest), the end is due a millisecond past remind_until.
      const every = schedule.every * 1000;
      let next = Number(message.remind_next_at) + every;
      if (next <= now) next = now + every;
      const until = Number(message.remind_until);
      await tx
        .updateTable("messages")
        .set({ remind_rounds: round, remind_next_at: next <= until ? next : until + 1 })
        .where("id", "=", messageId)
        .execute();
      await queueEvent(
        tx,
        {
          dockId: message.dock_id,
          messageId,
          type: "message.reminded",
          data: { message: reference, reminder: { round, copies, at: new Date(now).toISOString() } },
        },
        now,
      );
      return { kind: "round", dockId: message.dock_id, round, copies };
    });
  }

  /** Reminders due for their work (a send, a retry, a cleanup), oldest first, with their chats. */
  async due(limit: number): Promise<{ id: number; chatId: number }[]> {
    const now = this.#now();
    const k = this.#db.kysely;
    // Two reads, each along its index (reminders_work, reminders_cleanup).
    const [sends, cleanups] = await Promise.all([
      k
        .selectFrom("reminders")
        .select(["id", "chat_id"])
        .where("state", "in", ["queued", "sending"])
        .where("next_attempt_at", "<=", now)
        .orderBy("next_attempt_at")
        .limit(limit)
        .execute(),
      k
        .selectFrom("reminders")
        .select(["id", "chat_id"])
        .where("cleanup", "=", 1)
        .where("next_attempt_at", "<=", now)
        .orderBy("next_attempt_at")
        .limit(limit)
        .execute(),
    ]);
    return [...sends, ...cleanups]
      .map((row) => ({ id: Number(row.id), chatId: Number(row.chat_id) }))
      .sort((a, b) => a.id - b.id)
      .slice(0, limit);
  }

  /** Takes a reminder for its work until `lease`; undefined when another has it (or it is done). */
  async claim(id: number, lease: number): Promise<ClaimedReminder | undefined> {
    const now = this.#now();
    const claimed = await this.#db.kysely
      .updateTable("reminders")
      .set((eb) => ({
        state: eb
          .case()
          .when("cleanup", "=", 1)
          .then(eb.ref("state"))
          .else("sending")
          .end()
          .$castTo<DeliveryState>(),
        lease_until: lease,
        // Not due again before the lease ends (nextDue): then another may take it up.
        next_attempt_at: lease,
        attempts: eb("attempts", "+", 1),
        updated_at: now,
      }))
      .where("id", "=", id)
      .where((eb) => claimable(eb, now))
      .returning(["id", "cleanup"])
      .executeTakeFirst();
    if (claimed === undefined) return undefined;
    const row = await this.#db.kysely
      .selectFrom("reminders as r")
      .innerJoin("messages as m", "m.id", "r.message_id")
      .leftJoin("deliveries as d", "d.id", "r.copy_id")
      .leftJoin("subscriptions as s", (join) =>
        join.onRef("s.dock_id", "=", "r.dock_id").onRef("s.chat_id", "=", "r.chat_id"),
      )
      .select([
        "r.id",
        "r.message_id",
        "r.dock_id",
        "r.chat_id",
        "r.kind",
        "r.round",
        "r.attempts",
        "r.created_at",
        "r.telegram_message_id",
        "d.telegram_message_ids",
        "m.text",
        "m.content",
        "m.acked_at",
        "m.deleted_at",
        "m.remind_ended",
        "s.chat_type",
        "s.state as subscription",
      ])
      .where("r.id", "=", id)
      .executeTakeFirst();
    if (row === undefined) return undefined;
    return {
      id,
      lease,
      messageId: row.message_id,
      dockId: row.dock_id,
      chatId: Number(row.chat_id),
      chatType: row.chat_type ?? "private",
      kind: row.kind,
      round: row.round,
      attempts: row.attempts,
      createdAt: Number(row.created_at),
      cleanup: claimed.cleanup === 1,
      telegramMessageId: row.telegram_message_id === null ? null : Number(row.telegram_message_id),
      replyTo: parseIds(row.telegram_message_ids ?? null)[0] ?? null,
      text: row.text,
      content: row.content,
      over:
        row.acked_at !== null ||
        row.deleted_at !== null ||
        row.subscription !== "active" ||
        (row.kind === "remind" && row.remind_ended !== null && row.remind_ended !== "expired"),
    };
  }

  /**
   * Telegram took the reminder: it is on record, and the one before it in the chat is to be
   * deleted. If the reminders ended while it was on its way, it is to be deleted too. Under the
   * message's shared lock, so that an acknowledgement committing at the same moment either sees
   * it sent (and deletes it) or is seen here.
   */
  async sent(reminder: ClaimedReminder, telegramMessageId: number): Promise<boolean> {
    const now = this.#now();
    return this.#db.kysely.transaction().execute(async (tx) => {
      await this.#db.messageLocks.shared(tx, reminder.messageId);
      const done = await tx
        .updateTable("reminders")
        .set({
          state: "sent",
          telegram_message_id: telegramMessageId,
          lease_until: null,
          last_error: null,
          updated_at: now,
        })
        .where("id", "=", reminder.id)
        .where("state", "=", "sending")
        .where("lease_until", "=", reminder.lease)
        .returning(["copy_id"])
        .executeTakeFirst();
      if (done === undefined) return false;
      await tx
        .updateTable("reminders")
        .set({ cleanup: 1, next_attempt_at: now, lease_until: null, updated_at: now })
        .where("copy_id", "=", done.copy_id)
        .where("id", "<", reminder.id)
        .where("telegram_message_id", "is not", null)
        .where("cleanup", "=", 0)
        .execute();
      // A later one is in the chat already (this one was retried, or recorded late): this one goes.
      const newer = await tx
        .selectFrom("reminders")
        .select("id")
        .where("copy_id", "=", done.copy_id)
        .where("id", ">", reminder.id)
        .where("telegram_message_id", "is not", null)
        .executeTakeFirst();
      const message = await tx
        .selectFrom("messages")
        .select(["acked_at", "deleted_at", "remind_ended"])
        .where("id", "=", reminder.messageId)
        .executeTakeFirst();
      if (
        newer !== undefined ||
        message === undefined ||
        message.acked_at !== null ||
        message.deleted_at !== null ||
        (reminder.kind === "remind" && message.remind_ended !== null && message.remind_ended !== "expired")
      ) {
        await tx
          .updateTable("reminders")
          .set({ cleanup: 1, next_attempt_at: now })
          .where("id", "=", reminder.id)
          .execute();
      }
      return true;
    });
  }

  /** The reminder's work ended without a send: `state` gone (not sent: not wanted any more) or failed. */
  async settle(
    reminder: ClaimedReminder,
    outcome: { state: "gone" | "failed" | "queued"; error: string | null; at?: number },
  ): Promise<boolean> {
    const now = this.#now();
    const result = await this.#db.kysely
      .updateTable("reminders")
      .set({
        state: outcome.state,
        last_error: outcome.error,
        lease_until: null,
        next_attempt_at: outcome.at ?? now,
        updated_at: now,
      })
      .where("id", "=", reminder.id)
      .where("state", "=", "sending")
      .where("lease_until", "=", reminder.lease)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** A cleanup is over (`again`: tried later, at `at`). */
  async cleaned(reminder: ClaimedReminder, again: { at: number; error: string } | null): Promise<boolean> {
    const now = this.#now();
    const result = await this.#db.kysely
      .updateTable("reminders")
      .set(
        again === null
          ? { cleanup: 2, lease_until: null, updated_at: now }
          : { lease_until: null, next_attempt_at: again.at, last_error: again.error, updated_at: now },
      )
      .where("id", "=", reminder.id)
      .where("cleanup", "=", 1)
      .where("lease_until", "=", reminder.lease)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }
}

/** Where a message's reminders stand. */
export interface ReminderStatus {
  every: number | null;
  for: number | null;
  rounds: number;
  nextAt: number | null;
  until: number | null;
  ended: ReminderEnd | null;
  /** Reminders by state (queued, sending, sent, failed, gone). */
  reminders: Record<string, number>;
  snoozes: { chatId: number; userId: number; name: string; until: number; at: number; active: boolean }[];
}

/** A reminder whose work may be taken up now: queued and due, left `sending` by a lost sender, or a cleanup due. */
function claimable(eb: ExpressionBuilder<Database, "reminders">, now: number) {
  return eb.and([
    eb("next_attempt_at", "<=", now),
    eb.or([
      eb("state", "=", "queued"),
      eb.and([eb("state", "=", "sending"), eb("lease_until", "<", now)]),
      eb.and([eb("cleanup", "=", 1), eb.or([eb("lease_until", "is", null), eb("lease_until", "<", now)])]),
    ]),
  ]);
}

/** Where a message's reminders stand (the status API, the console); null: it never asked for any. */
export async function reminderStatus(
  kysely: Kysely<Database>,
  messageId: string,
  now: number,
): Promise<ReminderStatus | null> {
  const message = await kysely
    .selectFrom("messages")
    .select(["content", "remind_next_at", "remind_until", "remind_rounds", "remind_ended", "reminded"])
    .where("id", "=", messageId)
    .executeTakeFirst();
  if (message === undefined) return null;
  const schedule = remindSchedule(message.content);
  if (
    schedule === null &&
    message.remind_rounds === 0 &&
    message.remind_ended === null &&
    message.reminded === 0
  )
    return null;
  const snoozes = await kysely
    .selectFrom("reminder_snoozes")
    .select(["chat_id", "user_id", "user_name", "until", "created_at"])
    .where("message_id", "=", messageId)
    .orderBy("created_at")
    .execute();
  const sent = await kysely
    .selectFrom("reminders")
    .select(["state", (eb) => eb.fn.countAll<number>().as("n")])
    .where("message_id", "=", messageId)
    .groupBy("state")
    .execute();
  return {
    every: schedule?.every ?? null,
    for: schedule?.for ?? null,
    rounds: message.remind_rounds,
    // Past remind_until it is the end that is due, not a round.
    nextAt:
      message.remind_next_at === null || Number(message.remind_next_at) > Number(message.remind_until)
        ? null
        : Number(message.remind_next_at),
    until: message.remind_until === null ? null : Number(message.remind_until),
    ended: message.remind_ended,
    reminders: Object.fromEntries(sent.map((row) => [row.state, Number(row.n)])),
    snoozes: snoozes.map((snooze) => ({
      chatId: Number(snooze.chat_id),
      userId: Number(snooze.user_id),
      name: snooze.user_name,
      until: Number(snooze.until),
      at: Number(snooze.created_at),
      active: Number(snooze.until) > now,
    })),
  };
}
