import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { Type } from "typebox";
import { CURL } from "../api-examples.ts";
import { INBOUND_FORMAT_LIST } from "../inbound.ts";
import type { SendDoors } from "./doors.ts";
import {
  checkedWebhookBody,
  idempotencyHeader,
  inboundAnswers,
  inboundBodies,
  inboundParams,
  inboundQuery,
  signedHeaders,
  webhookHeaders,
  webhookQuery,
} from "./schemas.ts";

/*
 * The integrations' doors (docs/integrations.md): other tools' payloads, in the format named in
 * the path, authenticated as each tool can — HTTP Basic, GitHub's signature or GitLab's token
 * (/webhook/<format>/<dock_id>), or a hook token in the URL (/hook/<token>[/<format>]).
 */

/** The integration doors (a Fastify plugin, registered by sendApi). */
export async function integrationDoors(
  app: FastifyInstance,
  { options, auth, integration, acceptance }: SendDoors,
): Promise<void> {
  const server = app.withTypeProvider<TypeBoxTypeProvider>();

  const inboundRoute = { tags: ["Integrations"] };

  server.post(
    "/webhook/:format",
    {
      schema: {
        ...inboundRoute,
        summary: "Send another tool's payload (credentials in HTTP Basic authentication)",
        description: `The body as the tool sends it, read as the format named: ${INBOUND_FORMAT_LIST} (docs/integrations.md says what each tool's settings are and what its messages look like). Query parameters (\`?priority=high&tags=…\`) override what the format makes of the payload. A payload with nothing to show (GitHub's ping) is answered \`200\` with \`skipped\`, and nothing is stored.`,
        curl: CURL.webhookFormat,
        response: inboundAnswers("alertmanager"),
        security: [{ basic: [] }],
        params: Type.Object({ format: Type.String() }),
        body: checkedWebhookBody,
        documented: {
          params: inboundParams.format,
          body: inboundBodies.format,
          headers: idempotencyHeader,
          querystring: inboundQuery,
        },
      },
      config: { securityHeaders: "api" },
      bodyLimit: options.maxInboundBodyBytes,
      onRequest: auth.sendAuth,
      preValidation: integration.integrated(integration.formatParam),
    },
    async (request, reply) => acceptance.sendWebhook(request, reply, "webhook"),
  );

  server.post(
    "/webhook/:format/:dock_id",
    {
      schema: {
        ...inboundRoute,
        summary: "Send another tool's payload, signed or with a token (GitHub, GitLab)",
        description:
          "For tools that cannot send HTTP Basic authentication: GitHub (and Gitea, Forgejo) sign the body with the webhook's secret (`X-Hub-Signature-256`), one of the Dock's GitHub credentials (or, deprecated, its secret key); GitLab sends a send credential (or, deprecated, the secret key) as its secret token (`X-Gitlab-Token`). HTTP Basic authentication for the same Dock works too.",
        curl: CURL.webhookFormatDock,
        response: inboundAnswers("gitlab"),
        params: Type.Object({ format: Type.String(), dock_id: Type.String() }),
        body: checkedWebhookBody,
        documented: {
          params: inboundParams.formatDock,
          body: inboundBodies.formatDock,
          headers: Type.Object({ ...idempotencyHeader.properties, ...signedHeaders.properties }),
          querystring: inboundQuery,
        },
      },
      config: { securityHeaders: "api" },
      bodyLimit: options.maxInboundBodyBytes,
      onRequest: auth.pathAuth,
      // A signed body is read before its signature tells who sent it (pathAuth let it through).
      preParsing: options.unauthenticatedBodies.hook((request) => request.dock === null),
      preValidation: [auth.signedAuth, integration.integrated(integration.formatParam)],
    },
    async (request, reply) => acceptance.sendWebhook(request, reply, "webhook"),
  );

  for (const url of ["/hook/:token", "/hook/:token/:format"]) {
    // PUT too: ntfy takes both, and `curl -T file` sends PUT.
    server.route({
      method: ["POST", "PUT"],
      url,
      schema: {
        ...inboundRoute,
        summary: url.endsWith(":format")
          ? "Send another tool's payload with the Dock's hook URL, in the format named"
          : "Send with the Dock's hook URL (a message, or a payload read as the Dock's inbound format or detected)",
        description: `The hook token in the path is the credential, for tools that can only be given a URL (Slack-style clients, Uptime Kuma, Home Assistant). It is not the secret key: it can only send (a \`key\` replaces only a message sent through the hook URL), and is rotated on its own in the console. Treat the URL as a secret. PUT works as POST (\`curl -T report.txt\` sends PUT).${
          url.endsWith(":format")
            ? ""
            : " The body is a message as for `/webhook` (JSON, text, a form), or a tool's payload: read as the Dock's inbound format when it has one, else as the format detected."
        }`,
        curl: url.endsWith(":format") ? CURL.hookFormat : CURL.hook,
        response: inboundAnswers(url.endsWith(":format") ? "slack" : undefined),
        params: url.endsWith(":format")
          ? Type.Object({ token: Type.String(), format: Type.String() })
          : Type.Object({ token: Type.String() }),
        body: checkedWebhookBody,
        documented: url.endsWith(":format")
          ? {
              params: inboundParams.hookFormat,
              body: inboundBodies.hookFormat,
              headers: idempotencyHeader,
              querystring: inboundQuery,
            }
          : {
              params: inboundParams.hook,
              body: inboundBodies.hook,
              headers: webhookHeaders,
              querystring: webhookQuery,
            },
      },
      config: { securityHeaders: "api" },
      bodyLimit: options.maxInboundBodyBytes,
      onRequest: [auth.refuseIfBlocked, auth.hookAuth],
      preValidation: [
        auth.signedAuth,
        url.endsWith(":format") ? integration.integrated(integration.formatParam) : integration.parseWebhook,
      ],
      handler: async (request, reply) => acceptance.sendWebhook(request, reply, "hook"),
    });
  }
}
