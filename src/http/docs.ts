import swagger from "@fastify/swagger";
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import { EXAMPLE, PUBLIC_URL_PLACEHOLDER } from "./api-examples.ts";
import { ERRORS } from "./errors.ts";

/** An operation, as transformObject edits it. */
interface Operation {
  operationId?: string;
  parameters?: Parameter[];
  requestBody?: { content?: Record<string, unknown> };
}

/** An operation's parameter, as transformObject edits it. */
interface Parameter {
  in?: string;
  required?: boolean;
  description?: string;
  example?: unknown;
  schema?: Record<string, unknown>;
}

/** The part of the OpenAPI document transformObject edits. */
type OpenApiDocument = { paths?: Record<string, Record<string, Operation>> };

/**
 * The console's own API (a signed-in browser's cookie session and CSRF token) is not the public
 * API: docs/console.md describes it, and no route under this prefix enters the document, whatever
 * routes the console gains.
 */
const INTERNAL_PREFIX = "/console/";

/** The reference's sections, in their order. Every route names one of these (a test checks). */
const API_TAGS = [
  {
    name: "Send",
    description:
      "Send a notification to every subscriber of a Dock: `/ping` with the credentials in the JSON body, `/webhook` with HTTP Basic authentication (the Dock ID as user name, the secret key as password).",
  },
  {
    name: "Messages",
    description:
      "A message after its send: its delivery state per subscriber, found by ID or by its key; edit it or delete it in every chat.",
  },
  {
    name: "Integrations",
    description:
      "Other tools' own payloads — Prometheus Alertmanager, Grafana, GitHub, GitLab, Uptime Kuma, Apprise, Slack-style webhooks, ntfy, or any JSON through the Dock's template — posted unchanged and turned into messages (docs/integrations.md).",
  },
  {
    name: "Operations",
    description: "Liveness, readiness and Prometheus metrics, for orchestrators and scrapers.",
  },
];

/**
 * Bodies that may be the raw text itself (a route's schema describes only JSON, into which the
 * text is turned before validation): the paths and methods, and what the text is.
 */
const TEXT_BODIES: [path: string, methods: string[], description: string, example: string][] = [
  [
    "/webhook",
    ["post"],
    "The message itself: the whole body is the text.",
    "Backup of db-1 failed: disk full",
  ],
  [
    "/hook/{token}",
    ["post", "put"],
    "The message itself: the whole body is the text.",
    "Backup of db-1 finished",
  ],
  ["/messages/{message_id}", ["patch"], "The new text: the whole body is it.", "Deploy of api finished ✅"],
];

const errorTable = Object.entries(ERRORS)
  .map(([code, { status, message }]) => `| \`${code}\` | ${status} | ${message} |`)
  .join("\n");

const description = [
  "Send notifications to the Telegram subscribers of a Dock.",
  "",
  `**Credentials.** A Dock has an ID (22 letters and digits) and a secret key (\`dnsk_\` and 33 letters and digits); the console shows both, and commands to copy with them filled in. Send them in the JSON body (\`/ping\`) or with HTTP Basic authentication (\`curl -u '<DOCK_ID>:<SECRET_KEY>'\`). A tool that can only be given a URL uses the Dock's hook URL (\`/hook/dnhk_…\`). In this reference the Dock ID \`${EXAMPLE.dockId}\` is an example, and \`${EXAMPLE.secretKey}\` and \`${EXAMPLE.hookToken}\` are placeholders: put your Dock's own in their place.`,
  "",
  "The console's own API (`/console/api`, for the signed-in console page) is not part of this reference: docs/console.md describes it.",
  "",
  'Every error answers `{"ok": false, "error": {"code": "…", "message": "…"}}` with one of these codes:',
  "",
  "| code | status | meaning |",
  "|---|---|---|",
  errorTable,
].join("\n");

/** What a route's schema may carry for the document only (see the transform below). */
interface DocumentedSchema {
  /** Fuller schemas than the validator needs (the send API's options, which it checks itself). */
  documented?: Record<string, unknown>;
  /** Commands that call the route, with PUBLIC_URL_PLACEHOLDER for the service's address. */
  curl?: readonly string[];
  description?: string;
  [key: string]: unknown;
}

/** A route's description with its commands under it, each in a code block Swagger UI shows. */
function withCommands(text: string | undefined, commands: readonly string[], publicUrl: string): string {
  const blocks = commands.map(
    (command) => `\`\`\`sh\n${command.replaceAll(PUBLIC_URL_PLACEHOLDER, publicUrl)}\n\`\`\``,
  );
  return [text ?? "", "**Example**", ...blocks].filter((part) => part !== "").join("\n\n");
}

const PLACES = ["path", "header", "query", "cookie"];
const byPlace = (a: Parameter, b: Parameter) => PLACES.indexOf(a.in ?? "") - PLACES.indexOf(b.in ?? "");

/**
 * An operation's ID, `postWebhookFormatDockId`: Swagger UI's own (`post_webhook__format___dock_id_`)
 * names the operation in the page's address, and a page opened at an address with `_` in it logs
 * an error (Swagger UI's old way to write spaces there).
 */
function operationId(method: string, path: string): string {
  const words = path.split(/[^A-Za-z0-9]+/).filter((word) => word !== "");
  return method + words.map((word) => word[0]?.toUpperCase() + word.slice(1)).join("");
}

