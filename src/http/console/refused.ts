import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { quietly } from "../../runtime/log.ts";
import type { CoOwnerRepository } from "../../store/co-owners.ts";
import type { DockRepository } from "../../store/docks.ts";
import { REFUSED_PER_DOCK, type RefusedRequests } from "../../store/refused-requests.ts";
import type { SessionRepository } from "../../store/sessions.ts";
import { requireSession } from "../session.ts";
import { dockAccess } from "./dock-access.ts";
import { dockParams, type RefusedAnswer } from "./schemas.ts";

export interface RefusedOptions {
  docks: DockRepository;
  coOwners: CoOwnerRepository;
  refused: RefusedRequests;
  sessions: SessionRepository;
}

/**
 * `GET /docks/:id/refused`: the Dock's recent refused requests, the latest first — "why didn't it
 * arrive?". Everyone with a role on the Dock reads them: they hold no secret (a refusal's message
 * is cleaned of anything shaped like one) and nothing of the payload.
 */
export async function refused(app: FastifyInstance, options: RefusedOptions): Promise<void> {
  const routes = app.withTypeProvider<TypeBoxTypeProvider>();
  app.addHook("preHandler", async (request) => {
    request.signedIn = await requireSession(request, options.sessions);
  });
  const dockFor = dockAccess(options.docks, options.coOwners);

  routes.get(
    "/docks/:id/refused",
    { schema: { params: dockParams }, onRequest: quietly },
    async (request): Promise<RefusedAnswer> => {
      const { dock } = await dockFor(request, request.params.id, "read");
      const rows = await options.refused.recent(dock.id);
      return {
        ok: true,
        refused: rows.map((row) => ({
          id: row.id,
          first_at: row.firstAt,
          last_at: row.lastAt,
          count: row.count,
          door: row.door,
          format: row.format,
          status: row.status,
          code: row.code,
          message: row.message,
          credentials: row.credentials,
        })),
        limit: REFUSED_PER_DOCK,
      };
    },
  );
}
