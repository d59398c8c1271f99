import { type ExpressionBuilder, type RawBuilder, sql, type Transaction, type UpdateObject } from "kysely";
import type { Db } from "./db.ts";
import { isOutage } from "./faults.ts";
import { GroupCommit } from "./group-commit.ts";
import { queueChange } from "./revise.ts";
import { Rollups, type SettledCount, Tallies } from "./rollups.ts";
import type { Database, DeliveryKind, DeliveryState } from "./schema.ts";

/*
 * The outbox: every change of a delivery's state happens in this file, and nowhere else. A
 * message is accepted with one `fanouts` row (AcceptBatch); the dispatcher fans it out into one
 * delivery per subscriber and drives each delivery through these states:
 *
 *   from        to        by                          when
 *   ─────────── ───────── ─────────────────────────── ──────────────────────────────────────────────
 *   (fanout)    queued    fanOut                      the Dock's queue runs short
 *   queued      sending   claim                       the dispatcher sends it (a lease is taken); also
 *                                                     a row `sending` under a claim of ours whose
 *                                                     answer the database lost (`orLeases`)
 *   queued      gone      claim                       its subscription is no longer active
 *   sending     sent      sent                        Telegram took every part (fenced by the lease)
 *   sending     queued    retry                       a failure worth retrying, a 429, a moved group
 *   sending     failed    failed                      Telegram refused it, or it grew too old
 *   sending     queued    requeueAbandoned            its sender is gone (a crash, a lost lock)
 *   queued/     gone      chatGone                    the chat blocked the bot, kicked it, vanished
 *    sending
 *   queued      gone      cancelForSubscriber         the Dock's owner removed the chat
 *   queued      gone      followChat                  a group became a supergroup already served
 *   queued      queued    followChat                  … otherwise it moves to the new chat id
 *   sent/failed/gone  (deleted)  prune                retention: old and finished
 *   any         (deleted) DockRepository.delete       the Dock is deleted (the rows cascade)
 *   (fanout)    queued    fanOut (kind edit, delete)  the message changed or was deleted (an edit or a
 *                                                     delete of each copy sent, see below)
 *   queued      gone      claim                       the message was deleted before this went out
 *
 * Living messages: a delivery is of a `kind`. A `send` puts a copy in its chat and records the
 * message `revision` it shows; an `edit` or `delete` works on the copy of its `target_id`, queued
 * behind it (each chat's deliveries go in id order), paced, leased and retried like a send. A
 * message changes by taking a new revision (message-changes.ts) and queueing one `fanouts` row of
 * kind `edit` (or `delete`), which fanOut turns into an edit of every copy sent, as it turns a new
 * message into its copies: a change costs the same for 3 subscribers or 30,000. A copy still queued
 * is sent as the message is when it goes. Whatever raced — a change committed while a copy was in
 * flight — every settle of a copy ends with `converge`, which (under the message's lock,
 * MessageLocks in db.ts) queues what the copy still lacks (an edit to the newest revision, or its
 * deletion), so every copy ends in the message's final form.
 *
 * `sent`, `failed` and `gone` are final. `sent`, `retry` and `failed` present the claim's lease: an
 * outcome that arrives after the lease passed to another claim is not recorded. `chatGone` and
 * `requeueAbandoned` act on whatever is `sending`, by design (the chat is gone; the sender is).
 * Read views (a message's status, the backlog, the console's report) are in outbox-views.ts.
 *
 * Copies whose outcome is unknown: Telegram's ids are on record the moment it answers
 * (`recordParts`), but a process can still stop between the call and that record. A copy it left
 * `sending` is queued again by `requeueAbandoned`, which counts the attempt in `unknown_attempts`:
 * the chat may hold a copy from it that the service does not know of. Unless the attempt had
 * recorded every part (the resumed send then sends nothing and `sent` takes the count back), the
 * copy is sent again and the count stays, for the message's status to say. Should Telegram later
 * name such a copy — a press on its Acknowledge button (`noteStray`), or an outcome that arrived
 * after its lease had passed on (`straysOf`) — its ids join the copy's `stray_ids`, and the copy's
 * next edit or delete removes them (an edit is queued for it at once). Telegram offers no way to
 * find the others: a bot cannot read a chat, and in private chats and basic groups message ids are
 * the bot's own sequence across all its chats (docs/architecture.md, "Failure modes").
 *
 * Activity: every change of a copy (a `send`) to sent, failed or gone, and every `retry` of one, is
 * counted for its Dock's day (rollups.ts) in the transaction that makes it, from the rows the
 * statement changed: a copy is counted once whatever raced, and not at all when its outcome was
 * refused. The settling of an edit or a delete counts as `changed` (the console's live stream
 * watches it). `requeueAbandoned` is not a retry of the copy's (its sender went away), and counts nothing.
 */

/** A queued delivery with everything needed to send it. */
export interface PendingDelivery {
  id: number;
  messageId: string;
  dockId: string;
  dockName: string;
  dockLink: string | null;
  chatId: number;
  chatType: string;
  text: string;
  /** JSON of the message's MessageContent, or null for plain text. */
  content: string | null;
  attempts: number;
  nextAttemptAt: number;
  createdAt: number;
  /** Telegram message ids of the parts already sent (a long text is several messages). */
  sentParts: number[];
  kind: DeliveryKind;
  /** An edit's or a delete's copy (the `send` delivery it changes). */
  targetId: number | null;
  /** The message's revision that `text` and `content` are (reloaded when the claim finds a newer one). */
  revision: number;
  /** Who acknowledged the message first; null until someone does. */
  acked: { name: string; at: number } | null;
  /** The lease of the current claim (0 until claimed); settling writes must present it. */
  lease: number;
  /** A copy's attempts whose outcome was never recorded (see "Copies whose outcome is unknown" above). */
  unknownAttempts: number;
  /** A copy resumed after some parts went out: the revision those parts show (null or 0: unknown). */
  partsRevision: number | null;
  /** A copy of an urgent message: it goes ahead of everything else waiting (the dispatcher's urgent lane). */
  urgent: boolean;
  /** The dispatcher's memory: the leases of claims whose answers the database lost (see claim's `orLeases`). */
  lostLeases?: number[];
  /** The dispatcher's memory: when the last attempt failed for Telegram's reasons (woken when it answers again). */
  waitedForTelegram?: number;
}

/**
 * What an edit came to: `edited`; `unchanged` (Telegram already showed it so); `resent` (the copy
 * could no longer be edited — the person deleted it, or Telegram refuses — so it was sent anew).
 */
export type EditOutcome = "edited" | "unchanged" | "resent";

function ackOf(row: { acked_name: string | null; acked_at: number | null }): PendingDelivery["acked"] {
  return row.acked_at === null ? null : { name: row.acked_name ?? "someone", at: Number(row.acked_at) };
}

/** Telegram message ids as the table keeps them (comma-separated). */
export function parseIds(value: string | null): number[] {
  return value ? value.split(",").map(Number) : [];
}

/** At most this many messages are fanned out in one transaction. */
const FANOUT_BATCH = 100;

/** A message's audience is fanned out this many subscribers per statement. */
const FANOUT_CHUNK = 2000;

/** What a settling write sets: values, or values computed from the row. */
type SettleValues =
  | UpdateObject<Database, "deliveries">
  | ((eb: ExpressionBuilder<Database, "deliveries">) => UpdateObject<Database, "deliveries">);

