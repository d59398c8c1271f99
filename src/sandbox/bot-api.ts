import { setTimeout as sleep } from "node:timers/promises";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ApiError } from "../http/errors.ts";
import { callMethod } from "./bot-methods.ts";
import type { Emulator } from "./emulator.ts";
import { BotApiError, badRequest, forbidden, NOT_FOUND, UNAUTHORIZED } from "./errors.ts";
import { Params } from "./params.ts";

export interface BotApiOptions {
  emulator: Emulator;
  /** Aborted when the server closes: long polls answer, hung calls drop. */
  closing: AbortSignal;
  /**
   * Every call that succeeds is logged at debug, not only polls: the sandbox built into the
   * service, whose Bot API client is the service's own bot (its getMe, its webhook, its command
   * list, every delivery are not news; the service logs what they mean). Failures stay info lines.
   */
  quiet?: boolean;
  /** The bot token it answers to (SandboxOptions.token). */
  token: string;
}

/** Largest Bot API request body; the sandbox takes no files, so text-sized calls are enough. */
const MAX_BODY_BYTES = 1024 * 1024;

const WELL_FORMED_TOKEN = /^\d{1,20}:[A-Za-z0-9_-]{30,}$/;

function mediaTypeOf(request: FastifyRequest): string {
  return (request.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
}

/** The call's parameters from the query string and the body, in any form Telegram accepts. */
async function readParams(request: FastifyRequest): Promise<Record<string, unknown>> {
  const params: Record<string, unknown> = { ...(request.query as Record<string, unknown>) };
  const body = request.body as Buffer | undefined;
  if (body === undefined || body.length === 0) return params;
  const mediaType = mediaTypeOf(request);
  if (mediaType === "multipart/form-data") {
    let form: FormData;
    try {
      form = await new Response(new Uint8Array(body), {
        headers: { "content-type": request.headers["content-type"] as string },
      }).formData();
    } catch {
      throw badRequest("can't parse multipart/form-data request");
    }
    for (const [name, value] of form) {
      if (typeof value === "string") params[name] = value;
    }
    return params;
  }
  const text = body.toString("utf8");
  if (mediaType === "application/x-www-form-urlencoded") {
    return { ...params, ...Object.fromEntries(new URLSearchParams(text)) };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw badRequest("can't parse JSON object");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw badRequest("can't parse JSON object");
  return { ...params, ...(value as Record<string, unknown>) };
}

function chatIdForFaults(params: Record<string, unknown>): number | undefined {
  const value = Number(params.chat_id);
  return Number.isSafeInteger(value) ? value : undefined;
}

/** Waits `ms` (none for 0), or until the server closes. */
async function travel(ms: number, closing: AbortSignal): Promise<void> {
  if (ms > 0) await sleep(ms, undefined, { signal: closing }).catch(() => undefined);
}

/** Ends a call like a network failure: no answer, the connection is simply closed. */
function dropConnection(reply: FastifyReply): void {
  reply.hijack();
  reply.raw.socket?.destroy();
}

/**
 * The Bot API at `/bot<token>/<method>`, exactly where api.telegram.org has it, so any client
 * works with `apiRoot = <PUBLIC_URL>/sandbox`. GET and POST; JSON, form, multipart or query string.
 */
export async function botApi(app: FastifyInstance, options: BotApiOptions): Promise<void> {
  const { emulator, closing } = options;

  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "buffer", bodyLimit: MAX_BODY_BYTES }, (_request, body, done) =>
    done(null, body),
  );

  const answer = (reply: FastifyReply, error: BotApiError) => {
    emulator.stats.errors++;
    if (error.code === 429) emulator.stats.too_many_requests++;
    return reply.code(error.code).send(error.body);
  };

  app.setErrorHandler((error: Error & { statusCode?: number }, request, reply) => {
    // The service's request guard (a foreign Host, a cross-site request): its answer, in its format.
    if (error instanceof ApiError) return reply.code(error.status).headers(error.headers).send(error.body);
    if (error instanceof BotApiError) return answer(reply, error);
    if (error.statusCode === 413) return answer(reply, new BotApiError(413, "Request Entity Too Large"));
    request.log.error({ err: error }, "sandbox Bot API call failed");
    return answer(reply, new BotApiError(500, "Internal Server Error"));
  });

  app.setNotFoundHandler((_request, reply) => answer(reply, NOT_FOUND()));

  // A real network's round trip (SANDBOX_LATENCY_MS), for every answer, an error's too: half on the
  // way to Telegram, before the call is counted against the limits, half on the way back.
  app.addHook("onRequest", async () => travel(emulator.latencyMs / 2, closing));
  app.addHook("onSend", async () => travel(emulator.latencyMs / 2, closing));

  app.route<{ Params: { token: string; method: string } }>({
    method: ["GET", "POST"],
    url: "/bot:token/:method",
    handler: async (request, reply) => {
      const { token, method } = request.params;
      if (token !== options.token)
        return answer(reply, WELL_FORMED_TOKEN.test(token) ? UNAUTHORIZED() : NOT_FOUND());
      const name = method.toLowerCase();
      // A bot long-polls all day: its polls are not news in the log (they are at debug).
      if (name === "getupdates" || options.quiet) request.logQuietly = true;
      const raw = await readParams(request);
      emulator.stats.calls[name] = (emulator.stats.calls[name] ?? 0) + 1;

      const fault = emulator.faults.match(name, chatIdForFaults(raw));
      if (fault?.kind === "server_error") {
        return answer(
          reply,
          new BotApiError(fault.status, fault.status === 502 ? "Bad Gateway" : "Internal Server Error"),
        );
      }
      if (fault?.kind === "forbidden") return answer(reply, forbidden("bot was blocked by the user"));
      if (fault?.kind === "timeout") {
        await sleep(fault.hang_seconds * 1000, undefined, { signal: closing }).catch(() => undefined);
        return dropConnection(reply);
      }
      if (fault?.kind === "slow") {
        await sleep(fault.hang_seconds * 1000, undefined, { signal: closing }).catch(() => undefined);
      }

      // A long poll ends early when the client goes away or the server closes.
      const gone = new AbortController();
      reply.raw.once("close", () => gone.abort());
      const result = await callMethod(
        emulator,
        name,
        new Params(raw),
        AbortSignal.any([gone.signal, closing]),
      );
      return { ok: true, result };
    },
  });
}
