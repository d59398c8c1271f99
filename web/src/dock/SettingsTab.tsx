import { useEffect, useRef, useState } from "react";
import { useAnnounce } from "../announce.tsx";
import type { DockAnswer } from "../api.ts";
import { type DockFieldValues, DockForm } from "../DockForm.tsx";
import type { DockEditorProps } from "./actions.ts";
import { Credentials } from "./Credentials.tsx";
import { may } from "./roles.ts";
import { mask } from "./secret.ts";

/**
 * The signing secret of the Dock's callback events, beside the callback URL it goes with: masked
 * until revealed, copied by its button, rotated when a receiver may have leaked it (which changes
 * nothing for the applications that send).
 */
function SigningSecret({ dock, actions, onChanged }: DockEditorProps) {
  const announce = useAnnounce();
  const [revealed, setRevealed] = useState(false);
  const rotate = () =>
    actions.act(async () => {
      const sure = window.confirm(
        `Rotate the signing secret of “${dock.name}”? Events are signed with the new one from now on: your receiver must verify with it.`,
      );
      if (!sure) return;
      const answer = await actions.call<DockAnswer>("POST", "/rotate-signing-secret");
      onChanged(answer.dock);
      setRevealed(true);
      announce("New signing secret made. Events are signed with it from now on.");
    });
  return (
    <section aria-labelledby="signing-title">
      <h3 id="signing-title">Signing secret</h3>
      <p className="muted small">
        Events posted to the callback URL carry a Dock-Signature made with this secret (not with the secret
        key, which can send): give it to the receiver that verifies them.
      </p>
      <p>
        <code data-testid="signing-secret">{revealed ? dock.signing_secret : mask(dock.signing_secret)}</code>
        {!revealed && <span className="offscreen"> (hidden)</span>}
      </p>
      <button type="button" aria-pressed={revealed} onClick={() => setRevealed(!revealed)}>
        {revealed ? "Hide signing secret" : "Reveal signing secret"}
      </button>{" "}
      <button type="button" onClick={() => actions.copy(dock.signing_secret, "Signing secret")}>
        Copy signing secret
      </button>{" "}
      <button type="button" className="secondary" onClick={rotate}>
        Rotate signing secret
      </button>
    </section>
  );
}

/**
 * The Dock's fields, its secret keys' rotation and (for its owners) its deletion. The two that break something
 * (every application's key, every subscription) ask first and say what they break; a new key is
 * shown right here once, with its copy button, since every application needs it next.
 */
export function SettingsTab({
  dock,
  actions,
  onChanged,
  onDeleted,
}: DockEditorProps & { onDeleted: () => void }) {
  const announce = useAnnounce();
  const [newKey, setNewKey] = useState<string | null>(null);
  const [formKey, setFormKey] = useState(0);
  const newKeyBox = useRef<HTMLElement>(null);
  useEffect(() => {
    if (!newKey) return;
    // In the middle of the screen: clear of the confirmation at its foot.
    newKeyBox.current?.focus({ preventScroll: true });
    newKeyBox.current?.scrollIntoView({ block: "center" });
  }, [newKey]);

  const save = async (values: DockFieldValues) => {
    const answer = await actions.call<DockAnswer>("PATCH", "", values);
    onChanged(answer.dock);
    // The form starts again from what was saved (a bare host shows as the https:// link it became).
    setFormKey((k) => k + 1);
    announce("Changes saved.");
  };

  const rotate = () =>
    actions.act(async () => {
      const sure = window.confirm(
        `Rotate the secret key of “${dock.name}”? The current key stops working at once: every application using it must get the new one.`,
      );
      if (!sure) return;
      const answer = await actions.call<DockAnswer>("POST", "/rotate-secret");
      onChanged(answer.dock);
      setNewKey(answer.dock.secret_key);
      announce("New secret key made. The old one no longer works.");
    });

  const remove = () =>
    actions.act(async () => {
      const sure = window.confirm(
        `Delete “${dock.name}”? Its subscribers stop receiving its messages, and its secret key stops working. This cannot be undone.`,
      );
      if (!sure) return;
      await actions.call("DELETE");
      announce(`Dock “${dock.name}” deleted.`);
      onDeleted();
    });

  return (
    <>
      <section aria-labelledby="settings-title">
        <h2 id="settings-title">Settings</h2>
        <DockForm
          key={formKey}
          initial={{
            name: dock.name,
            link: dock.link ?? "",
            description: dock.description ?? "",
            callback_url: dock.callback_url ?? "",
            visibility: dock.visibility,
          }}
          submitLabel="Save"
          onSubmit={save}
        />
      </section>
      <SigningSecret dock={dock} actions={actions} onChanged={onChanged} />
      <Credentials dock={dock} actions={actions} />
      <section aria-labelledby="rotate-title">
        <h3 id="rotate-title">Secret key</h3>
        <p className="muted small">
          Rotate it if it may have leaked: a new key is made and the current one stops working at once.
        </p>
        {newKey === dock.secret_key && (
          <section className="new-key" ref={newKeyBox} tabIndex={-1} aria-labelledby="new-key-title">
            <p id="new-key-title">
              <strong>The new secret key.</strong> Give it to every application that sends to this Dock: the
              old one no longer works.
            </p>
            <code data-testid="new-secret-key">{newKey}</code>
            <button type="button" className="primary" onClick={() => actions.copy(newKey, "New secret key")}>
              Copy new key
            </button>
          </section>
        )}
        <button type="button" className="secondary" onClick={rotate}>
          Rotate secret
        </button>
      </section>
      {may(dock, "delete_dock") && (
        <section aria-labelledby="delete-title">
          <h3 id="delete-title">Delete this Dock</h3>
          <p className="muted small">
            Its subscribers stop receiving its messages and its secret key stops working. This cannot be
            undone.
          </p>
          <button type="button" className="danger" onClick={remove}>
            Delete
          </button>
        </section>
      )}
    </>
  );
}
