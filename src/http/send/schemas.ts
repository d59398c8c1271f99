import { Type } from "typebox";
import { FORMATS } from "../../domain/message-options.ts";
import { ALL_FORMAT_NAMES } from "../../integrations/formats.ts";
import { OPTION_SOURCES } from "../../integrations/ntfy-dialect.ts";
import {
  ALERTMANAGER_PAYLOAD,
  EXAMPLE,
  EXAMPLE_SIGNATURE,
  GITHUB_PING,
  GITLAB_PAYLOAD,
  SLACK_PAYLOAD,
} from "../api-examples.ts";
import { errorAnswer } from "../errors.ts";
import { messageOptionFields } from "../message-schemas.ts";

/*
 * The send doors' schemas (http/send/): what its validator checks, what its answers are
 * serialized with, and — fuller, with an example on every field — what the OpenAPI document says.
 * Routes hand the document's versions over as `documented` (see http/docs.ts).
 */

export const MAX_IDEMPOTENCY_KEY = 255;

/** A message key's limit (the sender's name for a message it may replace). */
export const MAX_MESSAGE_KEY = 128;

export const dateTime = (description?: string) =>
  Type.String({ format: "date-time", examples: [EXAMPLE.at], ...(description ? { description } : {}) });

const acceptedFields = {
  ok: Type.Literal(true),
  message_id: Type.String({
    description: "Identifies the message; use it to ask for its delivery state.",
    examples: [EXAMPLE.messageId],
  }),
  subscribers: Type.Integer({
    description: "Active subscribers the message was queued for.",
    examples: [3],
  }),
  replaced: Type.Optional(
    Type.Boolean({
      description:
        "true: a message of this Dock already held the `key`; that message (message_id) was edited into this one instead of a new one being added.",
      examples: [true],
    }),
  ),
  revision: Type.Optional(
    Type.Integer({ description: "With replaced: the message's revision now.", examples: [2] }),
  ),
  edits: Type.Optional(
    Type.Integer({ description: "With replaced: copies already sent that will be edited.", examples: [3] }),
  ),
  format: Type.Optional(
    Type.String({
      description:
        "The integration the body was read as (alertmanager, github, …, template), when it was not a message of our own.",
      examples: ["alertmanager"],
    }),
  ),
};

/**
 * A send's 202; its example as the route answers it: a message of our own, or one read from the
 * `format` named (replaced and its fields show only when a key replaced a message).
 */
export const accepted = (format?: string) =>
  Type.Object(acceptedFields, {
    description: "The message is durably stored and will be delivered to every subscriber.",
    examples: [{ ok: true, message_id: EXAMPLE.messageId, subscribers: 3, ...(format ? { format } : {}) }],
  });

export const skipped = Type.Object(
  {
    ok: Type.Literal(true),
    skipped: Type.Literal(true),
    format: Type.String({ description: "The integration the body was read as.", examples: ["github"] }),
    reason: Type.String({
      description: "Why there is nothing to show, e.g. GitHub's ping.",
      examples: ["GitHub's ping: the webhook works."],
    }),
  },
  { description: "The payload was read and has nothing to show (GitHub's ping): nothing was stored." },
);

export const keyField = Type.Optional(
  Type.String({
    minLength: 1,
    maxLength: MAX_MESSAGE_KEY,
    description:
      "Your name for the message (at most 128 characters), e.g. an alert's group key. A later send with the same key replaces this message in place (every copy is edited) instead of adding one, for as long as the message is kept (RETENTION_DAYS) and not deleted. `GET /messages?key=…` finds it.",
    examples: [EXAMPLE.key],
  }),
);

export const unauthorized = errorAnswer(
  "No credentials, an unknown Dock or a wrong secret key (one answer for all three).",
  "unauthorized",
);
export const throttled = errorAnswer(
  "Too many failed authentications from this address, or the Dock is over its rate: wait `Retry-After` seconds.",
  "too_many_auth_failures",
  "rate_limited",
);
export const databaseDown = errorAnswer(
  "The database cannot take the request now: retry after `Retry-After` seconds (a send with the same Idempotency-Key is never stored twice).",
  "database_unavailable",
  "storage_unavailable",
);
export const noSuchMessage = errorAnswer(
  "No such message for this Dock (another Dock's is answered alike).",
  "not_found",
);

