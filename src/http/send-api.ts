import { isUtf8 } from "node:buffer";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import { type Attempt, AttemptLimiter, addressKey } from "../domain/attempts.ts";
import { MESSAGE_ID_PATTERN } from "../domain/ids.ts";
import {
  gatherOptions,
  type MessageContent,
  type MessageOptions,
  OPTION_SOURCES,
  OptionsError,
  prepareContent,
  readOptions,
} from "../domain/message-options.ts";
import { perMinuteBuckets } from "../domain/token-bucket.ts";
import type { Intake } from "../intake.ts";
import type { DockRepository } from "../store/docks.ts";
import type { OutboxViews } from "../store/outbox-views.ts";
import { ApiError, errorBodySchema } from "./errors.ts";
import { messageOptionFields, storedOptionsSchema } from "./message-schemas.ts";

export interface SendApiOptions {
  docks: DockRepository;
  intake: Intake;
  views: OutboxViews;
  maxBodyBytes: number;
  maxMessageLength: number;
  authFailuresPerMinute: number;
}

const MAX_IDEMPOTENCY_KEY = 255;

const accepted = Type.Object(
  {
    ok: Type.Literal(true),
    message_id: Type.String({ description: "Identifies the message; use it to ask for its delivery state." }),
    subscribers: Type.Integer({ description: "Active subscribers the message was queued for." }),
  },
  { description: "The message is durably stored and will be delivered to every subscriber." },
);

const errorResponses = {
  400: {
    description:
      "Malformed body or field (invalid_fields lists each field, header or query parameter that is wrong).",
    ...errorBodySchema,
  },
  401: { description: "Unknown Dock or wrong secret key (one answer for both).", ...errorBodySchema },
  405: { description: "Any method but POST.", ...errorBodySchema },
  413: { description: "Body or message over the limit.", ...errorBodySchema },
  415: { description: "Content-Type not accepted.", ...errorBodySchema },
  422: { description: "Idempotency-Key reused with a different message.", ...errorBodySchema },
  429: { description: "Too many failed authentications, or the Dock is over its rate.", ...errorBodySchema },
};

const deliveryState = Type.Union([
  Type.Literal("queued"),
  Type.Literal("sent"),
  Type.Literal("failed"),
  Type.Literal("gone"),
]);

const messageStatus = Type.Object({
  ok: Type.Literal(true),
  message: Type.Object({
    id: Type.String(),
    options: storedOptionsSchema,
    state: Type.Union(
      [
        Type.Literal("pending"),
        Type.Literal("delivered"),
        Type.Literal("partially_delivered"),
        Type.Literal("undelivered"),
        Type.Literal("no_subscribers"),
      ],
      {
        description:
          "no_subscribers when nobody was subscribed; pending while any delivery is queued; then delivered, partially_delivered or undelivered.",
      },
    ),
    created_at: Type.String({ format: "date-time" }),
    subscribers: Type.Integer(),
    counts: Type.Object({
      queued: Type.Integer(),
      sent: Type.Integer(),
      failed: Type.Integer(),
      gone: Type.Integer(),
    }),
    deliveries: Type.Array(
      Type.Object({
        chat_id: Type.Number({ description: "Telegram chat of the subscriber." }),
        state: deliveryState,
        attempts: Type.Integer(),
        last_error: Type.Union([Type.String(), Type.Null()]),
        telegram_message_ids: Type.Array(Type.Integer()),
        updated_at: Type.String({ format: "date-time" }),
      }),
    ),
  }),
});

const idempotencyHeader = Type.Object({
  "idempotency-key": Type.Optional(
    Type.String({
      description: `Repeat a send safely: within 24 h the same key returns the first answer and sends nothing. At most ${MAX_IDEMPOTENCY_KEY} characters.`,
    }),
  ),
});

