/**
 * Every error a client can see, declared once: a stable code, its HTTP status and a default human
 * message. The API docs (docs/api.md) list the same table, and a test keeps the two in step.
 */
export const ERRORS = {
  invalid_json: { status: 400, message: "The request body is not a valid JSON object." },
  invalid_request: { status: 400, message: "The request is not valid." },
  unauthorized: { status: 401, message: "Unknown Dock or wrong secret key." },
  not_found: { status: 404, message: "Nothing is here." },
  method_not_allowed: { status: 405, message: "This path does not accept that method." },
  payload_too_large: { status: 413, message: "The request body is too large." },
  message_too_long: { status: 413, message: "The message is too long." },
  unsupported_media_type: { status: 415, message: "The Content-Type is not accepted here." },
  idempotency_conflict: {
    status: 422,
    message: "This Idempotency-Key was already used with a different message.",
  },
  too_many_auth_failures: {
    status: 429,
    message: "Too many failed authentications from this address; wait before trying again.",
  },
  rate_limited: { status: 429, message: "This Dock is sending faster than its allowed rate." },
  internal_error: {
    status: 500,
    message: "Something went wrong on our side; the request was not processed.",
  },
  not_ready: { status: 503, message: "The service is not ready." },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERRORS;

/** The body of every error answer. */
export interface ErrorBody {
  ok: false;
  error: { code: ErrorCode; message: string };
}

/** An error meant for the client: thrown anywhere in a route, rendered by the app's error handler. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, message?: string, headers: Record<string, string> = {}) {
    super(message ?? ERRORS[code].message);
    this.name = "ApiError";
    this.code = code;
    this.status = ERRORS[code].status;
    this.headers = headers;
  }

  get body(): ErrorBody {
    return { ok: false, error: { code: this.code, message: this.message } };
  }
}

/** JSON schema of the error body, for the OpenAPI document. */
export const errorBodySchema = {
  type: "object",
  required: ["ok", "error"],
  properties: {
    ok: { const: false },
    error: {
      type: "object",
      required: ["code", "message"],
      properties: {
        code: { type: "string", enum: Object.keys(ERRORS) },
        message: { type: "string" },
      },
    },
  },
} as const;
