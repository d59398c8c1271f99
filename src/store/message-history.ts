import { type Expression, type ExpressionBuilder, type SqlBool, sql } from "kysely";
import { messageIdTime } from "../domain/ids.ts";
import type { MessageContent } from "../domain/message-options.ts";
import { chatName } from "./chats.ts";
import {
  type ChangeCounts,
  type ChangeRow,
  type CopyChange,
  latestChanges,
  noChanges,
  tally,
} from "./copy-changes.ts";
import type { Db } from "./db.ts";
import type { Database, DeliveryState } from "./schema.ts";
import { addUncreatedCopies } from "./uncreated-copies.ts";

/*
 * A Dock's message history as its owner reads it in the console: pages of messages, newest
 * first, each with how its copies stand, and one message with all its copies. Every read is
 * bounded by the page, not by the Dock: a page is found through the messages' (dock_id,
 * created_at) index from a cursor (never an OFFSET), and the copies of a page's messages are
 * counted by the database rather than read, since a Dock may have thousands of subscribers.
 */

/** Which messages a page holds, by where their copies stand. */
export const MESSAGE_FILTERS = ["failed", "pending", "delivered", "no_subscribers"] as const;
export type MessageFilter = (typeof MESSAGE_FILTERS)[number];

export interface HistoryQuery {
  /** Messages per page. */
  limit: number;
  /** Only messages older than this one: the previous page's `nextBefore`. */
  before?: string | undefined;
  /** Only messages whose text or key holds this, letter case aside (see `matching`). */
  search?: string | undefined;
  /**
   * `failed`: some copy failed or is gone; `pending`: some copy is still to be sent; `delivered`:
   * every copy sent (one at least); `no_subscribers`: nobody subscribed when it arrived. A message
   * with one copy failed and one queued is both failed and pending.
   */
  state?: MessageFilter | undefined;
}

/** One recipient's copy of a message. */
export interface DeliveryLine {
  /** The copy's place in its message's queue: the cursor of a message's pages of copies. */
  id: number;
  chatId: number;
  state: DeliveryState;
  lastError: string | null;
  updatedAt: number;
  edit: CopyChange | null;
  delete: CopyChange | null;
  /** Who received it, as the console names a chat (store/chats.ts); null: unknown. */
  name: string | null;
}

/** A copy as a message's own page shows it: also who received it and how often it was tried. */
export interface DeliveryDetail extends DeliveryLine {
  attempts: number;
  /** The subscription's chat type; null once the chat has no subscription to the Dock. */
  chatType: string | null;
  firstName: string | null;
  username: string | null;
  /** When the copy went out; null until it did, and once an edit rewrote the copy's row. */
  sentAt: number | null;
}

/** A message of a Dock with where its copies stand. */
export interface MessageReport {
  id: string;
  text: string;
  /** How the message is shown beyond its text; null for plain text. */
  content: MessageContent | null;
  createdAt: number;
  subscribers: number;
  key: string | null;
  revision: number;
  revisedAt: number | null;
  deletedAt: number | null;
  acknowledged: { name: string; at: number } | null;
  /** Its reminders until acknowledged (store/reminders.ts); null when it never had any. */
  reminders: { rounds: number; nextAt: number | null; ended: string | null } | null;
  /**
   * How many copies are in each state (states with none are left out). Subscribers whose copy was
   * never made count too: queued while the message waits to be fanned out, else gone.
   */
  states: Partial<Record<DeliveryState, number>>;
  changes: ChangeCounts;
  /** How many copies were made (the length of `deliveries` when none are left out). */
  deliveriesTotal: number;
  deliveries: DeliveryLine[];
}

export interface HistoryPage {
  messages: MessageReport[];
  /** The `before` of the next (older) page; null when there is none. */
  nextBefore: string | null;
}

export interface MessageDetail {
  message: MessageReport & { deliveries: DeliveryDetail[] };
  /** The `after` of the message's next page of copies; null when there is none. */
  nextAfter: number | null;
}

