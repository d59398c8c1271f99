import { useId } from "react";
import { useAnnounce } from "../announce.tsx";
import {
  api,
  type BanListAnswer,
  type BanView,
  type Dock,
  type Subscriber,
  type SubscriberListAnswer,
} from "../api.ts";
import { useDockVersion, useLiveRead } from "../live.tsx";
import type { CardActions, Guarded } from "./actions.ts";
import { chatLabel } from "./chat-name.ts";
import { InviteLinks, inviteLabel } from "./InviteLinks.tsx";
import { JoinRequests } from "./JoinRequests.tsx";
import { ReadError } from "./ReadError.tsx";
import { When } from "./When.tsx";

/** The chats banned from the Dock (removed or declined with a ban), each of which may be let back. */
function Bans({ dock, actions }: { dock: Dock; actions: CardActions }) {
  const id = useId();
  const announce = useAnnounce();
  const version = useDockVersion(dock.id, ["audience"]);
  const read = useLiveRead(
    async () => (await actions.call<BanListAnswer>("GET", "/bans")).bans,
    `${dock.id} ${version}`,
  );
  const bans = read.value;
  if (!read.error && (bans === null || bans.length === 0)) return null;

  const unban = (ban: BanView) =>
    actions.act(async () => {
      await actions.call("DELETE", `/bans/${ban.chat_id}`);
      read.set((current) => current?.filter((b) => b.chat_id !== ban.chat_id) ?? null);
      announce(`${chatLabel(ban)} unbanned: they may join or ask again.`);
    }, false);

  return (
    <section aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Banned</h2>
      <p className="muted small">These chats may neither join nor ask to, however they try.</p>
      <ReadError error={read.error} />
      {bans && (
        <ul className="subscribers" data-testid="bans">
          {bans.map((ban) => (
            <li key={ban.chat_id}>
              <span>
                {chatLabel(ban)}
                <span className="small muted">
                  {" "}
                  · banned <When at={ban.banned_at} relative />
                </span>
              </span>
              <button type="button" className="secondary" onClick={() => unban(ban)}>
                Unban<span className="offscreen"> {chatLabel(ban)}</span>
              </button>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

/**
 * The Dock's audience: the join requests waiting, who receives its messages (each removable, and
 * bannable, by the owner, with the invite link they came through, if any), its invite links, and
 * the chats banned from it. The count is of the active ones; a chat that
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

  /** Removes a subscriber (they are told once, in Telegram); `ban`: they may not join or ask again. */
  const unsubscribe = (s: Subscriber, ban: boolean) =>
    actions.act(async () => {
      const question = ban
        ? `Remove ${chatLabel(s)} from “${dock.name}” and ban them? They stop receiving its messages and cannot join or ask again until you unban them.`
        : `Remove ${chatLabel(s)} from “${dock.name}”? They stop receiving its messages (the bot tells them).`;
      if (!window.confirm(question)) return;
      if (ban) await actions.call("POST", "/bans", { chat_id: s.chat_id });
      else await actions.call("DELETE", `/subscribers/${s.chat_id}`);
      // Off the list at once, before the stream says so.
      read.set((current) => current?.filter((x) => x.chat_id !== s.chat_id) ?? null);
      announce(`${chatLabel(s)} removed${ban ? " and banned" : ""}.`);
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
                <span className="actions">
                  <button type="button" className="secondary" onClick={() => unsubscribe(s, false)}>
                    Remove<span className="offscreen"> {chatLabel(s)}</span>
                  </button>
                  <button type="button" className="danger" onClick={() => unsubscribe(s, true)}>
                    Remove and ban<span className="offscreen"> {chatLabel(s)}</span>
                  </button>
                </span>
              </li>
            ))}
          </ul>
        )}
      </section>
      <InviteLinks dock={dock} actions={actions} />
      <Bans dock={dock} actions={actions} />
    </>
  );
}
