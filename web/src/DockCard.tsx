import { useEffect, useId, useRef, useState } from "react";
import { useAnnounce } from "./announce.tsx";
import {
  api,
  type DeliveryState,
  type Dock,
  type MessageReport,
  ServiceError,
  type Subscriber,
} from "./api.ts";
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

/** A message longer than this (in lines or characters) shows its beginning until asked for more. */
const PREVIEW_LINES = 6;
const PREVIEW_CHARS = 300;
/** …unless what the fold would hide is this little: a click for a few words is not worth it. */
const WORTH_FOLDING = 80;

/** User-perceived characters: a flag, a family emoji or an accented letter stays whole. */
function graphemes(text: string): string[] {
  if (typeof Intl.Segmenter !== "function") return [...text];
  return Array.from(
    new Intl.Segmenter(undefined, { granularity: "grapheme" }).segment(text),
    (s) => s.segment,
  );
}

/** The message's beginning to show folded, or null when it is short enough to show whole. */
function preview(text: string): string | null {
  const lines = text.split("\n");
  if (lines.length <= PREVIEW_LINES && text.length <= PREVIEW_CHARS) return null;
  const shown = graphemes(lines.slice(0, PREVIEW_LINES).join("\n"))
    .slice(0, PREVIEW_CHARS)
    .join("")
    .trimEnd();
  const hidden = text.slice(shown.length).trim();
  if (hidden.length < WORTH_FOLDING && hidden.split("\n").length <= 2) return null;
  return `${shown}…`;
}

/** A message's text as sent (newlines kept); a long one (up to MAX_MESSAGE_LENGTH) folded. */
function MessageText({ text }: { text: string }) {
  const [open, setOpen] = useState(false);
  const id = useId();
  const short = preview(text);
  if (short === null) return <p className="message-text">{text}</p>;
  return (
    <>
      <p className="message-text" id={id}>
        {open ? text : short}
      </p>
      {/* The label says what a press does; it is the state too, so no aria-expanded beside it
          (a screen reader would read "Show less, expanded"). */}
      <button type="button" className="small" aria-controls={id} onClick={() => setOpen(!open)}>
        {open ? "Show less" : "Show all"}
      </button>
    </>
  );
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
  /** `hadFocus`: focus was in the card, so the page must put it somewhere sensible. */
  onDeleted: (id: string, hadFocus: boolean) => void;
}) {
  const announce = useAnnounce();
  const heading = useRef<HTMLHeadingElement>(null);
  const [editing, setEditing] = useState(false);
  const card = useRef<HTMLElement>(null);
  const focusInCard = () => card.current?.contains(document.activeElement) ?? false;
  // After the edit form closes (saved or cancelled), focus goes back to the card's heading.
  const [backToHeading, setBackToHeading] = useState(false);
  const closeEditor = () => {
    setEditing(false);
    setBackToHeading(true);
  };
  useEffect(() => {
    if (editing || !backToHeading) return;
    heading.current?.focus();
    setBackToHeading(false);
  }, [editing, backToHeading]);
  const [revealed, setRevealed] = useState(false);
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

  // The Dock was deleted elsewhere (another tab, the CLI): its card goes, and says why.
  const vanished = (e: unknown) => {
    // The service's own answer for this Dock (not a proxy's 404 page during a deploy).
    if (!(e instanceof ServiceError && e.status === 404 && e.code === "not_found")) return false;
    onDeleted(dock.id, focusInCard());
    announce(`Dock “${dock.name}” no longer exists: it was deleted elsewhere.`);
    return true;
  };
  // The refresh timer below outlives renders; it calls the current one.
  const vanishedNow = useRef(vanished);
  vanishedNow.current = vanished;

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
        if (stopped) return;
        // Only these reads say 404 for the Dock itself (a subscriber's removal says it for the chat).
        if (vanishedNow.current(e)) stopped = true;
        else setError((e as Error).message);
      }
    };
    void refresh();
    const timer = window.setInterval(refresh, REFRESH_MS);
    return () => {
      stopped = true;
      window.clearInterval(timer);
    };
  }, [base, guarded]);

  /** Runs an action on this card; `onDock`: a 404 means the Dock itself is gone (not a subscriber). */
  const act = async (call: () => Promise<void>, onDock = true) => {
    setError(null);
    try {
      await call();
    } catch (e) {
      if (!(onDock && vanished(e))) setError((e as Error).message);
    }
  };

  const copy = (text: string, what: string) =>
    act(async () => {
      announce((await copyText(text)) ? `${what} copied.` : `Could not copy the ${what.toLowerCase()}.`);
    });

  const save = async (values: DockFieldValues) => {
    const answer = await guarded(() => api<{ dock: Dock }>("PATCH", base, values));
    onChanged(answer.dock);
    closeEditor();
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
      onDeleted(dock.id, true);
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
    }, false);

  const shown = (text: string) => (revealed ? text : text.replaceAll(dock.secret_key, mask(dock.secret_key)));
  const activeCount = subscribers?.filter((s) => s.state === "active").length ?? dock.subscribers;

  return (
    <article className="panel dock" aria-labelledby={titleId} ref={card}>
      {editing ? (
        <>
          <h3 id={titleId}>Edit “{dock.name}”</h3>
          <DockForm
            initial={{ name: dock.name, link: dock.link ?? "", description: dock.description ?? "" }}
            submitLabel="Save"
            onSubmit={save}
            onCancel={closeEditor}
            focusFirst
          />
        </>
      ) : (
        <>
          <h3 id={titleId} ref={heading} tabIndex={-1}>
            {dock.name}
          </h3>
          {dock.description && <p className="description">{dock.description}</p>}
          {dock.link && (
            <p className="dock-link">
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
                <MessageText text={m.text} />
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
