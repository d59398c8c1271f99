import { useAnnounce } from "../announce.tsx";
import type { Dock, Subscriber } from "../api.ts";
import type { CardActions } from "./card-actions.ts";

function subscriberName(s: Subscriber): string {
  if (s.first_name && s.username) return `${s.first_name} (@${s.username})`;
  if (s.first_name) return s.first_name;
  if (s.username) return `@${s.username}`;
  return s.chat_type === "private" ? `Telegram user ${s.chat_id}` : `${s.chat_type} chat ${s.chat_id}`;
}

/**
 * Who receives the Dock's messages, each removable by the owner. The count is of the active ones;
 * a chat that blocked the bot is listed, marked, until removed.
 */
export function Subscribers({
  dock,
  titleId,
  subscribers,
  actions,
  onRemoved,
}: {
  dock: Dock;
  /** The card title's id; this section's heading id is made from it. */
  titleId: string;
  /** Null until first read: the count is then the Dock's own. */
  subscribers: Subscriber[] | null;
  actions: CardActions;
  onRemoved: (chatId: number) => void;
}) {
  const announce = useAnnounce();

  const unsubscribe = (s: Subscriber) =>
    actions.act(async () => {
      if (
        !window.confirm(`Remove ${subscriberName(s)} from “${dock.name}”? They stop receiving its messages.`)
      ) {
        return;
      }
      await actions.call("DELETE", `/subscribers/${s.chat_id}`);
      onRemoved(s.chat_id);
      announce(`${subscriberName(s)} removed.`);
    }, false);

  const activeCount = subscribers?.filter((s) => s.state === "active").length ?? dock.subscribers;

  return (
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
  );
}
