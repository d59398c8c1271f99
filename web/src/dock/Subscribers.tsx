import { useId } from "react";
import { useAnnounce } from "../announce.tsx";
import { api, type Dock, type Subscriber, type SubscriberListAnswer } from "../api.ts";
import { useDockVersion, useLiveRead } from "../live.tsx";
import type { CardActions, Guarded } from "./actions.ts";
import { chatLabel } from "./chat-name.ts";
import { InviteLinks, inviteLabel } from "./InviteLinks.tsx";
import { JoinRequests } from "./JoinRequests.tsx";
import { ReadError } from "./ReadError.tsx";

/**
 * Who receives the Dock's messages, each removable by the owner, and how they came (the invite
 * link, if any); then the Dock's invite links. The count is of the active ones; a chat that
 * blocked the bot is listed, marked, until removed. Follows the live stream.
 */
export function Subscribers({
  dock,
  guarded,
  actions,
}: {
  dock: Dock;
  guarded: Guarded;
  actions: CardActions;
}) {
  const id = useId();
  const announce = useAnnounce();
  const version = useDockVersion(dock.id, ["subscribers"]);
  const read = useLiveRead(
    async () =>
      (await guarded(() => api<SubscriberListAnswer>("GET", `/docks/${dock.id}/subscribers`))).subscribers,
    `${dock.id} ${version}`,
  );
  const subscribers = read.value;

  const unsubscribe = (s: Subscriber) =>
    actions.act(async () => {
      if (!window.confirm(`Remove ${chatLabel(s)} from “${dock.name}”? They stop receiving its messages.`)) {
        return;
      }
      await actions.call("DELETE", `/subscribers/${s.chat_id}`);
      // Off the list at once, before the stream says so.
      read.set((current) => current?.filter((x) => x.chat_id !== s.chat_id) ?? null);
      announce(`${chatLabel(s)} removed.`);
    }, false);

  const activeCount = subscribers?.filter((s) => s.state === "active").length ?? dock.subscribers;

  return (
    <>
      <JoinRequests dock={dock} actions={actions} />
      <section aria-labelledby={`${id}-subs`}>
        <h2 id={`${id}-subs`}>
          Subscribers: <span data-testid="subscriber-count">{activeCount}</span>
        </h2>
        {dock.visibility === "open" ? (
          <p className="muted small">
            People subscribe with <strong>Open in Telegram</strong> (then <strong>Yes</strong>), or by sending
            the bot the Dock ID. A group subscribes once the bot is in it: an admin sends{" "}
            <code>/subscribe {dock.id}</code> there. Share the subscribe link with anyone who should receive
            these notifications.
          </p>
        ) : (
          <p className="muted small">
            {dock.visibility === "invite"
              ? "This Dock is private: people (and groups, by an admin) subscribe through an invite link below."
              : "People ask to join with the Dock ID or an invite link, and you approve each request."}{" "}
            Choose who can subscribe in Settings.
          </p>
        )}
        <ReadError error={read.error} />
        {subscribers?.length === 0 && (
          <p className="muted small">Nobody yet. Press Open in Telegram to be the first.</p>
        )}
        {subscribers && subscribers.length > 0 && (
          <ul className="subscribers">
            {subscribers.map((s) => (
              <li key={s.chat_id}>
                <span>
                  {chatLabel(s)}
                  {s.state === "blocked" && <span className="state state-gone"> blocked the bot</span>}
                  {s.invite && (
                    <span className="small muted"> · joined through “{inviteLabel(s.invite)}”</span>
                  )}
                </span>
                <button type="button" className="secondary" onClick={() => unsubscribe(s)}>
                  Remove<span className="offscreen"> {chatLabel(s)}</span>
                </button>
              </li>
            ))}
          </ul>
        )}
      </section>
      <InviteLinks dock={dock} actions={actions} />
    </>
  );
}
