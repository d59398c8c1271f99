import { createHash } from "node:crypto";
import type { FastifyRequest } from "fastify";
import { type MessageOptions, OptionsError, prepareContent, readOptions } from "../domain/message-options.ts";
import { TokenBuckets } from "../domain/token-bucket.ts";
import { ALL_FORMAT_NAMES, detectFormat, formatNamed } from "../integrations/formats.ts";
import { type Conversion, type Inbound, PayloadError, TooComplexError } from "../integrations/inbound.ts";
import { gatherOptions } from "../integrations/ntfy-dialect.ts";
import { type DockTemplate, TemplateError } from "../integrations/template.ts";
import type { DockCredentials } from "../store/credentials.ts";
import type { DockRepository } from "../store/docks.ts";
import { ApiError, fieldsRefused } from "./errors.ts";
import {
  type BodyRead,
  JOB_DEADLINE_MS,
  type PayloadThread,
  type TemplatePayload,
  type UnreadBody,
} from "./payload-thread.ts";
import { decode, formFields, JSON_LIKE, mediaTypeOf, type RawBody } from "./request-body.ts";

/*
 * The integrations' door (docs/integrations.md): a payload another tool sends — to /webhook (its
 * format detected), /webhook/<format>, or /hook/<token>[/<format>] — read, turned into a message by
 * its format (integrations/), and handed on exactly as if the sender had sent that message itself.
 */

/** The message a payload makes: text, options, and the key it may replace (final: and then let go). */
export interface InboundMessage {
  kind: "message";
  format: string;
  msg: string;
  options: MessageOptions;
  key: string | null;
  final: boolean;
}

/** A payload with nothing to show (GitHub's ping): answered, nothing stored. */
export interface InboundSkip {
  kind: "skip";
  format: string;
  reason: string;
}

/** XML media types: only ever a tool's payload (Apprise's xml://). */
export const XML_TYPES = new Set(["application/xml", "text/xml", "application/soap+xml"]);

/** The inbound formats, as an error or the API reference lists them. */
export const INBOUND_FORMAT_LIST = ALL_FORMAT_NAMES.join(", ");

/** A body's JSON, or the 400 that says it is none (never JSON.parse's message: it quotes the body). */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    // JSON.parse's own message quotes the body: never pass it on.
    throw new ApiError("invalid_json", "The request body is not valid JSON.");
  }
}

/**
 * The body as a format reads it: JSON parsed, a form's fields (GitHub's and Slack's form bodies
 * carry the JSON in one `payload` field: that JSON), XML and text as text.
 */
export function readInbound(request: FastifyRequest): Inbound {
  let inbound = bodiesRead.get(request);
  if (inbound === undefined) {
    inbound = inboundOf(decode(request.body as RawBody), mediaTypeOf(request), request.headers);
    bodiesRead.set(request, inbound);
  }
  return inbound;
}

/**
 * Bodies already read, by request: a megabyte of JSON costs the event loop 10–50 ms to parse, and
 * a signed body is read to check its shape, then again for its format.
 */
const bodiesRead = new WeakMap<FastifyRequest, Inbound>();

/**
 * JSON bodies of this many bytes or more are read in the payload thread (PayloadThread.readBody),
 * never on the event loop: JSON.parse can be neither split nor stopped, and a megabyte held the
 * loop 10–50 ms. Below it (every message's body by default, MAX_BODY_BYTES) parsing costs at most
 * about a millisecond, less than the thread's round trip (docs/benchmarks.md, bench:hostile).
 */
export const THREAD_BODY_FROM = 64 * 1024;

/** ASCII white space, as trim() removes it. */
const isSpace = (byte: number | undefined) =>
  byte === 0x20 || (byte !== undefined && byte >= 0x09 && byte <= 0x0d);

