import {
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
  LogController,
} from "fastify";
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
 * A hook token in its path (whatever a client made of it), or any of a Dock's secrets anywhere: its
 * secret key, hook token, signing secret, a credential's or a GitHub credential's secret.
 */
const HOOK_OR_KEY = /(\/hook\/)[^/?#]*|()\bdn(?:sk|hk|ss|sc|gh)_[A-Za-z0-9]+/g;

/**
 * A start payload that carries a token: a console sign-in, the claim link, an invitation (to own
 * Docks, or to co-own one), a Dock's invite link.
 */
const SIGN_IN_PAYLOAD = /([?&]start=(?:login|claim|invite|coown|join)_)[^&#]*/g;

/** A bot token anywhere (`123456:AAE…`, Telegram's shape), in a path, a query string or a value. */
const BOT_TOKEN = /(?<!\d)\d{1,20}:[A-Za-z0-9_-]{30,}/g;

/**
 * A URL as it may be logged. Bot API paths carry the token (`/bot<token>/method`), hook URLs the
 * Dock's hook token (`/hook/<token>`): keep the shape, drop the secret. A credential in the query string (a client putting `secret_key` in the URL of
 * `/ping`, the Login Widget's signature, which works as one for a few minutes) loses its value.
 */
export function maskUrl(raw: string): string {
  // Percent-encoded, a path still reaches its route (`/%68ook/…`, `/bot123%3AAAE…`): masked as it is read.
  const url = raw.includes("%") ? decodedUrl(raw) : raw;
  let masked = url.includes("/bot") ? url.replace(/\/bot\d+:[A-Za-z0-9_-]+/g, "/bot<redacted>") : url;
  if (masked.includes(":")) masked = masked.replace(BOT_TOKEN, "<redacted>");
  // A Dock's hook URL (`/hook/<token>`) is its credential; a secret key pasted into a path is one too.
  if (masked.includes("/hook/") || masked.includes("dn"))
    masked = masked.replace(HOOK_OR_KEY, "$1<redacted>");
  if (masked.includes("?")) {
    masked = masked.replace(SECRET_PARAMETER, "$1<redacted>");
    // A sign-in, claim, invitation or invite link opened in the sandbox
    // (`/sandbox?start=invite_<token>`): the token is a credential.
    masked = masked.replace(SIGN_IN_PAYLOAD, "$1<redacted>");
  }
  return masked;
}

/** What a credential is spelled with: letters, digits, `_`, `-`, and the colon of a bot token. */
const CREDENTIAL_CHARACTER = /^[A-Za-z0-9_:-]$/;

/**
 * An escape of a credential's character, escaped again any number of times (`%3A`, `%3a`,
 * `%253A`, `%41` for `A`): its `%25`s, then the character's own two hex digits.
 */
const ESCAPED = /%(?:25)*([0-9A-Fa-f]{2})/g;

/**
 * The URL with every spelling of a credential's characters undone, so that the patterns above see
 * a token however a client escaped it: decodeURI leaves reserved characters escaped (`%3A` stays
 * `%3A`), and a route decodes them. Other escapes stay as they were (an `&` or `=` decoded would
 * cut a query value in two, and the masking would then keep its second half).
 */
function decodedUrl(url: string): string {
  let readable: string;
  try {
    readable = decodeURI(url);
  } catch {
    // Not valid percent-encoding (as a whole): no route reads it, but its escapes are still undone.
    readable = url;
  }
  return readable.replace(ESCAPED, (written, hex: string) => {
    const character = String.fromCharCode(Number.parseInt(hex, 16));
    return CREDENTIAL_CHARACTER.test(character) ? character : written;
  });
}

/**
 * A text that came back from Telegram (an error's description, a network error's message), made
 * safe to log, store or show: a Bot API server may echo the request's path, and with it the bot
 * token. The token, its secret half and any `/bot<token>` path are cut out.
 */
export function scrubToken(text: string, token: string): string {
  let clean = text;
  if (token !== "") {
    clean = clean.replaceAll(token, "<redacted>");
    const secret = token.slice(token.indexOf(":") + 1);
    if (secret.length >= 16) clean = clean.replaceAll(secret, "<redacted>");
  }
  return maskUrl(clean);
}

const destinations = new Map<number, DestinationStream & { drained(): Promise<void> }>();

/** How long flushLogs waits for the last writes at most. */
const DRAIN_WAIT_MS = 2000;

/**
 * Writes every log line still waiting and resolves once they are written (or after 2 s): call it
 * before `process.exit` on a planned stop, so the last lines go out in order. The exit hook still
 * writes whatever is left, synchronously, as a fallback (a crash, an exit nobody planned).
 */
export async function flushLogs(): Promise<void> {
  await Promise.all([...destinations.values()].map((destination) => destination.drained()));
}

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

function gathered(fd: number): DestinationStream & { drained(): Promise<void> } {
  const out = pino.destination({ dest: fd, sync: false });
  let pending = "";
  let timer: NodeJS.Timeout | null = null;
  // Lines handed to sonic-boom and not yet written ("drain" says all are).
  let writing = false;
  out.on("drain", () => {
    writing = false;
  });
  const flush = () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    if (pending === "") return;
    writing = true;
    out.write(pending);
    pending = "";
  };
  process.on("exit", () => {
    if (timer !== null) clearTimeout(timer);
    // What sonic-boom holds, then what waits here, both written synchronously: an asynchronous
    // write started now (as flush would) waits for a thread of libuv's pool, and on a loaded
    // machine the process was gone before it ran, taking the last lines with it. (A write already
    // in that pool may still land after these: flushLogs before a planned exit avoids that.)
    try {
      out.flushSync();
      if (pending !== "") pino.destination({ dest: fd, sync: true }).write(pending);
    } catch {
      // Nowhere left to write (the reader of a pipe went away): nothing more to do.
    }
    pending = "";
  });
  return {
    drained() {
      flush();
      if (!writing) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const timeout = setTimeout(resolve, DRAIN_WAIT_MS);
        out.once("drain", () => {
          clearTimeout(timeout);
          resolve();
        });
      });
    },
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
    /**
     * A routine request, logged at debug when it succeeds: the bot's long polls of the sandbox
     * (getUpdates), one every few seconds even when nothing happens; the console's reads (see
     * `quietly`).
     */
    logQuietly: boolean;
  }
}

