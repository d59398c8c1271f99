import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { isVisibility, VISIBILITIES, type Visibility } from "../../domain/audience.ts";
import type { AuditSink } from "../../domain/audit.ts";
import type { CallbackTargets } from "../../domain/callback-target.ts";
import { curlExamples } from "../../domain/curl-examples.ts";
import { validateDockFields } from "../../domain/dock.ts";
import { allowedActions, can, type DockRole } from "../../domain/dock-roles.ts";
import { MESSAGE_ID_PATTERN } from "../../domain/ids.ts";
import { OptionsError, prepareContent } from "../../domain/message-options.ts";
import { SCOPES, type Scope } from "../../domain/principal.ts";
import { notificationBody } from "../../domain/render.ts";
import { telegramLink } from "../../domain/telegram-link.ts";
import { ALL_FORMAT_NAMES } from "../../integrations/formats.ts";
import { integrationSnippets } from "../../integrations/snippets.ts";
import { validateTemplate } from "../../integrations/template.ts";
import { quietly } from "../../runtime/log.ts";
import type { ActivityRepository } from "../../store/activity.ts";
import type { Audience } from "../../store/audience.ts";
import type { CoOwnerRepository } from "../../store/co-owners.ts";
import { type DockCredential, TooManyGithubCredentials } from "../../store/dock-credentials.ts";
import type { DockRepository, DockWithSecret } from "../../store/docks.ts";
import type { OutboxViews } from "../../store/outbox-views.ts";
import type { SessionRepository } from "../../store/sessions.ts";
import { ApiError } from "../errors.ts";
import { inboundMessage, inboundOf, templateTime } from "../inbound.ts";
import type { Intake } from "../intake.ts";
import type { PayloadThread } from "../payload-thread.ts";
import { requireSession, type SignedIn } from "../session.ts";
import { dockAccess } from "./dock-access.ts";
import { copiesQuery, deliveryDetail, historyQuery, messageReport } from "./messages.ts";
import {
  type ActivityAnswer,
  activityQuery,
  type CredentialAnswer,
  type CredentialListAnswer,
  credentialBody,
  credentialParams,
  type Dock,
  type DockAnswer,
  type DockListAnswer,
  dockFieldsBody,
  dockParams,
  integrationsBody,
  type MessageDetailAnswer,
  type MessageListAnswer,
  messageDetailQuery,
  messageHistoryQuery,
  messageParams,
  type OkAnswer,
  type PreviewAnswer,
  previewBody,
  type TestMessageAnswer,
} from "./schemas.ts";
import { dockStats } from "./stats.ts";

export interface DocksOptions {
  docks: DockRepository;
  /** Who has which role on each Dock beside its owner. */
  coOwners: CoOwnerRepository;
  /** Where what the owners and co-owners do to a Dock is recorded. */
  audit: AuditSink;
  /** Who may subscribe, invite links, join requests, removals: done and audited in one place. */
  audience: Audience;
  /** How the test message enters, like any other: rate limit, storage, counters. */
  intake: Intake;
  sessions: SessionRepository;
  report: OutboxViews;
  /** The daily activity counts: a Dock's chart, the list's headline numbers. */
  activity: ActivityRepository;
  /** Docks one owner may create here (MAX_DOCKS_PER_OWNER); 0: no cap. */
  maxDocksPerOwner: number;
  publicUrl: string;
  /** True when the built-in sandbox plays Telegram: links go to its chat page. */
  sandbox: boolean;
  botUsername: () => Promise<string>;
  /** Which addresses a callback URL may point to (CALLBACK_ALLOWED_NETWORKS). */
  callbackTargets: CallbackTargets;
  /** Where Docks' templates are rendered and long texts parsed (off the event loop): the preview's too. */
  payloadThread: PayloadThread;
}

/** What "Send test message" sends. */
export const TEST_MESSAGE =
  "Test message from the Dock Notify console ✅\nIf you can read this, delivery works.";

/**
 * Everything an owner and the co-owners do with their Docks: create, edit, delete, rotate the
 * secrets, watch deliveries, send a test message (who may subscribe is `console/audience.ts`'s).
 * Every route needs a session (and, to change anything, its CSRF token), asks `dockAccess` whether
 * the person's role on the Dock allows what it does (`403 insufficient_role` when not), and answers
 * `404` for a Dock they have no role on exactly as for a missing one. What changes a Dock is
 * written to its audit log. Part of `consoleApi`, which provides the cookies and `request.signedIn`.
 */
