import { type FastifyReply, type FastifyRequest, type FastifyServerOptions, LogController } from "fastify";
import pino, { type DestinationStream } from "pino";

const SECRET_FIELDS = ["secret_key", "secretKey", "token", "botToken"];

/**
 * Paths pino blanks out in a log line: secrets never reach the log (Dock secret keys, Authorization
 * headers, session cookies, bot tokens). They cover the top of a line and every object the service
 * logs (a new kind of object logged with a secret in it needs its parent added here). They are
 * spelled out rather than wildcards (`*.token`): pino runs a wildcard's redaction on every field of
 * every line, which made a third of the cost of the per-request log line.
 */
export const REDACT_PATHS = [
  "req.headers.authorization",
  "req.headers.cookie",
  'req.headers["x-telegram-bot-api-secret-token"]',
  'res.headers["set-cookie"]',
  ...SECRET_FIELDS,
  ...["body", "dock", "err", "error", "config", "options", "payload"].flatMap((parent) =>
    SECRET_FIELDS.map((field) => `${parent}.${field}`),
  ),
];

/** Query parameters whose values are credentials (the Login Widget's `hash` among them). */
const SECRET_PARAMETER =
  /([?&][^=&#]*(?:secret|token|password|passwd|key|hash|auth|session|signature)[^=&#]*=)[^&#]*/gi;

/**
 * A URL as it may be logged. Bot API paths carry the token (`/bot<token>/method`): keep the shape,
 * drop the secret. A credential in the query string (a client putting `secret_key` in the URL of
 * `/ping`, the Login Widget's signature, which works as one for a few minutes) loses its value.
 */
export function maskUrl(url: string): string {
  let masked = url.includes("/bot") ? url.replace(/\/bot\d+:[A-Za-z0-9_-]+/g, "/bot<redacted>") : url;
  if (masked.includes("?")) masked = masked.replace(SECRET_PARAMETER, "$1<redacted>");
  return masked;
}

const destinations = new Map<number, DestinationStream>();

/** Log lines wait at most this long (or until this much is waiting) before they are written. */
const FLUSH_AFTER_MS = 10;
const FLUSH_AT_LENGTH = 64 * 1024;

/**
 * Standard output (or `fd`), written asynchronously by sonic-boom: the write happens off the
 * request's path. Lines are gathered and handed over as one piece every few milliseconds (or once
 * 64 KiB wait): each write is a trip to libuv's thread pool, and waking a pool thread costs the
 * event loop far more than the line itself (profiled at about 4 µs of a /ping at 5,000 requests a
 * second when it was done once per turn of the event loop). What is pending goes out when the
 * process exits, also after an uncaught exception; a signal that ends it without an exit
 * (SIGKILL; SIGHUP and SIGQUIT, which it does not catch) can cut the last lines short. One per
 * file descriptor and process: every logger writing to standard output shares it (and its one
 * exit hook).
 */
export function standardOutput(fd = 1): DestinationStream {
  let destination = destinations.get(fd);
  if (destination === undefined) {
    destination = gathered(fd);
    destinations.set(fd, destination);
  }
  return destination;
}

function gathered(fd: number): DestinationStream {
  const out = pino.destination({ dest: fd, sync: false });
  let pending = "";
  let timer: NodeJS.Timeout | null = null;
  const flush = () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    if (pending === "") return;
    out.write(pending);
    pending = "";
  };
  process.on("exit", () => {
    flush();
    out.flushSync();
  });
  return {
    write(line: string) {
      pending += line;
      if (pending.length >= FLUSH_AT_LENGTH) flush();
      // Unreferenced: waiting lines never keep a finished process alive (the exit hook writes them).
      else if (timer === null) timer = setTimeout(flush, FLUSH_AFTER_MS).unref();
    },
  };
}

export function loggerOptions(level: string, stream?: DestinationStream): FastifyServerOptions["logger"] {
  return {
    level,
    stream: stream ?? standardOutput(),
    redact: { paths: REDACT_PATHS, censor: "[redacted]" },
    serializers: {
      req: (req: { method: string; url: string; ip?: string; id?: string }) => ({
        method: req.method,
        url: maskUrl(req.url),
        remoteAddress: req.ip,
      }),
    },
  };
}

declare module "fastify" {
  interface FastifyRequest {
    /** Added to the request's log line (a route's result: the message ID, the Dock). */
    logFields: Record<string, unknown> | null;
  }
}

/** One log line per request, when it completes, instead of Fastify's two (incoming + completed). */
export class RequestLog extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null, request: FastifyRequest, reply: FastifyReply): void {
    const line = {
      method: request.method,
      url: maskUrl(request.url),
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 10) / 10,
      ip: request.ip,
      ...request.logFields,
    };
    if (error) reply.log.error({ ...line, err: error }, "request failed");
    else reply.log.info(line, "request");
  }
}
