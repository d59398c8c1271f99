import { sql, type Transaction } from "kysely";
import { randomBase62 } from "../domain/ids.ts";
import type { Db } from "./db.ts";
import type { Database } from "./schema.ts";

/*
 * The callback outbox: events for a Dock's callback URL (message.delivered, message.failed,
 * message.acknowledged), one row each, written in the transaction of what they report, and sent
 * by delivery/event-sender.ts until the receiver takes them — durable like deliveries, and apart
 * from them, so a slow or failing receiver never holds up a message.
 *
 *   from      to        by              when
 *   ───────── ───────── ─────────────── ──────────────────────────────────────────────
 *   (new)     queued    queueEvent      what it reports happened (and the Dock has a callback URL)
 *   queued    sending   claim           the sender posts it (a lease is taken)
 *   sending   sent      sent            the receiver answered 2xx
 *   sending   queued    retry           any other answer, or none: tried again after a backoff
 *                                       (at once after the service stopped mid-post)
 *   sending   failed    failed          still refused when it grew too old, or the URL is gone
 *   sending   queued    requeueExpired  its sender died mid-post (the lease expired)
 */

export type EventType =
  | "message.delivered"
  | "message.failed"
  | "message.acknowledged"
  | "message.reminded"
  | "message.unacknowledged"
  | "message.snoozed"
  | "message.escalated";

/** An event to post. */
export interface PendingEvent {
  id: number;
  dockId: string;
  type: EventType;
  payload: string;
  attempts: number;
  createdAt: number;
  lease: number;
}

/**
 * Queues an event in the caller's transaction, when the Dock has a callback URL (none: nothing is
 * written). `data` joins the envelope: `{id, type, created_at, dock_id, …data}`.
 */
export async function queueEvent(
  tx: Transaction<Database>,
  event: { dockId: string; messageId: string; type: EventType; data: Record<string, unknown> },
  now: number,
): Promise<void> {
  const payload = JSON.stringify({
    id: `evt_${randomBase62(128)}`,
    type: event.type,
    created_at: new Date(now).toISOString(),
    dock_id: event.dockId,
    ...event.data,
  });
  await tx
    .insertInto("events")
    .columns([
      "dock_id",
      "message_id",
      "type",
      "payload",
      "state",
      "next_attempt_at",
      "created_at",
      "updated_at",
    ])
    .expression((eb) =>
      eb
        .selectFrom("docks")
        .select([
          "docks.id",
          sql<string>`cast(${event.messageId} as text)`.as("message_id"),
          sql<string>`cast(${event.type} as text)`.as("type"),
          sql<string>`cast(${payload} as text)`.as("payload"),
          sql<"queued">`cast(${"queued"} as text)`.as("state"),
          sql<number>`cast(${now} as bigint)`.as("next_attempt_at"),
          sql<number>`cast(${now} as bigint)`.as("created_at"),
          sql<number>`cast(${now} as bigint)`.as("updated_at"),
        ])
        .where("docks.id", "=", event.dockId)
        .where("docks.callback_url", "is not", null),
    )
    .execute();
}

/** Messages checked per sweep for having settled. */
const SETTLE_BATCH = 100;

/** The callback outbox's state changes (see the table above). */
export class EventOutbox {
  readonly #db: Db;
  readonly #now: () => number;

  constructor(db: Db, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
  }

  /** reportSettled until nothing more is due (a batch at a time). */
  async reportAllSettled(): Promise<number> {
    let total = 0;
    for (;;) {
      const reported = await this.reportSettled();
      total += reported;
      if (reported < SETTLE_BATCH) return total;
    }
  }