/** The error answers of a send: the body and its fields, the credentials, the limits, the database. */
export const sendErrors = {
  400: errorAnswer(
    "The body or a field is not valid; invalid_fields names each field, header or query parameter that is wrong.",
    "invalid_fields",
    "invalid_json",
    "invalid_request",
  ),
  401: unauthorized,
  403: errorAnswer(
    "A send credential (or the hook URL) sent a key that another sender's message holds, or the escalation names a Dock whose owner or editor this Dock's owner is not.",
    "not_your_message",
    "escalation_forbidden",
  ),
  413: errorAnswer(
    "The body, or the message's text, is over its limit, or a form body has more than 1,000 fields.",
    "payload_too_large",
    "message_too_long",
    "payload_too_complex",
  ),
  415: errorAnswer("The Content-Type is not one this route reads.", "unsupported_media_type"),
  422: errorAnswer("This Idempotency-Key was already used with another message.", "idempotency_conflict"),
  429: throttled,
  503: databaseDown,
};

/** A send that may be another tool's payload: its format, a template, the payload itself. */
export const inboundErrors = {
  ...sendErrors,
  400: errorAnswer(
    "The body is not a message, nor a valid payload of the format named (or of any format, when none is named).",
    "invalid_payload",
    "unknown_format",
    "invalid_fields",
    "invalid_json",
  ),
  409: errorAnswer("The Dock reads its payloads with a template, and has none.", "no_template"),
  413: errorAnswer(
    "The body, or the message's text, is over its limit, or the payload is too complex to read (XML of too many elements, attributes or levels, a form of more than 1,000 fields).",
    "payload_too_large",
    "message_too_long",
    "payload_too_complex",
  ),
  422: errorAnswer(
    "The Dock's template could not turn this payload into a message, or the Idempotency-Key was used with another message.",
    "template_failed",
    "idempotency_conflict",
  ),
  503: errorAnswer(
    "The database cannot take the request now, or the service has as many templates to render or signed bodies to check as it takes at once: retry after `Retry-After` seconds.",
    "database_unavailable",
    "storage_unavailable",
    "busy",
  ),
};

/** The answers of a send that may be a tool's payload; the 202's example read as `format`. */
export const inboundAnswers = (format?: string) => ({
  202: accepted(format),
  200: skipped,
  ...inboundErrors,
});

export const idempotencyHeader = Type.Object({
  "idempotency-key": Type.Optional(
    Type.String({
      description: `Repeat a send safely: within 24 h the same key returns the first answer and sends nothing. At most ${MAX_IDEMPOTENCY_KEY} characters.`,
      examples: [EXAMPLE.idempotencyKey],
    }),
  ),
});

const dockIdField = Type.String({
  description: "The Dock ID: 22 letters and digits (the console and `dock-notify docks show` show it).",
  examples: [EXAMPLE.dockId],
});

const secretKeyField = Type.String({
  description: `The Dock's secret key, \`dnsk_\` and 33 letters and digits, or one of its named credentials (\`dnsc_…\`: a send credential may only send). ${EXAMPLE.secretKey} is a placeholder: put the Dock's own key there.`,
  examples: [EXAMPLE.secretKey],
});

export const pingBody = Type.Object(
  {
    dock_id: dockIdField,
    secret_key: secretKeyField,
    msg: Type.String({
      description: "The notification text, in `format`. Newlines and any Unicode are kept.",
      examples: ["**Build 42** failed on `main`\n[logs](https://ci.example.com/42)"],
    }),
    key: keyField,
    ...messageOptionFields,
  },
  {
    examples: [
      {
        dock_id: EXAMPLE.dockId,
        secret_key: EXAMPLE.secretKey,
        msg: "**Build 42** failed on `main`\n[logs](https://ci.example.com/42)",
        format: "markdown",
        title: "CI",
        priority: "high",
        tags: ["warning"],
      },
    ],
  },
);

