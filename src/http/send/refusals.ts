import type { FastifyInstance, FastifyRequest } from "fastify";
import { DOCK_ID_PATTERN } from "../../domain/ids.ts";
import { scrubToken } from "../../runtime/log.ts";
import type { RefusedCredentials } from "../../store/refused-requests.ts";
import { toApiError } from "../error-boundary.ts";
import { isInboundFormat } from "../inbound.ts";
import { parseBasicAuth } from "./auth.ts";
import type { SendApiOptions } from "./options.ts";

/*
 * Every send door's refusal (a 4xx) in the request's log line and in the Dock's console: which
 * door, which Dock it named, in which format, with which credentials (RefusedRequests).
 */

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

export function noteRefusals(app: FastifyInstance, options: SendApiOptions): void {
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
}