const pingBody = Type.Object(
  {
    dock_id: Type.String({ description: "The Dock ID." }),
    secret_key: Type.String({ description: "The Dock's secret key." }),
    msg: Type.String({
      description: "The notification text, in `format`. Newlines and any Unicode are kept.",
      examples: ["**Build 42** failed on `main`\n[logs](https://ci.example/42)"],
    }),
    ...messageOptionFields,
  },
  {
    examples: [
      {
        dock_id: "3kTMd9Qx7pLr2vNw8YbZc",
        secret_key: "dnsk_…",
        msg: "**Build 42** failed on `main`\n[logs](https://ci.example/42)",
        format: "markdown",
        title: "CI",
        priority: "high",
        tags: ["warning"],
      },
    ],
  },
);

const webhookBody = Type.Object({
  msg: Type.String({
    description:
      "The notification text, in `format`. With Content-Type text/plain (or a form body without a msg field, as `curl -d` sends) the raw body is the text.",
  }),
  ...messageOptionFields,
});

/**
 * What the schema validator checks: the body without the options, which takeOptions has already
 * read, checked and taken out. The full schemas above are the OpenAPI document's (`documented`,
 * see http/docs.ts): compiling validators for options that are never there would only cost
 * start-up work and memory.
 */
const checkedPingBody = Type.Object({
  dock_id: pingBody.properties.dock_id,
  secret_key: pingBody.properties.secret_key,
  msg: pingBody.properties.msg,
});
const checkedWebhookBody = Type.Object({ msg: webhookBody.properties.msg });

/** ntfy's query parameters, for tools that can set neither the body nor headers (see OPTION_SOURCES). */
const webhookQuery = Type.Object(
  Object.fromEntries(
    Object.values(OPTION_SOURCES)
      .flatMap((names) => names.query)
      .map((name) => [name, Type.Optional(Type.String())]),
  ),
);

const HEADER_NOTES: Record<keyof typeof OPTION_SOURCES, string> = {
  title: "The title.",
  priority: "min, low, default, high, urgent (or max), or 1 to 5.",
  tags: "Tags, comma-separated.",
  format: "text, markdown, html or telegram_markdownv2.",
  markdown: "yes: the text is Markdown (ntfy's way to say format markdown).",
  click: "The URL of an Open button.",
  buttons: "URL buttons in ntfy's action syntax: `view, Label, https://…; view, …`, or ntfy's JSON.",
  silent: "true: no sound on arrival.",
  link_preview: "true: show a preview of the first link.",
  protect_content: "true: the message cannot be forwarded or saved.",
};

/** ntfy's headers, for tools that can set headers but not shape a body. */
const webhookHeaders = Type.Object({
  ...idempotencyHeader.properties,
  ...Object.fromEntries(
    (Object.entries(OPTION_SOURCES) as [keyof typeof OPTION_SOURCES, { headers: string[] }][]).map(
      ([option, { headers }]) => [
        headers[0] as string,
        Type.Optional(
          Type.String({
            description: `${HEADER_NOTES[option]}${headers.length > 1 ? ` Also ${headers.slice(1).join(", ")}.` : ""} A body field wins over a header, a header over a query parameter. UTF-8, or RFC 2047 (=?UTF-8?B?…?=).`,
          }),
        ),
      ],
    ),
  ),
});

/** The body as a client sent it, before we know which form it takes. */
type RawBody = Buffer | undefined;

