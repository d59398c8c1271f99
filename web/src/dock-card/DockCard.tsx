import { useEffect, useRef, useState } from "react";
import { useAnnounce } from "../announce.tsx";
import type { Dock, DockAnswer } from "../api.ts";
import { type DockFieldValues, DockForm } from "../DockForm.tsx";
import { useDockActivity } from "./activity.ts";
import { Credentials } from "./Credentials.tsx";
import { type Guarded, useCardActions } from "./card-actions.ts";
import { Integrations } from "./Integrations.tsx";
import { ManageActions } from "./ManageActions.tsx";
import { RecentMessages } from "./RecentMessages.tsx";
import { Subscribers } from "./Subscribers.tsx";

/**
 * One Dock, with everything its owner does with it: subscribe people (Open in Telegram, the Dock ID),
 * send (secret key, curl), watch deliveries, and manage (edit, rotate the secret, delete). This is
 * the card itself: its heading (or the edit form), the focus, and the error line its parts share.
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
  guarded: Guarded;
  onChanged: (dock: Dock) => void;
  /** `hadFocus`: focus was in the card, so the page must put it somewhere sensible. */
  onDeleted: (id: string, hadFocus: boolean) => void;
}) {
  const announce = useAnnounce();
  const heading = useRef<HTMLHeadingElement>(null);
  const [editing, setEditing] = useState(false);
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
  const { card, error, setError, vanished, actions } = useCardActions(dock, guarded, onDeleted);
  const { subscribers, messages, dropSubscriber } = useDockActivity(dock.id, guarded, (e) => {
    if (vanished(e)) return true;
    setError((e as Error).message);
    return false;
  });
  const titleId = `dock-${dock.id}-title`;

  useEffect(() => {
    if (focusOnMount) {
      heading.current?.focus();
      heading.current?.scrollIntoView({ block: "start" });
    }
  }, [focusOnMount]);

  const save = async (values: DockFieldValues) => {
    const answer = await actions.call<DockAnswer>("PATCH", "", values);
    onChanged(answer.dock);
    closeEditor();
    announce("Changes saved.");
  };

  return (
    <article className="panel dock" aria-labelledby={titleId} ref={card}>
      {editing ? (
        <>
          <h3 id={titleId}>Edit “{dock.name}”</h3>
          <DockForm
            initial={{
              name: dock.name,
              link: dock.link ?? "",
              description: dock.description ?? "",
              callback_url: dock.callback_url ?? "",
            }}
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
          {dock.callback_url && (
            <p className="small callback-url">
              <span className="muted">Events are posted to </span>
              <code data-testid="callback-url">{dock.callback_url}</code>
            </p>
          )}
        </>
      )}

      <div className="actions">
        <a className="button primary" href={dock.open_in_telegram} target="_blank" rel="noopener">
          Open in Telegram
        </a>
        <button type="button" onClick={() => actions.copy(dock.id, "Dock ID")}>
          Copy Dock ID
        </button>
      </div>
      <p className="muted small">
        Open in Telegram and answer <strong>Yes</strong> to subscribe. Share the Dock ID (or this button's
        link) with anyone who should receive these notifications.
      </p>

      <Credentials dock={dock} copy={actions.copy} />
      <Integrations dock={dock} actions={actions} onChanged={onChanged} />
      <Subscribers
        dock={dock}
        titleId={titleId}
        subscribers={subscribers}
        actions={actions}
        onRemoved={dropSubscriber}
      />
      <RecentMessages dock={dock} titleId={titleId} messages={messages} actions={actions} />

      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}

      <ManageActions
        dock={dock}
        editing={editing}
        onEdit={() => setEditing(true)}
        actions={actions}
        onChanged={onChanged}
        onDeleted={onDeleted}
      />
    </article>
  );
}
