import type { MessageContent } from "../domain/message-options.ts";
import type { Db } from "./db.ts";
import { parseContent } from "./message-history.ts";
import { type ActivityCount, DAY_MS, dayOf } from "./rollups.ts";
import type { DeliveryState } from "./schema.ts";
import { addUncreatedCopies } from "./uncreated-copies.ts";

/** The most rows `fold` sums in one transaction. */
const FOLD_CHUNK = 200;

/** Days of activity kept (and pruned after, by the retention pass): a chart of a year and a bit. */
export const ACTIVITY_DAYS_KEPT = 400;

/** One UTC day of a Dock's activity (see rollups.ts for what each number counts). */
export interface ActivityDay {
  /** YYYY-MM-DD, UTC. */
  day: string;
  accepted: number;
  sent: number;
  retried: number;
  failed: number;
  gone: number;
}

/** A Dock's newest message, as the list of Docks shows it. */
export interface LastMessage {
  id: string;
  createdAt: number;
  text: string;
  content: MessageContent | null;
  /** How many copies are in each state (states with none are left out), as on the Dock's messages. */
  states: Partial<Record<DeliveryState, number>>;
}

/** What the list of Docks says of each: its last 7 days and its newest message. */
export interface Headline {
  accepted7d: number;
  failed7d: number;
  lastMessage: LastMessage | null;
}

/** The UTC days of the last `count` days, oldest first, today last. */
function lastDays(now: number, count: number): string[] {
  return Array.from({ length: count }, (_, i) => dayOf(now - (count - 1 - i) * DAY_MS));
}

/**
 * Reads of the daily activity counts (rollups.ts writes them): a Dock's chart, and the headline
 * numbers of a list of Docks. Each read costs a fixed number of queries, however many Docks and
 * messages: rows per Dock and day, and one message per Dock (its newest, by index).
 */
export class ActivityRepository {
  readonly #db: Db;
  readonly #now: () => number;
  /** The highest row id the last fold saw: rows above it are new since (0: every row, at start). */
  #foldedUpTo = 0;

  constructor(db: Db, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
  }

