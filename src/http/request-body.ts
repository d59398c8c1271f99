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

/** Media types read as JSON (`curl -d '{…}'` labels JSON as a form; some clients send none). */
export const JSON_LIKE = new Set(["", "application/json", "application/x-www-form-urlencoded", "text/json"]);