function mediaTypeOf(request: FastifyRequest): string {
  return (request.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
}

function decode(raw: RawBody): string {
  if (raw === undefined) return "";
  if (!isUtf8(raw)) throw new ApiError("invalid_request", "The request body is not valid UTF-8.");
  const text = raw.toString("utf8");
  // A byte order mark is not part of the text (as TextDecoder has it).
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

const JSON_LIKE = new Set(["", "application/json", "application/x-www-form-urlencoded", "text/json"]);

/**
 * Turns the raw body into an object. Forgiving about harmless habits: `curl -d '{…}'` sends JSON
 * labelled as a form, and some clients send no Content-Type at all; real form fields work too.
 */
function parseObject(request: FastifyRequest, allowText: boolean): Record<string, unknown> {
  const mediaType = mediaTypeOf(request);
  if (allowText && mediaType.startsWith("text/") && mediaType !== "text/json") {
    return { msg: decode(request.body as RawBody) };
  }
  if (!JSON_LIKE.has(mediaType) && !mediaType.endsWith("+json")) {
    const accepted = allowText ? "application/json or text/plain" : "application/json";
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
    const params = new URLSearchParams(text);
    // `curl -d 'Backup done'` is a form with no msg field: on /webhook that is the text itself (as
    // ntfy takes it, so ntfy scripts port unchanged); /ping says what to send instead.
    if (allowText && !params.has("msg")) return { msg: text };
    const fields = Object.fromEntries(params);
    // `msg=first&msg=second` would keep one and drop the other without a word.
    for (const name of Object.keys(fields)) {
      if (params.getAll(name).length > 1) {
        throw new ApiError("invalid_request", `${name.slice(0, 64)} is given more than once.`);
      }
    }
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

function checkMessage(msg: string, maxLength: number): void {
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

function idempotencyKeyOf(request: FastifyRequest): string | undefined {
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

/** `Authorization: Basic base64(dock_id:secret_key)`, or null when absent or malformed. */
export function parseBasicAuth(header: string | undefined): { user: string; password: string } | null {
  const match = /^Basic[ \t]+([A-Za-z0-9+/=_-]+)[ \t]*$/i.exec(header ?? "");
  if (!match?.[1]) return null;
  const decoded = Buffer.from(match[1], "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon <= 0) return null;
  return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

const WWW_AUTHENTICATE = { "WWW-Authenticate": 'Basic realm="dock-notify", charset="UTF-8"' };

declare module "fastify" {
  interface FastifyRequest {
    dock: { id: string; name: string } | null;
    /** The message's options, read from the body (and for /webhook the headers and query). */
    messageOptions: MessageOptions | null;
  }
}

const OPTION_NAMES = Object.keys(OPTION_SOURCES);

/** The option problems as the error catalogue's invalid_fields answer. */
function optionsRefused(error: OptionsError): ApiError {
  return new ApiError(
    "invalid_fields",
    `Some fields are not valid: ${error.problems.map((p) => `${p.field}: ${p.message}`).join(" ")}`,
    {},
    error.problems,
  );
}

/**
 * Takes the options out of the body (they are checked here, together with the headers and query
 * for /webhook, so every source gets the same checks and messages; the schema describes them for
 * the OpenAPI document) and leaves the rest for the schema's validation.
 */
function takeOptions(request: FastifyRequest, body: Record<string, unknown>, fromRequest: boolean): void {
  const found = fromRequest
    ? gatherOptions(body, request.headers, request.query as Record<string, unknown>)
    : gatherOptions(body);
  // Only what is there: deleting keys an object does not have would still cost every plain message.
  for (const name of OPTION_NAMES) if (name in body) delete body[name];
  try {
    request.messageOptions = readOptions(found);
  } catch (error) {
    if (error instanceof OptionsError) throw optionsRefused(error);
    throw error;
  }
}

/** The clients' API: POST /ping and POST /webhook (authenticate, store durably, answer 202), and GET /messages/:id. */
export async function sendApi(app: FastifyInstance, options: SendApiOptions): Promise<void> {
  const server = app.withTypeProvider<TypeBoxTypeProvider>();
  const authFailures = perMinuteBuckets(options.authFailuresPerMinute);
  const attempts = authFailures === null ? null : new AttemptLimiter(authFailures);

  // Bodies are parsed by the routes themselves (see parseObject), whatever their Content-Type.
  app.removeAllContentTypeParsers();
  const rawBody = { parseAs: "buffer" as const, bodyLimit: options.maxBodyBytes };
  const keep = (
    _request: FastifyRequest,
    body: Buffer | string,
    done: (error: null, body: unknown) => void,
  ) => done(null, body);
  // Also under its own name: Fastify caches the parser it finds for a named type, while finding
  // the catch-all parses the Content-Type header again on every request.
  app.addContentTypeParser("application/json", rawBody, keep);
  app.addContentTypeParser("*", rawBody, keep);
  app.decorateRequest("dock", null);
  app.decorateRequest("messageOptions", null);

  /** The 429 for a client address with too many failed authentications, if it has. */
  const blockedError = (request: FastifyRequest) => {
    const wait = attempts?.refusedFor(addressKey(request.ip)) ?? 0;
    return wait > 0 ? ApiError.retryAfter("too_many_auth_failures", wait) : undefined;
  };
  // Hooks in callback style: /ping runs them thousands of times a second, and an async hook costs
  // a promise and a trip through the microtask queue each time.
  const refuseIfBlocked = (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) =>
    done(blockedError(request));
  const parseBody =
    (allowText: boolean) =>
    (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
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

  /**
   * One of the address's failed-authentication allowance, taken *before* the credentials are
   * checked (see AttemptLimiter: concurrent guesses cannot outrun the limit, concurrent right
   * requests are never refused for it). An address over its allowance is refused even with the
   * right credentials: otherwise a 429-or-202 answer would tell a guesser which guess was right.
   */
  const beginAttempt = async (request: FastifyRequest): Promise<Attempt> => {
    if (attempts === null) return { right: () => {}, wrong: () => {} };
    const attempt = await attempts.begin(addressKey(request.ip));
    if ("waitSeconds" in attempt) throw ApiError.retryAfter("too_many_auth_failures", attempt.waitSeconds);
    return attempt;
  };

  const basicAuth = async (request: FastifyRequest) => {
    const header = request.headers.authorization;
    // No credentials at all is no guess: many clients (wget, Python's urllib) send them only after
    // this challenge, and must not lock themselves out by doing so.
    if (header === undefined) throw new ApiError("unauthorized", undefined, WWW_AUTHENTICATE);
    const attempt = await beginAttempt(request);
    const credentials = parseBasicAuth(header);
    let dock: { id: string; name: string } | undefined;
    try {
      dock = credentials
        ? await options.docks.authenticate(credentials.user, credentials.password)
        : undefined;
    } catch (error) {
      // Never judged (the database failed): not a failure.
      attempt.right();
      throw error;
    }
    if (!dock) {
      attempt.wrong();
      throw new ApiError("unauthorized", undefined, WWW_AUTHENTICATE);
    }
    attempt.right();
    request.dock = dock;
  };

  /** Stores the message (checking the secret key too when given) and answers 202. */
  const accept = async (
    request: FastifyRequest,
    reply: FastifyReply,
    credentials: { dockId: string; secretKey?: string },
    msg: string,
    endpoint: "ping" | "webhook",
  ) => {
    // /ping's key is checked with the message, in the storing transaction: its attempt is taken now.
    const attempt =
      credentials.secretKey === undefined
        ? { right: () => {}, wrong: () => {} }
        : await beginAttempt(request);
    let content: MessageContent | null = null;
    const given = request.messageOptions;
    // Most messages have no options: they skip the await (the send path runs this per request).
    try {
      if (given !== null && Object.keys(given).length > 0) content = await prepareContent(msg, given);
    } catch (error) {
      // Not a guess at the key: the key was not looked at.
      attempt.right();
      if (error instanceof OptionsError) throw optionsRefused(error);
      throw error;
    }
    let result: Awaited<ReturnType<Intake["accept"]>>;
    try {
      result = await options.intake.accept({
        ...credentials,
        text: msg,
        content,
        idempotencyKey: idempotencyKeyOf(request),
        source: endpoint,
      });
    } catch (error) {
      // Refused for another reason (the Dock's rate, an outage): the key was right, or never judged.
      attempt.right();
      throw error;
    }
    if (result.kind === "unauthorized") {
      attempt.wrong();
      throw new ApiError("unauthorized");
    }
    attempt.right();
    if (result.kind === "replayed") reply.header("Idempotent-Replayed", "true");
    // Context for the request's one log line, written when the response is sent.
    request.logFields = {
      messageId: result.messageId,
      dockId: credentials.dockId,
      subscribers: result.subscribers,
    };
    return reply.code(202).send({ ok: true, message_id: result.messageId, subscribers: result.subscribers });
  };

  server.post(
    "/ping",
    {
      schema: {
        summary: "Send a message (credentials in the JSON body)",
        tags: ["send"],
        headers: idempotencyHeader,
        body: checkedPingBody,
        documented: { body: pingBody },
        response: { 202: accepted, ...errorResponses },
      },
      config: { securityHeaders: "api" },
      onRequest: refuseIfBlocked,
      preValidation: parseBody(false),
    },
    async (request, reply) => {
      const { dock_id, secret_key, msg } = request.body;
      checkMessage(msg, options.maxMessageLength);
      // The key is checked in the transaction that stores the message.
      return accept(request, reply, { dockId: dock_id, secretKey: secret_key }, msg, "ping");
    },
  );

  server.post(
    "/webhook",
    {
      schema: {
        summary: "Send a message (credentials in HTTP Basic authentication)",
        description:
          'User name: the Dock ID; password: the secret key. Body: `{"msg": "…"}` with any of the options, or the raw text with Content-Type text/plain. The options can also come as ntfy\'s headers (`Title`, `Priority`, `Tags`, `Markdown: yes`, `Click`, `Actions`) or query parameters (`?title=…&priority=high`); a body field wins over a header, a header over a query parameter.',
        tags: ["send"],
        security: [{ basic: [] }],
        headers: idempotencyHeader,
        body: checkedWebhookBody,
        documented: { body: webhookBody, headers: webhookHeaders, querystring: webhookQuery },
        response: { 202: accepted, ...errorResponses },
      },
      // Authenticate before reading the body: a wrong key costs us no parsing.
      config: { securityHeaders: "api" },
      onRequest: basicAuth,
      preValidation: parseBody(true),
    },
    async (request, reply) => {
      const { msg } = request.body;
      checkMessage(msg, options.maxMessageLength);
      return accept(request, reply, { dockId: (request.dock as { id: string }).id }, msg, "webhook");
    },
  );

  server.get(
    "/messages/:message_id",
    {
      schema: {
        summary: "A message's delivery state (credentials in HTTP Basic authentication, as for /webhook)",
        tags: ["send"],
        security: [{ basic: [] }],
        params: Type.Object({ message_id: Type.String() }),
        response: {
          200: messageStatus,
          401: errorResponses[401],
          404: { description: "No such message for this Dock.", ...errorBodySchema },
        },
      },
      config: { securityHeaders: "api" },
      onRequest: basicAuth,
    },
    async (request) => {
      if (!MESSAGE_ID_PATTERN.test(request.params.message_id)) {
        throw new ApiError("not_found", "No message with this ID for this Dock.");
      }
      const status = await options.views.status(
        request.params.message_id,
        (request.dock as { id: string }).id,
      );
      // Another Dock's message is answered exactly like a missing one.
      if (!status) throw new ApiError("not_found", "No message with this ID for this Dock.");
      const { counts } = status;
      const state: "pending" | "delivered" | "partially_delivered" | "undelivered" | "no_subscribers" =
        status.subscribers === 0
          ? "no_subscribers"
          : counts.queued > 0
            ? "pending"
            : counts.failed + counts.gone === 0
              ? "delivered"
              : counts.sent > 0
                ? "partially_delivered"
                : "undelivered";
      return {
        ok: true as const,
        message: {
          id: status.id,
          options: status.content?.options ?? {},
          state,
          created_at: new Date(status.createdAt).toISOString(),
          subscribers: status.subscribers,
          counts,
          deliveries: status.deliveries.map((d) => ({
            chat_id: d.chatId,
            state: d.state === "sending" ? ("queued" as const) : d.state,
            attempts: d.attempts,
            last_error: d.lastError,
            telegram_message_ids: d.telegramMessageIds,
            updated_at: new Date(d.updatedAt).toISOString(),
          })),
        },
      };
    },
  );

  for (const url of ["/ping", "/webhook"]) {
    app.route({
      method: ["GET", "HEAD", "PUT", "DELETE", "PATCH", "OPTIONS"],
      url,
      exposeHeadRoute: false,
      schema: { hide: true },
      config: { securityHeaders: "api" },
      handler: async () => {
        throw new ApiError("method_not_allowed", "Use POST.", { Allow: "POST" });
      },
    });
  }
}
