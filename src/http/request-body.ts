import { isUtf8 } from "node:buffer";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { ApiError } from "./errors.ts";

/*
 * Reading a request's body. Every body the service reads must be UTF-8: one with an invalid byte
 * sequence is refused (400 invalid_request), never read with U+FFFD in place of its bad bytes,
 * which would store or act on a text the client never sent. The send API takes every body raw
 * (whatever its Content-Type) and reads it itself with `decode`, so one set of rules and error
 * messages serves /ping, /webhook and the integration doors; every other route (the console API,
 * the Telegram webhook, the sandbox's pages) reads JSON and text through `utf8Parsers`.
 */

/** The body as a client sent it, before we know which form it takes. */
export type RawBody = Buffer | undefined;

/** The Content-Type's media type, lower case, without parameters ("" when none was sent). */
export function mediaTypeOf(request: FastifyRequest): string {
  return (request.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
}

/** The body as text: UTF-8 (checked), without a byte order mark. */
export function decode(raw: RawBody): string {
  if (raw === undefined) return "";
  if (!isUtf8(raw)) throw new ApiError("invalid_request", "The request body is not valid UTF-8.");
  const text = raw.toString("utf8");
  // A byte order mark is not part of the text (as TextDecoder has it).
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/**
 * Fields a form body may hold: a message with every option is about twenty, Apprise's form:// five.
 * URLSearchParams and the objects made of it cost far more per field than the text's length says
 * (a megabyte of 129,000 empty fields took 0.3–0.5 s to read into an object), so they are counted
 * before the form is parsed.
 */
export const MAX_FORM_FIELDS = 1000;

/**
 * A form body's fields (`application/x-www-form-urlencoded`): more than MAX_FORM_FIELDS is refused
 * unread (413 payload_too_complex), and so is a form whose percent-escapes spell an invalid UTF-8
 * sequence (`%C3%28`, `%FF`: 400), which URLSearchParams would read as U+FFFD.
 */
export function formFields(text: string): URLSearchParams {
  let fields = 1;
  for (let at = text.indexOf("&"); at >= 0; at = text.indexOf("&", at + 1)) {
    if (++fields > MAX_FORM_FIELDS) {
      throw new ApiError(
        "payload_too_complex",
        `The form has more than ${MAX_FORM_FIELDS.toLocaleString("en-US")} fields; send JSON instead.`,
      );
    }
  }
  if (text.includes("%")) {
    for (const part of text.split(/[&=]/)) {
      // A `%` not followed by two hex digits is kept as written (as URLSearchParams does).
      const escaped = part.replaceAll("+", " ").replace(/%(?![0-9A-Fa-f]{2})/g, "%25");
      try {
        decodeURIComponent(escaped);
      } catch {
        throw new ApiError("invalid_request", "The form's percent-escapes are not valid UTF-8.");
      }
    }
  }
  return new URLSearchParams(text);
}

/**
 * Fastify's JSON and text parsers, strict about UTF-8 (theirs decode leniently). Registered on the
 * root before the routes, so that every plugin without parsers of its own inherits them.
 */
export function utf8Parsers(app: FastifyInstance): void {
  // What Fastify's own JSON parser does with the text (`__proto__` and `constructor` refused).
  const json = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser(["application/json", "text/plain"]);
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (request, body, done) => {
    let text: string;
    try {
      text = decode(body as Buffer);
    } catch (error) {
      done(error as Error, undefined);
      return;
    }
    json(request, text, done);
  });
  app.addContentTypeParser("text/plain", { parseAs: "buffer" }, (_request, body, done) => {
    try {
      done(null, decode(body as Buffer));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
}

/** Media types read as JSON (`curl -d '{…}'` labels JSON as a form; some clients send none). */
export const JSON_LIKE = new Set(["", "application/json", "application/x-www-form-urlencoded", "text/json"]);
