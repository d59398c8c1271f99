import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { JOIN_PAYLOAD_PREFIX, validateInviteRules } from "../../domain/audience.ts";
import { telegramLink } from "../../domain/telegram-link.ts";
import { quietly } from "../../runtime/log.ts";
import type { Audience } from "../../store/audience.ts";
import type { CoOwnerRepository } from "../../store/co-owners.ts";
import type { DockRepository } from "../../store/docks.ts";
import type { InviteLink } from "../../store/invite-links.ts";
import type { JoinRequest } from "../../store/join-requests.ts";
import type { SessionRepository } from "../../store/sessions.ts";
import type { SubscriptionRepository } from "../../store/subscriptions.ts";
import { ApiError } from "../errors.ts";
import { qrSvg } from "../qr.ts";
import { requireSession, type SignedIn } from "../session.ts";
import { dockAccess } from "./dock-access.ts";
import {
  type BanListAnswer,
  banBody,
  banParams,
  declineBody,
  dockParams,
  type InviteLinkAnswer,
  type InviteLinkListAnswer,
  type InviteLinkView,
  inviteLinkBody,
  inviteLinkParams,
  type JoinRequestAnswer,
  type JoinRequestListAnswer,
  type JoinRequestView,
  type OkAnswer,
  requestParams,
  type Subscriber,
  type SubscriberListAnswer,
  subscriberParams,
} from "./schemas.ts";

export interface AudienceRoutesOptions {
  docks: DockRepository;
  /** Who has which role on each Dock beside its owner: who may manage its audience. */
  coOwners: CoOwnerRepository;
  /** The actions on a Dock's audience, each done and audited in one place. */
  audience: Audience;
  subscriptions: SubscriptionRepository;
  sessions: SessionRepository;
  publicUrl: string;
  /** True when the built-in sandbox plays Telegram: links go to its chat page. */
  sandbox: boolean;
  botUsername: () => Promise<string>;
  now: () => number;
}

/** A chat id as a route's path names it; null for anything that is none. */
function chatIdOf(raw: string): number | null {
  const id = /^-?\d{1,19}$/.test(raw) ? Number(raw) : Number.NaN;
  return Number.isSafeInteger(id) ? id : null;
}

/** An invite link's id and a join request's: anything else names none (and never reaches the database). */
const INVITE_ID = /^dinv_[A-Za-z0-9]{11}$/;
const REQUEST_ID = /^jr_[A-Za-z0-9]{11}$/;

/** A join request as the console's queue shows it. */
function requestView(request: JoinRequest): JoinRequestView {
  return {
    id: request.id,
    chat_id: request.chatId,
    chat_type: request.chatType,
    name: request.chatName,
    requested_by: request.requester,
    member_count: request.memberCount,
    invite: request.invite,
    state: request.state,
    created_at: request.createdAt,
    expires_at: request.expiresAt,
    decided_by: request.decidedBy,
    decided_at: request.decidedAt,
  };
}

/**
 * Who receives a Dock's messages and who may (issue 37): its subscribers (and removing one), its
 * invite links (made, listed with their uses and QR code, revoked), its join requests (the queue,
 * approved or declined here as in the bot) and the chats banned from it. Every route needs a session
 * (and, to change anything, its CSRF token), a role on the Dock that may manage its subscribers
 * (owner, approver: `403 insufficient_role` otherwise), and answers `404` for a Dock the person has
 * no role on exactly as for a missing one. Part of `consoleApi`.
 */
