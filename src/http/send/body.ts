import type { FastifyRequest } from "fastify";
import { OPTION_NAMES, OptionsError, readOptions } from "../../domain/message-options.ts";
import { decodeHeaderValue, gatherOptions } from "../../integrations/ntfy-dialect.ts";
import { ApiError, fieldsRefused } from "../errors.ts";
import { decode, formFields, JSON_LIKE, mediaTypeOf, type RawBody } from "../request-body.ts";
import { MAX_IDEMPOTENCY_KEY, MAX_MESSAGE_KEY } from "./schemas.ts";
import type { CallbackHook } from "./state.ts";

/*
 * A message's body as our own doors take it (JSON, a form, text): the object, its options and key
 * taken out and checked, the Idempotency-Key. Other tools' payloads are read in send/integrate.ts.
 */

/**
 * Turns the raw body into an object. Forgiving about harmless habits: `curl -d '{…}'` sends JSON
 * labelled as a form, and some clients send no Content-Type at all; real form fields work too.
 */
export function parseObject(request: FastifyRequest, allowText: boolean): Record<string, unknown> {
  const mediaType = mediaTypeOf(request);
  if (allowText && mediaType.startsWith("text/") && mediaType !== "text/json") {
    return { msg: decode(request.body as RawBody) };
  }
  if (!JSON_LIKE.has(mediaType) && !mediaType.endsWith("+json")) {
    const accepted = allowText ? "application/json, a form, or text/plain" : "application/json";
    throw new ApiError(
      "unsupported_media_type",
      `Content-Type "${mediaType.slice(0, 100)}" is not accepted here; send ${accepted}.`,
    );
  }
  const text = decode(request.body as RawBody).trim();
  if (text === "") {
    // `curl -X POST "…/ping?dock_id=…&secret_key=…"`: say where the fields go, and why not the URL.
    const inUrl = request.url.includes("?")
      ? " Fields in the URL are not read: a URL ends up in logs and histories, so never put a secret key there."
      : "";
    throw new ApiError("invalid_json", `The request body is empty; send a JSON object.${inUrl}`);
  }
  if (mediaType === "application/x-www-form-urlencoded" && !text.startsWith("{")) {
    const params = formFields(text);
    // `curl -d 'Backup done'` is a form with no msg field: on /webhook that is the text itself (as
    // ntfy takes it, so ntfy scripts port unchanged); /ping says what to send instead.
    if (allowText && !params.has("msg")) return { msg: text };
    // `msg=first&msg=second` would keep one and drop the other without a word. One pass: asking
    // getAll for each name scans every field for each (9,500 names in 64 KiB held the loop 1.5 s).
    const names = new Set<string>();
    for (const name of params.keys()) {
      if (names.has(name))
        throw new ApiError("invalid_request", `${name.slice(0, 64)} is given more than once.`);
      names.add(name);
    }
    const fields = Object.fromEntries(params);
    // `curl -d 'hello'` to /ping is a form with one nameless field: say what to send instead.
    if (Object.values(fields).every((value) => value === "") && !("msg" in fields)) {
      throw new ApiError(
        "invalid_json",
        'The body is neither JSON nor form fields: send {"dock_id": "…", "secret_key": "…", "msg": "…"} with Content-Type: application/json.',
      );
    }
    return fields;
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // JSON.parse's own message quotes the body, which may hold a secret key: never pass it on.
    throw new ApiError("invalid_json", "The request body is not valid JSON.");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ApiError("invalid_json", "The request body must be a JSON object.");
  }
  return value as Record<string, unknown>;
}

/** Refuses a message text the service cannot send (`400`, naming why): the send API's and the console's. */
export function checkMessage(msg: string, maxLength: number): void {
  if (!msg.isWellFormed()) {
    throw new ApiError("invalid_request", "msg contains invalid Unicode (an unpaired surrogate).");
  }
  if (msg.trim() === "") throw new ApiError("invalid_request", "msg must not be empty.");
  // Neither Telegram nor PostgreSQL text can hold U+0000.
  if (msg.includes("\u0000"))
    throw new ApiError("invalid_request", "msg must not contain the NUL character (U+0000).");
  // String length is in UTF-16 code units, the unit Telegram's limits are written in.
  const length = msg.length;
  if (length > maxLength) {
    throw new ApiError(
      "message_too_long",
      `msg is ${length} UTF-16 code units long; the limit is ${maxLength}.`,
    );
  }
}

