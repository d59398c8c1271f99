import type { IncomingMessage, ServerResponse } from "node:http";
import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";
import helmet, { type HelmetOptions } from "helmet";

export interface SecurityHeadersOptions {
  /** Only over https may the policy ask browsers to upgrade requests and remember https (HSTS). */
  https: boolean;
  /** The Telegram Login Widget loads a script from telegram.org and an iframe from oauth.telegram.org. */
  loginWidget: boolean;
}

declare module "fastify" {
  interface FastifyContextConfig {
    /**
     * "api": the route answers machines with JSON, never a page. It gets the headers that matter
     * for such answers (OWASP REST Security) instead of the whole set made for the console's pages.
     */
    securityHeaders?: "api";
  }
}

/**
 * Security headers on every answer (helmet), with a strict Content-Security-Policy made for the
 * console: only our own scripts, styles and connections, no inline code, no framing. Pages with
 * other needs set their own policy on their routes: the API reference at /docs (Swagger UI's
 * `staticCSP`) and the sandbox chat page (hashes of its inline script and style).
 *
 * The send API's JSON answers get a short set instead: nothing in them is ever rendered, and on
 * the service's busiest route every header is written, and checked by Node, thousands of times a
 * second (the page set was a tenth of a /ping's cost).
 */
export const securityHeaders = fp(async (app: FastifyInstance, options: SecurityHeadersOptions) => {
  const page = helmetHeaders(helmetOptions(options));
  const api = apiHeaders(options);
  app.addHook("onRequest", (request, reply, done) => {
    reply.headers(request.routeOptions.config.securityHeaders === "api" ? api : page);
    done();
  });
});

/** For JSON nobody renders: not to be sniffed as another type, framed, run as a page, or cached. */
export function apiHeaders(options: SecurityHeadersOptions): Record<string, string> {
  return {
    "content-security-policy": "default-src 'none'; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "cache-control": "no-store",
    ...(options.https ? { "strict-transport-security": "max-age=15552000" } : {}),
  };
}

function helmetOptions(options: SecurityHeadersOptions): HelmetOptions {
  const telegram = options.loginWidget ? ["https://telegram.org"] : [];
  return {
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        "default-src": ["'self'"],
        "script-src": ["'self'", ...telegram],
        "style-src": ["'self'"],
        // data: URLs: the sign-in QR code (an SVG) and the console's icon.
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "font-src": ["'self'"],
        "frame-src": options.loginWidget ? ["https://oauth.telegram.org"] : ["'none'"],
        "frame-ancestors": ["'none'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        ...(options.https ? { "upgrade-insecure-requests": [] } : {}),
      },
    },
    strictTransportSecurity: options.https ? { maxAge: 15552000, includeSubDomains: false } : false,
    referrerPolicy: { policy: "no-referrer" },
  };
}

/**
 * The headers helmet sets, worked out once: they depend only on the options, and building them
 * for every request (as helmet's Fastify plugin does) was a measurable share of a send's cost.
 */
function helmetHeaders(options: HelmetOptions): Record<string, string> {
  const headers: Record<string, string> = {};
  const recorder = {
    setHeader: (name: string, value: string) => {
      headers[name.toLowerCase()] = value;
    },
    removeHeader: () => {},
  };
  helmet(options)({} as IncomingMessage, recorder as unknown as ServerResponse, (error?: unknown) => {
    if (error) throw error;
  });
  return headers;
}
