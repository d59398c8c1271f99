import { MAX_GITHUB_CREDENTIALS } from "../domain/principal.ts";

/**
 * Every error a client can see, declared once: a stable code, its HTTP status and a default human
 * message. The API docs (docs/api.md) list the same table, and a test keeps the two in step.
 */
export const ERRORS = {
  invalid_json: { status: 400, message: "The request body is not a valid JSON object." },
  invalid_request: { status: 400, message: "The request is not valid." },
  invalid_fields: { status: 400, message: "Some fields are not valid; see error.fields." },
  unknown_format: {
    status: 400,
    message:
      "The body is neither a message nor a payload of a format the service reads; see docs/integrations.md.",
  },
  invalid_payload: { status: 400, message: "The body is not a valid payload of the format named." },
  unauthorized: { status: 401, message: "Unknown Dock or wrong secret key." },
  not_signed_in: { status: 401, message: "Sign in to the console first." },
  metrics_token_required: {
    status: 401,
    message: "A valid bearer token (METRICS_TOKEN) is needed for the metrics.",
  },
  csrf_rejected: {
    status: 403,
    message: "The request lacks a valid X-CSRF-Token header; reload the console and try again.",
  },
  cross_site_request: {
    status: 403,
    message: "Requests sent by a browser on behalf of another site are not accepted here.",
  },
  not_an_owner: {
    status: 403,
    message:
      "You are not an owner of this Dock Notify: ask its administrator for an invitation (see docs/deployment.md, Owners).",
  },
  admin_only: { status: 403, message: "Only an administrator of this Dock Notify can do this." },
  insufficient_role: {
    status: 403,
    message:
      "Your role on this Dock does not allow this; one of its owners can give you another (see docs/console.md, Co-owners).",
  },
  insufficient_scope: {
    status: 403,
    message:
      "This credential can only send: editing, deleting and reading messages takes the secret key or a manage credential.",
  },
  escalation_forbidden: {
    status: 403,
    message:
      "This Dock's owner is not an owner or editor of every Dock its escalation names (or one does not exist).",
  },
  not_your_message: {
    status: 403,
    message:
      "Another sender's message holds this key: a send credential or the hook URL replaces only the messages it sent.",
  },
  too_many_docks: {
    status: 403,
    message:
      "You own as many Docks as this Dock Notify allows one owner (MAX_DOCKS_PER_OWNER); delete one first.",
  },
  sandbox_not_local: {
    status: 403,
    message:
      "The Telegram sandbox answers only requests made on this machine, not through a proxy (SANDBOX_ALLOW_REMOTE=true opens it to others).",
  },
  sandbox_not_allowed: {
    status: 403,
    message: "In the sandbox, that person may not do this in that chat (they are not an administrator).",
  },
  not_found: { status: 404, message: "Nothing is here." },
  method_not_allowed: { status: 405, message: "This path does not accept that method." },
  request_timeout: {
    status: 408,
    message: "The request did not arrive in time (REQUEST_TIMEOUT_SECONDS); the connection is closed.",
  },
  sign_in_not_confirmed: {
    status: 409,
    message: "This browser has no confirmed sign-in to finish; start again.",
  },
  last_administrator: {
    status: 409,
    message: "This is the last administrator: make someone else an administrator first.",
  },
  owner_configured: {
    status: 409,
    message:
      "This administrator is named by the OWNERS setting: only a change of the configuration removes them.",
  },
  instance_open: {
    status: 409,
    message: "Anyone may sign in to this Dock Notify (OWNERS=*): removing an owner would change nothing.",
  },
  dock_owner_fixed: {
    status: 409,
    message:
      "This person owns the Dock (created it, or was given it) and keeps the role owner; the operator gives a Dock to someone else with dock-notify docks update <id> --owner.",
  },
  no_template: {
    status: 409,
    message: "This Dock has no template: write one in the console (the Dock's Integrations).",
  },
  too_many_github_credentials: {
    status: 409,
    message: `This Dock has ${MAX_GITHUB_CREDENTIALS} GitHub credentials, as many as a Dock may have: revoke one first.`,
  },
  request_ended: {
    status: 409,
    message: "This join request has ended already: it was approved, declined, or it expired.",
  },
  message_deleted: {
    status: 409,
    message: "The message was deleted; it can no longer be changed.",
  },
  sandbox_conflict: {
    status: 409,
    message: "The sandbox cannot do that in its current state (it exists already, or is full).",
  },
  payload_too_large: { status: 413, message: "The request body is too large." },
  payload_too_complex: {
    status: 413,
    message:
      "The body is within the size limit but too complex to read (too many elements, attributes, fields or levels); see docs/integrations.md.",
  },
  host_not_allowed: { status: 421, message: "This service does not answer for that host name." },
  message_too_long: { status: 413, message: "The message is too long." },
  unsupported_media_type: { status: 415, message: "The Content-Type is not accepted here." },
  headers_too_large: { status: 431, message: "The request's headers are too large." },
  idempotency_conflict: {
    status: 422,
    message: "This Idempotency-Key was already used with a different message.",
  },
  template_failed: {
    status: 422,
    message: "The Dock's template could not turn this body into a message; see error.fields.",
  },
  too_many_auth_failures: {
    status: 429,
    message: "Too many failed authentications from this address; wait before trying again.",
  },
  rate_limited: { status: 429, message: "This Dock is sending faster than its allowed rate." },
  too_many_sign_in_attempts: {
    status: 429,
    message: "Too many sign-in attempts from this address; wait before trying again.",
  },
  too_many_streams: {
    status: 429,
    message: "This session has too many live streams open; close other console tabs and try again.",
  },
  internal_error: {
    status: 500,
    message: "Something went wrong on our side; the request was not processed.",
  },
  not_ready: { status: 503, message: "The service is not ready." },
  database_unavailable: {
    status: 503,
    message:
      "The database cannot be reached; the message may not have been stored. Try again shortly, with the same Idempotency-Key.",
  },
  storage_unavailable: {
    status: 503,
    message:
      "The database cannot store anything right now (its disk is full or it is read-only); the message was not stored. Try again shortly.",
  },
  telegram_unavailable: {
    status: 503,
    message: "Telegram cannot be reached to look up the bot; try again shortly.",
  },
  bot_token_refused: {
    status: 503,
    message:
      "Telegram refused the bot token (401): set TELEGRAM_BOT_TOKEN to the token @BotFather gave you, then restart Dock Notify.",
  },
  busy: {
    status: 503,
    message:
      "The service has as much of this work in hand as it takes at once; try again after Retry-After seconds.",
  },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERRORS;

/** A problem with one field of a form, shown next to that field. */
export interface FieldProblem {
  field: string;
  message: string;
}

/**
 * The body of every error answer; `fields` only with `invalid_fields`, and an answer may add
 * context beside `error` (`/readyz` adds its `checks`).
 */
export interface ErrorBody {
  ok: false;
  error: { code: ErrorCode; message: string; fields?: FieldProblem[] };
  [context: string]: unknown;
}

/** An error meant for the client: thrown anywhere in a route, answered by http/error-boundary.ts. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly fields: FieldProblem[] | undefined;
  readonly context: Record<string, unknown>;
  /** How the error boundary logs it, when it is a 5xx we meant: the line's message and fields. */
  readonly log: { message?: string; fields?: Record<string, unknown> };

  constructor(
    code: ErrorCode,
    message?: string,
    headers: Record<string, string> = {},
    fields?: FieldProblem[],
    /** Beside `error` in the body (`context`); for the log line only, never sent (`log`). */
    extra: {
      context?: Record<string, unknown>;
      log?: { message?: string; fields?: Record<string, unknown> };
    } = {},
  ) {
    super(message ?? ERRORS[code].message);
    this.name = "ApiError";
    this.code = code;
    this.status = ERRORS[code].status;
    this.headers = headers;
    this.fields = fields;
    this.context = extra.context ?? {};
    this.log = extra.log ?? {};
  }

  /** The status under the name Fastify's own handlers read. */
  get statusCode(): number {
    return this.status;
  }

  /** A 429 or 503 telling the client how many whole seconds to wait (`Retry-After`). */
  static retryAfter(code: ErrorCode, waitSeconds: number): ApiError {
    return new ApiError(code, undefined, { "Retry-After": String(Math.ceil(waitSeconds)) });
  }

  get body(): ErrorBody {
    const error: ErrorBody["error"] = { code: this.code, message: this.message };
    if (this.fields) error.fields = this.fields;
    return { ...this.context, ok: false, error };
  }
}

