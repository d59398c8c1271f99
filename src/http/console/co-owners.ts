import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { DOCK_ROLES, type DockRole, isDockRole } from "../../domain/dock-roles.ts";
import { CO_OWNER_PAYLOAD_PREFIX } from "../../domain/owners.ts";
import { telegramUserId } from "../../domain/telegram-identity.ts";
import { telegramLink } from "../../domain/telegram-link.ts";
import { quietly } from "../../runtime/log.ts";
import type { CoOwnerRepository, TeamChange } from "../../store/co-owners.ts";
import type { DockRepository } from "../../store/docks.ts";
import type { OwnerRepository, PendingCoOwnerInvite } from "../../store/owners.ts";
import type { SessionRepository } from "../../store/sessions.ts";
import { ApiError } from "../errors.ts";
import { requireSession, type SignedIn } from "../session.ts";
import { dockAccess } from "./dock-access.ts";
import {
  type CoOwnerInviteAnswer,
  type CoOwnerInviteView,
  type CoOwnersAnswer,
  coOwnerInviteParams,
  coOwnerParams,
  coOwnerRoleBody,
  dockParams,
  type OkAnswer,
} from "./schemas.ts";

export interface CoOwnersOptions {
  docks: DockRepository;
  coOwners: CoOwnerRepository;
  /** Where co-owner invitations are made and used, beside the owner invitations. */
  owners: OwnerRepository;
  sessions: SessionRepository;
  publicUrl: string;
  /** True when the built-in sandbox plays Telegram: links go to its chat page. */
  sandbox: boolean;
  botUsername: () => Promise<string>;
}

function inviteView(invite: PendingCoOwnerInvite): CoOwnerInviteView {
  return {
    id: invite.id,
    role: invite.role,
    created_by: invite.createdBy,
    created_at: invite.createdAt,
    expires_at: invite.expiresAt,
  };
}

/** A role from a request's body; `400 invalid_fields` naming the field otherwise. */
function roleFrom(body: { role?: unknown }): DockRole {
  if (isDockRole(body.role)) return body.role;
  throw new ApiError("invalid_fields", undefined, {}, [
    { field: "role", message: `role must be one of ${DOCK_ROLES.join(", ")}` },
  ]);
}

/** What a refused change of a co-owner answers. */
function refused(outcome: TeamChange): ApiError | null {
  if (outcome === "not_found") return new ApiError("not_found", "This person is not a co-owner of the Dock.");
  if (outcome === "dock_owner") return new ApiError("dock_owner_fixed");
  return null;
}

/**
 * A Dock's co-owners (issue 37): its team, single-use invitations into the bot with a role (the
 * link shown once, like the owners' invitations), changing a co-owner's role and removing one.
 * Everyone with a role on the Dock sees its team; managing it takes the role `owner`
 * (`403 insufficient_role`), except leaving: a co-owner may always remove themselves. The changes
 * are written to the Dock's audit log by the store, in their transactions.
 */
export async function coOwners(app: FastifyInstance, options: CoOwnersOptions): Promise<void> {
  const routes = app.withTypeProvider<TypeBoxTypeProvider>();
  app.addHook("preHandler", async (request) => {
    request.signedIn = await requireSession(request, options.sessions);
  });
  const dockFor = dockAccess(options.docks, options.coOwners);
  const me = (request: FastifyRequest) => (request.signedIn as SignedIn).user.id;

  /** The co-owner a route's `:userId` names; 404 for anything that is no Telegram user id. */
  const userIdOf = (raw: string): number => {
    const id = telegramUserId(raw);
    if (id === null) throw new ApiError("not_found", "This person is not a co-owner of the Dock.");
    return id;
  };

  routes.get(
    "/docks/:id/co-owners",
    { schema: { params: dockParams }, onRequest: quietly },
    async (request): Promise<CoOwnersAnswer> => {
      const { dock } = await dockFor(request, request.params.id, "read");
      const [team, invites] = await Promise.all([
        options.coOwners.team(dock.id),
        options.owners.pendingCoOwnerInvites(dock.id),
      ]);
      return {
        ok: true,
        co_owners: team.map((member) => ({
          id: member.id,
          first_name: member.firstName,
          username: member.username,
          role: member.role,
          owns_dock: member.ownsDock,
          added_at: member.addedAt,
        })),
        invites: invites.map(inviteView),
      };
    },
  );

  routes.post(
    "/docks/:id/co-owners/invites",
    { schema: { params: dockParams, body: coOwnerRoleBody } },
    async (request, reply) => {
      const { dock } = await dockFor(request, request.params.id, "manage_co_owners");
      const role = roleFrom(request.body);
      const username = await options.botUsername();
      const made = await options.owners.createCoOwnerInvite(dock.id, role, me(request));
      request.log.info(
        { invite: made.invite.id, dock_id: dock.id, role, by: me(request) },
        "co-owner invitation made",
      );
      // The token is in the link alone: it is shown this once and kept only as a hash.
      const link = telegramLink(
        options.publicUrl,
        username,
        `${CO_OWNER_PAYLOAD_PREFIX}${made.token}`,
        options.sandbox,
      );
      return reply
        .code(201)
        .send({ ok: true, invite: inviteView(made.invite), link } satisfies CoOwnerInviteAnswer);
    },
  );

  routes.delete(
    "/docks/:id/co-owners/invites/:inviteId",
    { schema: { params: coOwnerInviteParams } },
    async (request): Promise<OkAnswer> => {
      const { dock } = await dockFor(request, request.params.id, "manage_co_owners");
      if (!(await options.owners.withdrawCoOwnerInvite(dock.id, request.params.inviteId, me(request)))) {
        throw new ApiError("not_found", "No such invitation: it was used, withdrawn or has expired.");
      }
      return { ok: true };
    },
  );

  routes.put(
    "/docks/:id/co-owners/:userId/role",
    { schema: { params: coOwnerParams, body: coOwnerRoleBody } },
    async (request): Promise<OkAnswer> => {
      const { dock } = await dockFor(request, request.params.id, "manage_co_owners");
      const userId = userIdOf(request.params.userId);
      const role = roleFrom(request.body);
      const error = refused(await options.coOwners.setRole(dock.id, userId, role, me(request)));
      if (error) throw error;
      return { ok: true };
    },
  );

  routes.delete(
    "/docks/:id/co-owners/:userId",
    { schema: { params: coOwnerParams } },
    async (request): Promise<OkAnswer> => {
      const userId = userIdOf(request.params.userId);
      // Anyone may leave a Dock shared with them; removing someone else takes an owner.
      const leaving = userId === me(request);
      const { dock } = await dockFor(request, request.params.id, leaving ? "read" : "manage_co_owners");
      const error = refused(await options.coOwners.remove(dock.id, userId, me(request)));
      if (error) throw error;
      return { ok: true };
    },
  );
}
