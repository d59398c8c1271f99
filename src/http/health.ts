import type { FastifyInstance } from "fastify";
import { sql } from "kysely";
import type { Metrics } from "../metrics.ts";
import type { Db } from "../store/db.ts";
import { ApiError, errorBodySchema } from "./errors.ts";

/** Liveness, readiness and Prometheus metrics: what orchestrators and scrapers ask for. */
export async function health(app: FastifyInstance, options: { db: Db; metrics: Metrics }): Promise<void> {
  app.get("/healthz", { schema: { summary: "The process is alive", tags: ["operations"] } }, async () => ({
    ok: true,
  }));

  app.get(
    "/readyz",
    {
      schema: {
        summary: "The database answers",
        tags: ["operations"],
        response: {
          200: { description: "Ready.", type: "object", properties: { ok: { const: true } } },
          503: { description: "The database is not reachable (not_ready).", ...errorBodySchema },
        },
      },
    },
    async (request, reply) => {
      try {
        await sql`select 1`.execute(options.db.kysely);
      } catch (error) {
        // One warn line per failed probe, with the reason (answered here, not by the error
        // handler, which would log a second one).
        request.log.warn({ reason: (error as Error).message }, "database not reachable");
        const notReady = new ApiError("not_ready", "The database is not reachable.");
        options.metrics.requestsRejected.inc({ code: notReady.code });
        return reply.code(503).send(notReady.body);
      }
      return { ok: true };
    },
  );

  app.get(
    "/metrics",
    {
      schema: {
        summary: "Prometheus metrics (text exposition format)",
        description: "The service's counters, gauges and histograms; see docs/deployment.md.",
        tags: ["operations"],
      },
    },
    async (_request, reply) => {
      reply.type(options.metrics.registry.contentType);
      return options.metrics.registry.metrics();
    },
  );
}
