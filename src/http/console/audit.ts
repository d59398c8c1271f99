import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { quietly } from "../../runtime/log.ts";
import { AUDIT_PAGE, type AuditLine, type DockAudit } from "../../store/audit.ts";
import type { CoOwnerRepository } from "../../store/co-owners.ts";
import type { DockRepository } from "../../store/docks.ts";
import type { SessionRepository } from "../../store/sessions.ts";
import { ApiError } from "../errors.ts";
import { requireSession } from "../session.ts";
import { dockAccess } from "./dock-access.ts";
import { type AuditAnswer, type AuditEntryView, auditQuery, dockParams } from "./schemas.ts";

export interface AuditOptions {
  docks: DockRepository;
  coOwners: CoOwnerRepository;
  audit: DockAudit;
  sessions: SessionRepository;
}

/** An entry as the console shows it. */
export function auditEntry(line: AuditLine): AuditEntryView {
  return {
    id: line.id,
    at: line.at,
    actor:
      line.actor === null
        ? null
        : { id: line.actor.id, first_name: line.actor.firstName, username: line.actor.username },
    action: line.action,
    detail: line.detail,
  };
}

/** `limit` and `before` of a page of the audit log, checked; `400 invalid_request` naming the one at fault. */
export function auditPageQuery(query: { limit?: string | undefined; before?: string | undefined }): {
  limit: number;
  before: number | undefined;
} {
  const limit =
    query.limit === undefined ? AUDIT_PAGE.default : /^\d{1,4}$/.test(query.limit) ? Number(query.limit) : 0;
  if (!(limit >= 1 && limit <= AUDIT_PAGE.max))
    throw new ApiError("invalid_request", `limit must be a whole number from 1 to ${AUDIT_PAGE.max}.`);
  if (query.before !== undefined && !/^[1-9]\d{0,15}$/.test(query.before))
    throw new ApiError("invalid_request", "before must be the next_before of the page before.");
  return { limit, before: query.before === undefined ? undefined : Number(query.before) };
}

/**
 * `GET /docks/:id/audit`: the Dock's audit log, newest first, a page at a time like the message
 * history (`limit`, `before` = the previous page's `next_before`). Everyone with a role on the
 * Dock reads it: what the team does to the Dock is the team's to see.
 */
export async function audit(app: FastifyInstance, options: AuditOptions): Promise<void> {
  const routes = app.withTypeProvider<TypeBoxTypeProvider>();
  app.addHook("preHandler", async (request) => {
    request.signedIn = await requireSession(request, options.sessions);
  });
  const dockFor = dockAccess(options.docks, options.coOwners);

  routes.get(
    "/docks/:id/audit",
    { schema: { params: dockParams, querystring: auditQuery }, onRequest: quietly },
    async (request): Promise<AuditAnswer> => {
      const { dock } = await dockFor(request, request.params.id, "read");
      const page = await options.audit.page(dock.id, auditPageQuery(request.query));
      return {
        ok: true,
        entries: page.entries.map(auditEntry),
        next_before: page.nextBefore,
        people: Object.fromEntries(
          [...page.people].map(([id, names]) => [
            String(id),
            { first_name: names.firstName, username: names.username },
          ]),
        ),
        groups: Object.fromEntries([...page.groups].map(([id, title]) => [String(id), title])),
      };
    },
  );
}
