import { type FormEvent, useEffect, useId, useState } from "react";
import { type FieldProblem, ServiceError, type Visibility } from "./api.ts";

export interface DockFieldValues {
  name: string;
  link: string;
  description: string;
  callback_url: string;
  visibility: Visibility;
}

/**
 * "Who can subscribe?": each choice and what it means for someone who has the Dock ID. The names
 * are short (the hints say the rest, apart from the label), and name no other field.
 */
const VISIBILITY_CHOICES: { value: Visibility; label: string; hint: string }[] = [
  { value: "open", label: "Anyone with the Dock ID", hint: "The ID or the subscribe link is enough." },
  {
    value: "invite",
    label: "Invite only",
    hint: "Only an invite link lets someone in (make them in Subscribers); the Dock ID alone is refused.",
  },
  {
    value: "approval",
    label: "Anyone may ask; I approve",
    hint: "The Dock ID or an invite link sends you a join request, in Telegram and here.",
  },
];

/**
 * Name, Link, Description, Callback URL and who can subscribe, with the server's verdict next to
 * each field. The server validates (one set of rules, in src/domain/dock.ts); the form only shows
 * what it says.
 */
export function DockForm({
  initial,
  submitLabel,
  onSubmit,
  onCancel,
  focusFirst = false,
}: {
  initial: DockFieldValues;
  submitLabel: string;
  onSubmit: (values: DockFieldValues) => Promise<void>;
  onCancel?: () => void;
  /** Focus the Name field when the form opens (editing: the person asked for this form). */
  focusFirst?: boolean;
}) {
  const id = useId();
  useEffect(() => {
    if (focusFirst) document.getElementById(`${id}-name`)?.focus();
  }, [focusFirst, id]);
  const [values, setValues] = useState(initial);
  const [problems, setProblems] = useState<FieldProblem[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await onSubmit(values);
      setProblems([]);
    } catch (e) {
      if (e instanceof ServiceError && e.fields.length > 0) {
        setProblems(e.fields);
        const first = e.fields[0]?.field;
        if (first) document.getElementById(`${id}-${first}`)?.focus();
      } else {
        setError((e as Error).message);
      }
    } finally {
      setBusy(false);
    }
  };

  const visibilityProblem = problems.find((p) => p.field === "visibility");
  const visibility = (
    <fieldset
      className="field choices"
      aria-describedby={visibilityProblem ? `${id}-visibility-error` : undefined}
    >
      <legend>Who can subscribe?</legend>
      {VISIBILITY_CHOICES.map((choice) => (
        <div key={choice.value} className="choice">
          <label>
            <input
              type="radio"
              name={`${id}-visibility`}
              value={choice.value}
              checked={values.visibility === choice.value}
              aria-describedby={`${id}-visibility-${choice.value}`}
              onChange={() => setValues({ ...values, visibility: choice.value })}
            />
            {choice.label}
          </label>
          <small id={`${id}-visibility-${choice.value}`} className="muted">
            {choice.hint}
          </small>
        </div>
      ))}
      <small className="muted">People already subscribed stay subscribed whatever you choose.</small>
      {visibilityProblem && (
        <small id={`${id}-visibility-error`} className="field-error">
          {visibilityProblem.message}
        </small>
      )}
    </fieldset>
  );

  const field = (
    name: Exclude<keyof DockFieldValues, "visibility">,
    label: string,
    hint: string,
    multiline = false,
  ) => {
    const problem = problems.find((p) => p.field === name);
    const inputId = `${id}-${name}`;
    const describedBy = [`${inputId}-hint`, problem ? `${inputId}-error` : null].filter(Boolean).join(" ");
    const common = {
      id: inputId,
      name,
      value: values[name],
      "aria-invalid": problem ? true : undefined,
      "aria-describedby": describedBy,
      "aria-required": name === "name" ? true : undefined,
      onChange: (event: { target: { value: string } }) =>
        setValues({ ...values, [name]: event.target.value }),
    };
    return (
      <div className="field">
        <label htmlFor={inputId}>{label}</label>
        {multiline ? (
          <textarea rows={3} {...common} />
        ) : (
          <input type={name === "link" || name === "callback_url" ? "url" : "text"} {...common} />
        )}
        <small id={`${inputId}-hint`} className="muted">
          {hint}
        </small>
        {problem && (
          <small id={`${inputId}-error`} className="field-error">
            {/* The API names the field as its JSON does (callback_url); the form, as its label does. */}
            {problem.message.startsWith(`${name} `)
              ? `${label}${problem.message.slice(name.length)}`
              : problem.message}
          </small>
        )}
      </div>
    );
  };

  return (
    <form onSubmit={submit} noValidate>
      {field("name", "Name", "Required. Shown in bold above every message.")}
      {field(
        "link",
        "Link",
        "Optional. Your application's address (ci.example.com means https://ci.example.com): a dotted host name or IP address, as Telegram requires for its button.",
      )}
      {field("description", "Description", "What this Dock sends, for you and your subscribers.", true)}
      {visibility}
      {field(
        "callback_url",
        "Callback URL",
        "Optional. Events (delivered, failed, acknowledged) are POSTed here, signed with the signing secret (below) — see the API docs.",
      )}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <div className="actions">
        <button type="submit" className="primary" disabled={busy}>
          {submitLabel}
        </button>
        {onCancel && (
          <button type="button" className="secondary" onClick={onCancel}>
            Cancel
          </button>
        )}
      </div>
    </form>
  );
}
