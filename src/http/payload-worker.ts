/**
 * The payload thread: runs one job at a time for PayloadThread (payload-thread.ts), away from the
 * event loop that answers requests, which ends this thread when a job runs past its deadline.
 * Docks' templates: the payload arrives as its text (or a large body's bytes) and is read again
 * here (cloning a parsed payload to send it would hold the event loop longer than parsing it:
 * 120,000 small objects, 143 ms to clone, 20 ms to parse). Long formatted texts and large bodies:
 * read with the very functions the event loop reads short ones with (readFormat; decode, inboundOf,
 * the formats), so where something is read never changes what it becomes; only what the event loop
 * needs goes back (a message's fields, a conversion), never the parsed body.
 */
import { parentPort } from "node:worker_threads";
import { markdownParser } from "../domain/markdown.ts";
import { OPTION_NAMES, readFormat } from "../domain/message-options.ts";
import { EntityParseError } from "../domain/telegram-format.ts";
import { threadClock } from "../domain/thread-clock.ts";
import { detectFormat, formatNamed } from "../integrations/formats.ts";
import { type Inbound, isRecord, PayloadError, TooComplexError } from "../integrations/inbound.ts";
import { renderTemplate, TemplateError, validateTemplate } from "../integrations/template.ts";
import { ApiError } from "./errors.ts";
import { inboundOf, isPlainMessage, parseJson } from "./inbound.ts";
import type { BodyReply, TemplatePayload, ThreadAnswer, ThreadJob, ThreadReply } from "./payload-thread.ts";
import { decode } from "./request-body.ts";

const port = parentPort;
if (port === null) throw new Error("http/payload-worker.ts runs as a worker thread");

/** Bytes handed over by the event loop, as the text decode reads (UTF-8 checked, no byte order mark). */
const textOf = (bytes: Uint8Array) => decode(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));

/** The payload as the HTTP edge read it (inboundOf): JSON, form fields, or the text itself. */
function payloadOf({ text, as }: TemplatePayload): unknown {
  const source = typeof text === "string" ? text : textOf(text);
  if (as === "json") return parseJson(source);
  if (as === "form") return Object.fromEntries(new URLSearchParams(source));
  return source;
}

/** A message's own fields in a /webhook body: what takeOptions and the schema read (http/send/body.ts). */
const MESSAGE_FIELDS = ["msg", "key", ...OPTION_NAMES];

/** A body the event loop did not read (PayloadThread.readBody): a message's fields, or the payload converted. */
async function readBody(job: Extract<ThreadJob, { kind: "body" }>): Promise<BodyReply> {
  const text = textOf(job.bytes);
  let inbound: Inbound;
  if (job.message) {
    // As /webhook reads a JSON body (parseObject): a JSON object; with msg, a message of ours.
    const value = parseJson(text.trim());
    if (!isRecord(value)) throw new ApiError("invalid_json", "The request body must be a JSON object.");
    if (isPlainMessage(value)) {
      const fields: Record<string, unknown> = {};
      for (const name of MESSAGE_FIELDS) if (name in value) fields[name] = value[name];
      return { ok: true, message: fields };
    }
    inbound = { body: value, text, mediaType: job.mediaType, headers: job.headers };
  } else inbound = inboundOf(text, job.mediaType, job.headers);
  const name = job.format ?? detectFormat(inbound)?.name;
  const format = name === undefined ? undefined : formatNamed(name);
  // None detected, the Dock's template (rendered once the event loop has it), or no such format.
  if (name === undefined || format === undefined) return { ok: true, format: name };
  try {
    return { ok: true, format: name, conversion: await format.convert(inbound) };
  } catch (error) {
    if (error instanceof PayloadError) return { ok: false, format: name, payload: error.message };
    if (error instanceof TooComplexError) return { ok: false, format: name, tooComplex: error.message };
    throw error;
  }
}

async function run(job: ThreadJob): Promise<ThreadReply> {
  try {
    if (job.kind === "format") return { ok: true, formatted: await readFormat(job.format, job.source) };
    if (job.kind === "body") return await readBody(job);
    // Checked when it was saved; a template an older version took and this one does not fails here.
    const checked = await validateTemplate(job.template);
    if (!checked.ok) throw new TemplateError(checked.errors);
    return { ok: true, conversion: await renderTemplate(checked.value, payloadOf(job.payload)) };
  } catch (error) {
    if (error instanceof TemplateError) return { ok: false, problems: error.problems };
    if (error instanceof PayloadError) return { ok: false, payload: error.message };
    if (error instanceof EntityParseError) return { ok: false, unparsed: error.message };
    if (error instanceof ApiError)
      return { ok: false, refused: { code: error.code, message: error.message } };
    return { ok: false, failed: error instanceof Error ? error.message : String(error) };
  }
}

// A job's time is this thread's CPU time (see payload-thread.ts).
port.on("message", (job: ThreadJob) => {
  const started = threadClock();
  run(job).then((reply) => port.postMessage({ reply, ms: threadClock() - started } satisfies ThreadAnswer));
});

/** Every construct of Markdown we read, about 2 KiB of it (see the warm-up below). */
const SAMPLE =
  "# Title\n\nSome *emphasis*, **bold**, ~~old~~, `code`, a [link](https://a.example/) and <https://b.example>.\n\n- one\n- two\n  1. three\n\n> quote\n\n```js\nlet a = 1;\n```\n\n---\n\n![alt](https://c.example/i.png) **_ *_* _**_\n".repeat(
    8,
  );

// LiquidJS and markdown-it loaded before the first job: a job's deadline counts the job, not this
// start. Then markdown-it run over a sample a few times, so that a thread's first long text does
// not run unoptimised code: a fresh thread's first 16,384 characters took 50–290 ms on a loaded
// machine, close to the deadline, and its later ones 10–75 ms.
await Promise.all([validateTemplate({ text: "{{ ready }}" }), markdownParser()]);
for (let i = 0; i < 30; i++) await readFormat("markdown", SAMPLE);
port.postMessage("ready");
