import { useEffect, useRef } from "react";
import { api, type Dock, type MessageDetailAnswer, ServiceError } from "../api.ts";
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