export async function audience(app: FastifyInstance, options: AudienceRoutesOptions): Promise<void> {
  const routes = app.withTypeProvider<TypeBoxTypeProvider>();
  app.addHook("preHandler", async (request) => {
    request.signedIn = await requireSession(request, options.sessions);
  });
  /** The Dock, when the caller's role on it may manage who receives it (owner, approver). */
  const dockFor = dockAccess(options.docks, options.coOwners);
  const ownedDock = async (request: FastifyRequest, id: string) =>
    (await dockFor(request, id, "manage_subscribers")).dock;
  const actor = (signedIn: SignedIn | null) => (signedIn as SignedIn).user.id;

  /** An invite link as the console shows it, with the link into the bot built from its token. */
  const inviteView = async (link: InviteLink): Promise<InviteLinkView> => ({
    id: link.id,
    name: link.name,
    link: telegramLink(
      options.publicUrl,
      await options.botUsername(),
      `${JOIN_PAYLOAD_PREFIX}${link.token}`,
      options.sandbox,
    ),
    creator: link.creator,
    created_at: link.createdAt,
    expires_at: link.expiresAt,
    usage_limit: link.usageLimit,
    uses: link.uses,
    approval: link.approval,
    revoked_at: link.revokedAt,
    state: link.state,
  });

  routes.get(
    "/docks/:id/subscribers",
    { schema: { params: dockParams }, onRequest: quietly },
    async (request): Promise<SubscriberListAnswer> => {
      const dock = await ownedDock(request, request.params.id);
      const subscribers = await options.subscriptions.list(dock.id);
      return {
        ok: true,
        subscribers: subscribers.map(
          (s): Subscriber => ({
            chat_id: s.chatId,
            chat_type: s.chatType,
            state: s.state,
            first_name: s.firstName,
            username: s.username,
            title: s.title,
            name: s.name,
            since: s.since,
            invite: s.invite,
          }),
        ),
      };
    },
  );

  routes.delete(
    "/docks/:id/subscribers/:chatId",
    { schema: { params: subscriberParams } },
    async (request): Promise<OkAnswer> => {
      const dock = await ownedDock(request, request.params.id);
      const chatId = chatIdOf(request.params.chatId);
      const removed =
        chatId !== null && (await options.audience.remove(dock.id, chatId, actor(request.signedIn)));
      if (!removed) throw new ApiError("not_found", "This chat is not subscribed to the Dock.");
      return { ok: true };
    },
  );

  routes.get(
    "/docks/:id/invites",
    { schema: { params: dockParams }, onRequest: quietly },
    async (request): Promise<InviteLinkListAnswer> => {
      const dock = await ownedDock(request, request.params.id);
      const links = await options.audience.invites.list(dock.id);
      return { ok: true, invites: await Promise.all(links.map(inviteView)) };
    },
  );

  /** A new invite link, with its QR code. */
  routes.post(
    "/docks/:id/invites",
    { schema: { params: dockParams, body: inviteLinkBody } },
    async (request, reply) => {
      const dock = await ownedDock(request, request.params.id);
      const rules = validateInviteRules(request.body, options.now());
      if (!rules.ok) throw new ApiError("invalid_fields", undefined, {}, rules.errors);
      const link = await options.audience.createInvite(dock.id, rules.value, actor(request.signedIn));
      const view = await inviteView(link);
      return reply
        .code(201)
        .send({ ok: true, invite: view, qr_svg: await qrSvg(view.link) } satisfies InviteLinkAnswer);
    },
  );

  /** One invite link with its QR code (the console's QR button). */
  routes.get(
    "/docks/:id/invites/:inviteId",
    { schema: { params: inviteLinkParams } },
    async (request): Promise<InviteLinkAnswer> => {
      const dock = await ownedDock(request, request.params.id);
      const { inviteId } = request.params;
      const link = INVITE_ID.test(inviteId)
        ? await options.audience.invites.get(dock.id, inviteId)
        : undefined;
      if (link === undefined) throw new ApiError("not_found", "This Dock has no such invite link.");
      const view = await inviteView(link);
      return { ok: true, invite: view, qr_svg: await qrSvg(view.link) };
    },
  );

  /** Revokes an invite link: nobody joins through it any more; who did stays subscribed. */
  routes.delete(
    "/docks/:id/invites/:inviteId",
    { schema: { params: inviteLinkParams } },
    async (request): Promise<OkAnswer> => {
      const dock = await ownedDock(request, request.params.id);
      const { inviteId } = request.params;
      const revoked = INVITE_ID.test(inviteId)
        ? await options.audience.revokeInvite(dock.id, inviteId, actor(request.signedIn))
        : undefined;
      if (revoked === undefined)
        throw new ApiError("not_found", "This Dock has no such invite link, or it was revoked already.");
      return { ok: true };
    },
  );

  routes.get(
    "/docks/:id/requests",
    { schema: { params: dockParams }, onRequest: quietly },
    async (request): Promise<JoinRequestListAnswer> => {
      const dock = await ownedDock(request, request.params.id);
      return { ok: true, requests: (await options.audience.requests.pending(dock.id)).map(requestView) };
    },
  );

  /** Approves or declines a join request, as its copies' buttons in the bot do: the first decision wins. */
  const decide = async (
    request: FastifyRequest,
    params: { id: string; requestId: string },
    decision: "approved" | "declined",
    ban: boolean,
  ): Promise<JoinRequestAnswer> => {
    const dock = await ownedDock(request, params.id);
    const who = actor(request.signedIn);
    const outcome = REQUEST_ID.test(params.requestId)
      ? await options.audience.decide(dock.id, params.requestId, decision, who, { ban })
      : ({ kind: "not_found" } as const);
    if (outcome.kind === "not_found") throw new ApiError("not_found", "This Dock has no such join request.");
    if (outcome.kind === "ended") {
      const { state, decidedBy } = outcome.request;
      throw new ApiError(
        "request_ended",
        state === "expired" || state === "pending"
          ? "This join request has expired."
          : `This join request was already ${state} by ${decidedBy?.name ?? "the Dock's owner"}.`,
      );
    }
    return { ok: true, request: requestView(outcome.request) };
  };

  routes.post(
    "/docks/:id/requests/:requestId/approve",
    { schema: { params: requestParams } },
    async (request) => decide(request, request.params, "approved", false),
  );

  routes.post(
    "/docks/:id/requests/:requestId/decline",
    {
      schema: { params: requestParams, body: declineBody },
      // No body means {}: a plain decline.
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request) => decide(request, request.params, "declined", request.body?.ban === true),
  );

  routes.get(
    "/docks/:id/bans",
    { schema: { params: dockParams }, onRequest: quietly },
    async (request): Promise<BanListAnswer> => {
      const dock = await ownedDock(request, request.params.id);
      const bans = await options.audience.bans.list(dock.id);
      return {
        ok: true,
        bans: bans.map((ban) => ({
          chat_id: ban.chatId,
          name: ban.name,
          banned_by: ban.bannedBy,
          banned_at: ban.bannedAt,
        })),
      };
    },
  );

  /** Bans a chat: removed if subscribed (and told), its request waiting declined; it may not join or ask again. */
  routes.post(
    "/docks/:id/bans",
    { schema: { params: dockParams, body: banBody } },
    async (request, reply) => {
      const dock = await ownedDock(request, request.params.id);
      const chatId = request.body.chat_id;
      if (!Number.isSafeInteger(chatId) || chatId === 0)
        throw new ApiError("invalid_fields", undefined, {}, [
          { field: "chat_id", message: "chat_id must be a Telegram chat id" },
        ]);
      const banned = await options.audience.ban(dock.id, chatId, actor(request.signedIn));
      return reply.code(banned ? 201 : 200).send({ ok: true } satisfies OkAnswer);
    },
  );

  routes.delete(
    "/docks/:id/bans/:chatId",
    { schema: { params: banParams } },
    async (request): Promise<OkAnswer> => {
      const dock = await ownedDock(request, request.params.id);
      const chatId = chatIdOf(request.params.chatId);
      const unbanned =
        chatId !== null && (await options.audience.unban(dock.id, chatId, actor(request.signedIn)));
      if (!unbanned) throw new ApiError("not_found", "This chat is not banned from the Dock.");
      return { ok: true };
    },
  );
}