/** A row a claim may take: queued, or still ours under a claim whose answer was lost (`orLeases`). */
function claimable(eb: ExpressionBuilder<Database, "deliveries">, orLeases: readonly number[]) {
  if (orLeases.length === 0) return eb("state", "=", "queued");
  return eb.or([
    eb("state", "=", "queued"),
    eb.and([eb("state", "=", "sending"), eb("lease_until", "in", [...orLeases])]),
  ]);
}

/**
 * How the dispatcher is told of a Dock that got an urgent message (`!<Dock ID>`, beside the Dock ID
 * itself: no Dock ID starts so, and it crosses instances in an announcement's comma-separated
 * list): it reads the Dock's urgent lane too (Dispatcher.wake).
 */
export const URGENT = "!";

/** Records of parts (recordParts) under way at once: PostgreSQL's urgent connections. */
const URGENT_AT_ONCE = 4;

/** The most copies' settles committed together (GroupCommit). */
const SENT_TOGETHER = 200;

/** A copy's settle: all its parts reached the chat (Outbox.sent). */
interface SentCopy {
  id: number;
  lease: number;
  messageId: string;
  telegramIds: number[];
  revision: number;
  resolved: boolean;
}

/** A copy's settle that failed, kept apart from the others settled with it (see #sentTogether). */
class SettleFailure {
  readonly error: unknown;
  constructor(error: unknown) {
    this.error = error;
  }
}

/** A copy's settle: recorded (true), refused by its lease (false), or failed. */
type SentResult = boolean | SettleFailure;

/** What claiming a delivery came to (Outbox.claim). */
export type Claim =
  | { status: "claimed"; lease: number; chatId: number; revision: number }
  | { status: "unsubscribed" | "missing" };

/** Parts of a claimed delivery that Telegram took (Outbox.recordParts). */
interface PartsRecord {
  id: number;
  lease: number;
  kind: DeliveryKind;
  telegramIds: number[];
  revision: number;
}

/** Messages pruned together, and their deliveries deleted per statement. */
const PRUNE_CHUNK = 100;
const PRUNE_DELIVERIES = 10_000;

/** The outbox's state changes (see the table above); plain Kysely, the same on every database. */
export class Outbox {
  readonly #db: Db;
  readonly #now: () => number;
  readonly #rollups: Rollups;
  /** Copies' settles (`sent`) that arrive together are committed together. */
  readonly #sent: GroupCommit<SentCopy, SentResult>;
  /** Claims that arrive together go in one statement. */
  readonly #claims: GroupCommit<{ id: number; lease: number }, Claim>;
  /** Parts put on record (`recordParts`) that arrive together go in one statement. */
  readonly #records: GroupCommit<PartsRecord, boolean>;