/** The first byte of a body's text that is not white space (after a byte order mark), if any. */
export function firstByte(raw: Buffer): number | undefined {
  let at = raw[0] === 0xef && raw[1] === 0xbb && raw[2] === 0xbf ? 3 : 0;
  while (isSpace(raw[at])) at++;
  return raw[at];
}

/**
 * The request's body when it is to be read in the payload thread: JSON (or JSON sent as a form,
 * as `curl -d @payload.json` does) of THREAD_BODY_FROM bytes or more, not read yet. Undefined for
 * any other body, which the event loop reads (forms are counted before they are parsed, XML too).
 */
export function unreadBody(request: FastifyRequest): UnreadBody | undefined {
  const raw = request.body;
  if (!Buffer.isBuffer(raw) || raw.length < THREAD_BODY_FROM || bodiesRead.has(request)) return undefined;
  const mediaType = mediaTypeOf(request);
  const json =
    mediaType === "application/x-www-form-urlencoded"
      ? firstByte(raw) === 0x7b
      : (JSON_LIKE.has(mediaType) || mediaType.endsWith("+json")) && firstByte(raw) !== undefined;
  return json ? { bytes: raw, mediaType, headers: request.headers } : undefined;
}

/**
 * The body a /webhook or hook URL request carries, already parsed as a JSON object by the message
 * path, as readInbound would read it (so it is not parsed again); undefined for a form's fields.
 */
export function parsedInbound(request: FastifyRequest, body: Record<string, unknown>): Inbound | undefined {
  const text = decode(request.body as RawBody);
  const mediaType = mediaTypeOf(request);
  if (isFormFields(text, mediaType)) return undefined;
  const inbound = { body, text, mediaType, headers: request.headers };
  bodiesRead.set(request, inbound);
  return inbound;
}

/** Whether inboundOf reads a body as form fields (not JSON sent as a form, as `curl -d '{…}'` does). */
const isFormFields = (text: string, mediaType: string) =>
  mediaType === "application/x-www-form-urlencoded" && !text.trimStart().startsWith("{");

