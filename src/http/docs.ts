import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";
import { ERRORS } from "./errors.ts";

/** The part of the OpenAPI document transformObject edits. */
type OpenApiDocument = {
  paths?: Record<string, { post?: { requestBody?: { content?: Record<string, unknown> } } }>;
};

const errorTable = Object.entries(ERRORS)
  .map(([code, { status, message }]) => `| \`${code}\` | ${status} | ${message} |`)
  .join("\n");

/**
 * The OpenAPI 3.1 document, generated from the route schemas, at /openapi.json, and a browsable
 * reference at /docs. Registered before the routes so it sees them all.
 */
export const docs = fp(async (app: FastifyInstance, options: { publicUrl: string; version: string }) => {
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "Dock Notify",
        version: options.version,
        description: [
          "Send notifications to the Telegram subscribers of a Dock.",
          "",
          'Every error answers `{"ok": false, "error": {"code": "…", "message": "…"}}` with one of these codes:',
          "",
          "| code | status | meaning |",
          "|---|---|---|",
          errorTable,
        ].join("\n"),
      },
      servers: [{ url: options.publicUrl }],
      components: { securitySchemes: { basic: { type: "http", scheme: "basic" } } },
    },
    // What the route schemas cannot say: /webhook also takes the raw text as text/plain (its
    // body is turned into {"msg": …} before validation, so the schema describes only JSON).
    transformObject: (documents) => {
      const document = "openapiObject" in documents ? documents.openapiObject : documents.swaggerObject;
      const body = (document as OpenApiDocument).paths?.["/webhook"]?.post?.requestBody;
      if (body?.content) {
        body.content["text/plain"] = {
          schema: { type: "string", description: "The message itself: the whole body is the text." },
        };
      }
      return document;
    },
  });
  await app.register(swaggerUi, {
    routePrefix: "/docs",
    staticCSP: true,
    uiHooks: {
      // The UI's own redirect from its index.html keeps a query string in the path it rewrites,
      // and so sends `/docs/static/index.html?…` to itself for ever: lead there ourselves.
      onRequest: (request, reply, done) => {
        if (request.url.split("?", 1)[0] === "/docs/static/index.html") {
          void reply.redirect("/docs/", 302);
          return;
        }
        done();
      },
    },
  });
  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());
});