export async function docks(app: FastifyInstance, options: DocksOptions): Promise<void> {
  const routes = app.withTypeProvider<TypeBoxTypeProvider>();
  app.addHook("preHandler", async (request) => {
    request.signedIn = await requireSession(request, options.sessions);
  });

  const signedIn = (request: FastifyRequest) => request.signedIn as SignedIn;
  const previewTime = templateTime();

  /** The Dock and the caller's role on it, when the role allows `action` (see dockAccess). */
  const dockFor = dockAccess(options.docks, options.coOwners);
  /** The signed-in person, as the Dock's audit log names who made a change. */
  const by = (request: FastifyRequest) => ({ actor: signedIn(request).user.id });

  /**
   * A Dock with everything its page needs, as far as `role` may see it: its credentials, commands
   * and tools' settings for a role that manages its credentials; its callback URL and settings for
   * one that edits them.
   */
  const dockJson = async (dock: DockWithSecret, role: DockRole): Promise<Dock> => {
    const username = await options.botUsername();
    const numbers = (await options.activity.headlines([dock.id])).get(dock.id);
    const secrets = can(role, "manage_credentials");
    const settings = can(role, "edit_settings");
    return {
      id: dock.id,
      name: dock.name,
      link: dock.link,
      description: dock.description,
      role,
      may: allowedActions(role),
      callback_url: settings ? (dock.callback_url ?? null) : null,
      secret_key: secrets ? dock.secretKey : null,
      signing_secret: secrets ? dock.signingSecret : null,
      hook_token: secrets ? dock.hookToken : null,
      visibility: dock.visibility,
      hook_url:
        !secrets || dock.hookToken === null
          ? null
          : `${options.publicUrl.replace(/\/$/, "")}/hook/${dock.hookToken}`,
      inbound_format: settings ? dock.inboundFormat : null,
      template: settings ? (dock.template as Dock["template"]) : null,
      integrations: secrets
        ? integrationSnippets({
            publicUrl: options.publicUrl,
            dockId: dock.id,
            secretKey: dock.secretKey,
            hookToken: dock.hookToken,
          }).map(({ needsHookToken, ...snippet }) => ({ ...snippet, needs_hook_token: needsHookToken }))
        : [],
      subscribers: dock.activeSubscribers,
      pending_requests: dock.pendingRequests,
      created_at: dock.createdAt,
      updated_at: dock.updatedAt,
      open_in_telegram: telegramLink(options.publicUrl, username, dock.id, options.sandbox),
      examples: secrets ? curlExamples(options.publicUrl, dock.id, dock.secretKey) : null,
      stats: dockStats(dock.activeSubscribers, numbers),
    };
  };

  /** The Dock as the caller sees it now, after a change (read again: the change is in it). */
  const dockAnswer = async (request: FastifyRequest, id: string): Promise<DockAnswer> => {
    const { dock, role } = await dockFor(request, id, "read");
    return { ok: true, dock: await dockJson(dock, role) };
  };

  /**
   * The fields as sent, checked together (every problem named by its field). `stored`: the Dock's
   * callback URL, which an edit of another field keeps as it is. `visibility`: undefined when not sent.
   */
  const validFields = (input: Record<string, unknown>, stored: string | null = null) => {
    const result = validateDockFields(input, options.callbackTargets, stored);
    const problems: { field: string; message: string }[] = result.ok ? [] : [...result.errors];
    const visibility = input.visibility;
    if (visibility !== undefined && !isVisibility(visibility))
      problems.push({ field: "visibility", message: `visibility must be one of ${VISIBILITIES.join(", ")}` });
    if (!result.ok || problems.length > 0) throw new ApiError("invalid_fields", undefined, {}, problems);
    return { fields: result.value, visibility: visibility as Visibility | undefined };
  };

  // Read again by the console whenever the live stream says a Dock changed: logged at debug.
  routes.get("/docks", { onRequest: quietly }, async (request): Promise<DockListAnswer> => {
    const docks = await options.docks.listFor(signedIn(request).user.id);
    // The headline numbers of the whole list in a fixed number of queries, not per Dock.
    const headlines = await options.activity.headlines(docks.map((dock) => dock.id));
    return {
      ok: true,
      docks: docks.map((dock) => ({
        id: dock.id,
        name: dock.name,
        role: dock.role,
        link: dock.link,
        description: dock.description,
        visibility: dock.visibility,
        subscribers: dock.activeSubscribers,
        pending_requests: dock.pendingRequests,
        created_at: dock.createdAt,
        updated_at: dock.updatedAt,
        stats: dockStats(dock.activeSubscribers, headlines.get(dock.id)),
      })),
    };
  });

  routes.post("/docks", { schema: { body: dockFieldsBody } }, async (request, reply) => {
    // Someone let in only for the Docks shared with them creates none (an owner's invitation does).
    if (signedIn(request).user.role === "co_owner") throw new ApiError("not_an_owner");
    const { fields, visibility } = validFields(request.body);
    const ownerId = signedIn(request).user.id;
    // Checked, then created: two creates at the same instant can pass it together, one Dock over
    // at most. The cap is against runaway scripts and careless clicking, not a billing quota.
    if (
      options.maxDocksPerOwner > 0 &&
      (await options.docks.countOwnedBy(ownerId)) >= options.maxDocksPerOwner
    ) {
      throw new ApiError("too_many_docks");
    }
    const dock = await options.docks.create(ownerId, fields, by(request), visibility);
    return reply.code(201).send({ ok: true, dock: await dockJson(dock, "owner") } satisfies DockAnswer);
  });

  routes.get(
    "/docks/:id",
    { schema: { params: dockParams }, onRequest: quietly },
    async (request): Promise<DockAnswer> => dockAnswer(request, request.params.id),
  );

  /** The Dock's chart: `days` (7, the default, or 30) UTC days, oldest first, from the daily counts. */
  routes.get(
    "/docks/:id/activity",
    { schema: { params: dockParams, querystring: activityQuery }, onRequest: quietly },
    async (request): Promise<ActivityAnswer> => {
      const { dock } = await dockFor(request, request.params.id, "read");
      const days = request.query.days ?? "7";
      if (days !== "7" && days !== "30") throw new ApiError("invalid_request", "days must be 7 or 30.");
      return { ok: true, days: await options.activity.days(dock.id, Number(days)) };
    },
  );

  routes.patch(
    "/docks/:id",
    { schema: { params: dockParams, body: dockFieldsBody } },
    async (request): Promise<DockAnswer> => {
      const { dock } = await dockFor(request, request.params.id, "edit_settings");
      const { fields, visibility } = validFields(
        {
          name: dock.name,
          link: dock.link,
          description: dock.description,
          callback_url: dock.callback_url,
          ...request.body,
        },
        dock.callback_url,
      );
      await options.docks.update(dock.id, fields, by(request));
      if (visibility !== undefined)
        await options.audience.setVisibility(dock.id, visibility, signedIn(request).user.id);
      return dockAnswer(request, dock.id);
    },
  );

  routes.delete("/docks/:id", { schema: { params: dockParams } }, async (request): Promise<OkAnswer> => {
    const { dock } = await dockFor(request, request.params.id, "delete_dock");
    // Through the audience: its subscribers are told at once.
    await options.audience.deleteDock(dock.id);
    request.log.info({ dock_id: dock.id, by: signedIn(request).user.id }, "dock deleted");
    return { ok: true };
  });

  routes.post(
    "/docks/:id/rotate-secret",
    { schema: { params: dockParams } },
    async (request): Promise<DockAnswer> => {
      const { dock } = await dockFor(request, request.params.id, "manage_credentials");
      await options.docks.rotateSecret(dock.id, by(request));
      return dockAnswer(request, dock.id);
    },
  );

  routes.post(
    "/docks/:id/rotate-signing-secret",
    { schema: { params: dockParams } },
    async (request): Promise<DockAnswer> => {
      const { dock } = await dockFor(request, request.params.id, "manage_credentials");
      await options.docks.rotateSigningSecret(dock.id, by(request));
      return dockAnswer(request, dock.id);
    },
  );

  const credentialJson = (c: DockCredential) => ({
    id: c.id,
    name: c.name,
    scope: c.scope,
    prefix: c.prefix,
    created_at: c.createdAt,
    last_used_at: c.lastUsedAt,
  });

  routes.get(
    "/docks/:id/credentials",
    { schema: { params: dockParams }, onRequest: quietly },
    async (request): Promise<CredentialListAnswer> => {
      const { dock } = await dockFor(request, request.params.id, "manage_credentials");
      return { ok: true, credentials: (await options.docks.credentials.list(dock.id)).map(credentialJson) };
    },
  );

  /**
   * A new credential; its secret is in this answer only (stored as a hash, a GitHub one sealed
   * too for its signatures: never shown again).
   */
  routes.post(
    "/docks/:id/credentials",
    { schema: { params: dockParams, body: credentialBody } },
    async (request, reply) => {
      const { dock } = await dockFor(request, request.params.id, "manage_credentials");
      const { name, scope } = request.body;
      const problems: { field: string; message: string }[] = [];
      const trimmed = typeof name === "string" ? name.trim() : "";
      if (trimmed.length === 0 || [...trimmed].length > 64)
        problems.push({ field: "name", message: "name is required, at most 64 characters" });
      if (!(SCOPES as readonly unknown[]).includes(scope))
        problems.push({ field: "scope", message: `scope must be one of ${SCOPES.join(", ")}` });
      if (problems.length > 0) throw new ApiError("invalid_fields", undefined, {}, problems);
      let made: { credential: DockCredential; secret: string };
      try {
        made = await options.docks.credentials.create(dock.id, trimmed, scope as Scope, by(request));
      } catch (error) {
        if (error instanceof TooManyGithubCredentials) throw new ApiError("too_many_github_credentials");
        throw error;
      }
      return reply.code(201).send({
        ok: true,
        credential: credentialJson(made.credential),
        secret: made.secret,
      } satisfies CredentialAnswer);
    },
  );

  /** Revokes the credential: its next request is refused. */
  routes.delete(
    "/docks/:id/credentials/:credentialId",
    { schema: { params: credentialParams } },
    async (request): Promise<OkAnswer> => {
      const { dock } = await dockFor(request, request.params.id, "manage_credentials");
      if (!(await options.docks.credentials.revoke(dock.id, request.params.credentialId, by(request))))
        throw new ApiError("not_found", "This Dock has no such credential.");
      return { ok: true };
    },
  );

  routes.post(
    "/docks/:id/hook-token",
    { schema: { params: dockParams } },
    async (request): Promise<DockAnswer> => {
      const { dock } = await dockFor(request, request.params.id, "manage_credentials");
      await options.docks.rotateHookToken(dock.id, by(request));
      return dockAnswer(request, dock.id);
    },
  );

  routes.delete(
    "/docks/:id/hook-token",
    { schema: { params: dockParams } },
    async (request): Promise<DockAnswer> => {
      const { dock } = await dockFor(request, request.params.id, "manage_credentials");
      await options.docks.revokeHookToken(dock.id, by(request));
      return dockAnswer(request, dock.id);
    },
  );

  /** A template as sent, checked: its problems name the field (and line and column) for the form. */
  const checkedTemplate = async (input: unknown) => {
    const checked = await validateTemplate(input);
    if (!checked.ok) {
      throw new ApiError(
        "invalid_fields",
        undefined,
        {},
        checked.errors.map((p) => ({ field: `template.${p.field}`, message: p.message })),
      );
    }
    return checked.value;
  };

  routes.put(
    "/docks/:id/integrations",
    { schema: { params: dockParams, body: integrationsBody } },
    async (request): Promise<DockAnswer> => {
      const { dock } = await dockFor(request, request.params.id, "edit_settings");
      const { inbound_format: format, template } = request.body;
      if (format != null && !(ALL_FORMAT_NAMES as readonly string[]).includes(format)) {
        throw new ApiError("invalid_fields", undefined, {}, [
          { field: "inbound_format", message: `must be one of ${ALL_FORMAT_NAMES.join(", ")}, or null` },
        ]);
      }
      const value = template === undefined || template === null ? template : await checkedTemplate(template);
      // A Dock reading every body with a template it no longer has would refuse them all.
      const templateAfter = value === undefined ? dock.template : value;
      const formatAfter = format === undefined ? dock.inboundFormat : format;
      if (formatAfter === "template" && templateAfter == null) {
        throw new ApiError("invalid_fields", undefined, {}, [
          { field: "inbound_format", message: "template needs a template: write one first" },
        ]);
      }
      await options.docks.updateIntegrations(
        dock.id,
        {
          ...(format !== undefined ? { inboundFormat: format } : {}),
          ...(value !== undefined ? { template: value } : {}),
        },
        by(request),
      );
      return dockAnswer(request, dock.id);
    },
  );

  routes.post(
    "/docks/:id/integrations/preview",
    { schema: { params: dockParams, body: previewBody } },
    async (request): Promise<PreviewAnswer> => {
      const { dock } = await dockFor(request, request.params.id, "edit_settings");
      const { format, sample, template } = request.body;
      // The sample as the tool would send it: JSON if it reads as JSON, else XML or text.
      const trimmed = sample.trim();
      const mediaType = trimmed.startsWith("<")
        ? "application/xml"
        : /^[[{]/.test(trimmed)
          ? "application/json"
          : "text/plain";
      const headers = Object.fromEntries(
        Object.entries(request.body.headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]),
      );
      const inbound = inboundOf(sample, mediaType, headers);
      const result = await inboundMessage({
        inbound,
        named: format,
        dock: { id: dock.id, name: dock.name, watched: false, inbound: dock.inboundFormat },
        docks: options.docks,
        query: {},
        thread: options.payloadThread,
        renderBudget: previewTime,
        ...(format === "template" && template !== undefined
          ? { template: await checkedTemplate(template) }
          : {}),
      });
      if (result.kind === "skip")
        return { ok: true, format: result.format, result: { kind: "skip", reason: result.reason } };
      let content: Awaited<ReturnType<typeof prepareContent>>;
      try {
        content = await prepareContent(result.msg, result.options, options.payloadThread.read);
      } catch (error) {
        if (!(error instanceof OptionsError)) throw error;
        throw new ApiError("invalid_fields", undefined, {}, error.problems);
      }
      return {
        ok: true,
        format: result.format,
        result: {
          kind: "message",
          shown: notificationBody(result.msg, content),
          options: result.options,
          key: result.key,
          final: result.final,
        },
      };
    },
  );

  routes.get(
    "/docks/:id/messages",
    { schema: { params: dockParams, querystring: messageHistoryQuery }, onRequest: quietly },
    async (request): Promise<MessageListAnswer> => {
      const { dock } = await dockFor(request, request.params.id, "read");
      const page = await options.report.history(dock.id, historyQuery(request.query));
      return { ok: true, messages: page.messages.map(messageReport), next_before: page.nextBefore };
    },
  );

  routes.get(
    "/docks/:id/messages/:messageId",
    { schema: { params: messageParams, querystring: messageDetailQuery }, onRequest: quietly },
    async (request): Promise<MessageDetailAnswer> => {
      const { dock } = await dockFor(request, request.params.id, "read");
      const copies = copiesQuery(request.query);
      const { messageId } = request.params;
      const detail = MESSAGE_ID_PATTERN.test(messageId)
        ? await options.report.detail(dock.id, messageId, copies)
        : undefined;
      // Another Dock's message (even the same owner's) is as missing as one that never was.
      if (!detail) throw new ApiError("not_found", "No such message.");
      return {
        ok: true,
        message: {
          ...messageReport(detail.message),
          deliveries: detail.message.deliveries.map(deliveryDetail),
        },
        next_after: detail.nextAfter,
      };
    },
  );

  routes.post("/docks/:id/test-message", { schema: { params: dockParams } }, async (request, reply) => {
    const { dock } = await dockFor(request, request.params.id, "send");
    // Through the same door as the send API: the Dock's rate limit and the counters apply.
    const result = await options.intake.acceptAuthenticated({
      dockId: dock.id,
      text: TEST_MESSAGE,
      source: "console",
    });
    await options.audit.record({
      dockId: dock.id,
      actor: signedIn(request).user.id,
      action: "test_message_sent",
      detail: { message: result.messageId },
    });
    return reply.code(202).send({
      ok: true,
      message_id: result.messageId,
      subscribers: result.subscribers,
    } satisfies TestMessageAnswer);
  });
}
