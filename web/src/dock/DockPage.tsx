import { useEffect, useRef } from "react";
import { useAnnounce } from "../announce.tsx";
import { api, type Dock, type DockAnswer, type InfoAnswer, ServiceError } from "../api.ts";
import { useDockVersion, useLiveRead } from "../live.tsx";
import { onlyOnThisComputer } from "../local-address.ts";
import { navigate } from "../navigation.ts";
import { DOCK_TABS, type DockTab, dockHref, TAB_LABEL } from "../route.ts";
import { ActivityTab } from "./ActivityTab.tsx";
import { type Guarded, useCardActions } from "./actions.ts";
import { Integrations } from "./Integrations.tsx";
import { MessageDetail } from "./MessageDetail.tsx";
import { MessagesTab } from "./MessagesTab.tsx";
import { SendTab } from "./SendTab.tsx";
import { SettingsTab } from "./SettingsTab.tsx";
import { Subscribers } from "./Subscribers.tsx";

/** Back to the list, which focuses its heading when it opens (this Dock was deleted). */
function toList() {
  sessionStorage.setItem("dn-focus-list", "1");
  navigate("#/");
}

/** The Dock was deleted while shown (another tab, the CLI): back to the list, saying why. */
function goneElsewhere(announce: (text: string) => void, name: string) {
  announce(`Dock “${name}” no longer exists: it was deleted elsewhere.`);
  toList();
}

/**
 * One Dock: its name and what subscribing takes (Open in Telegram, the Dock ID, the subscribe link)
 * on top, then one section at a time — Send, Subscribers, Messages, Activity, Integrations,
 * Settings — each at its own address. Follows the live stream; a Dock deleted elsewhere sends the
 * person back to the list, saying why.
 */
export function DockPage({
  id,
  tab,
  messageId,
  info,
  guarded,
}: {
  id: string;
  tab: DockTab;
  messageId: string | null;
  info: InfoAnswer;
  guarded: Guarded;
}) {
  const announce = useAnnounce();
  // What this page shows of the Dock: its settings, its subscriber count and the join requests
  // waiting (the badge), not its messages.
  const version = useDockVersion(id, ["settings", "subscribers", "audience"]);
  const heading = useRef<HTMLHeadingElement>(null);
  const read = useLiveRead(
    async () => (await guarded(() => api<DockAnswer>("GET", `/docks/${encodeURIComponent(id)}`))).dock,
    `${id} ${version}`,
  );
  // A failed read keeps the Dock as last shown: the one that went away, when it did.
  const dock = read.value;
  const missing =
    read.error instanceof ServiceError && read.error.status === 404 && read.error.code === "not_found";

  // Deleted while shown (another tab, the CLI): back to the list, saying why, its heading focused.
  useEffect(() => {
    if (missing && dock !== null) goneElsewhere(announce, dock.name);
  }, [missing, dock, announce]);

  // A new page (the Dock read, or back from a message): the focus starts at its heading, where a
  // screen reader starts reading. Between sections it stays on the link pressed, as with tabs.
  const loaded = dock !== null;
  useEffect(() => {
    if (loaded && messageId === null) heading.current?.focus({ preventScroll: true });
  }, [loaded, messageId]);

  // The window's title names the Dock and the section: tabs and history tell them apart.
  useEffect(() => {
    if (dock) document.title = `${dock.name} · ${TAB_LABEL[tab]} · Dock Notify`;
  }, [dock, tab]);

  if (missing && dock === null) {
    return (
      <section className="panel">
        <h1>No such Dock</h1>
        <p>It was deleted, or it is not yours.</p>
        <a href="#/">Back to your Docks</a>
      </section>
    );
  }
  if (dock === null) {
    return read.error ? (
      <p className="error" role="alert">
        {(read.error as Error).message}
      </p>
    ) : (
      <p className="muted">Loading…</p>
    );
  }
  return (
    <LoadedDock
      dock={dock}
      setDock={read.set}
      tab={tab}
      messageId={messageId}
      info={info}
      guarded={guarded}
      heading={heading}
    />
  );
}

