import { useEffect, useId, useRef, useState } from "react";
import type { PreviewAnswer } from "../../../src/http/console/schemas.ts";
import { ServiceError } from "../api.ts";
import type { CardActions } from "./actions.ts";
import { MessageText } from "./MessageText.tsx";

/** How long the preview waits after the last keystroke before asking the service. */
const DEBOUNCE_MS = 400;

/** What the preview route takes: a format's name (or template), the pasted payload, and for a template the one being edited. */
export interface PreviewRequest {
  format: string;
  sample: string;
  template?: Record<string, string>;
  headers?: Record<string, string>;
}

/**
 * Where a preview stands. Its problems by the field they name (`template.text`, or `sample` for a
 * payload the format cannot read), and the ones no field owns.
 */
export type PreviewState =
  | { status: "idle" }
  | { status: "loading"; last: PreviewAnswer["result"] | null }
  | { status: "ok"; result: PreviewAnswer["result"] }
  | { status: "error"; fields: Record<string, string>; general: string | null };

/** Codes whose message is about the pasted payload rather than the template. */
const SAMPLE_CODES = new Set(["invalid_json", "invalid_payload", "unknown_format", "unsupported_media_type"]);

/** An error answer as problems per field: `template.*` as named, payload errors under `sample`. */
export function problemsOf(error: unknown): { fields: Record<string, string>; general: string | null } {
  const fields: Record<string, string> = {};
  const general: string[] = [];
  if (error instanceof ServiceError && error.fields.length > 0) {
    for (const problem of error.fields) {
      if (problem.field.startsWith("template.") || problem.field === "inbound_format") {
        fields[problem.field] = fields[problem.field]
          ? `${fields[problem.field]} ${problem.message}`
          : problem.message;
      } else general.push(`${problem.field}: ${problem.message}`);
    }
  } else if (error instanceof ServiceError && SAMPLE_CODES.has(error.code)) {
    fields.sample = error.message;
  } else {
    general.push((error as Error).message);
  }
  return { fields, general: general.length > 0 ? general.join(" ") : null };
}

/**
 * The message a pasted payload makes, asked for again DEBOUNCE_MS after the request last changed;
 * an answer to an older request is dropped. `request` null: nothing to preview.
 */
export function usePreview(call: CardActions["call"], request: PreviewRequest | null): PreviewState {
  const [state, setState] = useState<PreviewState>({ status: "idle" });
  const asked = useRef(0);
  const key = request === null ? null : JSON.stringify(request);
  // The latest call, without making the effect depend on a function that is new every render.
  const latest = useRef(call);
  latest.current = call;

  useEffect(() => {
    const ask = ++asked.current;
    if (key === null) {
      setState({ status: "idle" });
      return;
    }
    setState((current) => ({
      status: "loading",
      last: current.status === "ok" ? current.result : current.status === "loading" ? current.last : null,
    }));
    const timer = window.setTimeout(async () => {
      try {
        const answer = await latest.current<PreviewAnswer>("POST", "/integrations/preview", JSON.parse(key));
        if (ask === asked.current) setState({ status: "ok", result: answer.result });
      } catch (error) {
        if (ask === asked.current) setState({ status: "error", ...problemsOf(error) });
      }
    }, DEBOUNCE_MS);
    return () => window.clearTimeout(timer);
  }, [key]);

  return state;
}

const PRIORITY_LABEL: Record<string, string> = {
  min: "min (silent)",
  low: "low (silent)",
  default: "default",
  high: "❗ high",
  urgent: "🚨 urgent",
};

/** The message a payload made, as Telegram shows it, and what else it carries: key, final, priority, tags, buttons. */
export function PreviewMessage({ result }: { result: PreviewAnswer["result"] }) {
  if (result.kind === "skip") {
    return <p className="muted">No message: {result.reason}</p>;
  }
  const { options } = result;
  const buttons = [
    ...(options.buttons ?? []).flat(),
    ...(options.click ? [{ text: "Open", url: options.click }] : []),
  ];
  return (
    <div className="preview-message">
      <div className="preview-bubble" data-testid="preview-text">
        <MessageText text={result.shown.text} entities={result.shown.entities} />
      </div>
      <dl className="preview-facts small">
        <dt>Key</dt>
        <dd>{result.key === null ? <span className="muted">none</span> : <code>{result.key}</code>}</dd>
        <dt>Final</dt>
        <dd>{result.final ? "yes: the key's last message" : "no"}</dd>
        <dt>Priority</dt>
        <dd>{PRIORITY_LABEL[options.priority ?? "default"] ?? options.priority}</dd>
        <dt>Tags</dt>
        <dd>{options.tags?.length ? options.tags.join(", ") : <span className="muted">none</span>}</dd>
        {buttons.length > 0 && (
          <>
            <dt>Buttons</dt>
            <dd>
              {buttons.map((button) => (
                <span key={`${button.text} ${button.url}`} className="option">
                  {button.text} <code>{button.url}</code>
                </span>
              ))}
            </dd>
          </>
        )}
      </dl>
    </div>
  );
}

/**
 * The preview's area: the message, or why there is none. Errors that name a field are shown by
 * that field (the caller's); those that do not, here.
 */
export function PreviewArea({
  state,
  title,
  idle,
}: {
  state: PreviewState;
  /** The area's heading. */
  title: string;
  /** What to say while there is nothing to preview. */
  idle: string;
}) {
  const id = useId();
  const result = state.status === "ok" ? state.result : state.status === "loading" ? state.last : null;
  return (
    <section className="preview" aria-labelledby={id} aria-busy={state.status === "loading"}>
      <h5 id={id}>{title}</h5>
      {state.status === "idle" && <p className="muted small">{idle}</p>}
      {state.status === "error" && state.general === null && (
        <p className="muted small">No preview until the problems marked above are fixed.</p>
      )}
      {state.status === "loading" && result === null && <p className="muted small">Previewing…</p>}
      {result && <PreviewMessage result={result} />}
      <p className="field-error small" aria-live="polite">
        {state.status === "error" && state.general !== null && `No preview: ${state.general}`}
      </p>
    </section>
  );
}
