import { useEffect, useRef, useState } from "react";
import { useAnnounce } from "./announce.tsx";
import { api, type DeliveryState, type Dock, type MessageReport, type Subscriber } from "./api.ts";
import { copyText } from "./clipboard.ts";
import { type DockFieldValues, DockForm } from "./DockForm.tsx";

/** How often a card refreshes its subscribers and delivery states. */
const REFRESH_MS = 2000;

const STATE_ORDER: DeliveryState[] = ["sent", "sending", "queued", "failed", "gone"];

const STATE_HELP: Record<DeliveryState, string> = {
  queued: "waiting to be sent",
  sending: "being sent now",
  sent: "delivered to Telegram",
  failed: "could not be delivered",
  gone: "the chat blocked the bot or no longer exists",
};

/** Shows the key's recognisable prefix and hides the rest. */
function mask(secret: string): string {
  return `${secret.slice(0, 5)}${"•".repeat(16)}`;
}

function subscriberName(s: Subscriber): string {
  if (s.first_name && s.username) return `${s.first_name} (@${s.username})`;
  if (s.first_name) return s.first_name;
  if (s.username) return `@${s.username}`;
  return s.chat_type === "private" ? `Telegram user ${s.chat_id}` : `${s.chat_type} chat ${s.chat_id}`;
}

/**
 * One Dock, with everything its owner does with it: subscribe people (Open in Telegram, the Dock ID),
 * send (secret key, curl), watch deliveries, and manage (edit, rotate the secret, delete).
 */