function LoadedDock({
  dock,
  setDock,
  tab,
  messageId,
  info,
  guarded,
  heading,
}: {
  dock: Dock;
  setDock: (dock: Dock) => void;
  tab: DockTab;
  messageId: string | null;
  info: InfoAnswer;
  guarded: Guarded;
  heading: React.RefObject<HTMLHeadingElement | null>;
}) {
  const announce = useAnnounce();
  const { error, actions } = useCardActions(dock, guarded, () => goneElsewhere(announce, dock.name));
  const titleId = `dock-${dock.id}-title`;

  return (
    <article className="dock" aria-labelledby={titleId}>
      <p className="breadcrumb small">
        <a href="#/">Docks</a> <span aria-hidden="true">›</span>
      </p>
      <h1 id={titleId} ref={heading} tabIndex={-1}>
        {dock.name}
      </h1>
      {dock.description && <p className="description">{dock.description}</p>}
      {dock.link && (
        <p className="dock-link">
          <a href={dock.link} target="_blank" rel="noopener noreferrer">
            {dock.link}
          </a>
        </p>
      )}
      {dock.callback_url && (
        <p className="small callback-url">
          <span className="muted">Events are posted to </span>
          <code data-testid="callback-url">{dock.callback_url}</code>
        </p>
      )}
      <div className="actions">
        <a className="button primary" href={dock.open_in_telegram} target="_blank" rel="noopener">
          Open in Telegram
        </a>
        <button type="button" onClick={() => actions.copy(dock.id, "Dock ID")}>
          Copy Dock ID
        </button>
        <button type="button" onClick={() => actions.copy(dock.open_in_telegram, "Subscribe link")}>
          Copy subscribe link
        </button>
      </div>
      <p className="muted small dock-hint">
        {dock.visibility === "open" ? (
          <>
            Open in Telegram and answer <strong>Yes</strong> to subscribe. Share the subscribe link (or the
            Dock ID) with anyone who should receive these notifications.
          </>
        ) : (
          <>
            <strong>
              {dock.visibility === "invite"
                ? "Private: invite links only."
                : "Private: you approve who joins."}
            </strong>{" "}
            {dock.visibility === "invite"
              ? "The Dock ID alone is refused (except for you):"
              : "The Dock ID or a link sends you a join request:"}{" "}
            share an invite link from <a href={dockHref(dock.id, "subscribers")}>Subscribers</a>.
          </>
        )}
        {onlyOnThisComputer(dock.open_in_telegram) && (
          <>
            {" "}
            The link leads to {new URL(dock.open_in_telegram).host}, which only this computer reaches: to
            share it, start the service with <code>PUBLIC_URL</code> set to an address others can reach.
          </>
        )}
      </p>

      <nav className="tabs" aria-label="Dock sections">
        {DOCK_TABS.map((t) => (
          <a key={t} href={dockHref(dock.id, t)} aria-current={t === tab ? "page" : undefined}>
            {TAB_LABEL[t]}
            {t === "subscribers" && <span className="count"> {dock.subscribers}</span>}
            {t === "subscribers" && dock.pending_requests > 0 && (
              <span className="badge" data-testid="requests-badge">
                {dock.pending_requests}
                <span className="offscreen">
                  {" "}
                  join request{dock.pending_requests === 1 ? "" : "s"} waiting
                </span>
              </span>
            )}
          </a>
        ))}
      </nav>

      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <div className="tab-panel">
        {tab === "send" && <SendTab dock={dock} actions={actions} apiUrl={info.api_base_url} />}
        {tab === "subscribers" && <Subscribers dock={dock} guarded={guarded} actions={actions} />}
        {tab === "messages" && messageId === null && (
          <MessagesTab dock={dock} guarded={guarded} actions={actions} />
        )}
        {tab === "messages" && messageId !== null && (
          <MessageDetail dock={dock} messageId={messageId} guarded={guarded} />
        )}
        {tab === "activity" && <ActivityTab dock={dock} guarded={guarded} />}
        {tab === "integrations" && <Integrations dock={dock} actions={actions} onChanged={setDock} />}
        {tab === "settings" && (
          <SettingsTab dock={dock} actions={actions} onChanged={setDock} onDeleted={toList} />
        )}
      </div>
    </article>
  );
}
