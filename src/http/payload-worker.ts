/**
 * The template thread: renders Docks' templates one at a time for TemplateRenderer
 * (template-renderer.ts), away from the event loop that answers requests, which ends this thread
 * when a render runs past its deadline. The payload arrives as its text and is read again here:
 * cloning a parsed payload to send it would hold the event loop longer than parsing it (120,000
 * small objects: 143 ms to clone, 20 ms to parse).
 */
import { parentPort } from "node:worker_threads";
import { PayloadError } from "../integrations/inbound.ts";
import { renderTemplate, TemplateError, validateTemplate } from "../integrations/template.ts";
import type { TemplateJob, TemplatePayload, TemplateReply } from "./template-renderer.ts";

const port = parentPort;
if (port === null) throw new Error("http/template-thread.ts runs as a worker thread");

/** The payload as the HTTP edge read it (inboundOf): JSON, form fields, or the text itself. */
function payloadOf({ text, as }: TemplatePayload): unknown {
  if (as === "json") return JSON.parse(text);
  if (as === "form") return Object.fromEntries(new URLSearchParams(text));
  return text;
}

async function run(job: TemplateJob): Promise<TemplateReply> {
  try {
    // Checked when it was saved; a template an older version took and this one does not fails here.
    const checked = await validateTemplate(job.template);
    if (!checked.ok) throw new TemplateError(checked.errors);
    return { ok: true, conversion: await renderTemplate(checked.value, payloadOf(job.payload)) };
  } catch (error) {
    if (error instanceof TemplateError) return { ok: false, problems: error.problems };
    if (error instanceof PayloadError) return { ok: false, payload: error.message };
    return { ok: false, failed: error instanceof Error ? error.message : String(error) };
  }
}

port.on("message", (job: TemplateJob) => {
  run(job).then((reply) => port.postMessage(reply));
});

// LiquidJS loaded before the first job: a render's deadline counts the render, not this start.
await validateTemplate({ text: "{{ ready }}" });
port.postMessage("ready");
