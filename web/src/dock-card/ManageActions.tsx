import { useAnnounce } from "../announce.tsx";
import type { Dock, DockAnswer } from "../api.ts";
import type { CardActions } from "./card-actions.ts";

/**
 * Edit, Rotate secret and Delete: the two that break something (every application's key, every
 * subscription) ask first and say what they break.
 */
export function ManageActions({
  dock,
  editing,
  onEdit,
  actions,
  onChanged,
  onDeleted,
}: {
  dock: Dock;
  /** The edit form is open: no Edit button. */
  editing: boolean;
  onEdit: () => void;
  actions: CardActions;
  onChanged: (dock: Dock) => void;
  onDeleted: (id: string, hadFocus: boolean) => void;
}) {
  const announce = useAnnounce();

  const rotate = () =>
    actions.act(async () => {
      const sure = window.confirm(
        `Rotate the secret key of “${dock.name}”? The current key stops working at once: every application using it must get the new one.`,
      );
      if (!sure) return;
      const answer = await actions.call<DockAnswer>("POST", "/rotate-secret");
      onChanged(answer.dock);
      announce("New secret key made. The old one no longer works.");
    });

  const remove = () =>
    actions.act(async () => {
      const sure = window.confirm(
        `Delete “${dock.name}”? Its subscribers stop receiving its messages, and its secret key stops working. This cannot be undone.`,
      );
      if (!sure) return;
      await actions.call("DELETE");
      onDeleted(dock.id, true);
      announce(`Dock “${dock.name}” deleted.`);
    });

  return (
    <div className="actions manage">
      {!editing && (
        <button type="button" className="secondary" onClick={onEdit}>
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
  );
}
