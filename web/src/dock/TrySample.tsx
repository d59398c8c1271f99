import { useId, useState } from "react";
import type { InfoAnswer } from "../api.ts";
import type { CardActions } from "./actions.ts";
import { PreviewArea, usePreview } from "./Preview.tsx";

/** A built-in format as /info lists it: its name, its tool, and a payload as that tool sends it. */
export type FormatInfo = InfoAnswer["formats"][number];

/**
 * A payload tried on a built-in format: paste what the tool sends (or take the format's own sample),
 * see the message it makes. GitHub names its event in a header, so that one asks for it too.
 */
export function TrySample({ actions, formats }: { actions: CardActions; formats: FormatInfo[] }) {
  const id = useId();
  const [format, setFormat] = useState(formats[0]?.name ?? "");
  const [event, setEvent] = useState("push");
  const [sample, setSample] = useState("");
  const github = format === "github";
  const example = formats.find((f) => f.name === format)?.sample;
  const useExample = () => {
    if (example === undefined) return;
    setSample(example.body);
    const named = example.headers?.["X-GitHub-Event"];
    if (named !== undefined) setEvent(named);
  };
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
          {formats.map((f) => (
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
          Paste a body the tool sent (a test notification, or one from its documentation), or start from the
          format's own sample.
        </small>
        {example !== undefined && (
          <button type="button" className="secondary" onClick={useExample}>
            Use a sample {formats.find((f) => f.name === format)?.label} payload
          </button>
        )}
        <small id={`${id}-error`} className="field-error" aria-live="polite">
          {problem}
        </small>
      </div>
      <PreviewArea state={preview} title="Message" idle="Paste a payload to see the message." />
    </section>
  );
}