export function DockCard({
  dock,
  focusOnMount,
  guarded,
  onChanged,
  onDeleted,
}: {
  dock: Dock;
  focusOnMount: boolean;
  guarded: <T>(call: () => Promise<T>) => Promise<T>;
  onChanged: (dock: Dock) => void;
  onDeleted: (id: string) => void;
}) {
  const announce = useAnnounce();
  const heading = useRef<HTMLHeadingElement>(null);
  const [revealed, setRevealed] = useState(false);
  const [editing, setEditing] = useState(false);
  const [subscribers, setSubscribers] = useState<Subscriber[] | null>(null);
  const [messages, setMessages] = useState<MessageReport[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const base = `/docks/${dock.id}`;
  const titleId = `dock-${dock.id}-title`;

  useEffect(() => {
    if (focusOnMount) {
      heading.current?.focus();
      heading.current?.scrollIntoView({ block: "start" });
    }
  }, [focusOnMount]);

  useEffect(() => {
    let stopped = false;
    const refresh = async () => {
      try {
        const [subs, msgs] = await Promise.all([
          guarded(() => api<{ subscribers: Subscriber[] }>("GET", `${base}/subscribers`)),
          guarded(() => api<{ messages: MessageReport[] }>("GET", `${base}/messages`)),
        ]);
        if (stopped) return;
        setSubscribers(subs.subscribers);
        setMessages(msgs.messages);
      } catch (e) {
        if (!stopped) setError((e as Error).message);
      }
    };
    void refresh();
    const timer = window.setInterval(refresh, REFRESH_MS);
    return () => {
      stopped = true;
      window.clearInterval(timer);
    };
  }, [base, guarded]);

  const act = async (call: () => Promise<void>) => {
    setError(null);
    try {
      await call();
    } catch (e) {
      setError((e as Error).message);
    }
  };

  const copy = (text: string, what: string) =>
    act(async () => {
      announce((await copyText(text)) ? `${what} copied.` : `Could not copy the ${what.toLowerCase()}.`);
    });

  const save = async (values: DockFieldValues) => {
    const answer = await guarded(() => api<{ dock: Dock }>("PATCH", base, values));
    onChanged(answer.dock);
    setEditing(false);
    announce("Changes saved.");
  };

  const rotate = () =>
    act(async () => {
      const sure = window.confirm(
        `Rotate the secret key of “${dock.name}”? The current key stops working at once: every application using it must get the new one.`,
      );
      if (!sure) return;
      const answer = await guarded(() => api<{ dock: Dock }>("POST", `${base}/rotate-secret`));
      onChanged(answer.dock);
      announce("New secret key made. The old one no longer works.");
    });

  const remove = () =>
    act(async () => {
      const sure = window.confirm(
        `Delete “${dock.name}”? Its subscribers stop receiving its messages, and its secret key stops working. This cannot be undone.`,
      );
      if (!sure) return;
      await guarded(() => api("DELETE", base));
      onDeleted(dock.id);
      announce(`Dock “${dock.name}” deleted.`);
    });

  const sendTest = () =>
    act(async () => {
      const answer = await guarded(() => api<{ subscribers: number }>("POST", `${base}/test-message`));
      announce(
        answer.subscribers === 0
          ? "Test message stored, but nobody has subscribed yet."
          : `Test message sent to ${answer.subscribers} subscriber${answer.subscribers === 1 ? "" : "s"}.`,
      );
    });

  const unsubscribe = (s: Subscriber) =>
    act(async () => {
      if (
        !window.confirm(`Remove ${subscriberName(s)} from “${dock.name}”? They stop receiving its messages.`)
      ) {
        return;
      }
      await guarded(() => api("DELETE", `${base}/subscribers/${s.chat_id}`));
      setSubscribers((current) => current?.filter((x) => x.chat_id !== s.chat_id) ?? null);
      announce(`${subscriberName(s)} removed.`);
    });

  const shown = (text: string) => (revealed ? text : text.replaceAll(dock.secret_key, mask(dock.secret_key)));
  const activeCount = subscribers?.filter((s) => s.state === "active").length ?? dock.subscribers;

  return (
    <article className="panel dock" aria-labelledby={titleId}>
      {editing ? (
        <>
          <h3 id={titleId}>Edit “{dock.name}”</h3>
          <DockForm
            initial={{ name: dock.name, link: dock.link ?? "", description: dock.description ?? "" }}
            submitLabel="Save"
            onSubmit={save}
            onCancel={() => setEditing(false)}
          />
        </>
      ) : (
        <>
          <h3 id={titleId} ref={heading} tabIndex={-1}>
            {dock.name}
          </h3>
          {dock.description && <p className="description">{dock.description}</p>}
          {dock.link && (
            <p>
              <a href={dock.link} target="_blank" rel="noopener noreferrer">
                {dock.link}
              </a>
            </p>
          )}
        </>
      )}

      <div className="actions">
        <a className="button primary" href={dock.open_in_telegram} target="_blank" rel="noopener">
          Open in Telegram
        </a>
        <button type="button" onClick={() => copy(dock.id, "Dock ID")}>
          Copy Dock ID
        </button>
      </div>
      <p className="muted small">
        Open in Telegram and answer <strong>Yes</strong> to subscribe. Share the Dock ID (or this button's
        link) with anyone who should receive these notifications.
      </p>

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

      <section aria-labelledby={`${titleId}-subs`}>
        <h4 id={`${titleId}-subs`}>
          Subscribers: <span data-testid="subscriber-count">{activeCount}</span>
        </h4>
        {subscribers?.length === 0 && (
          <p className="muted small">Nobody yet. Press Open in Telegram to be the first.</p>
        )}
        {subscribers && subscribers.length > 0 && (
          <ul className="subscribers">
            {subscribers.map((s) => (
              <li key={s.chat_id}>
                <span>
                  {subscriberName(s)}
                  {s.state === "blocked" && <span className="state state-gone"> blocked the bot</span>}
                </span>
                <button type="button" className="secondary" onClick={() => unsubscribe(s)}>
                  Remove<span className="offscreen"> {subscriberName(s)}</span>
                </button>
              </li>
            ))}
          </ul>
        )}
      </section>

      <section aria-labelledby={`${titleId}-msgs`}>
        <h4 id={`${titleId}-msgs`}>Recent messages</h4>
        <button type="button" onClick={sendTest}>
          Send test message
        </button>
        {messages?.length === 0 && <p className="muted small">No messages yet.</p>}
        {messages && messages.length > 0 && (
          <ol className="messages" aria-label={`Recent messages of ${dock.name}`}>
            {messages.map((m) => (
              <li key={m.id}>
                <p className="message-text">{m.text}</p>
                <p className="small">
                  <time dateTime={new Date(m.created_at).toISOString()}>
                    {new Date(m.created_at).toLocaleString()}
                  </time>{" "}
                  {m.subscribers === 0 ? (
                    <span className="muted">no subscribers then</span>
                  ) : (
                    STATE_ORDER.filter((s) => m.states[s]).map((s) => (
                      <span key={s} className={`state state-${s}`} title={STATE_HELP[s]}>
                        {s}: {m.states[s]}
                      </span>
                    ))
                  )}
                </p>
                {m.deliveries
                  .filter((d) => d.last_error)
                  .map((d) => (
                    <p key={d.chat_id} className="small field-error">
                      Chat {d.chat_id}: {d.last_error}
                    </p>
                  ))}
              </li>
            ))}
          </ol>
        )}
      </section>

      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}

      <div className="actions manage">
        {!editing && (
          <button type="button" className="secondary" onClick={() => setEditing(true)}>
            Edit
          </button>
        )}
        <button type="button" className="secondary" onClick={rotate}>
          Rotate secret
        </button>
        <button type="button" className="danger" onClick={remove}>
          Delete
        </button>
      </div>
    </article>
  );
}