export const webhookBody = Type.Object(
  {
    msg: Type.String({
      description:
        "The notification text, in `format`. With Content-Type text/plain (or a form body without a msg field, as `curl -d` sends) the raw body is the text.",
      examples: ["Backup of db-1 failed: disk full"],
    }),
    key: keyField,
    ...messageOptionFields,
  },
  {
    examples: [
      {
        msg: "Backup of db-1 failed: disk full",
        title: "Backup",
        priority: "high",
        tags: ["warning"],
        buttons: [[{ text: "Runbook", url: "https://wiki.example.com/runbooks/backup" }]],
      },
    ],
  },
);

/**
 * What the schema validator checks: the body without the options, which takeOptions has already
 * read, checked and taken out. The full schemas above are the OpenAPI document's (`documented`,
 * see http/docs.ts): compiling validators for options that are never there would only cost
 * start-up work and memory.
 */
export const checkedPingBody = Type.Object({
  dock_id: pingBody.properties.dock_id,
  secret_key: pingBody.properties.secret_key,
  msg: pingBody.properties.msg,
});
export const checkedWebhookBody = Type.Object({ msg: webhookBody.properties.msg });
/** What an option's header or query parameter carries, and an example of it. */
const OPTION_TEXT: Record<keyof typeof OPTION_SOURCES, { note: string; example: string }> = {
  title: { note: "The title.", example: "Backup" },
  priority: { note: "min, low, default, high, urgent (or max), or 1 to 5.", example: "high" },
  tags: { note: "Tags, comma-separated.", example: "warning,backup" },
  format: { note: "text, markdown, html or telegram_markdownv2.", example: "markdown" },
  markdown: { note: "yes: the text is Markdown (ntfy's way to say format markdown).", example: "yes" },
  click: { note: "The URL of an Open button.", example: "https://ci.example.com/42" },
  buttons: {
    note: "URL buttons in ntfy's action syntax: `view, Label, https://…; view, …`, or ntfy's JSON.",
    example: "view, Runbook, https://wiki.example.com/runbooks/backup",
  },
  silent: { note: "true: no sound on arrival.", example: "true" },
  link_preview: { note: "true: show a preview of the first link.", example: "true" },
  protect_content: { note: "true: the message cannot be forwarded or saved.", example: "true" },
  ack: { note: "true: an Acknowledge button.", example: "true" },
  remind_every: {
    note: "Remind with sound until someone acknowledges, this often (30 s at least): seconds, or 90s, 5m, 1h. Adds the Acknowledge button.",
    example: "5m",
  },
  remind_for: { note: "How long reminders go on (24 h at most; 1 h if not given).", example: "1h" },
  escalate: {
    note: "Escalation while unacknowledged: after:dock_id pairs, comma-separated (10m:<dock_id>,30m:<dock_id>). Adds the Acknowledge button.",
    example: "10m:6v0C41amJuTn1Cf8bQIOtQ",
  },
};

const OPTIONS = Object.entries(OPTION_SOURCES) as [
  keyof typeof OPTION_SOURCES,
  { headers: string[]; query: string[] },
][];

/** An option's query parameter (ntfy's name; the others it takes too are named in its description). */
const optionQuery = ([option, { query }]: (typeof OPTIONS)[number]) => [
  query[0] as string,
  Type.Optional(
    Type.String({
      description: `${OPTION_TEXT[option].note}${query.length > 1 ? ` Also ${query.slice(1).join(", ")}.` : ""} A body field or a header wins over it.`,
      examples: [OPTION_TEXT[option].example],
    }),
  ),
];

/** ntfy's query parameters, for tools that can set neither the body nor headers (see OPTION_SOURCES). */
export const webhookQuery = Type.Object({
  ...Object.fromEntries(OPTIONS.filter(([option]) => option !== "format").map(optionQuery)),
  format: Type.Optional(
    Type.String({
      description: `How msg is written (${FORMATS.join(", ")}), or a tool's format (${ALL_FORMAT_NAMES.join(", ")}): the body is that tool's payload.`,
      examples: ["markdown"],
    }),
  ),
  key: Type.Optional(
    Type.String({ description: "The message's key (see the body's key).", examples: [EXAMPLE.key] }),
  ),
});