  /**
   * Messages whose Dock wanted events and whose copies have all settled (sent, failed or gone):
   * each is reported once, with its state as GET /messages/:id has it and the counts —
   * `message.delivered` when some chat received it and none failed, else `message.failed`
   * (a copy failed, or nobody received it: no subscribers, or all gone). Returns how many.
   */
  async reportSettled(): Promise<number> {
    const settled = await this.#db.kysely
      .selectFrom("messages as m")
      .select(["m.id", "m.dock_id", "m.key", "m.revision", "m.subscribers", "m.created_at"])
      // Literally 1, so that SQLite uses the partial index (a bound parameter does not imply it).
      .where(sql<boolean>`m.report_pending = 1`)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom("fanouts as f")
              .select("f.id")
              .whereRef("f.message_id", "=", "m.id")
              .where("f.kind", "=", "send"),
          ),
        ),
      )
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom("deliveries as d")
              .select("d.id")
              .whereRef("d.message_id", "=", "m.id")
              .where("d.kind", "=", "send")
              .where("d.state", "in", ["queued", "sending"]),
          ),
        ),
      )
      .limit(SETTLE_BATCH)
      .execute();
    let reported = 0;
    for (const message of settled) {
      const now = this.#now();
      const done = await this.#db.kysely.transaction().execute(async (tx) => {
        // The claim: of two sweeps (two instances), one reports.
        const claimed = await tx
          .updateTable("messages")
          .set({ report_pending: 0 })
          .where("id", "=", message.id)
          .where("report_pending", "=", 1)
          .executeTakeFirst();
        if (claimed.numUpdatedRows === 0n) return false;
        const rows = await tx
          .selectFrom("deliveries")
          .select(["state", (eb) => eb.fn.countAll<number>().as("n")])
          .where("message_id", "=", message.id)
          .where("kind", "=", "send")
          .groupBy("state")
          .execute();
        const copies = { sent: 0, failed: 0, gone: 0 };
        for (const row of rows) {
          if (row.state === "sent" || row.state === "failed" || row.state === "gone")
            copies[row.state] += Number(row.n);
        }
        // Subscribers who left before the dispatcher got to the message never had a copy.
        copies.gone += Math.max(0, message.subscribers - copies.sent - copies.failed - copies.gone);
        const state =
          message.subscribers === 0
            ? "no_subscribers"
            : copies.failed + copies.gone === 0
              ? "delivered"
              : copies.sent > 0
                ? "partially_delivered"
                : "undelivered";
        await queueEvent(
          tx,
          {
            dockId: message.dock_id,
            messageId: message.id,
            type: copies.sent > 0 && copies.failed === 0 ? "message.delivered" : "message.failed",
            data: {
              message: {
                id: message.id,
                key: message.key,
                revision: message.revision,
                created_at: new Date(message.created_at).toISOString(),
                subscribers: message.subscribers,
                state,
                copies,
              },
            },
          },
          now,
        );
        return true;
      });
      if (done) reported++;
    }
    return reported;
  }

  /**
   * The oldest due event of each Dock with one, at most `limit` Docks, taken in turn: the Docks
   * after `after` (by ID) first, then from the start. `failing`: some event of the Dock waits for
   * another try (its receiver failed it). `busy` Docks are left out, and with `workingOnly` the
   * failing ones too.
   */
  async dueByDock(options: {
    limit: number;
    after: string;
    busy: readonly string[];
    workingOnly: boolean;
  }): Promise<{ id: number; dockId: string; failing: boolean }[]> {
    const now = this.#now();
    let query = this.#db.kysely
      .selectFrom("events")
      .select((eb) => [
        "dock_id",
        eb.fn.min(eb.case().when("next_attempt_at", "<=", now).then(eb.ref("id")).end()).as("due_id"),
        eb.fn.max(eb.case().when("last_error", "is not", null).then(1).else(0).end()).as("failing"),
      ])
      .where("state", "=", "queued");
    if (options.busy.length > 0) query = query.where("dock_id", "not in", options.busy);
    query = query
      .groupBy("dock_id")
      .having(
        (eb) => eb.fn.min(eb.case().when("next_attempt_at", "<=", now).then(eb.ref("id")).end()),
        "is not",
        null,
      );
    if (options.workingOnly) {
      query = query.having(
        (eb) => eb.fn.max(eb.case().when("last_error", "is not", null).then(1).else(0).end()),
        "=",
        0,
      );
    }
    const rows = await query
      .orderBy(sql`case when dock_id > ${options.after} then 0 else 1 end`)
      .orderBy("dock_id")
      .limit(options.limit)
      .execute();
    return rows.map((row) => ({
      id: Number(row.due_id),
      dockId: row.dock_id,
      failing: Number(row.failing) === 1,
    }));
  }

  /** When the next queued event is due (ms), or null when none waits. */
  async nextDue(): Promise<number | null> {
    const row = await this.#db.kysely
      .selectFrom("events")
      .select((eb) => eb.fn.min("next_attempt_at").as("at"))
      .where("state", "=", "queued")
      .executeTakeFirst();
    return row?.at == null ? null : Number(row.at);
  }

  /** Takes an event for posting, with a lease; with where it goes and the secret to sign it with (sealed). */
  async claim(
    id: number,
    lease: number,
  ): Promise<(PendingEvent & { callbackUrl: string | null; signingSealed: string }) | undefined> {
    const now = this.#now();
    const claimed = await this.#db.kysely
      .updateTable("events")
      .set((eb) => ({
        state: "sending",
        lease_until: lease,
        attempts: eb("attempts", "+", 1),
        updated_at: now,
      }))
      .where("id", "=", id)
      .where("state", "=", "queued")
      .returning(["id", "dock_id", "type", "payload", "attempts", "created_at"])
      .executeTakeFirst();
    if (claimed === undefined) return undefined;
    const dock = await this.#db.kysely
      .selectFrom("docks")
      .select(["callback_url", "signing_sealed"])
      .where("id", "=", claimed.dock_id)
      .executeTakeFirst();
    return {
      id: Number(claimed.id),
      dockId: claimed.dock_id,
      type: claimed.type as EventType,
      payload: claimed.payload,
      attempts: claimed.attempts,
      createdAt: claimed.created_at,
      lease,
      callbackUrl: dock?.callback_url ?? null,
      signingSealed: dock?.signing_sealed ?? "",
    };
  }

  async sent(event: PendingEvent): Promise<boolean> {
    return this.#settle(event, { state: "sent", last_error: null });
  }

  async retry(event: PendingEvent, nextAttemptAt: number, error: string): Promise<boolean> {
    return this.#settle(event, { state: "queued", next_attempt_at: nextAttemptAt, last_error: error });
  }

  async failed(event: PendingEvent, error: string): Promise<boolean> {
    return this.#settle(event, { state: "failed", last_error: error });
  }

  async #settle(
    event: PendingEvent,
    values: { state: "sent" | "queued" | "failed"; last_error: string | null; next_attempt_at?: number },
  ): Promise<boolean> {
    const result = await this.#db.kysely
      .updateTable("events")
      .set({ ...values, lease_until: null, updated_at: this.#now() })
      .where("id", "=", event.id)
      .where("state", "=", "sending")
      .where("lease_until", "=", event.lease)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** Events left `sending` by a sender that died: queued again once their lease has passed. */
  async requeueExpired(): Promise<number> {
    const result = await this.#db.kysely
      .updateTable("events")
      .set({ state: "queued", lease_until: null, updated_at: this.#now() })
      .where("state", "=", "sending")
      .where("lease_until", "<", this.#now())
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  /** Deletes events posted or given up on before `cutoff` (retention, with their messages). */
  async prune(cutoff: number): Promise<number> {
    const result = await this.#db.kysely
      .deleteFrom("events")
      .where("state", "in", ["sent", "failed"])
      .where("created_at", "<", cutoff)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** A message's events, oldest first (for its status). */
  async ofMessage(messageId: string) {
    return this.#db.kysely
      .selectFrom("events")
      .select(["type", "state", "attempts", "last_error", "created_at", "updated_at"])
      .where("message_id", "=", messageId)
      .orderBy("id")
      .execute();
  }
}
