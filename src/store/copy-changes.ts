import type { DeliveryState } from "./schema.ts";

/** The latest edit or delete of a copy: where it stands and what it came to. */
export interface CopyChange {
  state: DeliveryState;
  /** edited, unchanged, resent; deleted, already_deleted, not_deleted (once done). */
  outcome: string | null;
  lastError: string | null;
  updatedAt: number;
}

/** How the API and the console name where an edit or a delete stands. */
export type ChangeState = "queued" | "done" | "failed" | "gone";

export function changeState(state: DeliveryState): ChangeState {
  if (state === "queued" || state === "sending") return "queued";
  return state === "sent" ? "done" : state;
}

/** The copies' latest edits and deletes, counted by where they stand. */
export interface ChangeCounts {
  edits: Record<"pending" | "edited" | "unchanged" | "resent" | "failed" | "gone", number>;
  deletes: Record<"pending" | "deleted" | "already_deleted" | "not_deleted" | "gone", number>;
}

/** Nothing changed yet. */
export const noChanges = (): ChangeCounts => ({
  edits: { pending: 0, edited: 0, unchanged: 0, resent: 0, failed: 0, gone: 0 },
  deletes: { pending: 0, deleted: 0, already_deleted: 0, not_deleted: 0, gone: 0 },
});

/** Adds `n` copies whose latest edit (or delete) is `change` to the counts. */
export function tally(
  counts: ChangeCounts,
  kind: "edit" | "delete",
  change: { state: DeliveryState; outcome: string | null },
  n = 1,
): void {
  const { state, outcome } = change;
  if (kind === "edit") {
    if (state === "queued" || state === "sending") counts.edits.pending += n;
    else if (state === "sent") {
      if (outcome === "edited" || outcome === "unchanged" || outcome === "resent") counts.edits[outcome] += n;
    } else counts.edits[state === "gone" ? "gone" : "failed"] += n;
    return;
  }
  if (state === "queued" || state === "sending") counts.deletes.pending += n;
  else if (state === "sent") {
    if (outcome === "already_deleted") counts.deletes.already_deleted += n;
    else counts.deletes.deleted += n;
  } else if (state === "failed") counts.deletes.not_deleted += n;
  else counts.deletes.gone += n;
}

/** A delivery row as `latestChanges` reads it: a copy's send, or an edit or delete of a copy. */
export interface ChangeRow {
  id: number;
  kind: string;
  target_id: number | null;
  telegram_message_ids?: string | null;
  state: DeliveryState;
  outcome: string | null;
  last_error: string | null;
  updated_at: number;
}

/**
 * Each copy's latest edit and delete (rows in id order), and their counts. `waiting`: when an
 * edit (or delete) of the whole message was accepted and is still to be fanned out to its copies.
 */
export function latestChanges(
  rows: ChangeRow[],
  waiting: { edit: number | null; delete: number | null } = { edit: null, delete: null },
): {
  edits: Map<number, CopyChange>;
  deletes: Map<number, CopyChange>;
  counts: ChangeCounts;
} {
  const edits = new Map<number, CopyChange>();
  const deletes = new Map<number, CopyChange>();
  for (const row of rows) {
    if (row.target_id === null) continue;
    const change = {
      state: row.state,
      outcome: row.outcome,
      lastError: row.last_error,
      updatedAt: row.updated_at,
    };
    (row.kind === "edit" ? edits : deletes).set(Number(row.target_id), change);
  }
  // A change still waiting to be fanned out to the copies (its time given): each copy it will
  // reach has its edit (or delete) pending.
  for (const row of rows) {
    if (row.kind !== "send") continue;
    const pending = (at: number) => ({
      state: "queued" as const,
      outcome: null,
      lastError: null,
      updatedAt: at,
    });
    if (waiting.edit !== null && row.state === "sent") edits.set(Number(row.id), pending(waiting.edit));
    if (waiting.delete !== null && row.telegram_message_ids != null)
      deletes.set(Number(row.id), pending(waiting.delete));
  }
  const counts = noChanges();
  for (const edit of edits.values()) tally(counts, "edit", edit);
  for (const deletion of deletes.values()) tally(counts, "delete", deletion);
  return { edits, deletes, counts };
}