/** The Idempotency-Key header, checked (a repeat within 24 hours answers what the first send did). */
export function idempotencyKeyOf(request: FastifyRequest): string | undefined {
  const raw = request.headers["idempotency-key"];
  if (raw === undefined) return undefined;
  const key = Array.isArray(raw) ? raw[0] : raw;
  if (key === undefined || key.trim() === "") {
    throw new ApiError("invalid_request", "Idempotency-Key must not be empty.");
  }
  if (key.length > MAX_IDEMPOTENCY_KEY) {
    throw new ApiError(
      "invalid_request",
      `Idempotency-Key must be at most ${MAX_IDEMPOTENCY_KEY} characters.`,
    );
  }
  return key;
}

/**
 * Takes the options out of the body (they are checked here, together with the headers and query
 * for /webhook, so every source gets the same checks and messages; the schema describes them for
 * the OpenAPI document) and leaves the rest for the schema's validation.
 */
export function takeOptions(
  request: FastifyRequest,
  body: Record<string, unknown>,
  fromRequest: boolean,
): string[] {
  request.messageKey = takeKey(request, body, fromRequest);
  const found = fromRequest
    ? gatherOptions(body, request.headers, request.query as Record<string, unknown>)
    : gatherOptions(body);
  const given = [...found.keys()];
  // Only what is there: deleting keys an object does not have would still cost every plain message.
  for (const name of OPTION_NAMES) if (name in body) delete body[name];
  try {
    request.messageOptions = readOptions(found);
  } catch (error) {
    if (error instanceof OptionsError) throw fieldsRefused(error.problems);
    throw error;
  }
  return given;
}

/**
 * The message's key, taken out of the body (or for /webhook the X-Key header or ?key=); checked.
 */
function takeKey(
  request: FastifyRequest,
  body: Record<string, unknown>,
  fromRequest: boolean,
): string | null {
  let raw: unknown;
  let field = "key";
  if ("key" in body && body.key !== null) {
    raw = body.key;
    delete body.key;
  } else if ("key" in body) {
    // null: no key, as every optional field takes it.
    delete body.key;
    return null;
  } else if (fromRequest && request.headers["x-key"] !== undefined) {
    raw = decodeHeaderValue(String(request.headers["x-key"]));
    field = "the X-Key header";
  } else if (fromRequest && (request.query as Record<string, unknown>)?.key !== undefined) {
    raw = (request.query as Record<string, unknown>).key;
    field = "the key query parameter";
  } else return null;
  if (typeof raw !== "string") {
    throw fieldsRefused([{ field, message: "must be a string." }]);
  }
  if (raw.trim() === "" || raw.length > MAX_MESSAGE_KEY || !raw.isWellFormed() || raw.includes("\u0000")) {
    throw fieldsRefused([{ field, message: `must be 1 to ${MAX_MESSAGE_KEY} characters.` }]);
  }
  return raw;
}

/** preValidation of /ping (`allowText` false: JSON or a form) and of a message in /webhook's shapes. */
export const parseBody =
  (allowText: boolean): CallbackHook =>
  (request, _reply, done) => {
    try {
      const body = parseObject(request, allowText);
      takeOptions(request, body, allowText);
      request.body = body;
    } catch (error) {
      done(error as Error);
      return;
    }
    done();
  };

/** PATCH's body: like /webhook's, and a null option means "back to its default". */
export const parsePatch: CallbackHook = (request, _reply, done) => {
  try {
    const body =
      request.body === undefined || (request.body as Buffer).length === 0 ? {} : parseObject(request, true);
    const cleared: string[] = [];
    for (const name of OPTION_NAMES) {
      if (name in body && body[name] === null) {
        cleared.push(name);
        delete body[name];
      }
    }
    if ("key" in body) throw new ApiError("invalid_request", "A message's key cannot be changed.");
    const given = takeOptions(request, body, true);
    const set = request.messageOptions ?? {};
    // Given, but at its default (priority "default", silent false…): reset as null would.
    for (const name of given) if (!(name in set) && !cleared.includes(name)) cleared.push(name);
    request.clearedOptions = cleared;
    request.body = body;
  } catch (error) {
    done(error as Error);
    return;
  }
  done();
};
