import { isIP } from "node:net";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import { ApiError } from "./errors.ts";

export interface RequestGuardOptions {
  /** PUBLIC_URL: its host is ours, and so is its origin. */
  publicUrl: string;
  /** ALLOWED_HOSTS: more names the service answers to; "any" switches the Host check off. */
  allowedHosts: string[] | "any";
  /** HOST: the address the service listens on, which its own clients (the bot, in sandbox mode) use. */
  listenHost: string;
  /**
   * Sandbox mode without SANDBOX_ALLOW_REMOTE: the sandbox answers only requests made on this
   * machine. Its bot token is public, so the Telegram webhook is then a browser-facing route too.
   */
  sandboxLocalOnly: boolean;
}

/** Names every machine calls itself: a browser on this machine may always use them. */
const LOOPBACK_NAMES = ["localhost", "127.0.0.1", "::1"];

/**
 * Routes for machines: each authenticates every request itself (a Dock's key, a bearer token,
 * Telegram's secret header) or tells nothing secret, so they answer whatever the Host — clients,
 * probes and scrapers often use an IP address or an internal name.
 */
const MACHINE_ROUTES = new Set([
  "/ping",
  "/webhook",
  "/messages/:message_id",
  "/healthz",
  "/readyz",
  "/metrics",
  "/telegram/webhook",
]);

/** Headers a reverse proxy adds: a request carrying one came from further away than it looks. */
const FORWARDING_HEADERS = ["x-forwarded-for", "forwarded", "x-real-ip"] as const;

/** The host name of a Host header (no port, IPv6 without brackets), lower case. */
function hostName(header: string | undefined): string | null {
  if (header === undefined || header === "") return null;
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(header);
  if (bracketed) return (bracketed[1] as string).toLowerCase();
  return header.replace(/:\d+$/, "").toLowerCase();
}

/** An address of this machine's loopback interface (IPv4, IPv6, or IPv4 written as IPv6). */
function loopbackAddress(address: string): boolean {
  const plain = address.startsWith("::ffff:") ? address.slice("::ffff:".length) : address;
  return plain === "::1" || (isIP(plain) === 4 && plain.startsWith("127."));
}

/**
 * Keeps other web sites and other machines out of the browser-facing parts (the console, the
 * sandbox, the API reference). Decided by the route the request matched — not by its raw URL,
 * which may spell the same path with %-escapes — before anything else runs:
 *
 * - **Host**: only the names in PUBLIC_URL, ALLOWED_HOSTS, HOST and the loopback names. A page on
 *   another site can make its own name resolve to 127.0.0.1 (DNS rebinding) and then read the
 *   answers as its own — the sandbox has no authentication, and would let it act as any person.
 * - **Cross-site requests** to the console API and every sandbox route: refused when the browser
 *   says so (`Sec-Fetch-Site` other than same-origin or none), or, from a browser that does not
 *   say, when the `Origin` is not ours. A plain form post or an image tag needs no CORS to change
 *   state. Machines send neither header and are not affected; the sandbox's chat page may still be
 *   opened from a link anywhere (a navigation), and Telegram's Login Widget may still send the
 *   browser back to its sign-in route.
 * - **The sandbox on this machine only** (sandbox mode, unless SANDBOX_ALLOW_REMOTE): a request
 *   for a loopback name from a loopback address, with no reverse proxy's forwarding header — a
 *   proxy in front would otherwise carry anyone's requests to it.
 */
export const requestGuard = fp(async (app: FastifyInstance, options: RequestGuardOptions) => {
  const publicUrl = new URL(options.publicUrl);
  const listenHost = hostName(options.listenHost) as string;
  const allowed =
    options.allowedHosts === "any"
      ? null
      : new Set([
          hostName(publicUrl.host) as string,
          ...LOOPBACK_NAMES,
          ...options.allowedHosts,
          ...(listenHost === "0.0.0.0" || listenHost === "::" ? [] : [listenHost]),
        ]);

  app.addHook("onRequest", (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
    // The route as registered (`/sandbox/api/users/:id/block`), whatever %-escapes the URL used;
    // undefined when nothing matched (a 404 follows, which changes nothing).
    const route = request.routeOptions.url;
    const sandboxRoute = route !== undefined && (route === "/sandbox" || route.startsWith("/sandbox/"));
    const machine =
      route !== undefined &&
      MACHINE_ROUTES.has(route) &&
      !(options.sandboxLocalOnly && route === "/telegram/webhook");
    if (machine) {
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
    if (sandboxRoute && options.sandboxLocalOnly && !local(request, host)) {
      done(new ApiError("sandbox_not_local"));
      return;
    }
    const kind = route === undefined ? null : crossSiteSensitive(route);
    if (kind !== null && crossSite(request, kind, publicUrl.origin)) {
      done(new ApiError("cross_site_request"));
      return;
    }
    done();
  });
});

/** Where a browser must not be made to send requests by another site. */
function crossSiteSensitive(route: string): "api" | "page" | "widget" | null {
  if (route === "/console/api/sign-in/telegram-widget") return "widget";
  if (route.startsWith("/console/api/")) return "api";
  if (route === "/sandbox" || route === "/sandbox/") return "page";
  if (route.startsWith("/sandbox/")) return "api";
  return null;
}

/** Made on this machine: a loopback name, from a loopback address, through no proxy. */
function local(request: FastifyRequest, host: string | null): boolean {
  if (host === null || !LOOPBACK_NAMES.includes(host)) return false;
  if (!loopbackAddress(request.socket.remoteAddress ?? "")) return false;
  return FORWARDING_HEADERS.every((name) => request.headers[name] === undefined);
}

/** Whether a browser sent this request on another site's behalf (see requestGuard). */
function crossSite(request: FastifyRequest, kind: "api" | "page" | "widget", publicOrigin: string): boolean {
  // Opening the chat page from a link, and Telegram's Login Widget sending the browser back.
  if (kind !== "api" && request.method === "GET" && request.headers["sec-fetch-mode"] === "navigate") {
    return false;
  }
  // A page cannot set Sec-Fetch-Site: when the browser sends it, it decides.
  const site = request.headers["sec-fetch-site"];
  if (site !== undefined) return site !== "same-origin" && site !== "none";
  const origin = request.headers.origin;
  if (origin === undefined) return false;
  return origin !== publicOrigin && origin !== `${request.protocol}://${request.headers.host ?? ""}`;
}
