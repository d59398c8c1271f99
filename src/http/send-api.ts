import { hash } from "node:crypto";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import { type Attempt, AttemptLimiter, addressKey } from "../domain/attempts.ts";
import { DOCK_ID_PATTERN, MESSAGE_ID_PATTERN } from "../domain/ids.ts";
import {
  decodeHeaderValue,
  FORMATS,
  type FormatReader,
  gatherOptions,
  type MessageContent,
  type MessageOptions,
  OPTION_SOURCES,
  OptionsError,
  prepareContent,
  readOptions,
} from "../domain/message-options.ts";
import { may, replacesOnlyOwn, SECRET_KEY, senderOf } from "../domain/principal.ts";
import { CREDENTIAL_PREFIX } from "../domain/secrets.ts";
import { perMinuteBuckets } from "../domain/token-bucket.ts";
import type { Intake } from "../intake.ts";
import type { Inbound } from "../integrations/inbound.ts";
import { scrubToken } from "../log.ts";
import { type CopyChange, changeState } from "../store/copy-changes.ts";
import type { DockCredentials } from "../store/credentials.ts";
import type { DockRepository } from "../store/docks.ts";
import { deadlinePassed } from "../store/faults.ts";
import type { CurrentMessage, MessageChanges } from "../store/message-changes.ts";
import type { MessageStatus, OutboxViews } from "../store/outbox-views.ts";
import type { RefusedCredentials, RefusedRequests } from "../store/refused-requests.ts";
import { CURL, EXAMPLE } from "./api-examples.ts";
import type { BodyBudget } from "./body-budget.ts";
import { toApiError } from "./error-boundary.ts";
import { ApiError, errorAnswer, fieldsRefused } from "./errors.ts";
import {
  detectedFormat,
  INBOUND_FORMAT_LIST,
  type InboundSkip,
  inboundMessage,
  isInboundFormat,
  isPlainMessage,
  isSignedPayload,
  noSuchFormat,
  parsedInbound,
  readInbound,
  signedWith,
  templateTime,
  unreadBody,
  XML_TYPES,
} from "./inbound.ts";
import { type BodyRead, type PayloadThread, readsInThread, type UnreadBody } from "./payload-thread.ts";
import { decode, formFields, JSON_LIKE, mediaTypeOf, type RawBody } from "./request-body.ts";
import {
  accepted,
  checkedPatchBody,
  checkedPingBody,
  checkedWebhookBody,
  deleted,
  deleteErrors,
  editErrors,
  edited,
  idempotencyHeader,
  inboundAnswers,
  inboundBodies,
  inboundParams,
  inboundQuery,
  keyQuery,
  MAX_IDEMPOTENCY_KEY,
  MAX_MESSAGE_KEY,
  messageIdParams,
  messageStatus,
  patchBody,
  pingBody,
  sendErrors,
  signedHeaders,
  statusErrors,
  webhookBody,
  webhookHeaders,
  webhookQuery,
} from "./send-schemas.ts";

export interface SendApiOptions {
  docks: DockRepository;
  intake: Intake;
  views: OutboxViews;
  changes: MessageChanges;
  maxBodyBytes: number;
  /** The integration doors' body limit (tools' payloads are larger than messages). */
  maxInboundBodyBytes: number;
  maxMessageLength: number;
  authFailuresPerMinute: number;
  /**
   * DATABASE_TIMEOUT_SECONDS: a send is answered within it of its body's arrival (plus up to half a
   * second when the database fell silent during the commit), stored or refused with a 503.
   */
  databaseTimeoutMs: number;
  /** Where Docks' templates are rendered and long texts parsed (off the event loop). */
  payloadThread: PayloadThread;
  /** What holds the bodies read before their sender is known (GitHub's signed deliveries). */
  unauthenticatedBodies: BodyBudget;
  /** Where the send doors' refusals are kept for the Docks' consoles. */
  refused: RefusedRequests;
}

/** The send doors, by their route, as a refusal names them (a pattern: never a hook token). */
const DOORS: Record<string, string> = {
  "/ping": "/ping",
  "/webhook": "/webhook",
  "/webhook/:format": "/webhook/{format}",
  "/webhook/:format/:dock_id": "/webhook/{format}/{dock_id}",
  "/hook/:token": "/hook/{token}",
  "/hook/:token/:format": "/hook/{token}/{format}",
};

/** A refusal's message as it is kept: nothing shaped like a secret, and not a whole payload's worth. */
const MAX_REFUSAL_MESSAGE = 500;

/**
 * The Dock a refused request named, if it named one well-formed: the path's, the HTTP Basic user
 * name, /ping's `dock_id`. Read the same way whether or not such a Dock exists.
 */
function claimedDockId(request: FastifyRequest): string | null {
  const candidates = [
    (request.params as Record<string, unknown> | undefined)?.dock_id,
    parseBasicAuth(request.headers.authorization)?.user,
    typeof request.body === "object" && request.body !== null && !Buffer.isBuffer(request.body)
      ? (request.body as Record<string, unknown>).dock_id
      : undefined,
  ];
  for (const candidate of candidates) {
    if (typeof candidate === "string" && DOCK_ID_PATTERN.test(candidate)) return candidate;
  }
  return null;
}

/** The integration format a refused request was read as, or named (only a format the service reads). */
function refusedFormat(request: FastifyRequest): string | null {
  if (request.inboundFormat !== null) return request.inboundFormat;
  const named = [
    (request.params as Record<string, unknown> | undefined)?.format,
    (request.query as Record<string, unknown> | undefined)?.format,
  ];
  return (named.find((format) => isInboundFormat(format)) as string | undefined) ?? null;
}

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

