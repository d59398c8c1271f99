import type { CopyChange, DeliveryLine, DeliveryState, MessageReport } from "../api.ts";
import { chatLabel } from "./chat-name.ts";
import { MessageText } from "./MessageText.tsx";
import { When } from "./When.tsx";

export const STATE_ORDER: DeliveryState[] = ["sent", "sending", "queued", "failed", "gone"];

export const STATE_HELP: Record<DeliveryState, string> = {
  queued: "waiting to be sent",
  sending: "being sent now",
  sent: "delivered to Telegram",
  failed: "could not be delivered",
  gone: "the chat blocked the bot or no longer exists",
};

const PRIORITY_LABEL: Record<string, string> = {
  min: "min priority",
  low: "low priority",
  high: "❗ high priority",
  urgent: "🚨 urgent",
};

/** "3 edited, 1 pending": the counts that are not zero, in this order, or null when all are. */
function counted(counts: Record<string, number>, order: [string, string][]): string | null {
  const parts = order
    .filter(([name]) => (counts[name] ?? 0) > 0)
    .map(([name, label]) => `${counts[name]} ${label}`);
  return parts.length === 0 ? null : parts.join(", ");
}

const EDIT_COUNTS: [string, string][] = [
  ["edited", "edited"],
  ["unchanged", "unchanged"],
  ["resent", "sent anew"],
  ["pending", "pending"],
  ["failed", "failed"],
  ["gone", "chat gone"],
];
const DELETE_COUNTS: [string, string][] = [
  ["deleted", "deleted"],
  ["already_deleted", "already deleted"],
  ["pending", "pending"],
  ["not_deleted", "not deleted"],
  ["gone", "chat gone"],
];

/** Outcomes as the card names them. */
const OUTCOME_LABEL: Record<string, string> = {
  edited: "edited",
  unchanged: "unchanged",
  resent: "sent anew",
  deleted: "deleted",
  already_deleted: "already deleted",
  not_deleted: "not deleted",
};

/** An edit that never went because the message was deleted first (the API says `gone`). */
const CANCELLED = "cancelled: message deleted";

/**
 * Where a copy's edit or deletion stands, in words: its outcome once done, else its state. An edit
 * of a deleted message that is `gone` was cancelled by the deletion, not lost with its chat.
 */
export function changeLabel(
  change: NonNullable<CopyChange>,
  kind: "edit" | "delete",
  messageDeleted: boolean,
): string {
  if (change.outcome) return OUTCOME_LABEL[change.outcome] ?? change.outcome.replaceAll("_", " ");
  if (change.state === "queued") return "pending";
  if (change.state === "gone") return kind === "edit" && messageDeleted ? CANCELLED : "chat gone";
  if (change.state === "failed") return kind === "delete" ? "not deleted" : "failed";
  return "done";
}

/** The message's life after it was sent: edits, its key, deletion, acknowledgement, and the copies' progress. */
export function MessageChanges({ message: m }: { message: MessageReport }) {
  const edits = counted(
    m.changes.edits,
    m.deleted_at === null
      ? EDIT_COUNTS
      : EDIT_COUNTS.map(([name, label]): [string, string] => [name, name === "gone" ? CANCELLED : label]),
  );
  const deletes = counted(m.changes.deletes, DELETE_COUNTS);
  // The acknowledgement takes a revision too (every copy is edited to say who): only the others
  // are edits by the sender. `revised_at` is the latest change's time.
  const edited = m.revision - (m.acknowledged ? 1 : 0) > 1 && m.revised_at !== null;
  const reminders = m.reminders;
  if (!edited && !m.key && m.deleted_at === null && !m.acknowledged && !reminders && !edits && !deletes)
    return null;
  return (
    <p className="small message-changes">
      {edited && (
        <span className="change">
          <span aria-hidden="true">✎ </span>edited (revision {m.revision}) at{" "}
          <When at={m.revised_at as number} />
        </span>
      )}
      {m.key && (
        <span className="change">
          key <code>{m.key}</code>
        </span>
      )}
      {m.deleted_at !== null && (
        <span className="change change-deleted">
          <span aria-hidden="true">🗑 </span>deleted at <When at={m.deleted_at} />
        </span>
      )}
      {m.acknowledged && (
        <span className="change change-acknowledged">
          ✔ Acknowledged by {m.acknowledged.name} at <When at={m.acknowledged.at} />
        </span>
      )}
      {reminders && (
        <span className="change">
          <span aria-hidden="true">⏰ </span>
          {reminders.rounds === 1 ? "1 reminder round" : `${reminders.rounds} reminder rounds`}
          {reminders.next_at !== null ? (
            <>
              , next at <When at={reminders.next_at} />
            </>
          ) : (
            reminders.ended && `, ended (${reminders.ended})`
          )}
        </span>
      )}
      {(edits || deletes) && (
        <span className="change">
          {[edits && `edits: ${edits}`, deletes && `deletes: ${deletes}`].filter(Boolean).join("; ")}
        </span>
      )}
    </p>
  );
}

