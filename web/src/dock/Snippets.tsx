import { useId, useState } from "react";
import type { Dock } from "../api.ts";
import type { CardActions } from "./actions.ts";

/**
 * Ready-to-paste settings for each tool, with the Dock's real credentials: masked on screen, whole
 * on the clipboard. A tool that can only be given a URL needs the hook URL first.
 */
export function Snippets({
  dock,
  copy,
  shown,
  createHook,
}: {
  dock: Dock;
  copy: CardActions["copy"];
  /** The text as the screen shows it: the secret key and hook token masked. */
  shown: (text: string) => string;
  createHook: () => Promise<void>;
}) {
  const id = useId();
  const [chosen, setChosen] = useState(dock.integrations[0]?.tool ?? "");
  const snippet = dock.integrations.find((s) => s.tool === chosen) ?? dock.integrations[0];
  if (!snippet) return null;
  const needsHook = snippet.needs_hook_token && dock.hook_token === null;

  return (
    <section aria-labelledby={`${id}-title`}>
      <h4 id={`${id}-title`}>Settings for your tools</h4>
      <div className="field">
        <label htmlFor={`${id}-tool`}>Tool</label>
        <select id={`${id}-tool`} value={snippet.tool} onChange={(event) => setChosen(event.target.value)}>
          {dock.integrations.map((s) => (
            <option key={s.tool} value={s.tool}>
              {s.tool}
            </option>
          ))}
        </select>
      </div>
      <p className="small" data-testid="snippet-where">
        <span className="muted">Where: </span>
        {snippet.where}
      </p>
      {/* Long lines scroll inside the box (YAML's indentation must stay as it is); focusable so
          the keyboard can scroll it too. */}
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must be reachable by keyboard */}
      <pre className="snippet" tabIndex={0} data-testid="snippet-text">
        {shown(snippet.text)}
      </pre>
      {snippet.format === "template" && dock.template === null && (
        <p className="small" data-testid="snippet-needs-template">
          <strong>Save a template below first:</strong> until the Dock has one, this is refused (409
          no_template).
        </p>
      )}
      {snippet.format === "github" && (
        <p className="small" data-testid="snippet-needs-github-credential">
          <strong>The Secret is a GitHub credential:</strong> create one under Settings → Credentials (scope
          github) and paste its secret (<code>dngh_…</code>, shown once) as the webhook's Secret. The secret
          key still works there, but is deprecated: it gives GitHub every power over the Dock.
        </p>
      )}
      {snippet.format === "gitlab" && (
        <p className="small" data-testid="snippet-needs-send-credential">
          <strong>The Secret token is a send credential:</strong> create one under Settings → Credentials
          (scope send) and paste its secret (<code>dnsc_…</code>, shown once) as the Secret token. The secret
          key still works there, but is deprecated: it gives GitLab every power over the Dock.
        </p>
      )}
      {needsHook ? (
        <p className="small">
          <span className="muted">This tool can only be given a URL: </span>
          <strong>Create a hook URL first.</strong>{" "}
          <button type="button" onClick={createHook}>
            Create hook URL
          </button>
        </p>
      ) : (
        <button type="button" onClick={() => copy(snippet.text, `${snippet.tool} settings`)}>
          Copy settings<span className="offscreen"> for {snippet.tool}</span>
        </button>
      )}
    </section>
  );
}
