import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { INVITE_PAYLOAD_PREFIX } from "../../domain/owners.ts";
import { telegramUserId } from "../../domain/telegram-identity.ts";
import { telegramLink } from "../../domain/telegram-link.ts";
import type { OwnerRepository, PendingInvite } from "../../store/owners.ts";
import type { SandboxDock, SandboxDocks } from "../../store/sandbox-docks.ts";
import type { SessionRepository } from "../../store/sessions.ts";
import { ApiError } from "../errors.ts";
import { requireSession, type SignedIn } from "../session.ts";
import {
  type InviteAnswer,
  type InviteView,
  type OkAnswer,
  type OwnersAnswer,
  ownerParams,
  ownerRoleBody,
  type SandboxDocksAnswer,
  type SandboxDockView,
} from "./schemas.ts";

export interface OwnersOptions {
  owners: OwnerRepository;
  /** The Docks of the sandbox's people, offered to the administrators once a real bot runs. */
  sandboxDocks: SandboxDocks;
  sessions: SessionRepository;
  publicUrl: string;
  /** True when the built-in sandbox plays Telegram: links go to its chat page. */
  sandbox: boolean;
  botUsername: () => Promise<string>;
}

function sandboxDockView(dock: SandboxDock): SandboxDockView {
  return { id: dock.id, name: dock.name, owner_id: dock.ownerId, subscribers: dock.subscribers };
}

function inviteView(invite: PendingInvite): InviteView {
  return {
    id: invite.id,
    created_by: invite.createdBy,
    created_at: invite.createdAt,
    expires_at: invite.expiresAt,
  };
}

/**
 * Who may own Docks, for administrators: the owners (and OWNERS' administrators), invitations into
 * the bot (single-use, shown once), withdrawing one, changing a role, and removing an owner (whose
 * sessions end at once). Every route needs an administrator's session; others get `403 admin_only`.
 */
export async function owners(app: FastifyInstance, options: OwnersOptions): Promise<void> {
  const routes = app.withTypeProvider<TypeBoxTypeProvider>();
  app.addHook("preHandler", async (request) => {
    const session = await requireSession(request, options.sessions);
    if (session.user.role !== "admin") throw new ApiError("admin_only");
    request.signedIn = session;
  });
  const admin = (signedIn: SignedIn | null) => (signedIn as SignedIn).user.id;

  routes.get("/owners", async (): Promise<OwnersAnswer> => {
    const [list, invites] = await Promise.all([options.owners.list(), options.owners.pendingInvites()]);
    return {
      ok: true,
      owners: list.map((owner) => ({
        id: owner.id,
        first_name: owner.firstName,
        username: owner.username,
        role: owner.role,
        source: owner.source,
        added_at: owner.addedAt,
        docks: owner.docks,
      })),
      invites: invites.map(inviteView),
    };
  });

  // Going live (issue 38): the Docks made while the sandbox played Telegram, for an administrator
  // to take over (their sandbox subscriptions are not carried over) or to leave for good.
  routes.get(
    "/sandbox-docks",
    async (): Promise<SandboxDocksAnswer> => ({
      ok: true,
      docks: (await options.sandboxDocks.offer()).map(sandboxDockView),
    }),
  );

  routes.post("/sandbox-docks/take-over", async (request): Promise<SandboxDocksAnswer> => {
    const taken = await options.sandboxDocks.takeOver(admin(request.signedIn));
    request.log.info(
      { docks: taken.map((dock) => dock.id), by: admin(request.signedIn) },
      "the sandbox's Docks taken over",
    );
    return { ok: true, docks: taken.map(sandboxDockView) };
  });

  routes.post("/sandbox-docks/dismiss", async (request): Promise<OkAnswer> => {
    await options.sandboxDocks.dismiss();
    request.log.info({ by: admin(request.signedIn) }, "the sandbox's Docks left where they are");
    return { ok: true };
  });

  routes.post("/owners/invites", async (request, reply) => {
    const username = await options.botUsername();
    const invite = await options.owners.createInvite(admin(request.signedIn));
    request.log.info({ invite: invite.invite.id, by: admin(request.signedIn) }, "owner invitation made");
    // The token is in the link alone: it is shown this once and kept only as a hash.
    const link = telegramLink(
      options.publicUrl,
      username,
      `${INVITE_PAYLOAD_PREFIX}${invite.token}`,
      options.sandbox,
    );
    return reply.code(201).send({ ok: true, invite: inviteView(invite.invite), link } satisfies InviteAnswer);
  });

  routes.delete(
    "/owners/invites/:id",
    { schema: { params: ownerParams } },
    async (request): Promise<OkAnswer> => {
      if (!(await options.owners.revokeInvite(request.params.id))) {
        throw new ApiError("not_found", "No such invitation: it was used, withdrawn or has expired.");
      }
      request.log.info(
        { invite: request.params.id, by: admin(request.signedIn) },
        "owner invitation withdrawn",
      );
      return { ok: true };
    },
  );

  /** The owner a route's `:id` names; 404 for anything that is no Telegram user id. */
  const ownerId = (raw: string): number => {
    const id = telegramUserId(raw);
    if (id === null) throw new ApiError("not_found", "No such owner.");
    return id;
  };

  routes.put(
    "/owners/:id/role",
    { schema: { params: ownerParams, body: ownerRoleBody } },
    async (request): Promise<OkAnswer> => {
      const id = ownerId(request.params.id);
      const outcome = await options.owners.setRole(id, request.body.role);
      if (outcome === "not_found") throw new ApiError("not_found", "No such owner.");
      if (outcome === "configured") throw new ApiError("owner_configured");
      if (outcome === "last_admin") throw new ApiError("last_administrator");
      request.log.info(
        { telegram_id: id, role: request.body.role, by: admin(request.signedIn) },
        "owner's role changed",
      );
      return { ok: true };
    },
  );

  routes.delete("/owners/:id", { schema: { params: ownerParams } }, async (request): Promise<OkAnswer> => {
    const id = ownerId(request.params.id);
    const outcome = await options.owners.remove(id);
    if (outcome === "not_found") throw new ApiError("not_found", "No such owner.");
    if (outcome === "configured") throw new ApiError("owner_configured");
    if (outcome === "last_admin") throw new ApiError("last_administrator");
    if (outcome === "open") throw new ApiError("instance_open");
    request.log.info({ telegram_id: id, by: admin(request.signedIn) }, "owner removed");
    return { ok: true };
  });
}