/** Whether a copy's line is worth showing: something went wrong, or it was edited or deleted. */
export const worthALine = (d: DeliveryLine) => d.last_error !== null || d.edit !== null || d.delete !== null;

/** One copy: its delivery's error, and where its latest edit and its deletion stand (with why, if refused). */
export function CopyLine({
  delivery: d,
  messageDeleted,
}: {
  delivery: DeliveryLine;
  messageDeleted: boolean;
}) {
  const change = (kind: "edit" | "delete", c: CopyChange) =>
    c && (
      <span className={c.state === "failed" ? "field-error" : undefined}>
        {`; ${kind}: ${changeLabel(c, kind, messageDeleted)}`}
        {c.last_error && ` (${c.last_error})`}
      </span>
    );
  return (
    <li>
      {chatLabel(d)}:{" "}
      <span className={d.last_error ? "field-error" : undefined}>{d.last_error ?? d.state}</span>
      {change("edit", d.edit)}
      {change("delete", d.delete)}
    </li>
  );
}

/** What the options changed besides the text: priority, sound, buttons (the title and tags are in the text). */
export function MessageOptions({ options }: { options: MessageReport["options"] }) {
  const silent = options.silent ?? (options.priority === "min" || options.priority === "low");
  // The service accepted only http, https and tg URLs; the page checks again before linking.
  const buttons = [
    ...(options.buttons ?? []).flat(),
    ...(options.click ? [{ text: "Open", url: options.click }] : []),
  ].filter((button) => /^(https?|tg):/i.test(button.url));
  if (!options.priority && !silent && !options.protect_content && buttons.length === 0) return null;
  return (
    <p className="small message-options">
      {options.priority && <span className="option">{PRIORITY_LABEL[options.priority]}</span>}
      {silent && <span className="option">🔕 silent</span>}
      {options.protect_content && <span className="option">🔒 protected</span>}
      {buttons.map((button) => (
        <a
          key={`${button.text} ${button.url}`}
          className="option"
          href={button.url}
          target="_blank"
          rel="noopener noreferrer"
        >
          {button.text} ↗
        </a>
      ))}
    </p>
  );
}

/** The message as Telegram shows it; a deleted one struck through, and said to be deleted. */
export function MessageBody({ message: m }: { message: MessageReport }) {
  return m.deleted_at === null ? (
    <MessageText text={m.shown.text} entities={m.shown.entities} />
  ) : (
    <div className="message-deleted">
      <span className="offscreen">Deleted: </span>
      <MessageText text={m.shown.text} entities={m.shown.entities} />
    </div>
  );
}

/** How many copies are in each state, or that nobody had subscribed. */
export function StateCounts({ message: m }: { message: MessageReport }) {
  if (m.subscribers === 0) return <span className="muted">no subscribers then</span>;
  return (
    <>
      {STATE_ORDER.filter((s) => m.states[s]).map((s) => (
        <span key={s} className={`state state-${s}`} title={STATE_HELP[s]}>
          {s}: {m.states[s]}
        </span>
      ))}
    </>
  );
}