/** Copies listed per message in a page of the history, those that went wrong first. */
export const LINES_PER_MESSAGE = 10;

export const parseContent = (json: string | null): MessageContent | null =>
  json === null ? null : (JSON.parse(json) as MessageContent);

const MESSAGE_COLUMNS = [
  "id",
  "text",
  "content",
  "created_at",
  "subscribers",
  "key",
  "revision",
  "revised_at",
  "deleted_at",
  "acked_name",
  "acked_at",
  "remind_next_at",
  "remind_until",
  "remind_rounds",
  "remind_ended",
] as const;

type Messages = ExpressionBuilder<Database, "messages">;

/** The message's copies (sends, not their edits and deletes), in these states if given. */
const copiesOf = (eb: Messages, states?: DeliveryState[]) => {
  const copies = eb
    .selectFrom("deliveries")
    .select("deliveries.id")
    .whereRef("deliveries.message_id", "=", "messages.id")
    .where("deliveries.kind", "=", "send");
  return states === undefined ? copies : copies.where("deliveries.state", "in", states);
};

/** The message still waits to be fanned out into its copies. */
const waiting = (eb: Messages) =>
  eb.exists(
    eb
      .selectFrom("fanouts")
      .select("fanouts.id")
      .whereRef("fanouts.message_id", "=", "messages.id")
      .where("fanouts.kind", "=", "send"),
  );

/** Fewer copies than subscribers: some left before the message was fanned out (or it waits). */
const missing = (eb: Messages) =>
  eb(
    "messages.subscribers",
    ">",
    eb
      .selectFrom("deliveries")
      .select((count) => count.fn.countAll<number>().as("n"))
      .whereRef("deliveries.message_id", "=", "messages.id")
      .where("deliveries.kind", "=", "send"),
  );

/** The filter as SQL, counting copies as `MessageReport.states` does. */
function inState(eb: Messages, state: MessageFilter): Expression<SqlBool> {
  switch (state) {
    case "failed":
      return eb.or([eb.exists(copiesOf(eb, ["failed", "gone"])), eb.and([eb.not(waiting(eb)), missing(eb)])]);
    case "pending":
      return eb.or([waiting(eb), eb.exists(copiesOf(eb, ["queued", "sending"]))]);
    case "delivered":
      return eb.and([
        eb("messages.subscribers", ">", 0),
        eb.not(waiting(eb)),
        eb.not(eb.exists(copiesOf(eb, ["queued", "sending", "failed", "gone"]))),
        eb.not(missing(eb)),
      ]);
    case "no_subscribers":
      return eb("messages.subscribers", "=", 0);
  }
}

/**
 * Text or key holding `search`, with LIKE's wildcards (and its escape character) taken literally.
 * Both sides go through lower(), so letter case is ignored as the database folds it: PostgreSQL
 * folds every alphabet its locale knows, SQLite only A–Z (the exact case always matches).
 */
function matching(eb: Messages, search: string): Expression<SqlBool> {
  const pattern = `%${search.replace(/[\\%_]/g, "\\$&")}%`;
  // Cast: PostgreSQL cannot tell which lower() an untyped parameter is for.
  const like = (column: "messages.text" | "messages.key") =>
    sql<SqlBool>`lower(${eb.ref(column)}) like lower(cast(${pattern} as text)) escape '\\'`;
  return eb.or([like("messages.text"), like("messages.key")]);
}

/** Where `before` stands in the order of the Dock's messages: its time, or the time in its ID. */
async function positionOf(db: Db, dockId: string, before: string): Promise<number> {
  const row = await db.kysely
    .selectFrom("messages")
    .select("created_at")
    .where("id", "=", before)
    .where("dock_id", "=", dockId)
    .executeTakeFirst();
  // A message removed since (retention): its ID still tells when it arrived. An ID that tells
  // nothing pages from the beginning of time, which is an empty page.
  return row?.created_at ?? messageIdTime(before) ?? 0;
}

