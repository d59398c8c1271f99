import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import { ApiError } from "./errors.ts";

export interface RequestGuardOptions {
  /** PUBLIC_URL: its host is ours, and so is its origin. */
  publicUrl: string;
  /** ALLOWED_HOSTS: more names the service answers to; "any" switches the Host check off. */
  allowedHosts: string[] | "any";
}

/** Names every machine calls itself: a browser on this machine may always use them. */
const LOOPBACK_NAMES = ["localhost", "127.0.0.1", "::1"];

/**
 * Endpoints for machines: each authenticates every request itself (a Dock's key, a bearer token,
 * Telegram's secret header) or tells nothing secret, so they answer whatever the Host — clients,
 * probes and scrapers often use an IP address or an internal name.
 */
const MACHINE_PATHS = new Set(["/ping", "/webhook", "/healthz", "/readyz", "/metrics", "/telegram/webhook"]);

/** Where a browser must not be made to send requests by another site. */
function crossSiteSensitive(path: string): "api" | "page" | null {
  if (path.startsWith("/console/api/")) return "api";
  if (path === "/sandbox" || path === "/sandbox/") return "page";
  if (path.startsWith("/sandbox/")) return "api";
  return null;
}

/** The host name of a Host header (no port, IPv6 without brackets), lower case. */
function hostName(header: string | undefined): string | null {
  if (header === undefined || header === "") return null;
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(header);
  if (bracketed) return (bracketed[1] as string).toLowerCase();
  return header.replace(/:\d+$/, "").toLowerCase();
}

/**
 * Keeps other web sites out of the browser-facing parts (the console, the sandbox, the API
 * reference). Two checks, both before anything else runs:
 *
 * - **Host**: only the names in PUBLIC_URL, ALLOWED_HOSTS and the loopback names. A page on
 *   another site can make its own name resolve to 127.0.0.1 (DNS rebinding) and then read the
 *   answers as its own — the sandbox has no authentication, and would let it act as any person.
 * - **Cross-site requests** to the console API and every sandbox route: refused when the browser
 *   says so (`Sec-Fetch-Site` other than same-origin or none) or the `Origin` is not ours. A plain
 *   form post or an image tag needs no CORS to change state. Machines send neither header and are
 *   not affected; the sandbox's chat page may still be opened from a link anywhere (a navigation),
 *   and Telegram's Login Widget may still send the browser back to its sign-in route.
 */
export const requestGuard = fp(async (app: FastifyInstance, options: RequestGuardOptions) => {
  const publicUrl = new URL(options.publicUrl);
  const allowed =
    options.allowedHosts === "any"
      ? null
      : new Set([hostName(publicUrl.host) as string, ...LOOPBACK_NAMES, ...options.allowedHosts]);

  app.addHook("onRequest", (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
    const path = request.url.split("?", 1)[0] as string;
    if (MACHINE_PATHS.has(path) || path.startsWith("/messages/")) {
      done();
      return;
    }
    const host = hostName(request.headers.host);
    if (allowed !== null && (host === null || !allowed.has(host))) {
      done(
        new ApiError(
          "host_not_allowed",
          `This service does not answer for the host ${JSON.stringify((request.headers.host ?? "").slice(0, 100))}; open it at ${publicUrl.origin} (or add the name to ALLOWED_HOSTS).`,
        ),
      );
      return;
    }
    const sensitive = crossSiteSensitive(path);
    if (sensitive !== null && crossSite(request, sensitive, publicUrl.origin)) {
      done(new ApiError("cross_site_request"));
      return;
    }
    done();
  });
});

/** Whether a browser sent this request on another site's behalf (see requestGuard). */
function crossSite(request: FastifyRequest, kind: "api" | "page", publicOrigin: string): boolean {
  const site = request.headers["sec-fetch-site"];
  const navigation = request.method === "GET" && request.headers["sec-fetch-mode"] === "navigate";
  // Opening the chat page from a link, and Telegram's Login Widget sending the browser back.
  if (navigation && (kind === "page" || request.url.startsWith("/console/api/sign-in/telegram-widget"))) {
    return false;
  }
  if (site !== undefined && site !== "same-origin" && site !== "none") return true;
  const origin = request.headers.origin;
  if (origin === undefined) return false;
  return origin !== publicOrigin && origin !== `${request.protocol}://${request.headers.host ?? ""}`;
}