/** The integration doors' query: options that override what the format made of the payload. */
export const inboundQuery = Type.Object(
  Object.fromEntries(
    OPTIONS.filter(([option]) => option !== "format" && option !== "markdown").map(optionQuery),
  ),
);

/** ntfy's headers, for tools that can set headers but not shape a body. */
export const webhookHeaders = Type.Object({
  ...idempotencyHeader.properties,
  "x-key": Type.Optional(
    Type.String({
      description: "The message's key (see the body's key); the body's wins.",
      examples: [EXAMPLE.key],
    }),
  ),
  ...Object.fromEntries(
    OPTIONS.map(([option, { headers }]) => [
      headers[0] as string,
      Type.Optional(
        Type.String({
          description: `${OPTION_TEXT[option].note}${headers.length > 1 ? ` Also ${headers.slice(1).join(", ")}.` : ""} A body field wins over a header, a header over a query parameter. UTF-8, or RFC 2047 (=?UTF-8?B?…?=).`,
          examples: [OPTION_TEXT[option].example],
        }),
      ),
    ]),
  ),
});

const formatParam = Type.String({
  enum: [...ALL_FORMAT_NAMES],
  description:
    "The tool whose payload the body is (docs/integrations.md); `template`: the Dock's own template reads it.",
  examples: ["alertmanager"],
});

const hookTokenParam = Type.String({
  description: `The Dock's hook token, \`dnhk_\` and 33 letters and digits, from the console (Integrations) or \`dock-notify docks hook-token\`. ${EXAMPLE.hookToken} is a placeholder.`,
  examples: [EXAMPLE.hookToken],
});

/** The document's path parameters of the integration doors (the routes check a format themselves). */
export const inboundParams = {
  format: Type.Object({ format: formatParam }),
  formatDock: Type.Object({ format: { ...formatParam, examples: ["gitlab"] }, dock_id: dockIdField }),
  hook: Type.Object({ token: hookTokenParam }),
  hookFormat: Type.Object({ token: hookTokenParam, format: { ...formatParam, examples: ["slack"] } }),
};

/** Another tool's payload, as the document shows it: any JSON object the format reads. */
const payload = (example: unknown, description: string) =>
  Type.Object({}, { additionalProperties: true, description, examples: [example] });

export const inboundBodies = {
  format: payload(
    ALERTMANAGER_PAYLOAD,
    "The tool's payload as it sends it: JSON (Apprise also sends a form or XML). Here Prometheus Alertmanager's.",
  ),
  formatDock: payload(GITLAB_PAYLOAD, "The tool's payload as it sends it. Here GitLab's pipeline event."),
  hook: webhookBody,
  hookFormat: payload(SLACK_PAYLOAD, "The tool's payload as it sends it. Here a Slack-style webhook's."),
};

/** Credentials that tools send in headers of their own on /webhook/<format>/<dock_id>. */
export const signedHeaders = Type.Object({
  "x-hub-signature-256": Type.Optional(
    Type.String({
      description: `GitHub (Gitea, Forgejo): \`sha256=\` and the HMAC-SHA256 of the raw body keyed with the webhook's Secret: one of the Dock's GitHub credentials (\`dngh_…\`, a send-only credential), or, deprecated, its secret key. The example signs ${JSON.stringify(GITHUB_PING)} with ${EXAMPLE.githubSecret}.`,
      examples: [EXAMPLE_SIGNATURE],
    }),
  ),
  "x-gitlab-token": Type.Optional(
    Type.String({
      description: "GitLab: the webhook's Secret token, set to the Dock's secret key.",
      examples: [EXAMPLE.secretKey],
    }),
  ),
  "x-gitlab-event": Type.Optional(
    Type.String({
      description: "GitLab's name for the event (the body's object_kind says it too).",
      examples: ["Pipeline Hook"],
    }),
  ),
  "x-github-event": Type.Optional(
    Type.String({
      description: "GitHub's name for the event (push, release, workflow_run, ping…).",
      examples: ["ping"],
    }),
  ),
});
