import type { FastifyRequest } from "fastify";
import { FORMATS } from "../../domain/message-options.ts";
import type { Inbound } from "../../integrations/inbound.ts";
import { ApiError } from "../errors.ts";
import {
  detectedFormat,
  inboundMessage,
  isInboundFormat,
  isPlainMessage,
  noSuchFormat,
  parsedInbound,
  readInbound,
  templateTime,
  unreadBody,
  XML_TYPES,
} from "../inbound.ts";
import type { BodyRead, UnreadBody } from "../payload-thread.ts";
import { mediaTypeOf } from "../request-body.ts";
import { parseObject, takeOptions } from "./body.ts";
import type { SendApiOptions } from "./options.ts";
import { type CallbackHook, dockOf } from "./state.ts";

/*
 * Another tool's payload at a send door (docs/integrations.md): the format named, the Dock's, or
 * the one detected; read (in the payload thread when large), turned into a message by its format
 * (http/inbound.ts, integrations/), and left on the request as if the sender had sent that message.
 */

export interface Integration {
  /** preValidation of a door that names its format (`named` reads it from the request). */
  integrated(named: (request: FastifyRequest) => string | null): CallbackHook;
  /** preValidation of /webhook and /hook/<token>: a message of ours, or a tool's payload. */
  parseWebhook: CallbackHook;
  /** The format in the path, refused (400) unless the service reads it. */
  formatParam(request: FastifyRequest): string;
}

export function integration(options: SendApiOptions): Integration {
  const renderBudget = templateTime();

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
      dock: dockOf(request),
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
    (named: (request: FastifyRequest) => string | null): CallbackHook =>
    (request, _reply, done) => {
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
  const parseWebhook: CallbackHook = (request, _reply, done) => {
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
        .readBody(unread, dockOf(request).inbound, true)
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
        const dock = dockOf(request);
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

  const formatParam = (request: FastifyRequest): string => {
    const { format } = request.params as { format: string };
    if (!isInboundFormat(format)) throw noSuchFormat(String(format));
    return format;
  };

  return { integrated, parseWebhook, formatParam };
}
