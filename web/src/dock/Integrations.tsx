import { type FormEvent, useEffect, useId, useState } from "react";
import { useAnnounce } from "../announce.tsx";
import { type DockAnswer, ServiceError } from "../api.ts";
import type { DockEditorProps } from "./actions.ts";
import { Snippets } from "./Snippets.tsx";
import { HOOK_PLACEHOLDER, mask, SECRET_PLACEHOLDER } from "./secret.ts";
import { TemplateEditor } from "./TemplateEditor.tsx";
import { type FormatInfo, TrySample } from "./TrySample.tsx";

/**
 * The hook URL: for tools that can only be given a URL. Masked until revealed, like the secret
 * key; Copy copies the real one. Rotating or removing it stops the old URL at once.
 */
function HookUrl({ dock, actions, onChanged, create }: DockEditorProps & { create: () => Promise<void> }) {
  const id = useId();
  const announce = useAnnounce();
  const [revealed, setRevealed] = useState(false);
  const token = dock.hook_token;

  const rotate = () =>
    actions.act(async () => {
      const sure = window.confirm(
        `Rotate the hook URL of “${dock.name}”? The current URL stops working at once: every tool using it must get the new one.`,
      );
      if (!sure) return;
      onChanged((await actions.call<DockAnswer>("POST", "/hook-token")).dock);
      announce("New hook URL made. The old one no longer works.");
    });

  const remove = () =>
    actions.act(async () => {
      const sure = window.confirm(
        `Remove the hook URL of “${dock.name}”? Tools using it can no longer send. The secret key is not affected.`,
      );
      if (!sure) return;
      onChanged((await actions.call<DockAnswer>("DELETE", "/hook-token")).dock);
      announce("Hook URL removed. It no longer works.");
    });

  const what = (
    <p className="muted small">
      For tools that can only be given a URL: Uptime Kuma, Slack-style webhooks, Home Assistant. It can only
      send, and can be rotated on its own. Anyone who has it can send: keep it secret.
    </p>
  );
  if (token === null) {
    return (
      <section aria-labelledby={`${id}-title`}>
        <h4 id={`${id}-title`}>Hook URL</h4>
        {what}
        <button type="button" onClick={create}>
          Create hook URL
        </button>
      </section>
    );
  }
  const url = dock.hook_url;
  return (
    <section aria-labelledby={`${id}-title`}>
      <h4 id={`${id}-title`}>Hook URL</h4>
      {what}
      <p className="hook-url">
        <code data-testid="hook-url">{revealed || url === null ? url : url.replace(token, mask(token))}</code>
        {!revealed && <span className="offscreen"> (hidden)</span>}
      </p>
      <div className="inline-actions">
        <button type="button" aria-pressed={revealed} onClick={() => setRevealed(!revealed)}>
          {revealed ? "Hide hook URL" : "Reveal hook URL"}
        </button>
        <button type="button" disabled={url === null} onClick={() => url && actions.copy(url, "Hook URL")}>
          Copy hook URL
        </button>
        <button type="button" className="secondary" onClick={rotate}>
          Rotate hook URL
        </button>
        <button type="button" className="danger" onClick={remove}>
          Remove hook URL
        </button>
      </div>
    </section>
  );
}

/** How the Dock reads a body without msg: detected (default), one format, or its template. */
function DefaultFormat({ dock, actions, onChanged, formats }: DockEditorProps & { formats: FormatInfo[] }) {
  const id = useId();
  const announce = useAnnounce();
  const [value, setValue] = useState(dock.inbound_format ?? "");
  const [problem, setProblem] = useState<string | null>(null);
  // The saved value changed elsewhere (the template removed, another tab): follow it.
  useEffect(() => setValue(dock.inbound_format ?? ""), [dock.inbound_format]);

  const save = (event: FormEvent) => {
    event.preventDefault();
    setProblem(null);
    void actions.act(async () => {
      try {
        const answer = await actions.call<DockAnswer>("PUT", "/integrations", {
          inbound_format: value === "" ? null : value,
        });
        onChanged(answer.dock);
        announce("Default format saved.");
      } catch (e) {
        if (!(e instanceof ServiceError && e.fields.length > 0)) throw e;
        setProblem(e.fields.map((f) => f.message).join(" "));
        document.getElementById(`${id}-format`)?.focus();
      }
    });
  };

  return (
    <form onSubmit={save} aria-labelledby={`${id}-title`} noValidate>
      <h4 id={`${id}-title`}>Default format</h4>
      <div className="field">
        <label htmlFor={`${id}-format`}>Bodies without msg are read as</label>
        <select
          id={`${id}-format`}
          value={value}
          aria-invalid={problem ? true : undefined}
          aria-describedby={`${id}-hint ${id}-error`}
          onChange={(event) => {
            setValue(event.target.value);
            setProblem(null);
          }}
        >
          <option value="">detected automatically (default)</option>
          {formats.map((f) => (
            <option key={f.name} value={f.name}>
              {f.name}: {f.label}
            </option>
          ))}
          <option value="template">template (the Dock’s own, above)</option>
        </select>
        <small id={`${id}-hint`} className="muted">
          For the hook URL and <code>/webhook</code>; a tool's own URL (<code>/webhook/grafana</code>) names
          its format itself.
        </small>
        <small id={`${id}-error`} className="field-error" aria-live="polite">
          {problem}
        </small>
      </div>
      <button type="submit" disabled={value === (dock.inbound_format ?? "")}>
        Save default format
      </button>
    </form>
  );
}

/**
 * The Dock's integrations tab: the hook URL, each tool's settings, the Dock's own template, how a
 * body without msg is read, and a sample tried on a format.
 */
export function Integrations({
  dock,
  actions,
  onChanged,
  formats,
}: DockEditorProps & { formats: FormatInfo[] }) {
  const announce = useAnnounce();
  const create = () =>
    actions.act(async () => {
      onChanged((await actions.call<DockAnswer>("POST", "/hook-token")).dock);
      announce("Hook URL created.");
    });
  // What the screen shows of a tool's settings: placeholders where the credentials go, so text
  // copied by selection fails plainly; the Copy buttons copy the real settings.
  const shown = (text: string) => {
    let masked = text.replaceAll(dock.secret_key, SECRET_PLACEHOLDER);
    if (dock.hook_token) masked = masked.replaceAll(dock.hook_token, HOOK_PLACEHOLDER);
    return masked;
  };

  return (
    <section className="integrations" aria-labelledby="integrations-title">
      <h2 id="integrations-title">Integrations</h2>
      <p className="muted small">
        {formats.map((f) => f.label).join(", ")} post their own payloads; the Dock turns each into a readable
        message.
      </p>
      <HookUrl dock={dock} actions={actions} onChanged={onChanged} create={create} />
      <Snippets dock={dock} copy={actions.copy} shown={shown} createHook={create} />
      <TemplateEditor dock={dock} actions={actions} onChanged={onChanged} />
      <DefaultFormat dock={dock} actions={actions} onChanged={onChanged} formats={formats} />
      <TrySample actions={actions} formats={formats} />
    </section>
  );
}