/** A signed body that is not a JSON payload (see isSignedPayload). */
const SIGNED_BODY =
  "A delivery signed with X-Hub-Signature-256 carries a JSON object (as GitHub sends it, as JSON or as a payload= form).";

const WWW_AUTHENTICATE = { "WWW-Authenticate": 'Basic realm="dock-notify", charset="UTF-8"' };

/**
 * The 401 for credentials that are still the docs' and console's placeholders (code copied by
 * selection while the key was hidden): it says what to put there instead of "wrong secret key".
 * Not a guess at anyone's key, so not counted as one.
 */
function placeholderRefusal(
  dockId: string,
  secretKey: string,
  headers?: Record<string, string>,
): ApiError | null {
  // The console's placeholders, and the API reference's (its example Dock ID among them).
  const placeholders = [
    (dockId === "<DOCK_ID>" || dockId === EXAMPLE.dockId) && dockId,
    (secretKey === "<SECRET_KEY>" || secretKey === EXAMPLE.secretKey) && secretKey,
  ];
  const named = placeholders.filter(Boolean);
  if (named.length === 0) return null;
  return new ApiError(
    "unauthorized",
    `${named.join(" and ")} ${named.length === 1 ? "is a placeholder" : "are placeholders"}: put in your Dock's ID and secret key (the console's Copy buttons copy code with them).`,
    headers,
  );
}

declare module "fastify" {
  interface FastifyRequest {
    dock: DockCredentials | null;
    /** The message's options, read from the body (and for /webhook the headers and query). */
    messageOptions: MessageOptions | null;
    /** The message's key, if the sender gave one (body, then X-Key header, then ?key=). */
    messageKey: string | null;
    /** PATCH: the options the sender set to null (back to their defaults). */
    clearedOptions: string[] | null;
    /** The message is its key's last (an integration's resolved alert, see AcceptItem.final). */
    messageFinal: boolean;
    /** An integration's payload with nothing to show: answered without storing anything. */
    inboundSkip: InboundSkip | null;
    /** The integration format the body was read as, if any. */
    inboundFormat: string | null;
    /**
     * SHA-256 (hex) of a body whose X-Hub-Signature-256 matched: such a delivery is accepted once
     * (see signedDeliveryKey), null for any other request.
     */
    signedBody: string | null;
  }
}

/**
 * The idempotency key of a signed delivery (GitHub's, Gitea's, Forgejo's): its body's digest. Its
 * signature never expires and covers only the body, so whoever sees a delivery once (a proxy's
 * log, a leaked request) could post it again, even with another X-GitHub-Delivery (which is not
 * signed): a repeat within the idempotency window (24 h) answers what the first did and sends
 * nothing. GitHub's own redelivery sends the same body, so it is caught too. A client's
 * Idempotency-Key on such a request is not read: it would let a repeat through.
 */
function signedDeliveryKey(digest: string): string {
  return `signed-body:${digest}`;
}

const OPTION_NAMES = Object.keys(OPTION_SOURCES);

/**
 * Takes the options out of the body (they are checked here, together with the headers and query
 * for /webhook, so every source gets the same checks and messages; the schema describes them for
 * the OpenAPI document) and leaves the rest for the schema's validation.
 */