/** A page of the Dock's messages, newest first (`created_at`, then `id`, descending). */
export async function messageHistory(db: Db, dockId: string, query: HistoryQuery): Promise<HistoryPage> {
  let select = db.kysely.selectFrom("messages").select(MESSAGE_COLUMNS).where("dock_id", "=", dockId);
  const { before, search, state } = query;
  if (before !== undefined) {
    const at = await positionOf(db, dockId, before);
    // Spelt so that the index bounds the scan by created_at; the id decides among equal times.
    select = select
      .where("created_at", "<=", at)
      .where((eb) => eb.or([eb("created_at", "<", at), eb("id", "<", before)]));
  }
  if (search !== undefined && search !== "") select = select.where((eb) => matching(eb, search));
  if (state !== undefined) select = select.where((eb) => inState(eb, state));
  // One more than asked: whether an older page exists, without counting.
  const rows = await select
    .orderBy("created_at", "desc")
    .orderBy("id", "desc")
    .limit(query.limit + 1)
    .execute();
  const page = rows.slice(0, query.limit);
  return {
    messages: (await reportsOf(db, page, LINES_PER_MESSAGE)).map((r) => r.report),
    nextBefore: rows.length > query.limit ? (page.at(-1)?.id ?? null) : null,
  };
}

/** One of the Dock's messages with a page of its copies in queue order (`after` a copy's id). */
export async function messageDetail(
  db: Db,
  dockId: string,
  messageId: string,
  copies: { limit: number; after: number },
): Promise<MessageDetail | undefined> {
  const row = await db.kysely
    .selectFrom("messages")
    .select(MESSAGE_COLUMNS)
    .where("id", "=", messageId)
    .where("dock_id", "=", dockId)
    .executeTakeFirst();
  if (row === undefined) return undefined;
  const [read] = await reportsOf(db, [row], 0);
  if (read === undefined) return undefined;
  const { report, waiting } = read;
  const sends = await db.kysely
    .selectFrom("deliveries as d")
    .leftJoin("subscriptions as s", (join) =>
      join.onRef("s.dock_id", "=", "d.dock_id").onRef("s.chat_id", "=", "d.chat_id"),
    )
    // A private chat's id is the person's user id; a group's title is the chat's.
    .leftJoin("users as u", "u.telegram_id", "d.chat_id")
    .leftJoin("chats as c", "c.chat_id", "d.chat_id")
    .select([
      "d.id",
      "d.chat_id",
      "d.state",
      "d.attempts",
      "d.last_error",
      "d.telegram_message_ids",
      "d.updated_at",
      "s.chat_type",
      "u.first_name",
      "u.username",
      "c.title",
    ])
    .where("d.message_id", "=", messageId)
    .where("d.kind", "=", "send")
    .where("d.id", ">", copies.after)
    .orderBy("d.id")
    .limit(copies.limit + 1)
    .execute();
  const page = sends.slice(0, copies.limit);
  const changeRows = await changesOf(
    db,
    page.map((d) => Number(d.id)),
  );
  const changes = latestChanges([...changeRows, ...page.map(asChangeRow)], waiting);
  // A done edit rewrites its copy's row (its parts, its time): the send's time is gone then.
  const rewritten = new Set(
    changeRows.filter((r) => r.kind === "edit" && r.state === "sent").map((r) => Number(r.target_id)),
  );
  const deliveries = page.map(
    (d): DeliveryDetail => ({
      ...lineOf(d, changes),
      attempts: d.attempts,
      chatType: d.chat_type,
      firstName: d.first_name,
      username: d.username,
      sentAt: d.state === "sent" && !rewritten.has(Number(d.id)) ? d.updated_at : null,
    }),
  );
  return {
    message: { ...report, deliveries },
    nextAfter: sends.length > copies.limit ? (deliveries.at(-1)?.id ?? null) : null,
  };
}

type SendRow = {
  id: number;
  state: DeliveryState;
  last_error: string | null;
  telegram_message_ids: string | null;
  updated_at: number;
};

