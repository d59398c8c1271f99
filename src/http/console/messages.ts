import { MESSAGE_ID_PATTERN } from "../../domain/ids.ts";
import { notificationBody } from "../../domain/render.ts";
import { changeState, type CopyChange as StoredCopyChange } from "../../store/copy-changes.ts";
import {
  type HistoryQuery,
  MESSAGE_FILTERS,
  type MessageFilter,
  type DeliveryDetail as StoredDeliveryDetail,
  type DeliveryLine as StoredDeliveryLine,
  type MessageReport as StoredMessageReport,
} from "../../store/message-history.ts";
import { ApiError } from "../errors.ts";
import type { CopyChange, DeliveryDetail, DeliveryLine, MessageReport } from "./schemas.ts";

/*
 * The message history's parameters and answers as the console names them (the routes are in
 * docks.ts, the reads in store/message-history.ts). Parameters arrive as strings and are checked
 * here, so that a refusal names the parameter and what it takes.
 */

/** Messages per page of the history: 20 unless asked, at most 100. */
export const HISTORY_PAGE = { default: 20, max: 100 } as const;
/** Copies per page of a message: 500 unless asked, at most 1000. */
export const COPIES_PAGE = { default: 500, max: 1000 } as const;
/** Characters of a search, at most. */
export const SEARCH_MAX = 200;

const refused = (message: string) => new ApiError("invalid_request", message);

/** A whole number from 1 to `max` written in `value`, or `fallback` when it is left out. */
function pageSize(value: string | undefined, name: string, page: { default: number; max: number }): number {
  if (value === undefined) return page.default;
  const n = /^\d{1,6}$/.test(value) ? Number(value) : Number.NaN;
  if (!(n >= 1 && n <= page.max)) throw refused(`${name} must be a whole number from 1 to ${page.max}.`);
  return n;
}

/** `GET /docks/:id/messages`'s parameters, checked; `400 invalid_request` naming the one at fault. */
export function historyQuery(query: {
  limit?: string | undefined;
  before?: string | undefined;
  q?: string | undefined;
  state?: string | undefined;
}): HistoryQuery {
  const limit = pageSize(query.limit, "limit", HISTORY_PAGE);
  const { before, q, state } = query;
  if (before !== undefined && !MESSAGE_ID_PATTERN.test(before)) {
    throw refused("before must be a message ID (msg_…): the next_before of the page before.");
  }
  if (q !== undefined) {
    if ([...q].length > SEARCH_MAX) throw refused(`q must be at most ${SEARCH_MAX} characters.`);
    // PostgreSQL refuses NUL in text: a clear 400 rather than its error.
    if (q.includes("\0")) throw refused("q must not contain the NUL character.");
  }
  if (state !== undefined && !(MESSAGE_FILTERS as readonly string[]).includes(state)) {
    throw refused(`state must be one of ${MESSAGE_FILTERS.join(", ")}.`);
  }
  return {
    limit,
    before,
    search: q === "" ? undefined : q,
    state: state as MessageFilter | undefined,
  };
}

/** `GET /docks/:id/messages/:messageId`'s parameters: which page of the copies. */
export function copiesQuery(query: { limit?: string | undefined; after?: string | undefined }): {
  limit: number;
  after: number;
} {
  const limit = pageSize(query.limit, "limit", COPIES_PAGE);
  if (query.after !== undefined && !/^\d{1,15}$/.test(query.after)) {
    throw refused("after must be the next_after of the page before.");
  }
  return { limit, after: query.after === undefined ? 0 : Number(query.after) };
}

/** A copy's edit or deletion as the console names it: the send API's states, times in milliseconds. */
function copyChange(change: StoredCopyChange | null): CopyChange {
  if (change === null) return null;
  return {
    state: changeState(change.state),
    outcome: change.outcome,
    last_error: change.lastError,
    updated_at: change.updatedAt,
  };
}

function deliveryLine(d: StoredDeliveryLine): DeliveryLine {
  return {
    chat_id: d.chatId,
    state: d.state,
    last_error: d.lastError,
    updated_at: d.updatedAt,
    edit: copyChange(d.edit),
    delete: copyChange(d.delete),
    name: d.name,
  };
}

export function deliveryDetail(d: StoredDeliveryDetail): DeliveryDetail {
  return {
    ...deliveryLine(d),
    attempts: d.attempts,
    chat_type: d.chatType,
    first_name: d.firstName,
    username: d.username,
    sent_at: d.sentAt,
  };
}

/** A message as the console shows it; its `deliveries` are the report's, as lines of the list. */
export function messageReport(m: StoredMessageReport): MessageReport {
  return {
    id: m.id,
    text: m.text,
    shown: notificationBody(m.text, m.content),
    options: m.content?.options ?? {},
    created_at: m.createdAt,
    subscribers: m.subscribers,
    key: m.key,
    revision: m.revision,
    revised_at: m.revisedAt,
    deleted_at: m.deletedAt,
    acknowledged: m.acknowledged && { name: m.acknowledged.name, at: m.acknowledged.at },
    reminders: m.reminders && {
      rounds: m.reminders.rounds,
      next_at: m.reminders.nextAt,
      ended: m.reminders.ended,
    },
    changes: m.changes,
    states: m.states,
    deliveries_total: m.deliveriesTotal,
    deliveries: m.deliveries.map(deliveryLine),
  };
}
