import type { FastifyInstance } from "fastify";
import { constantTimeEqual } from "../domain/constant-time.ts";
import type { Metrics } from "../runtime/metrics.ts";
import type { DatabaseProbe } from "../store/readiness.ts";
import { CURL, EXAMPLE } from "./api-examples.ts";
import { ApiError, errorAnswer } from "./errors.ts";

export interface HealthOptions {
  probe: DatabaseProbe;
  metrics: Metrics;
  /**
   * The background parts' states for `/readyz`'s body (the bot, Telegram as the dispatcher sees
   * it). They do not change its status by themselves: a service whose bot is reconnecting, or
   * cannot reach Telegram, still takes messages.
   */
  checks: () => Record<string, unknown>;
  /**
   * Why the instance is unready although its database takes writes (a bot token Telegram refuses:
   * nothing could ever be sent), as the 503's message; null while nothing is.
   */
  unready?: () => string | null;
  /** METRICS_TOKEN: when set, /metrics answers only `Authorization: Bearer <token>`. */
  metricsToken: string | null;
  /** The running version (package.json), so that a deploy can be checked from outside. */
  version: string;
}

/** `Authorization: Bearer <token>`, compared in constant time. */
function bearerMatches(header: string | undefined, token: string): boolean {
  const given = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header ?? "")?.[1];
  return given !== undefined && constantTimeEqual(given, token);
}

/** Liveness, readiness and Prometheus metrics: what orchestrators and scrapers ask for. */
export async function health(app: FastifyInstance, options: HealthOptions): Promise<void> {
  app.get(
    "/healthz",
    {
      schema: {
        summary: "The process is alive",
        description:
          "Liveness: answers while the process runs, whatever the database does (a liveness probe that restarts the service for a database outage only adds to it). Its version tells a deploy from the one before.",
        tags: ["Operations"],
        curl: CURL.healthz,
        response: {
          200: {
            description: "Alive.",
            type: "object",
            properties: {
              ok: { type: "boolean", const: true },
              version: {
                type: "string",
                description: "The running version of Dock Notify.",
                examples: [options.version],
              },
            },
            required: ["ok", "version"],
          },
        },
      },
    },
    async () => ({ ok: true, version: options.version }),
  );

  const checksSchema = {
    type: "object",
    description:
      "database: ok, unreachable or not_writable (the status code follows it); bot: the bot's state (starting, running, unauthorized, conflict, unreachable, reconnecting, stopped), with the reason and the fix when it is not running — `unauthorized` (Telegram refused the bot token) makes the answer 503; telegram: as the dispatcher sees it (up or down), informative only.",
    additionalProperties: true,
    examples: [
      { database: "ok", bot: { state: "running", mode: "polling" }, telegram: { state: "up" } },
      {
        database: "ok",
        bot: {
          state: "unauthorized",
          mode: "polling",
          reason: "getMe: 401 Unauthorized (check TELEGRAM_BOT_TOKEN)",
          fix: "set TELEGRAM_BOT_TOKEN to the token @BotFather gave you (send /token to @BotFather to see it again), then restart Dock Notify",
        },
        telegram: { state: "up" },
      },
    ],
  } as const;

  const notReady = errorAnswer(
    "The database cannot be reached, or refuses writes; or Telegram refused the bot token.",
    "not_ready",
  );
  app.get(
    "/readyz",
    {
      schema: {
        summary: "The database takes writes (so messages can be accepted), and Telegram takes the bot token",
        description:
          "Readiness, for a load balancer: 200 while the database takes a write and Telegram has not refused the bot token, else 503 with the checks beside the error. A refused token (`checks.bot.state: unauthorized`) is this instance's configuration, and nothing could be sent with it: a deploy with a wrong token stops at its first instance. Telegram unreachable, a 409 conflict or a relaunching bot are reported but never make it unready: messages are still accepted while they recover, and an outage of Telegram must not make a load balancer pull every instance.",
        tags: ["Operations"],
        curl: CURL.readyz,
        response: {
          200: {
            description: "Ready.",
            type: "object",
            properties: { ok: { const: true }, checks: checksSchema },
          },
          503: {
            ...notReady,
            properties: { ...notReady.properties, checks: checksSchema },
          },
        },
      },
    },
    async (_request, reply) => {
      const database = await options.probe.check();
      const checks = { database: database.state, ...options.checks() };
      if (database.state === "ok") {
        const unready = options.unready?.() ?? null;
        if (unready === null) return { ok: true, checks };
        // Answered here, not thrown: the bot warns of it (each minute, with the fix), a load
        // balancer's probe every few seconds need not.
        const error = new ApiError("not_ready", unready, {}, undefined, { context: { checks } });
        return reply.code(503).send(error.body);
      }
      // Answered (and logged once, with the reason) by the error boundary, the checks beside it.
      const writable = database.state === "not_writable";
      throw new ApiError(
        "not_ready",
        writable ? `The database refuses writes (${database.cause}).` : "The database is not reachable.",
        {},
        undefined,
        {
          context: { checks },
          log: {
            message: writable ? "database refuses writes" : "database not reachable",
            fields: { reason: database.reason, ...(writable ? { cause: database.cause } : {}) },
          },
        },
      );
    },
  );

  app.get(
    "/metrics",
    {
      schema: {
        summary: "Prometheus metrics (text exposition format)",
        description:
          "The service's counters, gauges and histograms; see docs/deployment.md. With METRICS_TOKEN set, only `Authorization: Bearer <METRICS_TOKEN>` gets them; without it, anyone who reaches the port does.",
        tags: ["Operations"],
        curl: CURL.metrics,
        // Only in the document: a response schema would make the serializer quote the text.
        documented: {
          headers: {
            type: "object",
            properties: {
              authorization: {
                type: "string",
                description: "`Bearer` and METRICS_TOKEN, when that is set.",
                examples: [`Bearer ${EXAMPLE.metricsToken}`],
              },
            },
          },
          response: {
            200: {
              description: "The metrics, in Prometheus's text format.",
              content: {
                "text/plain": {
                  schema: {
                    type: "string",
                    examples: [
                      '# TYPE dock_notify_messages_accepted_total counter\ndock_notify_messages_accepted_total{endpoint="ping"} 42\n',
                    ],
                  },
                },
              },
            },
            401: errorAnswer(
              "METRICS_TOKEN is set, and the request does not carry it.",
              "metrics_token_required",
            ),
          },
        },
      },
    },
    async (request, reply) => {
      if (
        options.metricsToken !== null &&
        !bearerMatches(request.headers.authorization, options.metricsToken)
      ) {
        throw new ApiError("metrics_token_required", undefined, {
          "WWW-Authenticate": 'Bearer realm="dock-notify metrics"',
        });
      }
      reply.type(options.metrics.registry.contentType);
      return options.metrics.registry.metrics();
    },
  );
}
