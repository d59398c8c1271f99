import { useAnnounce } from "../announce.tsx";
import type { DeliveryState, Dock, MessageReport, TestMessageAnswer } from "../api.ts";
import type { CardActions } from "./card-actions.ts";
import { MessageText } from "./MessageText.tsx";

const STATE_ORDER: DeliveryState[] = ["sent", "sending", "queued", "failed", "gone"];

const STATE_HELP: Record<DeliveryState, string> = {
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

/** What the options changed besides the text: priority, sound, buttons (the title and tags are in the text). */
function MessageOptions({ options }: { options: MessageReport["options"] }) {
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

/**
 * The Dock's latest messages with how many deliveries are in each state and why any failed, and
 * "Send test message" to try the whole path.
 */
export function RecentMessages({
  dock,
  titleId,
  messages,
  actions,
}: {
  dock: Dock;
  /** The card title's id; this section's heading id is made from it. */
  titleId: string;
  /** Null until first read. */
  messages: MessageReport[] | null;
  actions: CardActions;
}) {
  const announce = useAnnounce();

  const sendTest = () =>
    actions.act(async () => {
      const answer = await actions.call<TestMessageAnswer>("POST", "/test-message");
      announce(
        answer.subscribers === 0
          ? "Test message stored, but nobody has subscribed yet."
          : `Test message sent to ${answer.subscribers} subscriber${answer.subscribers === 1 ? "" : "s"}.`,
      );
    });

  return (
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
              <MessageText text={m.shown.text} entities={m.shown.entities} />
              <MessageOptions options={m.options} />
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
  );
}