  constructor(db: Db, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
    this.#rollups = new Rollups(db.kysely);
    this.#sent = new GroupCommit({
      together: (copies) => this.#sentTogether(copies),
      alone: async (copy) => (await this.#sentTogether([copy]))[0] as SentResult,
      most: SENT_TOGETHER,
    });
    this.#claims = new GroupCommit({
      together: (claims) => this.#claimTogether(claims),
      // Its own lease too: a batch's UPDATE may have claimed it before the batch failed.
      alone: (claim) => this.#claimAlone(claim.id, claim.lease, [claim.lease]),
      most: SENT_TOGETHER,
    });
    this.#records = new GroupCommit({
      together: (records) => this.#recordTogether(records),
      alone: async (record) => (await this.#recordTogether([record]))[0] as boolean,
      most: SENT_TOGETHER,
      // As many as PostgreSQL has urgent connections (store/postgres/adapter.ts): one statement
      // at a time would put every record behind a server process the scheduler set aside.
      atOnce: URGENT_AT_ONCE,
    });
  }

  /** Docks that have queued deliveries or messages waiting to be fanned out. */
  async queuedDocks(): Promise<string[]> {
    // A `select distinct dock_id` reads every queued row: with a million messages waiting, tens of
    // milliseconds each sweep. Instead, hop from one Dock to the next along the index (one seek
    // per Dock: deliveries_dock_queue, fanouts_dock), the "loose index scan" neither database
    // does on its own here.
    const queued = await sql<{ dock_id: string }>`
      with recursive d(dock_id) as (
        select min(dock_id) from deliveries where state = 'queued'
        union all
        select (select min(dock_id) from deliveries where state = 'queued' and dock_id > d.dock_id)
        from d where d.dock_id is not null
      )
      select dock_id from d where dock_id is not null`.execute(this.#db.kysely);
    const waiting = await sql<{ dock_id: string }>`
      with recursive d(dock_id) as (
        select min(dock_id) from fanouts
        union all
        select (select min(dock_id) from fanouts where dock_id > d.dock_id)
        from d where d.dock_id is not null
      )
      select dock_id from d where dock_id is not null`.execute(this.#db.kysely);
    return [...new Set([...queued.rows, ...waiting.rows].map((r) => r.dock_id))];
  }

  /** Docks with urgent work waiting: urgent messages not fanned out yet, or their copies queued (the partial indexes). */
  async urgentDocks(): Promise<string[]> {
    const { rows } = await sql<{ dock_id: string }>`
      select distinct dock_id from fanouts where urgent = 1
      union
      select distinct dock_id from deliveries where state = 'queued' and urgent = 1`.execute(this.#db.kysely);
    return rows.map((row) => row.dock_id);
  }

  /**
   * Fans out the Dock's oldest waiting messages, in the order they were accepted, into one queued
   * delivery per subscriber that had subscribed when the message was accepted and is active now
   * (a chat that blocked the bot and came back still gets it, as a queued delivery would), until at
   * least `wanted` deliveries were queued (or FANOUT_BATCH messages done). `more`: messages still wait.
   * `urgentOnly`: the Dock's urgent messages, whatever waits before them (the urgent lane);
   * otherwise only the others.
   */
  async fanOut(
    dockId: string,
    wanted: number,
    urgentOnly = false,
  ): Promise<{ queued: number; more: boolean }> {
    const now = this.#now();
    return this.#db.kysely.transaction().execute(async (tx) => {
      const waiting = await tx
        .selectFrom("fanouts")
        .innerJoin("messages", "messages.id", "fanouts.message_id")
        .select([
          "fanouts.id",
          "fanouts.message_id",
          "fanouts.subscribers",
          "fanouts.kind",
          "fanouts.urgent",
          "messages.created_at",
        ])
        .where("fanouts.dock_id", "=", dockId)
        // The urgent lane's apart: literal, so that the planner sees the partial index's condition
        // (fanouts_urgent).
        .where(urgentOnly ? sql<boolean>`fanouts.urgent = 1` : sql<boolean>`fanouts.urgent = 0`)
        .orderBy("fanouts.id")
        .limit(FANOUT_BATCH + 1)
        .execute();
      let queued = 0;
      let done = 0;
      for (const message of waiting) {
        if (queued >= wanted || done === FANOUT_BATCH) break;
        done++;
        // Deleting the row is the claim: should two dispatchers ever overlap (PostgreSQL, a lost
        // lock), the second finds it gone and fans nothing out twice.
        const claimed = await tx.deleteFrom("fanouts").where("id", "=", message.id).executeTakeFirst();
        if (claimed.numDeletedRows === 0n) continue;
        if (message.kind !== "send") {
          // A change of a message: its edit or delete of every copy sent, a chunk of copies per
          // statement (as sends below), so no one statement grows with the audience.
          for (let after = 0; ; ) {
            const page = await tx
              .selectFrom("deliveries")
              .select("id")
              .where("message_id", "=", message.message_id)
              .where("kind", "=", "send")
              .where("id", ">", after)
              .orderBy("id")
              .limit(FANOUT_CHUNK)
              .execute();
            const last = page.at(-1);
            if (last === undefined) break;
            queued += await queueWork(
              tx,
              message.kind,
              { messageId: message.message_id, after, upto: Number(last.id) },
              now,
            );
            after = Number(last.id);
            if (page.length < FANOUT_CHUNK) break;
          }
          continue;
        }
        const audience = (range?: { after: number; upto: number }) => {
          let query = tx
            .selectFrom("subscriptions")
            .where("subscriptions.dock_id", "=", dockId)
            .where("subscriptions.state", "=", "active")
            // Subscribed since before the message: someone who subscribed (or came back after
            // leaving) later does not receive what was sent before.
            .where("subscriptions.active_since", "<=", message.created_at);
          if (range) {
            query = query
              .where("subscriptions.id", ">", range.after)
              .where("subscriptions.id", "<=", range.upto);
          }
          return query;
        };
        const insert = async (range?: { after: number; upto: number }) => {
          const inserted = await tx
            .insertInto("deliveries")
            .columns([
              "message_id",
              "dock_id",
              "chat_id",
              "state",
              "next_attempt_at",
              "created_at",
              "updated_at",
              "urgent",
            ])
            .expression(
              audience(range)
                .select([
                  // Typed casts: PostgreSQL cannot infer a parameter's type from an INSERT … SELECT list.
                  sql<string>`cast(${message.message_id} as text)`.as("message_id"),
                  "subscriptions.dock_id",
                  "subscriptions.chat_id",
                  sql<"queued">`cast(${"queued"} as text)`.as("state"),
                  sql<number>`cast(${message.created_at} as bigint)`.as("next_attempt_at"),
                  sql<number>`cast(${message.created_at} as bigint)`.as("created_at"),
                  sql<number>`cast(${now} as bigint)`.as("updated_at"),
                  sql<number>`cast(${message.urgent} as integer)`.as("urgent"),
                ])
                .orderBy("subscriptions.id"),
            )
            .executeTakeFirst();
          return Number(inserted.numInsertedOrUpdatedRows ?? 0n);
        };
        if (message.subscribers <= FANOUT_CHUNK) {
          queued += await insert();
          continue;
        }
        // A large audience, in chunks: no one statement grows with the Dock's subscribers (and
        // outlasts DATABASE_TIMEOUT_SECONDS, or holds SQLite's one connection for long).
        for (let after = 0; ; ) {
          const page = await audience()
            .select("subscriptions.id")
            .where("subscriptions.id", ">", after)
            .orderBy("subscriptions.id")
            .limit(FANOUT_CHUNK)
            .execute();
          const last = page.at(-1);
          if (last === undefined) break;
          queued += await insert({ after, upto: last.id });
          after = last.id;
          if (page.length < FANOUT_CHUNK) break;
        }
      }
      return { queued, more: waiting.length > done };
    });
  }

  /**
   * A Dock's queued deliveries after `afterId`, oldest first, at most `limit`. Read per Dock (not
   * globally oldest first) so a Dock with a huge backlog cannot hide another Dock's message, and
   * from a cursor so each read costs what it returns, not the size of the queue. Not-yet-due
   * deliveries are included so that each chat's order is kept while one of them waits.
   * `urgentOnly`: only copies of urgent messages (the urgent lane), whatever waits before them.
   */
  async queuedFor(
    dockId: string,
    afterId: number,
    limit: number,
    urgentOnly = false,
  ): Promise<PendingDelivery[]> {
    const rows = await this.#db.kysely
      .selectFrom("deliveries")
      .innerJoin("messages", "messages.id", "deliveries.message_id")
      .innerJoin("docks", "docks.id", "deliveries.dock_id")
      .leftJoin("subscriptions", (join) =>
        join
          .onRef("subscriptions.dock_id", "=", "deliveries.dock_id")
          .onRef("subscriptions.chat_id", "=", "deliveries.chat_id"),
      )
      .select([
        "deliveries.id",
        "deliveries.message_id",
        "deliveries.dock_id",
        "deliveries.chat_id",
        "deliveries.attempts",
        "deliveries.next_attempt_at",
        "deliveries.created_at",
        "deliveries.telegram_message_ids",
        "deliveries.kind",
        "deliveries.target_id",
        "deliveries.unknown_attempts",
        "deliveries.revision as parts_revision",
        "deliveries.urgent",
        "messages.text",
        "messages.content",
        "messages.revision",
        "messages.acked_name",
        "messages.acked_at",
        "docks.name",
        "docks.link",
        "subscriptions.chat_type",
      ])
      .where("deliveries.state", "=", "queued")
      .where("deliveries.dock_id", "=", dockId)
      .where("deliveries.id", ">", afterId)
      // The urgent lane's own read: literal, so that the planner sees the partial index's
      // condition (deliveries_urgent_queue). The ordinary read returns urgent rows too (its index
      // has no `urgent`: filtering them here would scan them at every read); the dispatcher skips them.
      .$if(urgentOnly, (query) =>
        query.where(sql<boolean>`deliveries.state = 'queued' and deliveries.urgent = 1`),
      )
      .orderBy("deliveries.id")
      .limit(limit)
      .execute();
    return rows.map((r) => ({
      id: Number(r.id),
      messageId: r.message_id,
      dockId: r.dock_id,
      dockName: r.name,
      dockLink: r.link,
      chatId: r.chat_id,
      chatType: r.chat_type ?? "private",
      text: r.text,
      content: r.content,
      attempts: r.attempts,
      nextAttemptAt: r.next_attempt_at,
      createdAt: r.created_at,
      sentParts: parseIds(r.telegram_message_ids),
      kind: r.kind,
      targetId: r.target_id === null ? null : Number(r.target_id),
      revision: r.revision,
      acked: ackOf(r),
      unknownAttempts: r.unknown_attempts,
      partsRevision: r.parts_revision,
      urgent: r.urgent === 1,
      lease: 0,
    }));
  }

  /** The message as it is now (its text, content and acknowledgement), for a copy to show. */
  async messageNow(
    messageId: string,
  ): Promise<
    { text: string; content: string | null; revision: number; acked: PendingDelivery["acked"] } | undefined
  > {
    const row = await this.#db.kysely
      .selectFrom("messages")
      .select(["text", "content", "revision", "acked_name", "acked_at"])
      .where("id", "=", messageId)
      .executeTakeFirst();
    return row && { text: row.text, content: row.content, revision: row.revision, acked: ackOf(row) };
  }

  /**
   * The Telegram messages of the copy an edit or a delete works on, the revision they show, and
   * the strays of its attempts whose outcome was unknown (to be removed).
   */
  async copy(
    targetId: number,
  ): Promise<{ telegramIds: number[]; revision: number; strays: number[] } | undefined> {
    const row = await this.#db.kysely
      .selectFrom("deliveries")
      .select(["telegram_message_ids", "revision", "stray_ids"])
      .where("id", "=", targetId)
      .executeTakeFirst();
    return (
      row && {
        telegramIds: parseIds(row.telegram_message_ids),
        revision: row.revision ?? 1,
        strays: parseIds(row.stray_ids),
      }
    );
  }

  /**
   * Claims one delivery for sending, with a lease (a time, ms): if the process dies mid-send, the
   * delivery is queued again once the lease expires (at-least-once). Refuses, and marks the
   * delivery gone, when its subscription is no longer active — unsubscribing stops deliveries at
   * once. `orLeases`: the leases of earlier claims of ours whose answers were lost (the database
   * failed as it answered): a row still `sending` under one of them is ours, and is claimed again.
   */
  async claim(id: number, lease: number, orLeases: readonly number[] = []): Promise<Claim> {
    // Claims of ours whose answers were lost take the long way, alone.
    if (orLeases.length > 0) return this.#claimAlone(id, lease, orLeases);
    return this.#claims.add({ id, lease });
  }

  /**
   * Claims that arrive together (the dispatcher starts many sends at once) in one statement, each
   * row with its own lease; a delivery it does not claim is looked at alone (#claimAlone says why).
   */
  async #claimTogether(claims: { id: number; lease: number }[]): Promise<Claim[]> {
    const now = this.#now();
    const leases = new Map(claims.map((claim) => [claim.id, claim.lease]));
    const rows = await this.#claimStatement(
      claims.map((claim) => claim.id),
      sql<number>`case id ${sql.join(
        claims.map((claim) => sql`when ${claim.id} then cast(${claim.lease} as bigint)`),
        sql` `,
      )} end`,
      [],
      now,
    );
    const claimed = new Map(rows.map((row) => [Number(row.id), row]));
    const results: Claim[] = [];
    for (const { id, lease } of claims) {
      const row = claimed.get(id);
      results.push(
        row === undefined
          ? await this.#claimAlone(id, lease, [])
          : {
              status: "claimed",
              lease: leases.get(id) as number,
              chatId: row.chat_id,
              revision: Number(row.revision ?? 0),
            },
      );
    }
    return results;
  }

  /** The claim's UPDATE for `ids`, each set to `lease` (a value, or a CASE over the ids). */
  #claimStatement(
    ids: number[],
    lease: number | RawBuilder<number>,
    orLeases: readonly number[],
    now: number,
  ) {
    return (
      this.#db.kysely
        .updateTable("deliveries")
        .set((eb) => ({
          state: "sending",
          lease_until: lease,
          attempts: eb("attempts", "+", 1),
          updated_at: now,
        }))
        .where("id", "in", ids)
        .where((eb) => claimable(eb, orLeases))
        // A delete goes to a chat that has left too: what the sender takes back should not stay
        // there. A copy or an edit of a message deleted meanwhile does not go at all.
        .where((eb) =>
          eb.or([
            eb("kind", "=", "delete"),
            eb.and([
              eb.exists(
                eb
                  .selectFrom("subscriptions")
                  .select("subscriptions.id")
                  .whereRef("subscriptions.dock_id", "=", "deliveries.dock_id")
                  .whereRef("subscriptions.chat_id", "=", "deliveries.chat_id")
                  .where("subscriptions.state", "=", "active"),
              ),
              eb.not(
                eb.exists(
                  eb
                    .selectFrom("messages")
                    .select("messages.id")
                    .whereRef("messages.id", "=", "deliveries.message_id")
                    .where("messages.deleted_at", "is not", null),
                ),
              ),
            ]),
          ]),
        )
        // The chat as the row has it now (a group that became a supergroup may have moved since the
        // row was read), and the message's revision (it may have changed since).
        .returning((eb) => [
          "id",
          "chat_id",
          eb
            .selectFrom("messages")
            .select("messages.revision")
            .whereRef("messages.id", "=", "deliveries.message_id")
            .as("revision"),
        ])
        .execute()
    );
  }

  /** One claim, and when it is refused, why: the subscription ended, the message was deleted, or nothing to claim. */
  async #claimAlone(id: number, lease: number, orLeases: readonly number[]): Promise<Claim> {
    const now = this.#now();
    const [claimed] = await this.#claimStatement([id], lease, orLeases, now);
    if (claimed !== undefined) {
      return { status: "claimed", lease, chatId: claimed.chat_id, revision: Number(claimed.revision ?? 0) };
    }
    return this.#db.kysely.transaction().execute(async (tx) => {
      const deleted = await tx
        .selectFrom("deliveries")
        .innerJoin("messages", "messages.id", "deliveries.message_id")
        .select([
          "messages.deleted_at",
          "deliveries.kind",
          "deliveries.telegram_message_ids",
          "deliveries.stray_ids",
        ])
        .where("deliveries.id", "=", id)
        .executeTakeFirst();
      const reason = deleted?.deleted_at != null ? "the message was deleted" : "unsubscribed";
      const gone = await tx
        .updateTable("deliveries")
        .set({ state: "gone", last_error: reason, lease_until: null, updated_at: now })
        .where("id", "=", id)
        .where((eb) => claimable(eb, orLeases))
        .returning(["dock_id", "kind"])
        .executeTakeFirst();
      if (gone === undefined) return { status: "missing" as const };
      // A copy whose first parts went out before its message was deleted: those parts go too (and
      // its strays, copies of attempts whose outcome was unknown that Telegram named since).
      if (
        deleted?.deleted_at != null &&
        deleted.kind === "send" &&
        (deleted.telegram_message_ids !== null || deleted.stray_ids !== null)
      ) {
        await queueWork(tx, "delete", { targetId: id }, now);
      }
      // A copy of a deleted message was cancelled, not lost with its chat: the chart's `gone` is
      // for chats that left or blocked the bot. Counted as a change (the console's stream sees it).
      await this.#rollups.add(
        tx,
        now,
        deleted?.deleted_at != null
          ? new Tallies().count(gone.dock_id, "changed")
          : new Tallies().settled([gone], "gone"),
      );
      return { status: "unsubscribed" as const };
    });
  }

  /**
   * Telegram took parts of a claimed delivery (a copy's, or those an edit adds): their ids go on
   * record at once, in an urgent statement (Db.urgent) with those of other deliveries that came
   * while the last one was written, while the row stays `sending`. The settle that
   * follows is a transaction that may wait for the message's lock, the Dock's day of activity and
   * the connection; a crash before it commits now costs nothing that Telegram did — the claim
   * taken again after a restart resumes after these parts (`sentParts`) instead of sending them
   * anew. A copy's parts are recorded with the `revision` they show (0: mixed, or unknown). Fenced
   * by the lease like a settle; false when refused.
   */
  async recordParts(
    delivery: { id: number; lease: number; kind: DeliveryKind },
    telegramIds: number[],
    revision: number,
  ): Promise<boolean> {
    return this.#records.add({
      id: delivery.id,
      lease: delivery.lease,
      kind: delivery.kind,
      telegramIds,
      revision,
    });
  }

  /**
   * Parts of several deliveries on record (recordParts) in one urgent statement: each row gets
   * its own ids (and a copy its revision), fenced by its own lease. Under load, the records that
   * come while such statements are being written go in the next (up to URGENT_AT_ONCE at once).
   */
  async #recordTogether(records: PartsRecord[]): Promise<boolean[]> {
    const each = (value: (record: PartsRecord) => unknown, only = (_: PartsRecord) => true) =>
      sql.join(
        records.filter(only).map((record) => sql`when ${record.id} then ${value(record)}`),
        sql` `,
      );
    const copies = records.some((record) => record.kind === "send");
    const result = await this.#db.urgent(
      this.#db.kysely
        .updateTable("deliveries")
        .set({
          telegram_message_ids: sql<string>`case id ${each((record) => record.telegramIds.join(","))} end`,
          // An edit's revision is the one it applied, written when it settles.
          ...(copies
            ? {
                revision: sql<number>`case id ${each(
                  (record) => sql`cast(${record.revision} as integer)`,
                  (record) => record.kind === "send",
                )} else revision end`,
              }
            : {}),
          updated_at: this.#now(),
        })
        .where(
          "id",
          "in",
          records.map((record) => record.id),
        )
        .where("state", "=", "sending")
        .where(
          "lease_until",
          "=",
          sql<number>`case id ${each((record) => sql`cast(${record.lease} as bigint)`)} end`,
        )
        .returning("id")
        .compile(),
    );
    const written = new Set((result.rows as { id: number | string }[]).map((row) => Number(row.id)));
    return records.map((record) => written.has(record.id));
  }

  /**
   * Settling writes are fenced by the claim's lease: if the lease expired and the delivery was
   * claimed again meanwhile, this (late) outcome is not recorded and the method answers false.
   * `resolved`: the copy was resumed after an interrupted attempt that had recorded every part, so
   * that attempt's outcome is known after all (its count in `unknown_attempts` is taken back).
   */
  async sent(
    delivery: { id: number; lease: number; messageId: string },
    telegramIds: number[],
    revision: number,
    resolved = false,
  ): Promise<boolean> {
    const result = await this.#sent.add({
      id: delivery.id,
      lease: delivery.lease,
      messageId: delivery.messageId,
      telegramIds,
      revision,
      resolved,
    });
    if (result instanceof SettleFailure) throw result.error;
    return result;
  }

  /**
   * Copies' settles (`sent`) that came together, a result each: a transaction per message, each
   * with one UPDATE for all its copies, one read of the message for converge (under its shared
   * lock it cannot change meanwhile) and one activity row per Dock.
   */
  async #sentTogether(copies: SentCopy[]): Promise<SentResult[]> {
    // One message's copies per transaction: it holds one message lock, as every settle always did,
    // so no lock order with a change of several messages at once (AcceptBatch) can deadlock. A
    // fan-out's copies are all of one message.
    const byMessage = new Map<string, SentCopy[]>();
    for (const copy of copies) {
      const group = byMessage.get(copy.messageId);
      if (group === undefined) byMessage.set(copy.messageId, [copy]);
      else group.push(copy);
    }
    // Each message's outcome is its own: one that fails leaves the others' committed results as
    // they are (retrying those would find them settled, and warn of a lease that had not expired).
    const settled = new Map<number, SentResult>();
    const settle = async (group: SentCopy[]) => {
      const results = await this.#sentOfOneMessage(group);
      for (const [i, copy] of group.entries()) settled.set(copy.id, results[i] as boolean);
    };
    for (const group of byMessage.values()) {
      try {
        await settle(group);
      } catch (error) {
        // The database unavailable fails the message's copies; any other failure is a row's:
        // each copy alone finds out which.
        if (group.length === 1 || isOutage(error)) {
          for (const copy of group) settled.set(copy.id, new SettleFailure(error));
          continue;
        }
        for (const copy of group) {
          await settle([copy]).catch((alone: unknown) => settled.set(copy.id, new SettleFailure(alone)));
        }
      }
    }
    return copies.map((copy) => settled.get(copy.id) as SentResult);
  }

  /** Copies of one message settled in one transaction (see #sentTogether). */
  async #sentOfOneMessage(copies: SentCopy[]): Promise<boolean[]> {
    const now = this.#now();
    const byId = new Map(copies.map((copy) => [copy.id, copy]));
    const each = (value: (copy: SentCopy) => unknown) =>
      sql.join(
        copies.map((copy) => sql`when ${copy.id} then ${value(copy)}`),
        sql` `,
      );
    const resolved = copies.filter((copy) => copy.resolved).map((copy) => copy.id);
    const messageId = (copies[0] as SentCopy).messageId;
    return this.#db.kysely.transaction().execute(async (tx) => {
      await this.#db.messageLocks.shared(tx, messageId);
      // One statement for every copy, each fenced by its own lease (see #settle).
      const written = await tx
        .updateTable("deliveries")
        .set({
          state: "sent",
          telegram_message_ids: sql<string>`case id ${each((copy) => copy.telegramIds.join(","))} end`,
          last_error: null,
          revision: sql<number>`case id ${each((copy) => sql`cast(${copy.revision} as integer)`)} end`,
          ...(resolved.length > 0
            ? {
                // An interrupted attempt's outcome, known after all (see `sent`).
                unknown_attempts: sql<number>`case when id in (${sql.join(resolved)}) then (case when unknown_attempts > 0 then unknown_attempts - 1 else 0 end) else unknown_attempts end`,
              }
            : {}),
          lease_until: null,
          updated_at: now,
        })
        .where("id", "in", [...byId.keys()])
        .where("state", "=", "sending")
        .where(
          "lease_until",
          "=",
          sql<number>`case id ${each((copy) => sql`cast(${copy.lease} as bigint)`)} end`,
        )
        .returning(["id", "dock_id", "kind", "stray_ids"])
        .execute();
      const message = await readForConverge(tx, messageId);
      const settled = new Set<number>();
      for (const row of written) {
        const copy = byId.get(Number(row.id)) as SentCopy;
        settled.add(copy.id);
        // A press while this answer was on its way named the copy's own message before it was on
        // record (acknowledge took it for a stray): it is the copy, never a stray to remove.
        const strays = parseIds(row.stray_ids);
        const left = strays.filter((id) => !copy.telegramIds.includes(id));
        if (left.length < strays.length) {
          await tx
            .updateTable("deliveries")
            .set({ stray_ids: left.length > 0 ? left.join(",") : null })
            .where("id", "=", copy.id)
            .execute();
        }
        await convergeOn(tx, message, copy.id, copy.revision, now, left.length > 0);
      }
      await this.#rollups.add(tx, now, new Tallies().settled(written, "sent"));
      return copies.map((copy) => settled.has(copy.id));
    });
  }

  /**
   * An edit is done: the copy `targetId` now shows `revision` in `telegramIds` (parts may have been
   * added, removed, or sent anew), and `outcome` says how. Then the copy converges (an edit queued
   * for a yet newer revision, or its deletion).
   */
  async edited(
    edit: { id: number; lease: number; messageId: string; targetId: number; chatId: number },
    result: {
      telegramIds: number[];
      revision: number;
      outcome: EditOutcome;
      note: string | null;
      /** Strays of the copy this edit removed (or found gone): they leave its `stray_ids`. */
      strays?: number[];
    },
  ): Promise<boolean> {
    const now = this.#now();
    return this.#db.kysely.transaction().execute(async (tx) => {
      await this.#db.messageLocks.shared(tx, edit.messageId);
      const written = await this.#settle(
        tx,
        edit.id,
        edit.lease,
        {
          state: "sent",
          telegram_message_ids: result.telegramIds.join(","),
          revision: result.revision,
          outcome: result.outcome,
          last_error: result.note,
        },
        now,
      );
      if (written === undefined) return false;
      await tx
        .updateTable("deliveries")
        .set({
          telegram_message_ids: result.telegramIds.join(","),
          revision: result.revision,
          // A group that became a supergroup: the copy is there now (sent anew there).
          chat_id: edit.chatId,
          updated_at: now,
        })
        .where("id", "=", edit.targetId)
        .execute();
      // The copy's own messages leave its strays too: a press on a part this edit sent, before the
      // edit was recorded, named it as one (noteStray), and the next edit would delete it.
      await forgetStrays(tx, edit.targetId, [...(result.strays ?? []), ...result.telegramIds], now);
      await converge(tx, edit.targetId, edit.messageId, result.revision, now);
      await this.#rollups.add(tx, now, new Tallies().settled([written], "sent"));
      return true;
    });
  }

  /**
   * A delete is done (`deleted`, `already_deleted`), or Telegram would not delete the copy
   * (`failed`, why). `strays`: those of the copy's strays it removed (or found gone).
   */
  async deletedCopy(
    deletion: { id: number; lease: number; messageId: string; targetId: number | null },
    result: { outcome: "deleted" | "already_deleted" } | { outcome: "not_deleted"; error: string },
    strays: number[] = [],
  ): Promise<boolean> {
    const state = result.outcome === "not_deleted" ? "failed" : "sent";
    const values = {
      state,
      outcome: result.outcome,
      last_error: result.outcome === "not_deleted" ? result.error : null,
    } as const;
    if (strays.length === 0 || deletion.targetId === null)
      return this.#settleCounted(deletion.id, deletion.lease, state, values);
    const now = this.#now();
    const targetId = deletion.targetId;
    return this.#db.kysely.transaction().execute(async (tx) => {
      await this.#db.messageLocks.shared(tx, deletion.messageId);
      const written = await this.#settle(tx, deletion.id, deletion.lease, values, now);
      if (written === undefined) return false;
      await forgetStrays(tx, targetId, strays, now);
      await this.#rollups.add(tx, now, new Tallies().settled([written], state));
      return true;
    });
  }

  /**
   * A copy's outcome came after its lease had passed to another attempt (a leader that lost its
   * lock, a database outage longer than the lease): it is not recorded, but Telegram's ids are
   * known, and the other attempt may send the copy again. They join the copy's strays, to be
   * removed by its next edit (queued now if the copy is in its chat; converge queues it otherwise).
   */
  async straysOf(copy: { id: number; messageId: string }, telegramIds: number[]): Promise<void> {
    if (telegramIds.length === 0) return;
    const now = this.#now();
    await this.#db.kysely.transaction().execute(async (tx) => {
      await this.#db.messageLocks.exclusive(tx, copy.messageId);
      for (const id of telegramIds) await noteStray(tx, copy.id, id, now);
    });
  }

  /**
   * Back to the queue for another attempt at `nextAttemptAt`. A `429` is not a failed attempt
   * (`countAttempt` false): the attempt counter is given back. A try that did not get through
   * counts as `retried` in the Dock's activity; a claim handed back untried (`tried` false: the
   * chat moved before the send) does not.
   */
  async retry(
    id: number,
    lease: number,
    options: {
      nextAttemptAt: number;
      error: string;
      countAttempt: boolean;
      sentParts: number[];
      tried?: boolean;
    },
  ): Promise<boolean> {
    return this.#settleCounted(id, lease, options.tried === false ? null : "retried", (eb) => ({
      state: "queued",
      next_attempt_at: options.nextAttemptAt,
      last_error: options.error,
      telegram_message_ids: options.sentParts.length ? options.sentParts.join(",") : null,
      attempts: options.countAttempt ? eb.ref("attempts") : eb("attempts", "-", 1),
    }));
  }

  async failed(id: number, lease: number, error: string, sentParts: number[]): Promise<boolean> {
    return this.#settleCounted(id, lease, "failed", {
      state: "failed",
      last_error: error,
      telegram_message_ids: sentParts.length ? sentParts.join(",") : null,
    });
  }

  /**
   * An outcome, written only while the row is still `sending` under the same lease. Returns the
   * row's Dock and kind when it was written (for the activity count), undefined when refused.
   */
  async #settle(
    tx: Transaction<Database>,
    id: number,
    lease: number,
    values: SettleValues,
    now: number,
  ): Promise<{ dock_id: string; kind: DeliveryKind; stray_ids: string | null } | undefined> {
    return tx
      .updateTable("deliveries")
      .set((eb) => ({
        ...(typeof values === "function" ? values(eb) : values),
        lease_until: null,
        updated_at: now,
      }))
      .where("id", "=", id)
      .where("state", "=", "sending")
      .where("lease_until", "=", lease)
      .returning(["dock_id", "kind", "stray_ids"])
      .executeTakeFirst();
  }

  /** An outcome (#settle) and its activity count, in one transaction; false when refused. */
  async #settleCounted(
    id: number,
    lease: number,
    count: SettledCount | null,
    values: SettleValues,
  ): Promise<boolean> {
    const now = this.#now();
    return this.#db.kysely.transaction().execute(async (tx) => {
      const written = await this.#settle(tx, id, lease, values, now);
      if (written === undefined) return false;
      if (count !== null) await this.#rollups.add(tx, now, new Tallies().settled([written], count));
      return true;
    });
  }

  /**
   * The chat cannot be reached any more (blocked the bot, kicked it, deleted): its subscriptions
   * become `blocked` and everything still queued for it is `gone`. A later /start reactivates.
   */
  async chatGone(chatId: number, error: string): Promise<void> {
    const now = this.#now();
    await this.#db.kysely.transaction().execute(async (tx) => {
      await tx
        .updateTable("subscriptions")
        .set({ state: "blocked", updated_at: now })
        .where("chat_id", "=", chatId)
        .where("state", "=", "active")
        .execute();
      const gone = await tx
        .updateTable("deliveries")
        .set({ state: "gone", last_error: error, lease_until: null, updated_at: now })
        .where("chat_id", "=", chatId)
        .where("state", "in", ["queued", "sending"])
        .returning(["dock_id", "kind"])
        .execute();
      await this.#rollups.add(tx, now, new Tallies().settled(gone, "gone"));
    });
  }

  /**
   * Deliveries left `sending` by a dispatcher that is gone (a crash, a leader whose lock passed to
   * this one): queued again, so they go out before their chats' later messages. With `all`, every
   * one (right for the dispatcher that has just become the only one); otherwise only expired
   * leases. `except`: this dispatcher's own sends in flight, which it settles itself.
   */
  async requeueAbandoned(all: boolean, except: Iterable<number> = []): Promise<number> {
    let query = this.#db.kysely
      .updateTable("deliveries")
      .set({
        state: "queued",
        lease_until: null,
        // Whether Telegram took the copy (or the part after those recorded) is unknown.
        unknown_attempts: sql<number>`case when kind = 'send' then unknown_attempts + 1 else unknown_attempts end`,
        updated_at: this.#now(),
      })
      .where("state", "=", "sending");
    if (!all) query = query.where("lease_until", "<", this.#now());
    const mine = [...except];
    if (mine.length > 0) query = query.where("id", "not in", mine);
    const result = await query.executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  /**
   * Deletes messages older than `cutoff` whose deliveries are all finished (sent, failed or gone),
   * with their deliveries. Nothing still queued is ever pruned. In chunks — PRUNE_CHUNK messages at
   * a time, their deliveries PRUNE_DELIVERIES per statement — so that a long-grown backlog of old
   * messages to many subscribers never makes one statement outlast DATABASE_TIMEOUT_SECONDS, nor
   * hold SQLite's one connection for long.
   */
  async prune(cutoff: number): Promise<number> {
    // Replayable sends long past the Idempotency-Key window.
    await this.#db.kysely.deleteFrom("replays").where("created_at", "<", cutoff).execute();
    let total = 0;
    for (;;) {
      const ids = (
        await this.#db.kysely
          .selectFrom("messages")
          .select("messages.id")
          // A message that is still being changed (replaced by its key every day, say) is kept:
          // its copies stay editable for as long as its sender uses it.
          .where(sql<number>`coalesce(messages.revised_at, messages.created_at)`, "<", cutoff)
          .where(({ not, exists, selectFrom }) =>
            not(
              exists(
                selectFrom("deliveries")
                  .select("deliveries.id")
                  .whereRef("deliveries.message_id", "=", "messages.id")
                  .where("deliveries.state", "in", ["queued", "sending"]),
              ),
            ),
          )
          .where(({ not, exists, selectFrom }) =>
            not(
              exists(
                selectFrom("fanouts").select("fanouts.id").whereRef("fanouts.message_id", "=", "messages.id"),
              ),
            ),
          )
          .limit(PRUNE_CHUNK)
          .execute()
      ).map((row) => row.id);
      if (ids.length === 0) return total;
      for (;;) {
        const removed = await this.#db.kysely
          .deleteFrom("deliveries")
          .where("id", "in", (eb) =>
            eb.selectFrom("deliveries").select("id").where("message_id", "in", ids).limit(PRUNE_DELIVERIES),
          )
          .executeTakeFirst();
        if (Number(removed.numDeletedRows) < PRUNE_DELIVERIES) break;
      }
      const result = await this.#db.kysely.deleteFrom("messages").where("id", "in", ids).executeTakeFirst();
      total += Number(result.numDeletedRows);
      if (ids.length < PRUNE_CHUNK) return total;
    }
  }
}

/**
 * The Dock's owner removed the chat (`SubscriptionRepository.remove`, in its transaction): what is
 * still queued for it is not sent either — removal takes effect now. A send already under way
 * finishes and settles as usual.
 */
export async function cancelForSubscriber(
  tx: Transaction<Database>,
  dockId: string,
  chatId: number,
  now: number,
): Promise<void> {
  const gone = await tx
    .updateTable("deliveries")
    .set({ state: "gone", last_error: "removed by the Dock's owner", updated_at: now })
    .where("dock_id", "=", dockId)
    .where("chat_id", "=", chatId)
    .where("state", "=", "queued")
    // What the sender deleted still goes from the chat.
    .where("kind", "!=", "delete")
    .returning(["dock_id", "kind"])
    .execute();
  await new Rollups(tx).add(tx, now, new Tallies().settled(gone, "gone"));
}

/** Why a delivery or a notice of the sandbox's was not sent once a real bot ran. */
export const FORGOTTEN = "meant for a chat of the sandbox; not sent by a real bot";

/**
 * Going live (store/sandbox-chats.ts): what of the sandbox's the deliveries hold is never sent,
 * edited or deleted by a real bot, whose chats of the same ids are other people's.
 * - `chats` (the sandbox's chats): what was queued or in flight for them becomes `gone`, and every
 *   copy that went out to them becomes `gone` too, its ids forgotten, so that no later edit or
 *   delete of its message reaches the real chat of its id (a sent copy with no ids would be sent
 *   anew).
 * - `since`…`before` (the sandbox's stretch): the copies whose ids were recorded in it are the
 *   sandbox's messages, whatever chat they went to: their ids are forgotten the same way. What is
 *   still queued for a real subscription is a real application's message to a real subscriber,
 *   and goes.
 * Answers how many changed.
 */
export async function forgetSandboxDeliveries(
  tx: Transaction<Database>,
  scope: { chats: readonly { dock_id: string; chat_id: number }[] } | { since: number; before: number },
  now: number,
): Promise<number> {
  if ("chats" in scope && scope.chats.length === 0) return 0;
  const pending = tx
    .updateTable("deliveries")
    .set({ state: "gone", last_error: FORGOTTEN, lease_until: null, updated_at: now })
    .where("state", "in", ["queued", "sending"]);
  const finished = tx
    .updateTable("deliveries")
    .set((eb) => ({
      state: eb
        .case()
        .when("state", "=", "sent")
        .then("gone")
        .else(eb.ref("state"))
        .end()
        .$castTo<DeliveryState>(),
      telegram_message_ids: null,
      stray_ids: null,
      updated_at: now,
    }))
    .where("kind", "=", "send")
    .where("state", "in", ["sent", "failed", "gone"])
    .where((w) =>
      w.or([
        w("state", "=", "sent"),
        w("telegram_message_ids", "is not", null),
        w("stray_ids", "is not", null),
      ]),
    );
  if ("since" in scope) {
    const forgotten = await finished
      .where("updated_at", ">=", scope.since)
      .where("updated_at", "<", scope.before)
      .executeTakeFirst();
    return Number(forgotten.numUpdatedRows);
  }
  const pairs = (w: ExpressionBuilder<Database, "deliveries">) =>
    w.or(scope.chats.map((c) => w.and([w("dock_id", "=", c.dock_id), w("chat_id", "=", c.chat_id)])));
  const gone = await pending.where(pairs).returning(["dock_id", "kind"]).execute();
  await new Rollups(tx).add(tx, now, new Tallies().settled(gone, "gone"));
  const forgotten = await finished.where(pairs).executeTakeFirst();
  return gone.length + Number(forgotten.numUpdatedRows);
}

/**
 * A group became a supergroup (`from` → `to`, `SubscriptionRepository.moveChat`, in its
 * transaction): its queued deliveries follow it in their order, except those of messages the new
 * chat already has (not sent twice).
 */
export async function followChat(
  tx: Transaction<Database>,
  from: number,
  to: number,
  now: number,
): Promise<void> {
  const gone = await tx
    .updateTable("deliveries")
    .set({
      state: "gone",
      last_error: "the group became a supergroup that already has it",
      updated_at: now,
    })
    .where("chat_id", "=", from)
    .where("state", "=", "queued")
    .where("message_id", "in", (eb) =>
      eb.selectFrom("deliveries as d").select("d.message_id").where("d.chat_id", "=", to),
    )
    .returning(["dock_id", "kind"])
    .execute();
  await tx
    .updateTable("deliveries")
    .set({ chat_id: to, updated_at: now })
    .where("chat_id", "=", from)
    .where("state", "=", "queued")
    .execute();
  await new Rollups(tx).add(tx, now, new Tallies().settled(gone, "gone"));
}

/**
 * Queues an edit (or a delete) of copies already sent: of every copy of the message, or of one copy.
 * An edit renders the message as it is when it goes, so one still queued for a copy serves any
 * later change as well (none is added beside it); a copy gets one delete, ever. Returns how many
 * were queued. Each goes behind its chat's earlier deliveries.
 */
async function queueWork(
  tx: Transaction<Database>,
  kind: "edit" | "delete",
  scope: { messageId: string; after?: number; upto?: number } | { targetId: number },
  now: number,
  /** A delete of a copy already deleted: strays learnt of since must go too. */
  again = false,
): Promise<number> {
  const pending =
    kind === "edit"
      ? (["queued"] as const)
      : again
        ? (["queued", "sending"] as const)
        : (["queued", "sending", "sent"] as const);
  const inserted = await tx
    .insertInto("deliveries")
    .columns([
      "message_id",
      "dock_id",
      "chat_id",
      "state",
      "next_attempt_at",
      "created_at",
      "updated_at",
      "kind",
      "target_id",
    ])
    .expression((eb) => {
      let copies = eb
        .selectFrom("deliveries as t")
        .where("t.kind", "=", "send")
        // An edit changes a copy that is in its chat; a delete takes away whatever parts of one
        // went out (a copy cut short by a failure or by the deletion itself included), and its strays.
        .where((w) =>
          kind === "edit"
            ? w("t.state", "=", "sent")
            : w.or([w("t.telegram_message_ids", "is not", null), w("t.stray_ids", "is not", null)]),
        )
        .where(({ not, exists, selectFrom }) =>
          not(
            exists(
              selectFrom("deliveries as w")
                .select("w.id")
                .whereRef("w.target_id", "=", "t.id")
                .where("w.kind", "=", kind)
                .where("w.state", "in", [...pending]),
            ),
          ),
        );
      if ("messageId" in scope) {
        copies = copies.where("t.message_id", "=", scope.messageId);
        if (scope.after !== undefined) copies = copies.where("t.id", ">", scope.after);
        if (scope.upto !== undefined) copies = copies.where("t.id", "<=", scope.upto);
      } else copies = copies.where("t.id", "=", scope.targetId);
      return copies
        .select([
          "t.message_id",
          "t.dock_id",
          "t.chat_id",
          sql<"queued">`cast(${"queued"} as text)`.as("state"),
          sql<number>`cast(${now} as bigint)`.as("next_attempt_at"),
          sql<number>`cast(${now} as bigint)`.as("created_at"),
          sql<number>`cast(${now} as bigint)`.as("updated_at"),
          sql<DeliveryKind>`cast(${kind} as text)`.as("kind"),
          "t.id",
        ])
        .orderBy("t.id");
    })
    .executeTakeFirst();
  return Number(inserted.numInsertedOrUpdatedRows ?? 0n);
}

/**
 * The message was deleted (message-changes.ts, in its transaction, after marking it): what waited
 * to be fanned out for it goes (copies never created, edits never queued), a delete of every copy
 * sent is queued to be fanned out (queueChange), and it is not reported. Copies and edits still
 * queued are turned away when claimed (claim); copies in flight are deleted once they settle
 * (converge).
 */
export async function queueDeletes(
  tx: Transaction<Database>,
  message: { messageId: string; dockId: string; copies: number },
  now: number,
): Promise<void> {
  // On PostgreSQL this waits for a fan-out under way to commit, so the delete fanned out later
  // sees its copies.
  await tx.deleteFrom("fanouts").where("message_id", "=", message.messageId).execute();
  await queueChange(tx, { ...message, kind: "delete" }, now);
  // Its sender deleted it: there is no delivery to report.
  await tx.updateTable("messages").set({ report_pending: 0 }).where("id", "=", message.messageId).execute();
}

/**
 * After a copy settled showing `shown`, in the settle's transaction: what it still lacks is queued.
 * The transaction holds the message's shared lock (MessageLocks, db.ts) from its start, so a change
 * of the message committed at the same moment is either seen here or sees this copy as sent and
 * queues the work itself — never neither.
 */
async function converge(
  tx: Transaction<Database>,
  targetId: number,
  messageId: string,
  shown: number,
  now: number,
  /** The copy has strays (noteStray, learnt while it was being sent): an edit removes them. */
  strays = false,
): Promise<void> {
  await convergeOn(tx, await readForConverge(tx, messageId), targetId, shown, now, strays);
}

/** What converging needs of a message: whether it changed or was deleted. */
type ConvergeMessage = { revision: number; deleted_at: number | null };

function readForConverge(tx: Transaction<Database>, messageId: string): Promise<ConvergeMessage | undefined> {
  return tx
    .selectFrom("messages")
    .select(["revision", "deleted_at"])
    .where("id", "=", messageId)
    .executeTakeFirst();
}

/** converge, with the message already read (in the same transaction, under its lock). */
async function convergeOn(
  tx: Transaction<Database>,
  message: ConvergeMessage | undefined,
  targetId: number,
  shown: number,
  now: number,
  strays: boolean,
): Promise<void> {
  if (message === undefined) return;
  if (message.deleted_at !== null) await queueWork(tx, "delete", { targetId }, now, strays);
  else if (message.revision > shown || strays) await queueWork(tx, "edit", { targetId }, now);
}

/**
 * Telegram named a message of the copy `copyId` that the copy's record lacks — a copy from an
 * attempt whose outcome was never recorded (`unknown_attempts`), or one whose outcome came too
 * late to be recorded: it joins the copy's `stray_ids`, and the work that removes it is queued —
 * the copy's edit if it is in its chat (converge queues it when a copy still being sent settles),
 * or, the message being deleted, the copy's delete again. The caller holds the message's
 * exclusive lock (MessageLocks), so no settle of the copy reads its strays meanwhile.
 */
export async function noteStray(
  tx: Transaction<Database>,
  copyId: number,
  telegramId: number,
  now: number,
): Promise<void> {
  const copy = await tx
    .selectFrom("deliveries")
    .innerJoin("messages", "messages.id", "deliveries.message_id")
    .select([
      "deliveries.state",
      "deliveries.telegram_message_ids",
      "deliveries.stray_ids",
      "messages.deleted_at",
    ])
    .where("deliveries.id", "=", copyId)
    .where("deliveries.kind", "=", "send")
    .executeTakeFirst();
  if (copy === undefined) return;
  const known = parseIds(copy.telegram_message_ids);
  const strays = parseIds(copy.stray_ids);
  if (known.includes(telegramId) || strays.includes(telegramId)) return;
  await tx
    .updateTable("deliveries")
    .set({ stray_ids: [...strays, telegramId].join(","), updated_at: now })
    .where("id", "=", copyId)
    .execute();
  if (copy.deleted_at !== null) await queueWork(tx, "delete", { targetId: copyId }, now, true);
  else if (copy.state === "sent") await queueWork(tx, "edit", { targetId: copyId }, now);
}

/** Strays of a copy that an edit or a delete removed (or found gone, or gave up on) leave its record. */
async function forgetStrays(
  tx: Transaction<Database>,
  copyId: number,
  handled: number[],
  now: number,
): Promise<void> {
  if (handled.length === 0) return;
  const row = await tx
    .selectFrom("deliveries")
    .select("stray_ids")
    .where("id", "=", copyId)
    .executeTakeFirst();
  const strays = parseIds(row?.stray_ids ?? null);
  const left = strays.filter((id) => !handled.includes(id));
  if (left.length === strays.length) return;
  await tx
    .updateTable("deliveries")
    .set({ stray_ids: left.length > 0 ? left.join(",") : null, updated_at: now })
    .where("id", "=", copyId)
    .execute();
}
