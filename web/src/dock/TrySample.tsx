import { useId, useState } from "react";
import type { CardActions } from "./actions.ts";
import { PreviewArea, usePreview } from "./Preview.tsx";

/** The inbound formats a body without msg may be read as, with the names their tools go by. */
export const FORMATS: { name: string; label: string }[] = [
  { name: "alertmanager", label: "Prometheus Alertmanager" },
  { name: "grafana", label: "Grafana" },
  { name: "github", label: "GitHub" },
  { name: "gitlab", label: "GitLab" },
  { name: "uptime-kuma", label: "Uptime Kuma" },
  { name: "apprise", label: "Apprise" },
  { name: "slack", label: "Slack-style" },
  { name: "ntfy", label: "ntfy" },
];

/**
 * A payload tried on a built-in format: paste what the tool sends, see the message it makes. GitHub
 * names its event in a header, so that one asks for it too.
 */
export function TrySample({ actions }: { actions: CardActions }) {
  const id = useId();
  const [format, setFormat] = useState(FORMATS[0]?.name ?? "alertmanager");
  const [event, setEvent] = useState("push");
  const [sample, setSample] = useState("");
  const github = format === "github";
  const preview = usePreview(
    actions.call,
    sample.trim() === ""
      ? null
      : {
          format,
          sample,
          ...(github && event.trim() !== "" ? { headers: { "X-GitHub-Event": event } } : {}),
        },
  );
  const problem = preview.status === "error" ? preview.fields.sample : undefined;

  return (
    <section aria-labelledby={`${id}-title`}>
      <h4 id={`${id}-title`}>Try a sample</h4>
      <div className="field">
        <label htmlFor={`${id}-format`}>Format</label>
        <select id={`${id}-format`} value={format} onChange={(e) => setFormat(e.target.value)}>
          {FORMATS.map((f) => (
            <option key={f.name} value={f.name}>
              {f.label}
            </option>
          ))}
        </select>
      </div>
      {github && (
        <div className="field">
          <label htmlFor={`${id}-event`}>X-GitHub-Event header</label>
          <input
            id={`${id}-event`}
            className="code-input"
            type="text"
            value={event}
            spellCheck={false}
            autoCapitalize="off"
            onChange={(e) => setEvent(e.target.value)}
          />
        </div>
      )}
      <div className="field">
        <label htmlFor={`${id}-sample`}>Payload</label>
        <textarea
          id={`${id}-sample`}
          className="code-input"
          rows={6}
          value={sample}
          spellCheck={false}
          autoCapitalize="off"
          aria-invalid={problem ? true : undefined}
          aria-describedby={`${id}-hint ${id}-error`}
          onChange={(e) => setSample(e.target.value)}
        />
        <small id={`${id}-hint`} className="muted">
          Paste a body the tool sent (a test notification, or one from its documentation).
        </small>
        <small id={`${id}-error`} className="field-error" aria-live="polite">
          {problem}
        </small>
      </div>
      <PreviewArea state={preview} title="Message" idle="Paste a payload to see the message." />
    </section>
  );
}
