import { useEffect, useRef, useState } from "react";
import { useAnnounce } from "../announce.tsx";
import {
  api,
  type Dock,
  type MessageDeletedAnswer,
  type MessageDetailAnswer,
  type MessageEditedAnswer,
  type MessageReport,
  ServiceError,
} from "../api.ts";
import { useDockVersion, useLiveRead } from "../live.tsx";
import { dockHref } from "../route.ts";
import type { Guarded } from "./actions.ts";
import { chatLabel } from "./chat-name.ts";
import {
  changeLabel,
  MessageBody,
  MessageChanges,
  MessageOptions,
  STATE_HELP,
  StateCounts,
} from "./MessageParts.tsx";
import { ReadError } from "./ReadError.tsx";
import { may } from "./roles.ts";
import { ScrollBox } from "./ScrollBox.tsx";
import { When } from "./When.tsx";

/**
 * One message and every copy of it: where each stands, how many attempts it took, why it failed,
 * and where its edit or deletion stands. Follows the live stream.
 */
export function MessageDetail({
  dock,
  messageId,
  guarded,
}: {
  dock: Dock;
  messageId: string;
  guarded: Guarded;
}) {
  const version = useDockVersion(dock.id);
  const read = useLiveRead(
    async () =>
      (
        await guarded(() =>
          api<MessageDetailAnswer>("GET", `/docks/${dock.id}/messages/${encodeURIComponent(messageId)}`),
        )
      ).message,
    `${dock.id} ${messageId} ${version}`,
  );
  const message = read.value;
  const missing = read.error instanceof ServiceError && read.error.status === 404;
  const heading = useRef<HTMLHeadingElement>(null);

  // Opened from the list: the focus goes to what was opened.
  useEffect(() => {
    heading.current?.focus();
  }, []);

  const back = (
    <p>
      <a href={dockHref(dock.id, "messages")}>← All messages</a>
    </p>
  );
  if (missing) {
    return (
      <section aria-labelledby="message-title">
        <h2 id="message-title" ref={heading} tabIndex={-1}>
          Delivery details
        </h2>
        <p>This message no longer exists: it was removed when the Dock's history was pruned.</p>
        {back}
      </section>
    );
  }
  return (
    <section aria-labelledby="message-title">
      {back}
      <h2 id="message-title" ref={heading} tabIndex={-1}>
        Delivery details
      </h2>
      <ReadError error={read.error} />
      {message === null ? (
        <p className="muted">Loading…</p>
      ) : (
        <>
          <div className="panel message-detail">
            <MessageBody message={message} />
            <MessageOptions options={message.options} />
            <p className="small">
              Received <When at={message.created_at} />. <StateCounts message={message} />
            </p>
            <p className="small">
              <span className="muted">Message ID </span>
              <code data-testid="message-id">{message.id}</code>{" "}
              <span className="muted">
                (what the edit and delete commands take in place of &lt;MESSAGE_ID&gt;)
              </span>
            </p>
            <MessageChanges message={message} />
            {may(dock, "send") && message.deleted_at === null ? (
              <ChangeMessage dock={dock} message={message} guarded={guarded} />
            ) : null}
          </div>
          <h3>Copies</h3>
          {message.deliveries.length === 0 ? (
            <p className="muted">Nobody was subscribed when it arrived.</p>
          ) : (
            <ScrollBox label="Copies">
              <table className="copies-table">
                <caption className="offscreen">Every copy of message {messageId}</caption>
                <thead>
                  <tr>
                    <th scope="col">Chat</th>
                    <th scope="col">State</th>
                    <th scope="col">Attempts</th>
                    <th scope="col">Last error</th>
                    <th scope="col">Edit / delete</th>
                    <th scope="col">Updated</th>
                  </tr>
                </thead>
                <tbody>
                  {message.deliveries.map((d) => (
                    <tr key={d.chat_id}>
                      <th scope="row">{chatLabel(d)}</th>
                      <td>
                        <span className={`state state-${d.state}`} title={STATE_HELP[d.state]}>
                          {d.state}
                        </span>
                      </td>
                      <td>{d.attempts}</td>
                      <td className={d.last_error ? "field-error" : "muted"}>{d.last_error ?? "—"}</td>
                      <td>
                        {[
                          d.edit && `edit: ${changeLabel(d.edit, "edit", message.deleted_at !== null)}`,
                          d.delete &&
                            `delete: ${changeLabel(d.delete, "delete", message.deleted_at !== null)}`,
                        ]
                          .filter(Boolean)
                          .join("; ") || "—"}
                      </td>
                      <td>
                        <When at={d.updated_at} relative />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </ScrollBox>
          )}
        </>
      )}
    </section>
  );
}

/**
 * Editing a sent message's text, or deleting it from every chat, for the roles that may send
 * (owners, editors): the same change the send API's PATCH and DELETE make, so every copy in
 * Telegram is edited or deleted, paced with everything the bot sends. Each is in the audit log.
 */
function ChangeMessage({ dock, message, guarded }: { dock: Dock; message: MessageReport; guarded: Guarded }) {
  const announce = useAnnounce();
  const [editing, setEditing] = useState(false);
  const [text, setText] = useState(message.text);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const path = `/docks/${dock.id}/messages/${encodeURIComponent(message.id)}`;

  const run = async (call: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await call();
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const save = () =>
    run(async () => {
      const answer = await guarded(() => api<MessageEditedAnswer>("PATCH", path, { text }));
      setEditing(false);
      announce(
        `Message edited: ${answer.edits} ${answer.edits === 1 ? "copy" : "copies"} to edit in Telegram.`,
      );
    });
  const remove = () => {
    const sure = window.confirm(
      "Delete this message from every chat it reached? Telegram lets the bot delete only messages under 48 hours old.",
    );
    if (!sure) return;
    return run(async () => {
      const answer = await guarded(() => api<MessageDeletedAnswer>("DELETE", path));
      announce(
        `Message deleted: ${answer.deleting} ${answer.deleting === 1 ? "copy" : "copies"} to delete in Telegram.`,
      );
    });
  };

  return (
    <div className="message-change">
      {error ? (
        <p className="field-error" role="alert">
          {error}
        </p>
      ) : null}
      {editing ? (
        <form
          onSubmit={(event) => {
            event.preventDefault();
            void save();
          }}
        >
          <label htmlFor="message-edit-text">New text</label>
          <textarea
            id="message-edit-text"
            rows={4}
            value={text}
            onChange={(event) => setText(event.target.value)}
          />
          <p className="small muted">Every copy already sent is edited in its chat; its options stay.</p>
          <button type="submit" disabled={busy || text.trim() === ""}>
            Save the edit
          </button>{" "}
          <button type="button" className="secondary" onClick={() => setEditing(false)} disabled={busy}>
            Cancel
          </button>
        </form>
      ) : (
        <p>
          <button
            type="button"
            onClick={() => {
              setText(message.text);
              setEditing(true);
            }}
            disabled={busy}
          >
            Edit text
          </button>{" "}
          <button type="button" className="danger" onClick={() => void remove()} disabled={busy}>
            Delete from every chat
          </button>
        </p>
      )}
    </div>
  );
}