const asChangeRow = (d: SendRow): ChangeRow => ({
  id: Number(d.id),
  kind: "send",
  target_id: null,
  telegram_message_ids: d.telegram_message_ids,
  state: d.state,
  outcome: null,
  last_error: d.last_error,
  updated_at: d.updated_at,
});

/** A sent copy as a history line: its state, its latest edit and delete, and whom it reached. */
function lineOf(
  d: SendRow & { chat_id: number; title: string | null; first_name: string | null; username: string | null },
  changes: ReturnType<typeof latestChanges>,
): DeliveryLine {
  return {
    id: Number(d.id),
    chatId: d.chat_id,
    state: d.state,
    lastError: d.last_error,
    updatedAt: d.updated_at,
    edit: changes.edits.get(Number(d.id)) ?? null,
    delete: changes.deletes.get(Number(d.id)) ?? null,
    name: chatName(d.title, d.first_name, d.username),
  };
}

/** Every edit and delete of these copies, in id order. */
async function changesOf(db: Db, copyIds: number[]): Promise<ChangeRow[]> {
  if (copyIds.length === 0) return [];
  return db.kysely
    .selectFrom("deliveries")
    .select(["id", "kind", "target_id", "state", "outcome", "last_error", "updated_at"])
    .where("target_id", "in", copyIds)
    .orderBy("id")
    .execute();
}

type MessageRow = {
  id: string;
  text: string;
  content: string | null;
  created_at: number;
  subscribers: number;
  key: string | null;
  revision: number;
  revised_at: number | null;
  deleted_at: number | null;
  acked_name: string | null;
  acked_at: number | null;
  remind_next_at: number | null;
  remind_until: number | null;
  remind_rounds: number;
  remind_ended: string | null;
};

/**
 * The messages with their copies counted by state and by where their latest edit and delete stand
 * (as `latestChanges` would count them, in SQL), and up to `lines` copies each: the failed and
 * gone first, then those retried after an error, then the rest, each group in queue order. With
 * each, when an edit and a delete of the whole message were accepted and wait to be fanned out.
 */
