/**
 * The payload thread: runs one job at a time for PayloadThread (payload-thread.ts), away from the
 * event loop that answers requests, which ends this thread when a job runs past its deadline.
 * Docks' templates: the payload arrives as its text and is read again here (cloning a parsed
 * payload to send it would hold the event loop longer than parsing it: 120,000 small objects,
 * 143 ms to clone, 20 ms to parse). Long formatted texts: read with the very function the event
 * loop reads short ones with (readFormat), so where a text is read never changes what it becomes.
 */
import { parentPort } from "node:worker_threads";
import { markdownParser } from "../domain/markdown.ts";
import { readFormat } from "../domain/message-options.ts";
import { EntityParseError } from "../domain/telegram-format.ts";
import { PayloadError } from "../integrations/inbound.ts";
import { renderTemplate, TemplateError, validateTemplate } from "../integrations/template.ts";
import type { TemplatePayload, ThreadJob, ThreadReply } from "./payload-thread.ts";

const port = parentPort;
if (port === null) throw new Error("http/payload-worker.ts runs as a worker thread");

/** The payload as the HTTP edge read it (inboundOf): JSON, form fields, or the text itself. */
function payloadOf({ text, as }: TemplatePayload): unknown {
  if (as === "json") return JSON.parse(text);
  if (as === "form") return Object.fromEntries(new URLSearchParams(text));
  return text;
}

async function run(job: ThreadJob): Promise<ThreadReply> {
  try {
    if (job.kind === "format") return { ok: true, formatted: await readFormat(job.format, job.source) };
    // Checked when it was saved; a template an older version took and this one does not fails here.
    const checked = await validateTemplate(job.template);
    if (!checked.ok) throw new TemplateError(checked.errors);
    return { ok: true, conversion: await renderTemplate(checked.value, payloadOf(job.payload)) };
  } catch (error) {
    if (error instanceof TemplateError) return { ok: false, problems: error.problems };
    if (error instanceof PayloadError) return { ok: false, payload: error.message };
    if (error instanceof EntityParseError) return { ok: false, unparsed: error.message };
    return { ok: false, failed: error instanceof Error ? error.message : String(error) };
  }
}

port.on("message", (job: ThreadJob) => {
  run(job).then((reply) => port.postMessage(reply));
});

// LiquidJS and markdown-it loaded before the first job: a job's deadline counts the job, not this start.
await Promise.all([validateTemplate({ text: "{{ ready }}" }), markdownParser()]);
port.postMessage("ready");