/** The request properties RequestLog reads; for a server that uses it as its logController. */
export function decorateRequestLog(server: FastifyInstance): void {
  server.decorateRequest("logFields", null);
  server.decorateRequest("logQuietly", false);
}

/**
 * An onRequest hook for a route a page asks often with nothing worth an info line when it goes
 * well: the console's live stream and the reads it prompts, the sign-in page's check every
 * second. Its request line is logged at debug when it succeeds; a failure is an info line as any.
 */
export function quietly(request: FastifyRequest, _reply: FastifyReply, done: () => void): void {
  request.logQuietly = true;
  done();
}

/** One log line per request, when it completes, instead of Fastify's two (incoming + completed). */
export class RequestLog extends LogController {
  override incomingRequest(): void {}

  // Fastify's default 404 logs the raw URL (a bot token in `/bot<token>/…` with it); the request's
  // own line (requestCompleted) already says 404, with the URL masked.
  override routeNotFound(): void {}

  // A routine stream the browser closed (the console's live stream when its tab closes) is part of
  // the routine: logged like its request line.
  override streamError(error: Error, request: FastifyRequest, reply: FastifyReply): void {
    const code = (error as { code?: unknown }).code;
    if (request.logQuietly && code === "ERR_STREAM_PREMATURE_CLOSE") {
      reply.log.debug({ url: maskUrl(request.url) }, "stream closed by the client");
    } else super.streamError(error, request, reply);
  }

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
    else if (request.logQuietly && reply.statusCode < 400) reply.log.debug(line, "request");
    else reply.log.info(line, "request");
  }
}
