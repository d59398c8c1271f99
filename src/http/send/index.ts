import type { FastifyInstance, FastifyRequest } from "fastify";
import { ApiError } from "../errors.ts";
import { acceptance } from "./accept.ts";
import { authentication } from "./auth.ts";
import type { SendDoors } from "./doors.ts";
import { integration } from "./integrate.ts";
import { integrationDoors } from "./integration-doors.ts";
import { messageRoutes } from "./messages.ts";
import type { SendApiOptions } from "./options.ts";
import { pingAndWebhook } from "./ping-webhook.ts";
import { noteRefusals } from "./refusals.ts";
import { decorateSendState } from "./state.ts";

/*
 * The clients' API (docs/api.md): the send doors and the messages' routes, one Fastify plugin per
 * door. A request goes through its door's hooks in this order — onRequest authenticates when the
 * credentials are in the headers or path (auth.ts); preValidation checks a signature, which covers
 * the body (auth.ts), then reads the body (body.ts, or integrate.ts for a tool's payload); and the
 * handler stores the message (accept.ts) — each hook leaving what it found on the request
 * (state.ts).
 */

/** POST /ping, /webhook and the integration doors (authenticate, store durably, answer 202), and /messages. */
export async function sendApi(app: FastifyInstance, options: SendApiOptions): Promise<void> {
  // Bodies are parsed by the routes themselves (see body.ts parseObject), whatever their Content-Type.
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
  decorateSendState(app);
  noteRefusals(app, options);

  const auth = authentication(options);
  const doors: SendDoors = {
    options,
    auth,
    integration: integration(options),
    acceptance: acceptance(options, auth),
  };
  // Children of this plugin: each inherits the parsers, the request's fields and the refusals'
  // hook set above.
  await app.register(pingAndWebhook, doors);
  await app.register(integrationDoors, doors);
  await app.register(messageRoutes, doors);
  await app.register(wrongMethods);
}

/** A send door asked with another method: 405 naming the methods it takes. */
async function wrongMethods(app: FastifyInstance): Promise<void> {
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