  /** The Dock's last `count` days, oldest first, today (UTC) last; days without activity are zeros. */
  async days(dockId: string, count: number): Promise<ActivityDay[]> {
    const days = lastDays(this.#now(), count);
    // A day's counts may be in several rows until folded (rollups.ts): summed here.
    const rows = await this.#db.kysely
      .selectFrom("dock_days")
      .select((eb) => [
        "day",
        eb.fn.sum<number>("accepted").as("accepted"),
        eb.fn.sum<number>("sent").as("sent"),
        eb.fn.sum<number>("retried").as("retried"),
        eb.fn.sum<number>("failed").as("failed"),
        eb.fn.sum<number>("gone").as("gone"),
      ])
      .where("dock_id", "=", dockId)
      .where("day", ">=", days[0] as string)
      .groupBy("day")
      .execute();
    const byDay = new Map(rows.map((row) => [row.day, row]));
    return days.map((day) => {
      const row = byDay.get(day);
      return {
        day,
        accepted: Number(row?.accepted ?? 0),
        sent: Number(row?.sent ?? 0),
        retried: Number(row?.retried ?? 0),
        failed: Number(row?.failed ?? 0),
        gone: Number(row?.gone ?? 0),
      };
    });
  }

  /**
   * Each Dock's headline: messages accepted and copies failed in the last 7 days (today included),
   * and its newest message with where its copies stand. Four queries for the whole list.
   */
  async headlines(dockIds: readonly string[]): Promise<Map<string, Headline>> {
    const headlines = new Map<string, Headline>(
      dockIds.map((id) => [id, { accepted7d: 0, failed7d: 0, lastMessage: null }]),
    );
    if (dockIds.length === 0) return headlines;
    const ids = [...headlines.keys()];
    const since = lastDays(this.#now(), 7)[0] as string;
    const sums = await this.#db.kysely
      .selectFrom("dock_days")
      .select((eb) => [
        "dock_id",
        eb.fn.sum<number>("accepted").as("accepted"),
        eb.fn.sum<number>("failed").as("failed"),
      ])
      .where("dock_id", "in", ids)
      .where("day", ">=", since)
      .groupBy("dock_id")
      .execute();
    for (const row of sums) {
      const headline = headlines.get(row.dock_id);
      if (headline === undefined) continue;
      headline.accepted7d = Number(row.accepted ?? 0);
      headline.failed7d = Number(row.failed ?? 0);
    }

    // Each Dock's newest message: one seek per Dock along messages_created (dock_id, created_at).
    const latest = await this.#db.kysely
      .selectFrom("docks")
      .innerJoin("messages", (join) =>
        join.on((eb) =>
          eb(
            "messages.id",
            "=",
            eb
              .selectFrom("messages as newest")
              .select("newest.id")
              .whereRef("newest.dock_id", "=", "docks.id")
              .orderBy("newest.created_at", "desc")
              .orderBy("newest.id", "desc")
              .limit(1),
          ),
        ),
      )
      .select([
        "messages.id",
        "messages.dock_id",
        "messages.text",
        "messages.content",
        "messages.created_at",
        "messages.subscribers",
      ])
      .where("docks.id", "in", ids)
      .execute();
    if (latest.length === 0) return headlines;
    const messageIds = latest.map((m) => m.id);
    // Read before the deliveries (see addUncreatedCopies).
    const waiting = new Set(
      (
        await this.#db.kysely
          .selectFrom("fanouts")
          .select("message_id")
          .where("message_id", "in", messageIds)
          .where("kind", "=", "send")
          .execute()
      ).map((row) => row.message_id),
    );
    const counted = await this.#db.kysely
      .selectFrom("deliveries")
      .select((eb) => ["message_id", "state", eb.fn.countAll<number>().as("n")])
      .where("message_id", "in", messageIds)
      .where("kind", "=", "send")
      .groupBy(["message_id", "state"])
      .execute();
    for (const message of latest) {
      const states: Partial<Record<DeliveryState, number>> = {};
      let seen = 0;
      for (const row of counted) {
        if (row.message_id !== message.id) continue;
        states[row.state] = Number(row.n);
        seen += Number(row.n);
      }
      addUncreatedCopies(states, message.subscribers, seen, waiting.has(message.id));
      const headline = headlines.get(message.dock_id);
      if (headline === undefined) continue;
      headline.lastMessage = {
        id: message.id,
        createdAt: message.created_at,
        text: message.text,
        content: parseContent(message.content),
        states,
      };
    }
    return headlines;
  }

  /**
   * Sums the rows of each Dock's recent days (today and yesterday: counts are written on the day
   * they happen) into few; returns how many rows went. At most FOLD_CHUNK rows a transaction, each
   * deleting the rows it sums and inserting their sum: so it never waits for a writer (they only
   * insert), never loses a count (a row committed meanwhile is folded next time), and never holds
   * the database's one writer for long (SQLite: a fold of 6,000 rows at once stalled /ping's
   * batches for ~100 ms, docs/benchmarks.md). A day left in several rows is folded into one by a
   * later pass.
   *
   * Only the days that got rows since this process's last pass are looked at, found by id (the
   * primary key): an index by day, for finding them among all Docks' 400 days, cost every insert
   * more than it saved (/ping's throughput, docs/benchmarks.md). A row committed late with a lower
   * id (PostgreSQL hands ids out before commit) stays apart until its day gets another row; readers
   * sum a day's rows whatever their number.
   */
  async fold(): Promise<number> {
    const since = dayOf(this.#now() - DAY_MS);
    const fresh = await this.#db.kysely
      .selectFrom("dock_days")
      .select((eb) => ["dock_id", "day", eb.fn.max("id").as("upto")])
      .where("id", ">", this.#foldedUpTo)
      .where("day", ">=", since)
      .groupBy(["dock_id", "day"])
      .execute();
    let folded = 0;
    for (const group of fresh) {
      const upto = Number(group.upto);
      const { n } = await this.#db.kysely
        .selectFrom("dock_days")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("dock_id", "=", group.dock_id)
        .where("day", "=", group.day)
        .where("id", "<=", upto)
        .executeTakeFirstOrThrow();
      if (Number(n) < 2) continue;
      // Rows with ids in (after, upto]; each sum goes in with a new id, above `upto`.
      for (let after = 0; after < upto; ) {
        after = await this.#db.kysely.transaction().execute(async (tx) => {
          const last = await tx
            .selectFrom("dock_days")
            .select("id")
            .where("dock_id", "=", group.dock_id)
            .where("day", "=", group.day)
            .where("id", ">", after)
            .where("id", "<=", upto)
            .orderBy("id")
            .offset(FOLD_CHUNK - 1)
            .limit(1)
            .executeTakeFirst();
          const bound = last === undefined ? upto : Number(last.id);
          const rows = await tx
            .deleteFrom("dock_days")
            .where("dock_id", "=", group.dock_id)
            .where("day", "=", group.day)
            .where("id", ">", after)
            .where("id", "<=", bound)
            .returning(["accepted", "sent", "retried", "failed", "gone", "changed"])
            .execute();
          if (rows.length > 0) {
            const sum = (column: ActivityCount) =>
              rows.reduce((total, row) => total + Number(row[column]), 0);
            await tx
              .insertInto("dock_days")
              .values({
                dock_id: group.dock_id,
                day: group.day,
                accepted: sum("accepted"),
                sent: sum("sent"),
                retried: sum("retried"),
                failed: sum("failed"),
                gone: sum("gone"),
                changed: sum("changed"),
              })
              .execute();
            folded += rows.length - 1;
          }
          return bound;
        });
      }
    }
    for (const group of fresh) this.#foldedUpTo = Math.max(this.#foldedUpTo, Number(group.upto));
    return folded;
  }

  /**
   * Deletes the days older than ACTIVITY_DAYS_KEPT, and the counts of Docks deleted since (a settle
   * under way when its Dock went adds one after); returns how many rows went.
   */
  async prune(): Promise<number> {
    const cutoff = dayOf(this.#now() - ACTIVITY_DAYS_KEPT * DAY_MS);
    const old = await this.#db.kysely.deleteFrom("dock_days").where("day", "<", cutoff).executeTakeFirst();
    const orphans = await this.#db.kysely
      .deleteFrom("dock_days")
      .where(({ not, exists, selectFrom }) =>
        not(exists(selectFrom("docks").select("docks.id").whereRef("docks.id", "=", "dock_days.dock_id"))),
      )
      .executeTakeFirst();
    return Number(old.numDeletedRows) + Number(orphans.numDeletedRows);
  }
}
