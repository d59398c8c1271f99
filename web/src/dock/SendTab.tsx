import { useId, useState } from "react";
import { useAnnounce } from "../announce.tsx";
import type { TestMessageAnswer } from "../api.ts";
import { count } from "../plural.ts";
import type { CardActions } from "./actions.ts";
import type { SecretDock } from "./roles.ts";
import { mask, SECRET_PLACEHOLDER } from "./secret.ts";
import { type Endpoint, LANGUAGES, type Language, sendSnippet } from "./send-snippets.ts";

/** The commands that change messages, in the order the page shows them. */
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

const ENDPOINTS: { endpoint: Endpoint; title: string; help: string }[] = [
  { endpoint: "ping", title: "/ping", help: "REST style: the credentials in the JSON body." },
  {
    endpoint: "webhook",
    title: "/webhook",
    help: "Webhook style: the credentials in HTTP Basic authentication.",
  },
];

/** Where the person's language choice is kept, so every Dock's page opens in it. */
const LANGUAGE_KEY = "dn-language";

function savedLanguage(): Language {
  const saved = localStorage.getItem(LANGUAGE_KEY);
  return LANGUAGES.some((l) => l.id === saved) ? (saved as Language) : "curl";
}

/**
 * Everything needed to send to the Dock: a test message at once, the Dock ID and secret key, and
 * ready-to-run code for both endpoints in the person's language. While the key is hidden, the code
 * on screen says `<SECRET_KEY>` and the Copy buttons copy it with the real key.
 */
export function SendTab({
  dock,
  actions,
  apiUrl,
}: {
  dock: SecretDock;
  actions: CardActions;
  apiUrl: string;
}) {
  const id = useId();
  const announce = useAnnounce();
  const [revealed, setRevealed] = useState(false);
  const [language, setLanguage] = useState<Language>(savedLanguage);
  const label = LANGUAGES.find((l) => l.id === language)?.label ?? language;
  const shown = (text: string) => (revealed ? text : text.replaceAll(dock.secret_key, SECRET_PLACEHOLDER));
  const code = (endpoint: Endpoint) =>
    sendSnippet(language, endpoint, { url: apiUrl, dockId: dock.id, secretKey: dock.secret_key });

  const sendTest = () =>
    actions.act(async () => {
      const answer = await actions.call<TestMessageAnswer>("POST", "/test-message");
      announce(
        answer.subscribers === 0
          ? "Test message stored, but nobody has subscribed yet: Open in Telegram first."
          : `Test message sent to ${count(answer.subscribers, "subscriber")}.`,
      );
    });

  return (
    <section aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`} className="offscreen">
        Send
      </h2>
      <div className="actions">
        <button type="button" className="primary" onClick={sendTest}>
          Send test message
        </button>
        <span className="muted small">Goes to everyone subscribed, like your application's messages.</span>
      </div>

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
            <button type="button" onClick={() => actions.copy(dock.secret_key, "Secret key")}>
              Copy secret key
            </button>
          </span>
        </dd>
      </dl>

      <h3>Send from your application</h3>
      <div className="field language">
        <label htmlFor={`${id}-language`}>Language</label>
        <select
          id={`${id}-language`}
          value={language}
          onChange={(event) => {
            const next = event.target.value as Language;
            setLanguage(next);
            localStorage.setItem(LANGUAGE_KEY, next);
          }}
        >
          {LANGUAGES.map((l) => (
            <option key={l.id} value={l.id}>
              {l.label}
            </option>
          ))}
        </select>
      </div>
      {!revealed && (
        <p className="muted small">
          The code shows <code>{SECRET_PLACEHOLDER}</code> while the key is hidden; the Copy buttons copy it
          with the real key.
        </p>
      )}
      {ENDPOINTS.map(({ endpoint, title, help }) => (
        <div key={endpoint} className="example">
          <h4>
            {label}: <code>{title}</code>
          </h4>
          <p className="muted small">{help}</p>
          <pre data-testid={`snippet-${endpoint}`}>{shown(code(endpoint))}</pre>
          <button type="button" onClick={() => actions.copy(code(endpoint), `${label} ${title} code`)}>
            {revealed ? "Copy" : "Copy with key"}
            <span className="offscreen">
              {" "}
              {label} {title} code
            </span>
          </button>
        </div>
      ))}

      <details>
        <summary>Replace, edit, delete and acknowledge messages</summary>
        <p className="muted small">
          Every send answers the message's <code>message_id</code>: put it in place of{" "}
          <code>&lt;MESSAGE_ID&gt;</code>. Each change reaches every chat that got the message.
        </p>
        {EXAMPLES.map(({ name, label: what, help }) => (
          <div key={name} className="example">
            <p className="muted small">{help}</p>
            <pre>{shown(dock.examples[name])}</pre>
            <button type="button" onClick={() => actions.copy(dock.examples[name], "Command")}>
              Copy {what} command
            </button>
          </div>
        ))}
      </details>
    </section>
  );
}