function takeOptions(request: FastifyRequest, body: Record<string, unknown>, fromRequest: boolean): string[] {
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
 * A message's new text and content after a PATCH: `msg` if given, else its text; its options with
 * those given replacing theirs, and those `reset` (given as null, or given as their default) gone.
 */
export async function revisedContent(
  current: CurrentMessage,
  msg: string | undefined,
  given: MessageOptions,
  reset: string[],
  read: FormatReader,
): Promise<{ text: string; content: string | null }> {
  const previous = current.content === null ? {} : (JSON.parse(current.content) as MessageContent).options;
  const options: Record<string, unknown> = { ...previous, ...given };
  for (const name of reset) {
    // `markdown` is another name for the format; the Acknowledge button's label goes with it.
    if (name === "markdown") delete options.format;
    if (name === "ack") delete options.ack_label;
    if (!(name in given)) delete options[name];
  }
  const text = msg ?? current.text;
  try {
    const content = await prepareContent(text, options as MessageOptions, read);
    return { text, content: content === null ? null : JSON.stringify(content) };
  } catch (error) {
    if (error instanceof OptionsError) throw fieldsRefused(error.problems);
    throw error;
  }
}

/** The state of a copy's edit or delete as the API names it. */
function changeBody(change: CopyChange | null) {
  if (change === null) return null;
  return {
    state: changeState(change.state),
    outcome: change.outcome,
    last_error: change.lastError,
    updated_at: new Date(change.updatedAt).toISOString(),
  };
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** GET /messages/:id's answer. */
function statusBody(status: MessageStatus) {
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
    id: status.id,
    key: status.key,
    revision: status.revision,
    revised_at: iso(status.revisedAt),
    deleted_at: iso(status.deletedAt),
    acknowledged:
      status.acknowledged === null
        ? null
        : { by: status.acknowledged.by, at: new Date(status.acknowledged.at).toISOString() },
    options: status.content?.options ?? {},
    state,
    created_at: new Date(status.createdAt).toISOString(),
    subscribers: status.subscribers,
    counts,
    changes: status.changes,
    deliveries: status.deliveries.map((d) => ({
      chat_id: d.chatId,
      state: d.state === "sending" ? ("queued" as const) : d.state,
      attempts: d.attempts,
      last_error: d.lastError,
      telegram_message_ids: d.telegramMessageIds,
      updated_at: new Date(d.updatedAt).toISOString(),
      revision: d.revision,
      unknown_attempts: d.unknownAttempts,
      stray_telegram_message_ids: d.strayTelegramMessageIds,
      edit: changeBody(d.edit),
      delete: changeBody(d.delete),
    })),
    events: status.events.map((e) => ({
      type: e.type,
      state: e.state,
      attempts: e.attempts,
      last_error: e.lastError,
      updated_at: new Date(e.updatedAt).toISOString(),
    })),
  };
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

/** The clients' API: POST /ping and POST /webhook (authenticate, store durably, answer 202), and GET /messages/:id. */
export async function sendApi(app: FastifyInstance, options: SendApiOptions): Promise<void> {
  const server = app.withTypeProvider<TypeBoxTypeProvider>();
  const authFailures = perMinuteBuckets(options.authFailuresPerMinute);
  const attempts = authFailures === null ? null : new AttemptLimiter(authFailures);
  const renderBudget = templateTime();

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
  app.decorateRequest("messageKey", null);
  app.decorateRequest("clearedOptions", null);
  app.decorateRequest("messageFinal", false);
  app.decorateRequest("inboundSkip", null);
  app.decorateRequest("inboundFormat", null);
  app.decorateRequest("signedBody", null);

  /**
   * A send door's 4xx: its log line gets the door, the Dock and the format (the error boundary adds
   * the code), and the Dock's console its entry (RefusedRequests). Every refusal takes the same
   * steps whether or not the Dock it names exists: noting it is counting in memory, and the write
   * that follows, off the request's path, drops the Docks that do not exist.
   */
  app.addHook("onError", (request, _reply, error, done) => {
    const door = DOORS[request.routeOptions.url ?? ""];
    const refusal = door === undefined ? null : toApiError(error, options.maxBodyBytes);
    if (door === undefined || refusal === null || refusal.status < 400 || refusal.status >= 500) {
      done();
      return;
    }
    const dockId = request.dock?.id ?? claimedDockId(request);
    const format = refusedFormat(request);
    const credentials: RefusedCredentials =
      refusal.code === "unauthorized" ? "wrong" : request.dock !== null ? "right" : "unverified";
    request.logFields = {
      ...request.logFields,
      door,
      ...(dockId === null ? {} : { dockId, credentials }),
      ...(format === null ? {} : { format }),
    };
    if (dockId !== null) {
      options.refused.note({
        dockId,
        door,
        format,
        status: refusal.status,
        code: refusal.code,
        message: scrubToken(refusal.message, "").slice(0, MAX_REFUSAL_MESSAGE),
        credentials,
      });
    }
    done();
  });

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
   * Another tool's payload turned into the message the handler stores (docs/integrations.md): the
   * format named (path or ?format=), else the Dock's inbound format, else the one detected.
   */
  const integrate = async (
    request: FastifyRequest,
    named: string | null,
    inbound: Inbound | UnreadBody = unreadBody(request) ?? readInbound(request),
    read?: Extract<BodyRead, { kind: "payload" }>,
  ) => {
    const result = await inboundMessage({
      inbound,
      ...(read === undefined ? {} : { read }),
      named,
      dock: request.dock as DockCredentials,
      docks: options.docks,
      query: (request.query ?? {}) as Record<string, unknown>,
      thread: options.payloadThread,
      renderBudget,
    });
    request.inboundFormat = result.format;
    if (result.kind === "skip") {
      request.inboundSkip = result;
      request.body = { msg: result.reason };
      return;
    }
    request.messageOptions = result.options;
    request.messageKey = result.key;
    request.messageFinal = result.final;
    request.body = { msg: result.msg };
  };
  const integrated =
    (named: (request: FastifyRequest) => string | null) =>
    (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
      let name: string | null;
      try {
        name = named(request);
      } catch (error) {
        done(error as Error);
        return;
      }
      integrate(request, name).then(() => done(), done);
    };

  /**
   * /webhook's body: a message of ours (`{"msg": …}`, text, a form), or — named by ?format=, or
   * detected when the body has no `msg` — another tool's payload. Plain messages, the hot path,
   * pay one field check for the rest.
   */
  const parseWebhook = (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
    const format = (request.query as Record<string, unknown> | undefined)?.format;
    if (isInboundFormat(format)) {
      integrate(request, format).then(() => done(), done);
      return;
    }
    // ?format= names a message's format (markdown…) or a tool's: anything else is neither.
    if (typeof format === "string" && !(FORMATS as readonly string[]).includes(format.trim().toLowerCase())) {
      done(noSuchFormat(format, FORMATS));
      return;
    }
    const unread = unreadBody(request);
    if (unread !== undefined) {
      // A large JSON body is read in the payload thread, a message's fields or a tool's payload alike.
      options.payloadThread
        .readBody(unread, (request.dock as DockCredentials).inbound, true)
        .then((read) => {
          if (read.kind === "payload") return integrate(request, null, unread, read);
          takeOptions(request, read.fields, true);
          request.body = read.fields;
        })
        .then(() => done(), done);
      return;
    }
    const mediaType = mediaTypeOf(request);
    if (mediaType === "application/x-www-form-urlencoded" || XML_TYPES.has(mediaType)) {
      // A form is a message of ours — its msg field, or else the text itself (ntfy's `curl -d`) —
      // unless it is Apprise's form://, or the Dock reads bodies without msg as a format. XML is
      // only ever a tool's (Apprise's xml://). JSON sent as a form (`curl -d '{…}'`, GitHub's
      // `payload=`) is read below like any JSON.
      try {
        const inbound = readInbound(request);
        const fields =
          inbound.mediaType === "application/x-www-form-urlencoded" &&
          !inbound.text.trimStart().startsWith("{")
            ? (inbound.body as Record<string, string>)
            : undefined;
        const dock = request.dock as DockCredentials;
        const tool =
          inbound.body === undefined ||
          (fields !== undefined &&
            !("msg" in fields) &&
            !Object.values(fields).every((value) => value === "") &&
            (dock.inbound !== null || detectedFormat(inbound) === "apprise"));
        if (tool) {
          integrate(request, null, inbound).then(() => done(), done);
          return;
        }
      } catch (error) {
        // Read again below, where the error says what a message should look like.
        if (!(error instanceof ApiError)) {
          done(error as Error);
          return;
        }
      }
    }
    let body: Record<string, unknown>;
    try {
      body = parseObject(request, true);
    } catch (error) {
      done(error as Error);
      return;
    }
    if (!isPlainMessage(body)) {
      integrate(request, null, parsedInbound(request, body)).then(() => done(), done);
      return;
    }
    try {
      takeOptions(request, body, true);
      request.body = body;
    } catch (error) {
      done(error as Error);
      return;
    }
    done();
  };

  /** PATCH's body: like /webhook's, and a null option means "back to its default". */
  const parsePatch = (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
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

  /**
   * One of the address's failed-authentication allowance, taken *before* the credentials are
   * checked (see AttemptLimiter: concurrent guesses cannot outrun the limit, concurrent right
   * requests are never refused for it). An address over its allowance is refused even with the
   * right credentials: otherwise a 429-or-202 answer would tell a guesser which guess was right.
   * Waiting for the attempts being judged ends at `deadline`: they wait on a database that does
   * not answer, and this request is refused as they will be (503).
   */
  const beginAttempt = async (
    request: FastifyRequest,
    deadline = performance.now() + options.databaseTimeoutMs,
  ): Promise<Attempt> => {
    if (attempts === null) return { right: () => {}, wrong: () => {} };
    const attempt = await attempts.begin(addressKey(request.ip), deadline);
    if ("late" in attempt) throw deadlinePassed("waited for the attempts before it to be judged");
    if ("waitSeconds" in attempt) throw ApiError.retryAfter("too_many_auth_failures", attempt.waitSeconds);
    return attempt;
  };

  /**
   * Credentials judged as one attempt of the address's allowance: a Dock found is right (it becomes
   * `request.dock`), none is wrong (the refusal), and a lookup that failed (the database) or
   * threw its own answer was never judged.
   */
  const judge = async (
    request: FastifyRequest,
    lookup: () => Promise<DockCredentials | undefined | null>,
    refusal: () => ApiError,
  ) => {
    const attempt = await beginAttempt(request);
    let dock: DockCredentials | undefined | null;
    try {
      dock = await lookup();
    } catch (error) {
      attempt.right();
      throw error;
    }
    if (!dock) {
      attempt.wrong();
      throw refusal();
    }
    attempt.right();
    request.dock = dock;
  };

  /** Docks whose GitHub deliveries were seen signed with the secret key, each said once in the log. */
  const warnedSecretKeySigners = new Set<string>();
  const signedWithSecretKey = (request: FastifyRequest, dockId: string) => {
    if (warnedSecretKeySigners.has(dockId)) return;
    // Bounded, however many Docks there are: past it, a Dock may be said again.
    if (warnedSecretKeySigners.size >= 10_000) warnedSecretKeySigners.clear();
    warnedSecretKeySigners.add(dockId);
    request.log.warn(
      { dockId },
      "a signed delivery (GitHub, Gitea, Forgejo) was signed with the Dock's secret key, which is deprecated there: create a GitHub credential and make it the webhook's Secret",
    );
  };

  const basicAuth = async (request: FastifyRequest) => {
    const header = request.headers.authorization;
    // No credentials at all is no guess: many clients (wget, Python's urllib) send them only after
    // this challenge, and must not lock themselves out by doing so.
    if (header === undefined) {
      throw new ApiError(
        "unauthorized",
        "No credentials: send the Dock ID and secret key with HTTP Basic authentication (curl -u '<DOCK_ID>:<SECRET_KEY>'), or use the Dock's hook URL.",
        WWW_AUTHENTICATE,
      );
    }
    const credentials = parseBasicAuth(header);
    const placeholder =
      credentials && placeholderRefusal(credentials.user, credentials.password, WWW_AUTHENTICATE);
    if (placeholder) throw placeholder;
    await judge(
      request,
      async () => credentials && (await options.docks.authenticate(credentials.user, credentials.password)),
      () => new ApiError("unauthorized", undefined, WWW_AUTHENTICATE),
    );
  };

  /**
   * The messages' routes (status, edit, delete, the list): Basic authentication, by the secret key
   * or a credential whose scope allows it — a send credential is refused (`403`), and so never
   * sees subscribers' chat ids.
   */
  const manageAuth = async (request: FastifyRequest) => {
    await basicAuth(request);
    if (!may((request.dock as DockCredentials).principal ?? SECRET_KEY, "manage_messages")) {
      throw new ApiError("insufficient_scope");
    }
  };

  /** Stores the message (checking the secret key too when given) and answers 202. */
  const accept = async (
    request: FastifyRequest,
    reply: FastifyReply,
    credentials: { dockId: string; secretKey?: string },
    msg: string,
    endpoint: "ping" | "webhook" | "hook",
  ) => {
    // The body is in: from here the sender is answered within the database's timeout, whatever
    // the database does (waiting for attempts being judged, for earlier batches, for the commit).
    const deadline = performance.now() + options.databaseTimeoutMs;
    const placeholder =
      credentials.secretKey !== undefined && placeholderRefusal(credentials.dockId, credentials.secretKey);
    if (placeholder) throw placeholder;
    // /ping's key is checked with the message, in the storing transaction: its attempt is taken now.
    const attempt =
      credentials.secretKey === undefined
        ? { right: () => {}, wrong: () => {} }
        : await beginAttempt(request, deadline);
    let content: MessageContent | null = null;
    const given = request.messageOptions;
    // Most messages have no options: they skip the await (the send path runs this per request).
    try {
      if (given !== null && Object.keys(given).length > 0)
        content = await prepareContent(msg, given, options.payloadThread.read);
    } catch (error) {
      // Not a guess at the key: the key was not looked at.
      attempt.right();
      if (error instanceof OptionsError) throw fieldsRefused(error.problems);
      throw error;
    }
    let result: Awaited<ReturnType<Intake["accept"]>>;
    try {
      result = await options.intake.accept({
        ...credentials,
        text: msg,
        content,
        ...(request.signedBody === null
          ? { idempotencyKey: idempotencyKeyOf(request) }
          : { idempotencyKey: signedDeliveryKey(request.signedBody), requestHash: request.signedBody }),
        key: request.messageKey,
        final: request.messageFinal,
        ...(request.dock ? { watched: request.dock.watched } : {}),
        ...(request.dock?.principal
          ? { sender: senderOf(request.dock.principal), ownKeysOnly: replacesOnlyOwn(request.dock.principal) }
          : {}),
        deadline,
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
    // A send that replaced a message by its key (or a replay of one) says so, with its revision.
    const replaced =
      result.kind === "replaced"
        ? { revision: result.revision, edits: result.edits }
        : result.kind === "replayed"
          ? result.replaced
          : undefined;
    // Context for the request's one log line, written when the response is sent.
    request.logFields = {
      messageId: result.messageId,
      dockId: credentials.dockId,
      subscribers: result.subscribers,
      ...(replaced ? { replaced: true } : {}),
      ...(request.inboundFormat ? { format: request.inboundFormat } : {}),
    };
    return reply.code(202).send({
      ok: true,
      message_id: result.messageId,
      subscribers: result.subscribers,
      ...(replaced ? { replaced: true, ...replaced } : {}),
      ...(request.inboundFormat ? { format: request.inboundFormat } : {}),
    });
  };

  server.post(
    "/ping",
    {
      schema: {
        summary: "Send a message (credentials in the JSON body)",
        description:
          "The Dock ID and secret key travel in the JSON body with the text (`msg`) and any of the options. `202` means the message is stored: it goes to every subscriber even if the service restarts. `subscribers: 0` is a success too: nobody has subscribed yet.",
        tags: ["Send"],
        curl: CURL.ping,
        headers: idempotencyHeader,
        body: checkedPingBody,
        documented: { body: pingBody },
        response: { 202: accepted(), ...sendErrors },
      },
      config: { securityHeaders: "api" },
      onRequest: refuseIfBlocked,
      preValidation: parseBody(false),
    },
    async (request, reply) => {
      const { dock_id, secret_key, msg } = request.body;
      checkMessage(msg, options.maxMessageLength);
      // A named credential is looked up by its hash before storing (the secret key's path, the hot
      // one, checks the key in the storing transaction). So is the key of a text read in the
      // payload thread: without the right key, a request buys no parsing.
      if (secret_key.startsWith(CREDENTIAL_PREFIX) || readsInThread(msg, request.messageOptions)) {
        const placeholder = placeholderRefusal(dock_id, secret_key);
        if (placeholder) throw placeholder;
        await judge(
          request,
          () => options.docks.authenticate(dock_id, secret_key),
          () => new ApiError("unauthorized"),
        );
        return accept(request, reply, { dockId: dock_id }, msg, "ping");
      }
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
        tags: ["Send"],
        curl: CURL.webhook,
        security: [{ basic: [] }],
        headers: idempotencyHeader,
        body: checkedWebhookBody,
        documented: { body: webhookBody, headers: webhookHeaders, querystring: webhookQuery },
        // A tool's payload (alertmanager, github, …), detected or named by ?format=, is read too.
        response: inboundAnswers(),
      },
      // Authenticate before reading the body: a wrong key costs us no parsing.
      config: { securityHeaders: "api" },
      onRequest: basicAuth,
      preValidation: parseWebhook,
    },
    async (request, reply) => sendWebhook(request, reply, "webhook"),
  );

  /** The integration doors' answer, and /webhook's: the message stored, or a payload skipped. */
  async function sendWebhook(request: FastifyRequest, reply: FastifyReply, endpoint: "webhook" | "hook") {
    const skip = request.inboundSkip;
    if (skip !== null) {
      request.logFields = {
        dockId: (request.dock as DockCredentials).id,
        format: skip.format,
        skipped: true,
      };
      return reply.code(200).send({ ok: true, skipped: true, format: skip.format, reason: skip.reason });
    }
    const { msg } = request.body as { msg: string };
    checkMessage(msg, options.maxMessageLength);
    return accept(request, reply, { dockId: (request.dock as DockCredentials).id }, msg, endpoint);
  }

  const formatParam = (request: FastifyRequest): string => {
    const { format } = request.params as { format: string };
    if (!isInboundFormat(format)) throw noSuchFormat(String(format));
    return format;
  };

  /**
   * /webhook/<format>/<dock_id>: for tools that sign the body or send a token instead of HTTP Basic
   * authentication — GitHub (and Gitea, Forgejo) sign with a GitHub credential in
   * X-Hub-Signature-256, GitLab sends a credential as X-Gitlab-Token. HTTP Basic works here too
   * (for the same Dock).
   */
  const pathAuth = async (request: FastifyRequest) => {
    const { dock_id: dockId } = request.params as { dock_id: string };
    const token = request.headers["x-gitlab-token"];
    // A signature covers the body: checked once it is read (signedAuth).
    if (typeof request.headers["x-hub-signature-256"] === "string") {
      const refused = blockedError(request);
      if (refused) throw refused;
      return;
    }
    if (typeof token !== "string") {
      if (request.headers.authorization === undefined) {
        throw new ApiError(
          "unauthorized",
          "No credentials: GitHub signs its deliveries only when the webhook has a Secret (set it to a GitHub credential of the Dock); GitLab sends its Secret token (a send credential of the Dock); anything else sends HTTP Basic authentication.",
        );
      }
      await basicAuth(request);
      if ((request.dock as DockCredentials).id !== dockId) throw new ApiError("unauthorized");
      return;
    }
    await judge(
      request,
      () => options.docks.authenticate(dockId, token),
      () =>
        new ApiError(
          "unauthorized",
          "Unknown Dock, or X-Gitlab-Token is neither one of the Dock's send credentials nor its secret key.",
        ),
    );
  };

  /**
   * GitHub's `X-Hub-Signature-256` (also Gitea's, Forgejo's), once the body is read: the Dock named
   * in the path, or the hook token's Dock (whose signature, if sent, must match too). Made with one
   * of the Dock's GitHub credentials (a send principal), or with its secret key (deprecated for
   * GitHub: said once per Dock in the log). Requests without one were authenticated before their
   * body was read.
   */
  const signedAuth = async (request: FastifyRequest) => {
    const signature = request.headers["x-hub-signature-256"];
    if (typeof signature !== "string") return;
    const dockId = request.dock?.id ?? (request.params as { dock_id: string }).dock_id;
    await judge(
      request,
      async () => {
        const signers = await options.docks.signersOf(dockId);
        const index = signedWith(request.body as Buffer | undefined, signature, signers.secrets);
        if (index === -1 || signers.dock === undefined) return undefined;
        // (Thrown inside the lookup: a right signature is no failed guess.)
        if (!isSignedPayload(request)) throw new ApiError("invalid_payload", SIGNED_BODY);
        request.signedBody = hash("sha256", request.body as Buffer, "hex");
        const credential = signers.credentials[index];
        if (credential === null || credential === undefined) {
          signedWithSecretKey(request, signers.dock.id);
          return signers.dock;
        }
        await options.docks.credentials.recordUse(credential.id);
        return { ...signers.dock, principal: { kind: "credential", id: credential.id, scope: "github" } };
      },
      () =>
        new ApiError(
          "unauthorized",
          "Unknown Dock, or X-Hub-Signature-256 does not match: set the webhook's Secret to a GitHub credential of the Dock (dngh_…, made in the console's Settings or with dock-notify docks credentials create --scope github).",
        ),
    );
  };

  /** /hook/<token>: the token in the URL is the credential, checked before the body is read. */
  const hookAuth = async (request: FastifyRequest) => {
    const { token } = request.params as { token: string };
    if (token === EXAMPLE.hookToken) {
      throw new ApiError(
        "unauthorized",
        `${token} is a placeholder: put in the Dock's hook token (the console's Integrations shows the Dock's hook URL).`,
      );
    }
    await judge(
      request,
      () => options.docks.authenticateHook(token),
      () =>
        new ApiError(
          "unauthorized",
          token.startsWith("dnsk_")
            ? "That is a secret key, not a hook token: never put the secret key in a URL (rotate it now if this one was shared). Create a hook URL in the console or with dock-notify docks hook-token."
            : "Unknown hook token (it may have been rotated or removed).",
        ),
    );
  };

  const inboundRoute = { tags: ["Integrations"] };

  server.post(
    "/webhook/:format",
    {
      schema: {
        ...inboundRoute,
        summary: "Send another tool's payload (credentials in HTTP Basic authentication)",
        description: `The body as the tool sends it, read as the format named: ${INBOUND_FORMAT_LIST} (docs/integrations.md says what each tool's settings are and what its messages look like). Query parameters (\`?priority=high&tags=…\`) override what the format makes of the payload. A payload with nothing to show (GitHub's ping) is answered \`200\` with \`skipped\`, and nothing is stored.`,
        curl: CURL.webhookFormat,
        response: inboundAnswers("alertmanager"),
        security: [{ basic: [] }],
        params: Type.Object({ format: Type.String() }),
        body: checkedWebhookBody,
        documented: {
          params: inboundParams.format,
          body: inboundBodies.format,
          headers: idempotencyHeader,
          querystring: inboundQuery,
        },
      },
      config: { securityHeaders: "api" },
      bodyLimit: options.maxInboundBodyBytes,
      onRequest: basicAuth,
      preValidation: integrated(formatParam),
    },
    async (request, reply) => sendWebhook(request, reply, "webhook"),
  );

  server.post(
    "/webhook/:format/:dock_id",
    {
      schema: {
        ...inboundRoute,
        summary: "Send another tool's payload, signed or with a token (GitHub, GitLab)",
        description:
          "For tools that cannot send HTTP Basic authentication: GitHub (and Gitea, Forgejo) sign the body with the webhook's secret (`X-Hub-Signature-256`), one of the Dock's GitHub credentials (or, deprecated, its secret key); GitLab sends a send credential (or, deprecated, the secret key) as its secret token (`X-Gitlab-Token`). HTTP Basic authentication for the same Dock works too.",
        curl: CURL.webhookFormatDock,
        response: inboundAnswers("gitlab"),
        params: Type.Object({ format: Type.String(), dock_id: Type.String() }),
        body: checkedWebhookBody,
        documented: {
          params: inboundParams.formatDock,
          body: inboundBodies.formatDock,
          headers: Type.Object({ ...idempotencyHeader.properties, ...signedHeaders.properties }),
          querystring: inboundQuery,
        },
      },
      config: { securityHeaders: "api" },
      bodyLimit: options.maxInboundBodyBytes,
      onRequest: pathAuth,
      // A signed body is read before its signature tells who sent it (pathAuth let it through).
      preParsing: options.unauthenticatedBodies.hook((request) => request.dock === null),
      preValidation: [signedAuth, integrated(formatParam)],
    },
    async (request, reply) => sendWebhook(request, reply, "webhook"),
  );

  for (const url of ["/hook/:token", "/hook/:token/:format"]) {
    // PUT too: ntfy takes both, and `curl -T file` sends PUT.
    server.route({
      method: ["POST", "PUT"],
      url,
      schema: {
        ...inboundRoute,
        summary: url.endsWith(":format")
          ? "Send another tool's payload with the Dock's hook URL, in the format named"
          : "Send with the Dock's hook URL (a message, or a payload read as the Dock's inbound format or detected)",
        description: `The hook token in the path is the credential, for tools that can only be given a URL (Slack-style clients, Uptime Kuma, Home Assistant). It is not the secret key: it can only send (a \`key\` replaces only a message sent through the hook URL), and is rotated on its own in the console. Treat the URL as a secret. PUT works as POST (\`curl -T report.txt\` sends PUT).${
          url.endsWith(":format")
            ? ""
            : " The body is a message as for `/webhook` (JSON, text, a form), or a tool's payload: read as the Dock's inbound format when it has one, else as the format detected."
        }`,
        curl: url.endsWith(":format") ? CURL.hookFormat : CURL.hook,
        response: inboundAnswers(url.endsWith(":format") ? "slack" : undefined),
        params: url.endsWith(":format")
          ? Type.Object({ token: Type.String(), format: Type.String() })
          : Type.Object({ token: Type.String() }),
        body: checkedWebhookBody,
        documented: url.endsWith(":format")
          ? {
              params: inboundParams.hookFormat,
              body: inboundBodies.hookFormat,
              headers: idempotencyHeader,
              querystring: inboundQuery,
            }
          : {
              params: inboundParams.hook,
              body: inboundBodies.hook,
              headers: webhookHeaders,
              querystring: webhookQuery,
            },
      },
      config: { securityHeaders: "api" },
      bodyLimit: options.maxInboundBodyBytes,
      onRequest: [refuseIfBlocked, hookAuth],
      preValidation: [signedAuth, url.endsWith(":format") ? integrated(formatParam) : parseWebhook],
      handler: async (request, reply) => sendWebhook(request, reply, "hook"),
    });
  }

  const dockOf = (request: FastifyRequest) => (request.dock as { id: string }).id;
  /** Also the answer for the commands' `<MESSAGE_ID>` left in: it says what goes there. */
  const noSuchMessage = (messageId?: string) =>
    new ApiError(
      "not_found",
      messageId === "<MESSAGE_ID>"
        ? "<MESSAGE_ID> is a placeholder: put in the message_id a send answered (the console shows each message's ID under Messages)."
        : "No message with this ID for this Dock.",
    );

  /** The Dock's message named in the path (another Dock's is answered exactly like a missing one). */
  const statusOf = async (request: FastifyRequest, messageId: string) => {
    if (!MESSAGE_ID_PATTERN.test(messageId)) throw noSuchMessage(messageId);
    const status = await options.views.status(messageId, dockOf(request));
    if (!status) throw noSuchMessage();
    return { ok: true as const, message: statusBody(status) };
  };

  server.get(
    "/messages/:message_id",
    {
      schema: {
        summary: "A message's delivery state (credentials in HTTP Basic authentication, as for /webhook)",
        description:
          "Where each subscriber's copy stands (queued, sent, failed, gone, with Telegram's error), its edits and deletion, its acknowledgement, and the events sent to the Dock's callback URL. A message is kept RETENTION_DAYS.",
        tags: ["Messages"],
        curl: CURL.messageStatus,
        security: [{ basic: [] }],
        params: messageIdParams,
        documented: { response: { 200: messageStatus, ...statusErrors } },
      },
      config: { securityHeaders: "api" },
      onRequest: manageAuth,
    },
    async (request) => statusOf(request, request.params.message_id),
  );

  server.get(
    "/messages",
    {
      schema: {
        summary: "Find the message that holds a key (credentials in HTTP Basic authentication)",
        description:
          "The Dock's message (not deleted) that was sent, or last replaced, with this `key`; answered as `GET /messages/{message_id}`.",
        tags: ["Messages"],
        curl: CURL.messageByKey,
        security: [{ basic: [] }],
        querystring: keyQuery,
        documented: {
          response: {
            200: messageStatus,
            ...statusErrors,
            400: errorAnswer("No key, or one over 128 characters.", "invalid_request"),
            404: errorAnswer("No message of this Dock holds the key.", "not_found"),
          },
        },
      },
      config: { securityHeaders: "api" },
      onRequest: manageAuth,
    },
    async (request) => {
      // PostgreSQL text cannot hold NUL: no message holds such a key.
      const key = request.query.key;
      const id = key.includes("\u0000") ? undefined : await options.changes.byKey(dockOf(request), key);
      if (id === undefined) throw new ApiError("not_found", "No message of this Dock holds this key.");
      return statusOf(request, id);
    },
  );

  server.patch(
    "/messages/:message_id",
    {
      schema: {
        summary: "Edit a message: every copy already sent is edited in place",
        description:
          "Credentials as for /webhook. Any of `msg` and the options; those left out keep their values, and null sets one back to its default. Copies already sent are edited (a text that now needs more or fewer parts gains or loses messages), copies not sent yet go out in the new form. A copy Telegram can no longer edit (the person deleted it) is sent anew, and its `edit.outcome` says `resent`.",
        tags: ["Messages"],
        curl: CURL.editMessage,
        security: [{ basic: [] }],
        params: messageIdParams,
        body: checkedPatchBody,
        documented: { body: patchBody },
        response: { 202: edited, ...editErrors },
      },
      config: { securityHeaders: "api" },
      onRequest: manageAuth,
      preValidation: parsePatch,
    },
    async (request, reply) => {
      const messageId = request.params.message_id;
      if (!MESSAGE_ID_PATTERN.test(messageId)) throw noSuchMessage(messageId);
      const given = request.body.msg;
      if (given !== undefined) checkMessage(given, options.maxMessageLength);
      const patchOptions = request.messageOptions ?? {};
      if (
        given === undefined &&
        Object.keys(patchOptions).length === 0 &&
        (request.clearedOptions ?? []).length === 0
      ) {
        throw new ApiError(
          "invalid_request",
          "Nothing to change: give msg, or an option (null sets one back to its default).",
        );
      }
      const result = await options.changes.revise(dockOf(request), messageId, async (current) =>
        revisedContent(
          current,
          given,
          patchOptions,
          request.clearedOptions ?? [],
          options.payloadThread.read,
        ),
      );
      if (result.kind === "missing") throw noSuchMessage();
      if (result.kind === "deleted") throw new ApiError("message_deleted");
      request.logFields = { messageId, dockId: dockOf(request), revision: result.revision };
      return reply.code(202).send({
        ok: true as const,
        message_id: messageId,
        revision: result.revision,
        edits: result.edits,
        queued: result.queued,
      });
    },
  );

  server.delete(
    "/messages/:message_id",
    {
      schema: {
        summary: "Delete a message: every copy Telegram still lets the bot delete",
        description:
          "Credentials as for /webhook. Copies sent are deleted (Telegram lets a bot delete only messages under 48 hours old: the status says per copy what could not be deleted and why), copies not sent yet never are. The message's key is free again. Deleting it again answers the same, with nothing more to do.",
        tags: ["Messages"],
        curl: CURL.deleteMessage,
        security: [{ basic: [] }],
        params: messageIdParams,
        response: { 202: deleted, ...deleteErrors },
      },
      config: { securityHeaders: "api" },
      onRequest: manageAuth,
    },
    async (request, reply) => {
      const messageId = request.params.message_id;
      if (!MESSAGE_ID_PATTERN.test(messageId)) throw noSuchMessage(messageId);
      const result = await options.changes.delete(dockOf(request), messageId);
      if (result.kind === "missing") throw noSuchMessage();
      request.logFields = { messageId, dockId: dockOf(request) };
      if (result.kind === "already_deleted") {
        return reply.code(202).send({
          ok: true as const,
          message_id: messageId,
          deleting: 0,
          cancelled: 0,
          already_deleted: true,
        });
      }
      return reply.code(202).send({
        ok: true as const,
        message_id: messageId,
        deleting: result.deleting,
        cancelled: result.cancelled,
        already_deleted: false,
      });
    },
  );

  for (const url of [
    "/ping",
    "/webhook",
    "/webhook/:format",
    "/webhook/:format/:dock_id",
    "/hook/:token",
    "/hook/:token/:format",
  ]) {
    app.route({
      method: url.startsWith("/hook/")
        ? ["GET", "HEAD", "DELETE", "PATCH", "OPTIONS"]
        : ["GET", "HEAD", "PUT", "DELETE", "PATCH", "OPTIONS"],
      url,
      exposeHeadRoute: false,
      schema: { hide: true },
      config: { securityHeaders: "api" },
      handler: async () => {
        const allow = url.startsWith("/hook/") ? "POST, PUT" : "POST";
        throw new ApiError("method_not_allowed", `Use ${allow.replace(", ", " or ")}.`, { Allow: allow });
      },
    });
  }
}
