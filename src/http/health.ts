import type { FastifyInstance } from "fastify";
import { sql } from "kysely";
import type { Metrics } from "../metrics.ts";
import type { Db } from "../store/db.ts";
import { ApiError } from "./errors.ts";

/** Liveness, readiness and Prometheus metrics: what orchestrators and scrapers ask for. */
export async function health(app: FastifyInstance, options: { db: Db; metrics: Metrics }): Promise<void> {
  app.get("/healthz", { schema: { summary: "The process is alive", tags: ["operations"] } }, async () => ({
    ok: true,
  }));

  app.get(
    "/readyz",
    { schema: { summary: "The database answers", tags: ["operations"] } },
    async (request) => {
      try {
        await sql`select 1`.execute(options.db.kysely);
      } catch (error) {
        request.log.warn({ err: error }, "database not reachable");
        throw new ApiError("not_ready", "The database is not reachable.");
      }
      return { ok: true };
    },
  );

  app.get("/metrics", { schema: { hide: true } }, async (_request, reply) => {
    reply.type(options.metrics.registry.contentType);
    return options.metrics.registry.metrics();
  });
}
