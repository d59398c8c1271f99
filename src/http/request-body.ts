import { isUtf8 } from "node:buffer";
import type { FastifyRequest } from "fastify";
import { ApiError } from "./errors.ts";

/*
 * Reading a send request's body: the send API takes every body raw (whatever its Content-Type)
 * and reads it itself, so one set of rules and error messages serves /ping, /webhook and the
 * integration doors.
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

/** A form body's fields; more than MAX_FORM_FIELDS is refused unread (413 payload_too_complex). */
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
  return new URLSearchParams(text);
}

/** Media types read as JSON (`curl -d '{…}'` labels JSON as a form; some clients send none). */
export const JSON_LIKE = new Set(["", "application/json", "application/x-www-form-urlencoded", "text/json"]);
