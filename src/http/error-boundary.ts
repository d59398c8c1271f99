import { createRequire } from "node:module";
import type { Socket } from "node:net";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import { Refusal, type RefusalReason } from "../domain/refusal.ts";
import { isDatabaseUnavailable, storageFault } from "../store/faults.ts";
import { ApiError, type ErrorCode } from "./errors.ts";

/**
 * The one place an error gets its HTTP answer. Routes throw `ApiError`s; the layers below them
 * (intake, the store, the bot) throw their own outcomes — a `Refusal`, a database that is
 * unavailable or cannot write — and framework errors (validation, body size, media type) arrive
 * from Fastify and Node. All of them leave here in the catalogue's format (src/http/errors.ts), so
 * no other module of the service decides a status (the sandbox, a Telegram of its own, answers its
 * Bot API in Telegram's envelope).
 */

/**
 * node:http's reason phrases, through `require`: an ES import of node:http reads every export,
 * and one of them (WebSocket) loads Node's whole fetch implementation, 2.6 MB of heap the service
 * never uses.
 */
const { STATUS_CODES } = createRequire(import.meta.url)("node:http") as typeof import("node:http");

interface ValidationIssue {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message?: string;
}

/** A schema validation failure, said in terms of the field the client got wrong. */
function describeValidation(issue: ValidationIssue | undefined, context: string | undefined): string {
  if (!issue) return "The request is not valid.";
  const where = issue.instancePath.replace(/^\//, "").replaceAll("/", ".");
  if (issue.keyword === "required") return `${String(issue.params.missingProperty)} is required.`;
  if (issue.keyword === "type") {
    return where === ""
      ? `The ${context ?? "body"} must be a JSON object.`
      : `${where} must be a ${String(issue.params.type)}.`;
  }
  return `${where || context || "request"} ${issue.message ?? "is not valid"}.`;
}

/** Statuses Fastify or a plugin may set on an error of its own, as the catalogue names them. */
const STATUS_CODES_BY_NUMBER: Record<number, ErrorCode> = {
  404: "not_found",
  405: "method_not_allowed",
  413: "payload_too_large",
  415: "unsupported_media_type",
};

/** Each reason the layers below turn a request down for, as the catalogue names it. */
const REFUSALS: Record<RefusalReason, ErrorCode> = {
  rate_limited: "rate_limited",
  idempotency_conflict: "idempotency_conflict",
  not_your_message: "not_your_message",
};

/** Maps anything thrown while handling a request to the catalogue's error format. */
export function toApiError(
  error: FastifyError & { validation?: ValidationIssue[] },
  maxBodyBytes: number,
): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof Refusal) {
    const code = REFUSALS[error.reason];
    return error.retryAfterSeconds === undefined
      ? new ApiError(code)
      : ApiError.retryAfter(code, error.retryAfterSeconds);
  }
  if (storageFault(error) !== null) return ApiError.retryAfter("storage_unavailable", 10);
  if (isDatabaseUnavailable(error)) return ApiError.retryAfter("database_unavailable", 5);
  if (error.validation) {
    return new ApiError("invalid_request", describeValidation(error.validation[0], error.validationContext));
  }
  switch (error.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return new ApiError("payload_too_large", `The request body is larger than ${maxBodyBytes} bytes.`);
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return new ApiError("unsupported_media_type");
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
    case "FST_ERR_CTP_INVALID_JSON_BODY":
      return new ApiError("invalid_json");
  }
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) return new ApiError(STATUS_CODES_BY_NUMBER[status] ?? "invalid_request");
  return new ApiError("internal_error");
}

export interface ErrorBoundaryOptions {
  maxBodyBytes: number;
  /** Counts an answered error by its code (`dock_notify_requests_rejected_total`). */
  onRefused(code: ErrorCode): void;
}

/**
 * The service's error and not-found handlers: every error a route or the framework throws is
 * answered in the catalogue's format, and logged once — a 5xx we meant (an outage, the console not
 * built, Telegram unreachable) as a warn line without a stack, since there is no bug to trace; any
 * other 5xx with its stack.
 */
export const errorBoundary = fp(
  async (app: FastifyInstance, options: ErrorBoundaryOptions) => {
    app.setErrorHandler((error: FastifyError, request, reply) => {
      const apiError = toApiError(error, options.maxBodyBytes);
      if (apiError.code === "storage_unavailable") {
        request.log.warn({ cause: storageFault(error), reason: error.message }, apiError.code);
      } else if (apiError.status >= 500 && (apiError === error || apiError.code === "database_unavailable")) {
        request.log.warn(
          { reason: error.message, ...apiError.log.fields },
          apiError.log.message ?? apiError.code,
        );
      } else if (apiError.status >= 500) request.log.error({ err: error }, "request failed");
      options.onRefused(apiError.code);
      // The request's one log line says which error it was answered (never its message: it may
      // quote what the client sent).
      request.logFields = { ...request.logFields, code: apiError.code };
      return reply.code(apiError.status).headers(apiError.headers).send(apiError.body);
    });
    app.setNotFoundHandler(async (request, reply) => {
      // Methods Fastify has no route for at all (PROPFIND, LOCK …) still get the send API's 405.
      const path = request.url.split("?")[0];
      if (path === "/ping" || path === "/webhook") {
        const error = new ApiError("method_not_allowed", "Use POST.", { Allow: "POST" });
        return reply.code(error.status).headers(error.headers).send(error.body);
      }
      const error = new ApiError("not_found", "No such endpoint; the API reference is at /docs.");
      return reply.code(error.status).send(error.body);
    });
  },
  { name: "error-boundary" },
);

/*
 * Errors that happen before a request reaches a route, answered like every other error: in the
 * catalogue's format, with the headers every JSON answer gets (`apiHeaders`), instead of Fastify's
 * and Node's own bodies.
 */

/** What Node reports on the connection (the request could not even be read), as the client sees it. */
function clientError(error: Error & { code?: string }): ApiError | null {
  switch (error.code) {
    case "ECONNRESET":
      return null;
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return new ApiError("request_timeout");
    case "HPE_HEADER_OVERFLOW":
      return new ApiError("headers_too_large");
    default:
      return new ApiError("invalid_request", "The request is not valid HTTP.");
  }
}

/**
 * Fastify's `clientErrorHandler`: the request could not be read at all (it took longer than
 * REQUEST_TIMEOUT_SECONDS to arrive, its headers are too large, it is not HTTP). The answer is
 * written on the socket by hand — no request exists to reply through — and the connection closed.
 */
export function clientErrorHandler(headers: Record<string, string>, onRefused: (code: string) => void) {
  return (error: Error & { code?: string }, socket: Socket): void => {
    const refusal = clientError(error);
    if (refusal === null || socket.destroyed) return;
    onRefused(refusal.code);
    if (socket.writable) {
      const body = JSON.stringify(refusal.body);
      const lines = [
        `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status] ?? ""}`,
        "content-type: application/json; charset=utf-8",
        `content-length: ${Buffer.byteLength(body)}`,
        "connection: close",
        ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
      ];
      socket.end(`${lines.join("\r\n")}\r\n\r\n${body}`);
    }
    socket.destroy();
  };
}

/**
 * Fastify's `frameworkErrors`: a URL it cannot decode (`/%`), a parameter too long. Answered as a
 * client's mistake, in the catalogue's format.
 */
export function frameworkErrors(headers: Record<string, string>) {
  return (_error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void => {
    const refusal = new ApiError("invalid_request", "The URL is not valid.");
    void reply.code(refusal.status).headers(headers).send(refusal.body);
  };
}
