import { useEffect, useRef } from "react";
import { useAnnounce } from "../announce.tsx";
import { api, type Dock, type DockAnswer, type InfoAnswer, ServiceError } from "../api.ts";
import { useDockVersion, useLiveRead } from "../live.tsx";
import { onlyOnThisComputer } from "../local-address.ts";
import { navigate } from "../navigation.ts";
import { DOCK_TABS, type DockTab, dockHref, TAB_LABEL } from "../route.ts";
import { ActivityTab } from "./ActivityTab.tsx";
import { AuditTab } from "./AuditTab.tsx";
import { type Guarded, useCardActions } from "./actions.ts";
import { CoOwnersTab, ROLES } from "./CoOwnersTab.tsx";
import { Integrations } from "./Integrations.tsx";
import { MessageDetail } from "./MessageDetail.tsx";
import { MessagesTab } from "./MessagesTab.tsx";
import { RefusedTab } from "./RefusedTab.tsx";
import { may, type SecretDock, secretDock } from "./roles.ts";
import { SendTab } from "./SendTab.tsx";
import { SettingsTab } from "./SettingsTab.tsx";
import { Subscribers } from "./Subscribers.tsx";

/** Back to the list, which focuses its heading when it opens (this Dock was deleted). */
function toList() {
  sessionStorage.setItem("dn-focus-list", "1");
  navigate("#/");
}

/**
 * The Dock went away while shown (deleted in another tab or by the CLI; for a co-owner, also no
 * longer shared with them): back to the list, saying why.
 */
function goneElsewhere(announce: (text: string) => void, dock: Pick<Dock, "name" | "role">) {
  announce(
    dock.role === "owner"
      ? `Dock “${dock.name}” no longer exists: it was deleted elsewhere.`
      : `Dock “${dock.name}” is no longer shared with you, or was deleted.`,
  );
  toList();
}

/** A phone's screen, as styles.css draws the compact Dock header for it. */
const PHONE = window.matchMedia("(max-width: 480px)");

/**
 * One Dock: its name and what subscribing takes (Open in Telegram, the Dock ID, the subscribe link)
 * on top, then one section at a time — Send, Subscribers, Messages, Activity (with the refused requests),
 * Integrations, Settings, Co-owners, Audit log — each at its own address, those the person's role on the Dock
 * allows. Follows the live stream; a Dock deleted elsewhere sends the
 * person back to the list, saying why.
 */
export function DockPage({
  id,
  tab,
  messageId,
  info,
  guarded,
  selfId,
}: {
  id: string;
  tab: DockTab;
  messageId: string | null;
  info: InfoAnswer;
  guarded: Guarded;
  /** The signed-in person's Telegram id (the co-owners list says "you"). */
  selfId: number;
}) {
  const announce = useAnnounce();
  // What this page shows of the Dock: its settings, its subscriber count and the join requests
  // waiting (the badge), not its messages; and the person's role on it, which changes with an
  // entry of its audit log.
  const version = useDockVersion(id, ["settings", "subscribers", "audit", "audience"]);
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
    if (missing && dock !== null) goneElsewhere(announce, dock);
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
      selfId={selfId}
    />
  );
}

/**
 * Whether a section is the signed-in person's to see: each needs what its role allows (Send,
 * Integrations and Settings also the secrets, which only a role that manages them is given).
 */
function tabShown(tab: DockTab, dock: Dock, secrets: SecretDock | null): boolean {
  switch (tab) {
    case "send":
      return may(dock, "send") && secrets !== null;
    case "subscribers":
      return may(dock, "manage_subscribers");
    case "integrations":
    case "settings":
      return may(dock, "edit_settings") && secrets !== null;
    default:
      return may(dock, "read");
  }
}

function LoadedDock({
  dock,
  setDock,
  tab,
  messageId,
  info,
  guarded,
  heading,
  selfId,
}: {
  dock: Dock;
  setDock: (dock: Dock) => void;
  tab: DockTab;
  messageId: string | null;
  info: InfoAnswer;
  guarded: Guarded;
  heading: React.RefObject<HTMLHeadingElement | null>;
  selfId: number;
}) {
  const announce = useAnnounce();
  const { error, actions } = useCardActions(dock, guarded, () => goneElsewhere(announce, dock));
  const titleId = `dock-${dock.id}-title`;
  const secrets = secretDock(dock);
  const tabs = DOCK_TABS.filter((t) => tabShown(t, dock, secrets));
  const shown = tabs.includes(tab);
  const first = tabs[0];
  // A section this role does not see (the first one, Send, is what a bare link opens): its first
  // own section instead, in place of this address in the history.
  useEffect(() => {
    if (!shown && first !== undefined) window.location.replace(dockHref(dock.id, first));
  }, [shown, first, dock.id]);

  return (
    <article className="dock" aria-labelledby={titleId}>
      <p className="breadcrumb small">
        <a href="#/">Docks</a> <span aria-hidden="true">›</span>
      </p>
      <h1 id={titleId} ref={heading} tabIndex={-1}>
        {dock.name}
      </h1>
      {dock.role !== "owner" && (
        <p className="small muted" data-testid="dock-role">
          Shared with you as <strong>{ROLES.find((r) => r.role === dock.role)?.label.toLowerCase()}</strong>:{" "}
          {ROLES.find((r) => r.role === dock.role)?.does}.
        </p>
      )}
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
      {/* On a phone the note is folded (one line) so that the sections start on the first screen. */}
      <details className="muted small dock-hint" open={!PHONE.matches}>
        <summary>
          {dock.visibility === "open" ? (
            "Sharing the link"
          ) : (
            <strong>
              {dock.visibility === "invite"
                ? "Private: invite links only."
                : "Private: you approve who joins."}
            </strong>
          )}
        </summary>
        {dock.visibility === "open" ? (
          <>
            Open in Telegram and answer <strong>Yes</strong> to subscribe. Share the subscribe link (or the
            Dock ID) with anyone who should receive these notifications.
          </>
        ) : (
          <>
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
      </details>

      <nav className="tabs" aria-label="Dock sections">
        {tabs.map((t) => (
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
        {shown && tab === "send" && secrets && (
          <SendTab dock={secrets} actions={actions} apiUrl={info.api_base_url} />
        )}
        {shown && tab === "subscribers" && <Subscribers dock={dock} guarded={guarded} actions={actions} />}
        {shown && tab === "messages" && messageId === null && (
          <MessagesTab dock={dock} guarded={guarded} actions={actions} />
        )}
        {shown && tab === "messages" && messageId !== null && (
          <MessageDetail dock={dock} messageId={messageId} guarded={guarded} />
        )}
        {shown && tab === "activity" && (
          <>
            <ActivityTab dock={dock} guarded={guarded} />
            {/* Beside what was accepted, what was turned down: "why didn't it arrive?" */}
            <RefusedTab dock={dock} guarded={guarded} />
          </>
        )}
        {shown && tab === "integrations" && secrets && (
          <Integrations dock={secrets} actions={actions} onChanged={setDock} formats={info.formats} />
        )}
        {shown && tab === "settings" && secrets && (
          <SettingsTab dock={secrets} actions={actions} onChanged={setDock} onDeleted={toList} />
        )}
        {shown && tab === "co-owners" && <CoOwnersTab dock={dock} actions={actions} selfId={selfId} />}
        {shown && tab === "audit" && <AuditTab dock={dock} actions={actions} />}
      </div>
    </article>
  );
}