/** readInbound's rules for a body already decoded (the console's pasted samples too). */
export function inboundOf(text: string, mediaType: string, headers: Inbound["headers"]): Inbound {
  if (text.trim() === "") throw new ApiError("invalid_json", "The request body is empty.");
  if (isFormFields(text, mediaType)) {
    const params = formFields(text);
    const payload = params.get("payload");
    if (payload !== null && [...params.keys()].length === 1 && payload.trimStart().startsWith("{")) {
      return { body: parseJson(payload), text: payload, mediaType: "application/json", headers };
    }
    return { body: Object.fromEntries(params), text, mediaType, headers };
  }
  if (JSON_LIKE.has(mediaType) || mediaType.endsWith("+json")) {
    return { body: parseJson(text), text, mediaType, headers };
  }
  if (XML_TYPES.has(mediaType) || mediaType.endsWith("+xml") || mediaType.startsWith("text/")) {
    // JSON labelled as text (a tool's or a script's mistake): read as the JSON it is.
    if (mediaType.startsWith("text/") && /^[[{]/.test(text.trimStart())) {
      try {
        return { body: JSON.parse(text), text, mediaType: "application/json", headers };
      } catch {
        // Text after all.
      }
    }
    return { body: undefined, text, mediaType, headers };
  }
  throw new ApiError(
    "unsupported_media_type",
    `Content-Type "${mediaType.slice(0, 100)}" is not accepted here; send JSON, a form, XML or text.`,
  );
}

/** Whether a name in a path or `?format=` is an inbound format (not a message format such as markdown). */
export function isInboundFormat(name: unknown): name is string {
  return typeof name === "string" && (ALL_FORMAT_NAMES as readonly string[]).includes(name);
}

/**
 * Whether a /webhook body is an ordinary message (`{"msg": "…"}`) rather than another tool's
 * payload. Uptime Kuma's carries a `msg` of its own, beside `heartbeat` and `monitor`.
 */
export function isPlainMessage(body: Record<string, unknown>): boolean {
  // A msg of the wrong type is still meant as a message: its validation says what is wrong.
  return "msg" in body && !("heartbeat" in body && "monitor" in body);
}

const FORMATS_SENTENCE = `Send {"msg": "…"}, or a payload of one of: ${INBOUND_FORMAT_LIST}, naming its format at the end of the URL (…/alertmanager; see docs/integrations.md).`;

/**
 * The answer for a format name that names none: the tools' formats, and for `?format=` (which also
 * names a message's own format, markdown…) those too.
 */
export function noSuchFormat(name: string, messageFormats: readonly string[] = []): ApiError {
  const also = messageFormats.length > 0 ? `; a message's text is one of ${messageFormats.join(", ")}` : "";
  return new ApiError(
    "unknown_format",
    `There is no format "${name.slice(0, 40)}": a tool's payload is one of ${INBOUND_FORMAT_LIST}${also}.`,
  );
}

/** Options the user put in the URL win over what a format derived (not the body's format). */
const URL_OVERRIDES_SKIP = new Set(["format", "markdown"]);

/**
 * The message a payload makes, by the format named (path or ?format=), else the Dock's inbound
 * format, else the one detected. Errors are the client's (400: not this format; 422: the Dock's
 * template failed on it).
 */
export async function inboundMessage(input: {
  /** The body as read, or to be read in the payload thread (see unreadBody). */
  inbound: Inbound | UnreadBody;
  /** What the thread already made of that body (parseWebhook reads it there first, as a message or not). */
  read?: Extract<BodyRead, { kind: "payload" }>;
  named: string | null;
  dock: DockCredentials;
  docks: DockRepository;
  query: Record<string, unknown>;
  /** A template to use instead of the Dock's saved one (the console's preview of one being edited). */
  template?: DockTemplate;
  /** Where templates are rendered and long texts parsed (off the event loop, with a hard deadline). */
  thread: PayloadThread;
  /** Template rendering time (ms) each Dock may use (see templateTime). */
  renderBudget: TokenBuckets;
}): Promise<InboundMessage | InboundSkip> {
  const { inbound, dock } = input;
  const unread = "bytes" in inbound ? inbound : undefined;
  let name = input.named ?? dock.inbound ?? undefined;
  let read: Conversion | PayloadError | TooComplexError | undefined;
  if (unread !== undefined && name !== "template") {
    const body = input.read ?? (await input.thread.readBody(unread, name ?? null, false));
    // (A message's fields come back only when asked for: see parseWebhook.)
    if (body.kind === "payload") ({ format: name, result: read } = body);
  } else if (unread === undefined) name ??= detectFormat(inbound as Inbound)?.name;
  if (name === undefined) {
    throw new ApiError(
      "unknown_format",
      `msg is required: this body is neither a message nor a payload the service reads. ${FORMATS_SENTENCE}`,
    );
  }
  let conversion: Conversion;
  try {
    if (read !== undefined) {
      if (read instanceof Error) throw read;
      conversion = read;
    } else if (name === "template") {
      let template: unknown = input.template;
      if (template === undefined) {
        const settings = await input.docks.integrationSettings(dock.id);
        if (settings?.template == null) throw new ApiError("no_template");
        template = settings.template;
      }
      conversion = await renderTemplate(input, template);
    } else {
      const format = formatNamed(name);
      if (format === undefined || unread !== undefined) {
        throw noSuchFormat(name);
      }
      conversion = await format.convert(inbound as Inbound);
    }
  } catch (error) {
    if (error instanceof PayloadError) {
      throw new ApiError("invalid_payload", `This body is not a valid ${name} payload: ${error.message}`);
    }
    if (error instanceof TooComplexError) {
      throw new ApiError(
        "payload_too_complex",
        `This body is too complex to read as a ${name} payload: ${error.message} (see docs/integrations.md).`,
      );
    }
    if (error instanceof TemplateError) {
      throw new ApiError(
        "template_failed",
        `The Dock's template failed on this body: ${error.problems.map((p) => `${p.field}: ${p.message}`).join(" ")}`,
        {},
        error.problems.map((p) => ({
          field: p.field === "template" ? "template" : `template.${p.field}`,
          message: p.message,
        })),
      );
    }
    throw error;
  }
  if (conversion.kind === "skip") return { kind: "skip", format: name, reason: conversion.reason };
  const { notification } = conversion;
  const found = gatherOptions(notification.options as Record<string, unknown>);
  for (const [option, given] of gatherOptions({}, {}, input.query)) {
    if (!URL_OVERRIDES_SKIP.has(option)) found.set(option, given);
  }
  let options: MessageOptions;
  try {
    options = readOptions(found);
  } catch (error) {
    if (!(error instanceof OptionsError)) throw error;
    throw fieldsRefused(error.problems);
  }
  if (name === "template" && options.format !== undefined) {
    // The template's text in its format (html, markdown) must parse: its author's mistake, not the sender's.
    try {
      await prepareContent(notification.msg, options, input.thread.read);
    } catch (error) {
      if (!(error instanceof OptionsError)) throw error;
      const problems = error.problems.map((p) => ({ field: "template.text", message: p.message }));
      throw new ApiError(
        "template_failed",
        `The Dock's template failed on this body: ${problems.map((p) => `text: ${p.message}`).join(" ")}`,
        {},
        problems,
      );
    }
  }
  return {
    kind: "message",
    format: name,
    msg: notification.msg,
    options,
    key: boundedKey(notification.key),
    final: notification.final === true,
  };
}

/**
 * A Dock's template (as stored, or the one being edited) rendered on the payload in the template
 * thread. The Dock's template time is taken before the render starts — the most a render may hold
 * the thread — and what it did not use given back: concurrent renders of one Dock cannot outrun
 * its allowance, failed and stopped renders included.
 */
async function renderTemplate(
  input: {
    inbound: Inbound | UnreadBody;
    dock: DockCredentials;
    thread: PayloadThread;
    renderBudget: TokenBuckets;
  },
  template: unknown,
): Promise<Conversion> {
  const { inbound, dock } = input;
  const wait = input.renderBudget.take(dock.id, JOB_DEADLINE_MS);
  if (wait > 0) throw ApiError.retryAfter("rate_limited", wait);
  const payload: TemplatePayload =
    "bytes" in inbound
      ? // JSON the event loop has not read: the thread reads it (see unreadBody).
        { text: inbound.bytes, as: "json" }
      : {
          text: inbound.text,
          as:
            inbound.body === undefined
              ? "text"
              : isFormFields(inbound.text, inbound.mediaType)
                ? "form"
                : "json",
        };
  let used = 0;
  try {
    const rendered = await input.thread.render(template, payload);
    used = rendered.threadMs;
    if (rendered.result instanceof Error) throw rendered.result;
    return rendered.result;
  } finally {
    input.renderBudget.refund(dock.id, JOB_DEADLINE_MS - used);
  }
}

/** A key as a message may hold it: at most 128 characters (a longer one by its SHA-256), never empty. */
function boundedKey(key: string | undefined): string | null {
  if (key === undefined || key.trim() === "") return null;
  const clean = key.replaceAll("\u0000", "");
  return clean.length <= 128 ? clean : `sha256:${createHash("sha256").update(clean).digest("hex")}`;
}

/**
 * Template rendering time a Dock may use, in milliseconds: a second at once, then a tenth of a
 * second each second (a tenth of the payload thread), whether its renders succeed or fail.
 */
export function templateTime(): TokenBuckets {
  return new TokenBuckets({ capacity: 1000, refillPerSecond: 100, now: () => performance.now() });
}

/** The format a payload is unmistakably in, if any. */
export function detectedFormat(inbound: Inbound): string | undefined {
  return detectFormat(inbound)?.name;
}