/**
 * An optional parameter's example kept in its schema (JSON Schema's `examples`) and said in its
 * description, rather than as the parameter's `example`: Swagger UI's "Try it out" fills in every
 * parameter that has one, and sends it — an Idempotency-Key that replays, an X-Key that replaces,
 * each ntfy option at once. A required one (a path's) is filled in as it should be.
 */
function exampleInSchema(parameter: Parameter): void {
  if (parameter.required || parameter.example === undefined) return;
  parameter.schema = { ...parameter.schema, examples: [parameter.example] };
  parameter.description = `${parameter.description ?? ""} Example: \`${String(parameter.example)}\`.`.trim();
  delete parameter.example;
}

/**
 * The Content-Security-Policy of the reference's pages: Swagger UI's files and nothing else — no
 * inline code (the layout without the top bar has no inline style to allow), no framing. Upgrading
 * requests only over https, as the console's policy does: on http it would break the page.
 */
function referencePolicy(publicUrl: string): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    "script-src-attr 'none'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    "frame-ancestors 'none'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    ...(publicUrl.startsWith("https:") ? ["upgrade-insecure-requests"] : []),
  ].join("; ");
}

/**
 * The OpenAPI 3.1 document, generated from the route schemas, at /openapi.json, and a browsable
 * reference at /docs that reads it. Registered before the routes so it sees them all.
 */
export const docs = fp(async (app: FastifyInstance, options: { publicUrl: string; version: string }) => {
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: { title: "Dock Notify", version: options.version, description },
      servers: [{ url: options.publicUrl }],
      tags: API_TAGS,
      components: {
        securitySchemes: {
          basic: {
            type: "http",
            scheme: "basic",
            description: "User name: the Dock ID; password: the Dock's secret key.",
          },
        },
      },
    },
    transform: ({ schema, url }) => {
      if (url.startsWith(INTERNAL_PREFIX)) return { schema: { ...schema, hide: true }, url };
      const { documented, curl, ...rest } = (schema ?? {}) as DocumentedSchema;
      const merged: DocumentedSchema = documented ? { ...rest, ...documented } : rest;
      if (curl) {
        merged.description = withCommands(merged.description, curl, options.publicUrl);
        // The same commands where other renderers (Redoc and its kin) look for them.
        merged["x-codeSamples"] = curl.map((command) => ({
          lang: "Shell",
          label: "curl",
          source: command.replaceAll(PUBLIC_URL_PLACEHOLDER, options.publicUrl),
        }));
      }
      return { schema: merged, url };
    },
    transformObject: (documents) => {
      const document = "openapiObject" in documents ? documents.openapiObject : documents.swaggerObject;
      const paths = (document as OpenApiDocument).paths ?? {};
      for (const [path, methods] of Object.entries(paths)) {
        for (const [method, shared] of Object.entries(methods)) {
          // A route of several methods (POST and PUT) gave each the same object: one ID each.
          const operation = {
            ...shared,
            operationId: shared.operationId ?? operationId(method, path),
            // What names the thing (the path's) before how to send (headers) and the options (query).
            ...(shared.parameters ? { parameters: [...shared.parameters].sort(byPlace) } : {}),
          };
          methods[method] = operation;
          for (const parameter of operation.parameters ?? []) exampleInSchema(parameter);
        }
      }
      for (const [path, methods, text, example] of TEXT_BODIES) {
        for (const method of methods) {
          const content = paths[path]?.[method]?.requestBody?.content;
          if (content) content["text/plain"] = { schema: { type: "string", description: text }, example };
        }
      }
      return document;
    },
  });
  const policy = referencePolicy(options.publicUrl);
  // Swagger UI is loaded on the first request for it, not at start: most instances never serve it.
  let ui: Promise<FastifyInstance> | null = null;
  const loadUi = () => {
    ui ??= swaggerUiServer(app.swagger.bind(app), policy).catch((error: unknown) => {
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
 * The page's script that starts Swagger UI (in place of the plugin's, which always reads its own
 * copy of the document at /docs/json): it reads /openapi.json, beside /docs whatever the path in
 * front of them, without the top bar — whose logo is an SVG with an inline style, which the policy
 * refuses, and whose box loads any other document, of no use here. The component schemas are
 * inlined in the operations, so their empty list is hidden.
 */
const INITIALIZER = `window.onload = function () {
  window.ui = SwaggerUIBundle({
    url: location.pathname.replace(/docs\\/?$/, "") + "openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    defaultModelsExpandDepth: -1,
  });
};
`;

/**
 * Swagger UI (@fastify/swagger-ui, its routes at /docs and its files at /docs/static) on a Fastify
 * instance of its own that never listens: a running server takes no new routes, so the service's
 * /docs routes hand their requests to this one. It shows the service's document (see INITIALIZER),
 * under `policy`.
 */
async function swaggerUiServer(
  document: FastifyInstance["swagger"],
  policy: string,
): Promise<FastifyInstance> {
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
    staticCSP: policy,
    theme: { title: "Dock Notify API reference" },
    uiHooks: {
      onRequest: (request, reply, done) => {
        const path = request.url.split("?", 1)[0];
        // The UI's own redirect from its index.html keeps a query string in the path it rewrites,
        // and so sends `/docs/static/index.html?…` to itself for ever: lead there ourselves.
        if (path === "/docs/static/index.html") {
          void reply.redirect("/docs/", 302);
          return;
        }
        if (path === "/docs/static/swagger-initializer.js") {
          void reply.type("application/javascript; charset=utf-8").send(INITIALIZER);
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
