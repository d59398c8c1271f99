import { useState } from "react";
import type { Dock } from "../api.ts";
import type { CardActions } from "./card-actions.ts";

/** The commands that change messages, in the order the card shows them. */
const EXAMPLES: { name: "replace" | "edit" | "delete" | "ack"; label: string; help: string }[] = [
  {
    name: "replace",
    label: "replace",
    help: "Send with a key: a later send with the same key edits that message in place instead of adding one.",
  },
  {
    name: "edit",
    label: "edit",
    help: "Edit a sent message: give any of msg, title, format, priority, tags, buttons… (null resets one).",
  },
  { name: "delete", label: "delete", help: "Delete a sent message from every chat." },
  {
    name: "ack",
    label: "acknowledge",
    help: "Ask for an acknowledgement: an “✔ Acknowledge” button; the first press is shown on every copy.",
  },
];

/** Shows the key's recognisable prefix and hides the rest. */
export function mask(secret: string): string {
  return `${secret.slice(0, 5)}${"•".repeat(16)}`;
}

/**
 * What an application needs to send to the Dock: its ID, its secret key (hidden until revealed,
 * in the curl commands too) and ready-to-run commands for both send endpoints and for replacing,
 * editing, deleting and acknowledging messages.
 */
export function Credentials({ dock, copy }: { dock: Dock; copy: CardActions["copy"] }) {
  const [revealed, setRevealed] = useState(false);
  const shown = (text: string) => (revealed ? text : text.replaceAll(dock.secret_key, mask(dock.secret_key)));

  return (
    <>
      <dl className="credentials">
        <dt>Dock ID</dt>
        <dd>
          <code data-testid="dock-id">{dock.id}</code>
        </dd>
        <dt>Secret key</dt>
        <dd>
          <code data-testid="secret-key">{revealed ? dock.secret_key : mask(dock.secret_key)}</code>
          {!revealed && <span className="offscreen"> (hidden)</span>}
          <span className="inline-actions">
            <button type="button" aria-pressed={revealed} onClick={() => setRevealed(!revealed)}>
              {revealed ? "Hide secret key" : "Reveal secret key"}
            </button>
            <button type="button" onClick={() => copy(dock.secret_key, "Secret key")}>
              Copy secret key
            </button>
          </span>
        </dd>
      </dl>

      <details>
        <summary>Send a notification from your application</summary>
        <p className="muted small">REST style, credentials in the JSON body:</p>
        <pre>{shown(dock.examples.ping)}</pre>
        <button type="button" onClick={() => copy(dock.examples.ping, "Command")}>
          Copy /ping command
        </button>
        <p className="muted small">Webhook style, credentials in HTTP Basic authentication:</p>
        <pre>{shown(dock.examples.webhook)}</pre>
        <button type="button" onClick={() => copy(dock.examples.webhook, "Command")}>
          Copy /webhook command
        </button>
      </details>

      <details>
        <summary>Replace, edit, delete and acknowledge messages</summary>
        <p className="muted small">
          Every send answers the message's <code>message_id</code>: put it in place of{" "}
          <code>&lt;MESSAGE_ID&gt;</code>. Each change reaches every chat that got the message.
        </p>
        {EXAMPLES.map(({ name, label, help }) => (
          <div key={name} className="example">
            <p className="muted small">{help}</p>
            <pre>{shown(dock.examples[name])}</pre>
            <button type="button" onClick={() => copy(dock.examples[name], "Command")}>
              Copy {label} command
            </button>
          </div>
        ))}
      </details>
    </>
  );
}
