import swagger from "@fastify/swagger";
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
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
    // A route may give the document fuller schemas than its validator needs (`documented`: the
    // send API's options, which it checks itself; see http/send-api.ts).
    transform: ({ schema, url }) => {
      const { documented, ...rest } = (schema ?? {}) as { documented?: Record<string, unknown> };
      return { schema: documented ? { ...rest, ...documented } : rest, url };
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
  // Swagger UI is loaded on the first request for it, not at start: most instances never serve it.
  let ui: Promise<FastifyInstance> | null = null;
  const loadUi = () => {
    ui ??= swaggerUiServer(app.swagger.bind(app)).catch((error: unknown) => {
      ui = null;
      throw error;
    });
    return ui;
  };
  const forward = async (request: FastifyRequest, reply: FastifyReply) =>
    forwardTo(await loadUi(), request, reply);
  app.get("/docs", { schema: { hide: true } }, forward);
  app.get("/docs/*", { schema: { hide: true } }, forward);
  app.addHook("onClose", async () => {
    await (await ui?.catch(() => null))?.close();
  });
  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());
});

/**
 * Swagger UI (@fastify/swagger-ui, its routes at /docs and its files at /docs/static) on a Fastify
 * instance of its own that never listens: a running server takes no new routes, so the service's
 * /docs routes hand their requests to this one. It shows the service's document.
 */
async function swaggerUiServer(document: FastifyInstance["swagger"]): Promise<FastifyInstance> {
  const { default: swaggerUi } = await import("@fastify/swagger-ui");
  const server = Fastify({ logger: false });
  // What Swagger UI asks of @fastify/swagger on its instance: the document.
  await server.register(
    fp(
      async (instance: FastifyInstance) => {
        instance.decorate("swagger", document);
      },
      { name: "@fastify/swagger" },
    ),
  );
  await server.register(swaggerUi, {
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
  await server.ready();
  return server;
}

/** Headers that belong to one connection, not to the answer. */
const HOP_BY_HOP = new Set(["connection", "keep-alive", "transfer-encoding", "content-length", "date"]);

function withoutHopByHop<T extends object>(headers: T): T {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_BY_HOP.has(name))) as T;
}

/**
 * Answers a request with what `ui` answers to it. Its 404 and its errors (a malformed path, a
 * file it cannot read) go to the service's own handlers, as when its routes were the service's.
 */
async function forwardTo(ui: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
  const response = await ui.inject({
    // HEAD too: the service's HEAD route runs this handler and leaves the body out itself.
    method: "GET",
    url: request.url,
    headers: withoutHopByHop(request.headers),
  });
  if (response.statusCode === 404) return reply.callNotFound();
  if (response.statusCode >= 400) {
    let cause: { message?: string; code?: string } = {};
    try {
      cause = response.json();
    } catch {
      cause = { message: response.body };
    }
    throw Object.assign(new Error(cause.message ?? "the API reference failed"), {
      statusCode: response.statusCode,
      code: cause.code,
    });
  }
  reply.code(response.statusCode).headers(withoutHopByHop(response.headers));
  // A redirect or a 304 has no body, and no content type to go with one.
  return response.rawPayload.length > 0 ? reply.send(response.rawPayload) : reply.send();
}
