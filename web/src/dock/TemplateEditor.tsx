import { type FormEvent, useId, useState } from "react";
import { useAnnounce } from "../announce.tsx";
import { type Dock, type DockAnswer, ServiceError } from "../api.ts";
import type { DockEditorProps } from "./actions.ts";
import { PreviewArea, problemsOf, usePreview } from "./Preview.tsx";

type Template = NonNullable<Dock["template"]>;
/** The fields that are Liquid templates (all but format). */
type TemplateField = Exclude<keyof Template, "format">;
type Values = Record<TemplateField, string> & { format: NonNullable<Template["format"]> };

/** The template's fields as the form shows them, each with what it is for. */
const FIELDS: { name: TemplateField; label: string; hint: string; multiline?: boolean }[] = [
  { name: "text", label: "Text", hint: "Required: the message.", multiline: true },
  { name: "title", label: "Title", hint: "A bold line above the text." },
  { name: "key", label: "Key", hint: "A later message with the same key replaces this one." },
  { name: "final", label: "Final", hint: "Renders true: the key's last message (the next one is new)." },
  { name: "tags", label: "Tags", hint: "Comma-separated: emoji short codes or words." },
  { name: "priority", label: "Priority", hint: "min, low, default, high, urgent, or 1 to 5." },
  { name: "click", label: "Open URL", hint: "The Open button's http(s) URL." },
  { name: "buttons", label: "Buttons", hint: "One per line: Label | https://url", multiline: true },
];

/** What the sample starts as: the payload of the template's curl snippet. */
const SAMPLE = `{
  "status": "firing",
  "name": "disk",
  "value": 97
}`;

function valuesOf(template: Dock["template"]): Values {
  return {
    text: template?.text ?? "",
    format: template?.format ?? "text",
    title: template?.title ?? "",
    key: template?.key ?? "",
    final: template?.final ?? "",
    tags: template?.tags ?? "",
    priority: template?.priority ?? "",
    click: template?.click ?? "",
    buttons: template?.buttons ?? "",
  };
}

/** The template as the API takes it: empty fields left out, and the default format too. */
function templateOf(values: Values): Record<string, string> {
  return Object.fromEntries(
    Object.entries(values).filter(
      ([name, value]) => value.trim() !== "" && !(name === "format" && value === "text"),
    ),
  );
}

/**
 * The Dock's own template: Liquid templates per notification field that turn any JSON a tool posts
 * into the message, with a live preview on a sample payload. Problems (a Liquid syntax error with
 * its line and column, or a render error on the sample) show under the field they name.
 */
export function TemplateEditor({ dock, actions, onChanged }: DockEditorProps) {
  const id = useId();
  const announce = useAnnounce();
  const [values, setValues] = useState(() => valuesOf(dock.template));
  const [sample, setSample] = useState(SAMPLE);
  /** Problems the last save found, shown until the next edit. */
  const [saveProblems, setSaveProblems] = useState<Record<string, string> | null>(null);
  const [busy, setBusy] = useState(false);

  const template = templateOf(values);
  const preview = usePreview(
    actions.call,
    values.text.trim() === "" || sample.trim() === "" ? null : { format: "template", sample, template },
  );
  const problems = saveProblems ?? (preview.status === "error" ? preview.fields : {});

  const change = (name: keyof Values | "sample", value: string) => {
    setSaveProblems(null);
    if (name === "sample") setSample(value);
    else setValues((current) => ({ ...current, [name]: value }));
  };

  /** Saves, or shows the problems by their fields and puts the focus on the first. */
  const save = (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    void actions
      .act(async () => {
        try {
          const answer = await actions.call<DockAnswer>("PUT", "/integrations", { template });
          onChanged(answer.dock);
          announce("Template saved.");
        } catch (e) {
          if (!(e instanceof ServiceError && e.fields.length > 0)) throw e;
          const found = problemsOf(e).fields;
          setSaveProblems(found);
          const first = Object.keys(found)[0];
          if (first) document.getElementById(`${id}-${first}`)?.focus();
        }
      })
      .finally(() => setBusy(false));
  };

  const remove = () =>
    actions.act(async () => {
      const reading = dock.inbound_format === "template";
      const sure = window.confirm(
        `Remove the template of “${dock.name}”?${reading ? " Bodies without msg are then read as detected automatically." : ""}`,
      );
      if (!sure) return;
      const body = reading ? { template: null, inbound_format: null } : { template: null };
      const answer = await actions.call<DockAnswer>("PUT", "/integrations", body);
      onChanged(answer.dock);
      setValues(valuesOf(null));
      setSaveProblems(null);
      announce("Template removed.");
    });

  /** A field's label, input, hint and (in a live region) its problem, tied together for assistive technology. */
  const field = (
    name: TemplateField | "sample",
    label: string,
    hint: string,
    multiline = false,
    rows = 3,
  ) => {
    const inputId = `${id}-${name === "sample" ? "sample" : `template.${name}`}`;
    const problem = problems[name === "sample" ? "sample" : `template.${name}`];
    const common = {
      id: inputId,
      className: "code-input",
      value: name === "sample" ? sample : values[name],
      spellCheck: false,
      autoCapitalize: "off",
      autoComplete: "off",
      "aria-invalid": problem ? true : undefined,
      "aria-describedby": `${inputId}-hint ${inputId}-error`,
      "aria-required": name === "text" ? true : undefined,
      onChange: (event: { target: { value: string } }) => change(name, event.target.value),
    };
    return (
      <div className={`field field-${name}`} key={name}>
        <label htmlFor={inputId}>{label}</label>
        {multiline ? <textarea rows={rows} {...common} /> : <input type="text" {...common} />}
        <small id={`${inputId}-hint`} className="muted">
          {hint}
        </small>
        <small id={`${inputId}-error`} className="field-error" aria-live="polite">
          {problem}
        </small>
      </div>
    );
  };

  const [text, ...others] = FIELDS;
  const buttons = others.pop();
  return (
    <form className="template-editor" onSubmit={save} noValidate aria-labelledby={`${id}-title`}>
      <h4 id={`${id}-title`}>Template: your own payload</h4>
      <p className="muted small">
        Each field is a Liquid template over the JSON a tool posts, for example{" "}
        <code>{"{{ payload.status | upcase }}"}</code> (top-level fields also by name:{" "}
        <code>{"{{ status }}"}</code>). Empty fields are left out.
      </p>
      {text && field(text.name, text.label, text.hint, true, 4)}
      <div className="field">
        <label htmlFor={`${id}-format`}>Text is written in</label>
        <select
          id={`${id}-format`}
          value={values.format}
          onChange={(event) => change("format", event.target.value)}
        >
          <option value="text">plain text</option>
          <option value="markdown">Markdown</option>
          <option value="html">Telegram HTML (values are escaped)</option>
        </select>
      </div>
      <div className="template-fields">{others.map((f) => field(f.name, f.label, f.hint, f.multiline))}</div>
      {buttons && field(buttons.name, buttons.label, buttons.hint, true)}
      {field("sample", "Sample payload", "JSON as the tool sends it; the preview below uses it.", true, 6)}
      <PreviewArea
        state={preview}
        title="Preview"
        idle="Write the text and a sample payload to see the message."
      />

      <div className="actions">
        <button type="submit" className="primary" disabled={busy}>
          Save template
        </button>
        {dock.template && (
          <button type="button" className="danger" onClick={remove}>
            Remove template
          </button>
        )}
      </div>
    </form>
  );
}
