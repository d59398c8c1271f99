import { useId, useState } from "react";
import { useAnnounce } from "../announce.tsx";
import type { Credential, CredentialAnswer, CredentialListAnswer, Dock } from "../api.ts";
import { useLiveRead } from "../live.tsx";
import type { CardActions } from "./actions.ts";
import { ReadError } from "./ReadError.tsx";

/**
 * The Dock's named credentials: one per application, each with only what it needs (send, manage,
 * or github: a GitHub webhook's Secret), revocable alone. A new one's secret is shown here once;
 * the list shows the first characters to tell them apart.
 */
export function Credentials({ dock, actions }: { dock: Dock; actions: CardActions }) {
  const id = useId();
  const announce = useAnnounce();
  const read = useLiveRead(
    async () => (await actions.call<CredentialListAnswer>("GET", "/credentials")).credentials,
    dock.id,
  );
  const list = read.value;
  const setList = read.set;
  const [name, setName] = useState("");
  const [scope, setScope] = useState<Credential["scope"]>("send");
  const [made, setMade] = useState<{ name: string; secret: string; scope: Credential["scope"] } | null>(null);

  const create = (event: React.FormEvent) => {
    event.preventDefault();
    void actions.act(async () => {
      const answer = await actions.call<CredentialAnswer>("POST", "/credentials", { name, scope });
      setList((current) => [...(current ?? []), answer.credential]);
      setMade({ name: answer.credential.name, secret: answer.secret, scope: answer.credential.scope });
      setName("");
      announce(`Credential “${answer.credential.name}” made. Copy its secret now: it is not shown again.`);
    });
  };

  const revoke = (c: Credential) =>
    actions.act(async () => {
      if (!window.confirm(`Revoke “${c.name}”? Applications using it are refused from now on.`)) return;
      await actions.call("DELETE", `/credentials/${c.id}`);
      setList((current) => current?.filter((x) => x.id !== c.id) ?? null);
      if (made !== null && c.prefix === made.secret.slice(0, c.prefix.length)) setMade(null);
      announce(`Credential “${c.name}” revoked.`);
    }, false);

  return (
    <section aria-labelledby={`${id}-title`}>
      <h3 id={`${id}-title`}>Credentials</h3>
      <p className="muted small">
        Give each application its own credential instead of the secret key, used exactly where the key goes.{" "}
        <strong>Send</strong>: sends, and replaces by key only its own messages. <strong>Manage</strong>: also
        edits, deletes and reads the status of any message. <strong>GitHub</strong>: the Secret of a GitHub
        (Gitea, Forgejo) webhook, which signs its deliveries; it sends like a send credential and works
        nowhere else. Two at once let you rotate without missing a delivery: create the new one, paste it into
        GitHub, revoke the old.
      </p>
      {made !== null && (
        <section className="new-key" aria-labelledby={`${id}-made`}>
          <p id={`${id}-made`}>
            <strong>The secret of “{made.name}”.</strong> Copy it now: it is not shown again.
            {made.scope === "github" &&
              " Paste it as the Secret of the GitHub webhook (see Integrations → GitHub)."}
          </p>
          <code data-testid="new-credential-secret">{made.secret}</code>
          <button type="button" className="primary" onClick={() => actions.copy(made.secret, "Credential")}>
            Copy credential
          </button>
        </section>
      )}
      <ReadError error={read.error} />
      {list !== null && list.length > 0 && (
        <ul data-testid="credentials">
          {list.map((c) => (
            <li key={c.id}>
              <strong>{c.name}</strong> · {c.scope} · <code>{c.prefix}…</code> · made{" "}
              {new Date(c.created_at).toLocaleDateString()} · last used{" "}
              {c.last_used_at === null ? "never" : new Date(c.last_used_at).toLocaleString()}{" "}
              <button type="button" className="danger" onClick={() => revoke(c)}>
                Revoke <span className="offscreen">{c.name}</span>
              </button>
            </li>
          ))}
        </ul>
      )}
      {list !== null && list.length === 0 && <p className="muted small">None yet: only the secret key.</p>}
      <form className="credential-form" onSubmit={create}>
        <label>
          Credential name
          <input value={name} onChange={(e) => setName(e.target.value)} maxLength={64} required />
        </label>
        <label>
          Credential scope
          <select value={scope} onChange={(e) => setScope(e.target.value as Credential["scope"])}>
            <option value="send">send</option>
            <option value="manage">manage</option>
            <option value="github">github (webhook Secret)</option>
          </select>
        </label>
        <button type="submit" className="secondary">
          Create credential
        </button>
      </form>
    </section>
  );
}