/** `invalid_fields` for these problems, each named in the message and listed in `error.fields`. */
export function fieldsRefused(problems: FieldProblem[]): ApiError {
  return new ApiError(
    "invalid_fields",
    `Some fields are not valid: ${problems.map((p) => `${p.field}: ${p.message}`).join(" ")}`,
    {},
    problems,
  );
}

/** What an invalid_fields answer names, as the send API says it (the reference's example). */
const INVALID_PRIORITY = "must be min, low, default, high or urgent, or 1 to 5.";

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
        code: {
          type: "string",
          enum: Object.keys(ERRORS),
          description: "Stable: what a program tells errors apart by (docs/api.md lists them).",
          examples: ["unauthorized"],
        },
        message: {
          type: "string",
          description: "For people: what went wrong and what to do; may change between versions.",
          examples: [ERRORS.unauthorized.message],
        },
        fields: {
          type: "array",
          description: "With invalid_fields: each field, header or query parameter that is wrong.",
          items: {
            type: "object",
            required: ["field", "message"],
            properties: {
              field: { type: "string", examples: ["priority"] },
              message: { type: "string", examples: [INVALID_PRIORITY] },
            },
          },
        },
      },
    },
  },
} as const;

/**
 * One error status of a route for the OpenAPI document: the error body's schema, and an example
 * answer for each code the route can answer with it (`x-examples`: named examples of the response's
 * media type; the serializer ignores the keyword).
 */
export function errorAnswer(description: string, ...codes: ErrorCode[]) {
  const examples = Object.fromEntries(
    codes.map((code) => {
      const error =
        code === "invalid_fields"
          ? fieldsRefused([{ field: "priority", message: INVALID_PRIORITY }])
          : new ApiError(code);
      return [code, { summary: ERRORS[code].message, value: error.body }];
    }),
  );
  return { description, ...errorBodySchema, "x-examples": examples };
}
