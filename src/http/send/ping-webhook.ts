import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { CREDENTIAL_PREFIX } from "../../domain/secrets.ts";
import { CURL } from "../api-examples.ts";
import { ApiError } from "../errors.ts";
import { readsInThread } from "../payload-thread.ts";
import { placeholderRefusal } from "./auth.ts";
import { checkMessage, parseBody } from "./body.ts";
import type { SendDoors } from "./doors.ts";
import {
  accepted,
  checkedPingBody,
  checkedWebhookBody,
  idempotencyHeader,
  inboundAnswers,
  pingBody,
  sendErrors,
  webhookBody,
  webhookHeaders,
  webhookQuery,
} from "./schemas.ts";

/*
 * Our own doors: POST /ping (credentials in the JSON body) and POST /webhook (HTTP Basic; a
 * message, or a tool's payload detected or named by ?format=).
 */

/** POST /ping and POST /webhook (a Fastify plugin, registered by sendApi). */
export async function pingAndWebhook(
  app: FastifyInstance,
  { options, auth, integration, acceptance }: SendDoors,
): Promise<void> {
  const server = app.withTypeProvider<TypeBoxTypeProvider>();

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
      onRequest: auth.refuseIfBlocked,
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
        await auth.judge(
          request,
          () => options.docks.authenticate(dock_id, secret_key),
          () => new ApiError("unauthorized"),
        );
        return acceptance.accept(request, reply, { dockId: dock_id }, msg, "ping");
      }
      // The key is checked in the transaction that stores the message.
      return acceptance.accept(request, reply, { dockId: dock_id, secretKey: secret_key }, msg, "ping");
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
      onRequest: auth.sendAuth,
      preValidation: integration.parseWebhook,
    },
    async (request, reply) => acceptance.sendWebhook(request, reply, "webhook"),
  );
}