async function reportsOf(
  db: Db,
  messages: MessageRow[],
  lines: number,
): Promise<{ report: MessageReport; waiting: { edit: number | null; delete: number | null } }[]> {
  if (messages.length === 0) return [];
  const ids = messages.map((m) => m.id);
  // Read before the deliveries: the fan-out deletes these rows and creates the deliveries in one
  // commit, so this order never misses both.
  const fanouts = await db.kysely
    .selectFrom("fanouts")
    .select(["message_id", "kind", "created_at"])
    .where("message_id", "in", ids)
    .execute();
  const states = await db.kysely
    .selectFrom("deliveries")
    .select((eb) => [
      "message_id",
      "state",
      eb.fn.countAll<number>().as("n"),
      eb.fn.count<number>("telegram_message_ids").as("with_ids"),
    ])
    .where("message_id", "in", ids)
    .where("kind", "=", "send")
    .groupBy(["message_id", "state"])
    .execute();
  // Each copy's latest edit and latest delete, counted by where they stand and where their copy does.
  const changeGroups = await db.kysely
    .selectFrom("deliveries as c")
    .innerJoin("deliveries as t", "t.id", "c.target_id")
    .select((eb) => [
      "c.message_id",
      "c.kind",
      "c.state",
      "c.outcome",
      "t.state as target_state",
      eb.fn.countAll<number>().as("n"),
      eb.fn.count<number>("t.telegram_message_ids").as("target_with_ids"),
    ])
    .where("c.message_id", "in", ids)
    .where("c.kind", "in", ["edit", "delete"])
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom("deliveries as later")
            .select("later.id")
            .whereRef("later.target_id", "=", "c.target_id")
            .whereRef("later.kind", "=", "c.kind")
            .whereRef("later.id", ">", "c.id"),
        ),
      ),
    )
    .groupBy(["c.message_id", "c.kind", "c.state", "c.outcome", "t.state"])
    .execute();
  const shown = lines > 0 ? await linesOf(db, ids, lines) : [];
  const shownChanges = await changesOf(
    db,
    shown.map((d) => Number(d.id)),
  );

  return messages.map((m) => {
    const at = (kind: string) =>
      fanouts.find((f) => f.message_id === m.id && f.kind === kind)?.created_at ?? null;
    const waitingEdit = at("edit");
    const waitingDelete = at("delete");
    const report: MessageReport = {
      id: m.id,
      text: m.text,
      content: parseContent(m.content),
      createdAt: m.created_at,
      subscribers: m.subscribers,
      key: m.key,
      revision: m.revision,
      revisedAt: m.revised_at,
      deletedAt: m.deleted_at,
      acknowledged: m.acked_at === null ? null : { name: m.acked_name ?? "", at: Number(m.acked_at) },
      reminders:
        m.remind_next_at === null && m.remind_ended === null
          ? null
          : {
              rounds: m.remind_rounds,
              // Past remind_until it is the end that is due, not a round.
              nextAt:
                m.remind_next_at === null || Number(m.remind_next_at) > Number(m.remind_until)
                  ? null
                  : Number(m.remind_next_at),
              ended: m.remind_ended,
            },
      states: {},
      changes: noChanges(),
      deliveriesTotal: 0,
      deliveries: [],
    };
    let sent = 0;
    let withIds = 0;
    for (const row of states) {
      if (row.message_id !== m.id) continue;
      const n = Number(row.n);
      report.states[row.state] = n;
      report.deliveriesTotal += n;
      if (row.state === "sent") sent = n;
      withIds += Number(row.with_ids);
    }
    addUncreatedCopies(report.states, m.subscribers, report.deliveriesTotal, at("send") !== null);
    // A change of the whole message still to be fanned out makes every copy it will reach pending,
    // whatever that copy's latest change was.
    for (const group of changeGroups) {
      if (group.message_id !== m.id) continue;
      const kind = group.kind === "edit" ? "edit" : "delete";
      let n = Number(group.n);
      if (kind === "edit" && waitingEdit !== null && group.target_state === "sent") continue;
      if (kind === "delete" && waitingDelete !== null) n -= Number(group.target_with_ids);
      if (n > 0) tally(report.changes, kind, group, n);
    }
    if (waitingEdit !== null) report.changes.edits.pending += sent;
    if (waitingDelete !== null) report.changes.deletes.pending += withIds;

    const mine = shown.filter((d) => d.message_id === m.id);
    const changes = latestChanges(
      [
        ...shownChanges.filter((r) => mine.some((d) => Number(d.id) === Number(r.target_id))),
        ...mine.map(asChangeRow),
      ],
      { edit: waitingEdit, delete: waitingDelete },
    );
    report.deliveries = mine.map((d) => lineOf(d, changes));
    return { report, waiting: { edit: waitingEdit, delete: waitingDelete } };
  });
}

/** Up to `lines` copies of each message, those that went wrong first (see reportsOf). */
async function linesOf(db: Db, messageIds: string[], lines: number) {
  const place = sql<number>`row_number() over (partition by ${sql.ref("message_id")} order by case when ${sql.ref("state")} in ('failed', 'gone') then 0 when ${sql.ref("last_error")} is not null then 1 else 2 end, ${sql.ref("id")})`;
  return (
    db.kysely
      .selectFrom((eb) =>
        eb
          .selectFrom("deliveries")
          .select([
            "id",
            "message_id",
            "chat_id",
            "state",
            "last_error",
            "telegram_message_ids",
            "updated_at",
            place.as("place"),
          ])
          .where("message_id", "in", messageIds)
          .where("kind", "=", "send")
          .as("ranked"),
      )
      // A private chat's id is the person's user id; a group's title is the chat's.
      .leftJoin("users as u", "u.telegram_id", "ranked.chat_id")
      .leftJoin("chats as c", "c.chat_id", "ranked.chat_id")
      .selectAll("ranked")
      .select(["u.first_name", "u.username", "c.title"])
      .where("place", "<=", lines)
      .orderBy("message_id")
      .orderBy("place")
      .execute()
  );
}
