import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { isVisibility, VISIBILITIES, type Visibility } from "../../domain/audience.ts";
import type { CallbackTargets } from "../../domain/callback-target.ts";
import { curlExamples } from "../../domain/curl-examples.ts";
import { validateDockFields } from "../../domain/dock.ts";
import { MESSAGE_ID_PATTERN } from "../../domain/ids.ts";
import { OptionsError, prepareContent } from "../../domain/message-options.ts";
import { SCOPES, type Scope } from "../../domain/principal.ts";
import { notificationBody } from "../../domain/render.ts";
import { telegramLink } from "../../domain/telegram-link.ts";
import type { Intake } from "../../intake.ts";
import { ALL_FORMAT_NAMES } from "../../integrations/formats.ts";
import { integrationSnippets } from "../../integrations/snippets.ts";
import { validateTemplate } from "../../integrations/template.ts";
import { quietly } from "../../log.ts";
import type { ActivityRepository } from "../../store/activity.ts";
import type { Audience } from "../../store/audience.ts";
import { type DockCredential, TooManyGithubCredentials } from "../../store/dock-credentials.ts";
import type { DockRepository, DockWithSecret } from "../../store/docks.ts";
import type { OutboxViews } from "../../store/outbox-views.ts";
import type { SessionRepository } from "../../store/sessions.ts";
import { ApiError } from "../errors.ts";
import { inboundMessage, inboundOf, templateTime } from "../inbound.ts";
import { requireSession, type SignedIn } from "../session.ts";
import type { TemplateRenderer } from "../template-renderer.ts";
import { copiesQuery, deliveryDetail, historyQuery, messageReport } from "./messages.ts";
import { ownedDocks } from "./owned-dock.ts";
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
  /** Where Docks' templates are rendered (off the event loop): the preview's too. */
  templates: TemplateRenderer;
}

/** What "Send test message" sends. */
export const TEST_MESSAGE =
  "Test message from the Dock Notify console ✅\nIf you can read this, delivery works.";

/**
 * Everything an owner does with their Docks: create, edit, delete, rotate the secrets, watch
 * deliveries, send a test message (who may subscribe is `console/audience.ts`'s). Every route needs a session (and, to
 * change anything, its CSRF token) and answers `404` for another owner's Dock exactly as for a
 * missing one. Part of `consoleApi`, which provides the cookies and `request.signedIn`.
 */
export async function docks(app: FastifyInstance, options: DocksOptions): Promise<void> {
  const routes = app.withTypeProvider<TypeBoxTypeProvider>();
  app.addHook("preHandler", async (request) => {
    request.signedIn = await requireSession(request, options.sessions);
  });

  const signedIn = (request: FastifyRequest) => request.signedIn as SignedIn;
  const previewTime = templateTime();

  const ownedDock = ownedDocks(options.docks);

  /** A Dock with everything its page needs: its credentials, commands and tools' settings. */
  const dockJson = async (dock: DockWithSecret): Promise<Dock> => {
    const username = await options.botUsername();
    const numbers = (await options.activity.headlines([dock.id])).get(dock.id);
    return {
      id: dock.id,
      name: dock.name,
      link: dock.link,
      description: dock.description,
      visibility: dock.visibility,
      callback_url: dock.callback_url ?? null,
      secret_key: dock.secretKey,
      signing_secret: dock.signingSecret,
      hook_token: dock.hookToken,
      hook_url:
        dock.hookToken === null ? null : `${options.publicUrl.replace(/\/$/, "")}/hook/${dock.hookToken}`,
      inbound_format: dock.inboundFormat,
      template: dock.template as Dock["template"],
      integrations: integrationSnippets({
        publicUrl: options.publicUrl,
        dockId: dock.id,
        secretKey: dock.secretKey,
        hookToken: dock.hookToken,
      }).map(({ needsHookToken, ...snippet }) => ({ ...snippet, needs_hook_token: needsHookToken })),
      subscribers: dock.activeSubscribers,
      pending_requests: dock.pendingRequests,
      created_at: dock.createdAt,
      updated_at: dock.updatedAt,
      open_in_telegram: telegramLink(options.publicUrl, username, dock.id, options.sandbox),
      examples: curlExamples(options.publicUrl, dock.id, dock.secretKey),
      stats: dockStats(dock.activeSubscribers, numbers),
    };
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
    const docks = await options.docks.list(signedIn(request).user.id);
    // The headline numbers of the whole list in a fixed number of queries, not per Dock.
    const headlines = await options.activity.headlines(docks.map((dock) => dock.id));
    return {
      ok: true,
      docks: docks.map((dock) => ({
        id: dock.id,
        name: dock.name,
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
    const dock = await options.docks.create(ownerId, fields, visibility);
    return reply.code(201).send({ ok: true, dock: await dockJson(dock) } satisfies DockAnswer);
  });

  routes.get(
    "/docks/:id",
    { schema: { params: dockParams }, onRequest: quietly },
    async (request): Promise<DockAnswer> => {
      return { ok: true, dock: await dockJson(await ownedDock(request, request.params.id)) };
    },
  );

  /** The Dock's chart: `days` (7, the default, or 30) UTC days, oldest first, from the daily counts. */
  routes.get(
    "/docks/:id/activity",
    { schema: { params: dockParams, querystring: activityQuery }, onRequest: quietly },
    async (request): Promise<ActivityAnswer> => {
      const dock = await ownedDock(request, request.params.id);
      const days = request.query.days ?? "7";
      if (days !== "7" && days !== "30") throw new ApiError("invalid_request", "days must be 7 or 30.");
      return { ok: true, days: await options.activity.days(dock.id, Number(days)) };
    },
  );

  routes.patch(
    "/docks/:id",
    { schema: { params: dockParams, body: dockFieldsBody } },
    async (request): Promise<DockAnswer> => {
      const dock = await ownedDock(request, request.params.id);
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
      await options.docks.update(dock.id, fields);
      if (visibility !== undefined)
        await options.audience.setVisibility(dock.id, visibility, signedIn(request).user.id);
      return { ok: true, dock: await dockJson(await ownedDock(request, dock.id)) };
    },
  );

  routes.delete("/docks/:id", { schema: { params: dockParams } }, async (request): Promise<OkAnswer> => {
    const dock = await ownedDock(request, request.params.id);
    // Through the audience: its subscribers are told at once.
    await options.audience.deleteDock(dock.id);
    return { ok: true };
  });

  routes.post(
    "/docks/:id/rotate-secret",
    { schema: { params: dockParams } },
    async (request): Promise<DockAnswer> => {
      const dock = await ownedDock(request, request.params.id);
      await options.docks.rotateSecret(dock.id);
      return { ok: true, dock: await dockJson(await ownedDock(request, dock.id)) };
    },
  );

  routes.post(
    "/docks/:id/rotate-signing-secret",
    { schema: { params: dockParams } },
    async (request): Promise<DockAnswer> => {
      const dock = await ownedDock(request, request.params.id);
      await options.docks.rotateSigningSecret(dock.id);
      return { ok: true, dock: await dockJson(await ownedDock(request, dock.id)) };
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
      const dock = await ownedDock(request, request.params.id);
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
      const dock = await ownedDock(request, request.params.id);
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
        made = await options.docks.credentials.create(dock.id, trimmed, scope as Scope);
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
      const dock = await ownedDock(request, request.params.id);
      if (!(await options.docks.credentials.revoke(dock.id, request.params.credentialId)))
        throw new ApiError("not_found", "This Dock has no such credential.");
      return { ok: true };
    },
  );

  routes.post(
    "/docks/:id/hook-token",
    { schema: { params: dockParams } },
    async (request): Promise<DockAnswer> => {
      const dock = await ownedDock(request, request.params.id);
      await options.docks.rotateHookToken(dock.id);
      return { ok: true, dock: await dockJson(await ownedDock(request, dock.id)) };
    },
  );

  routes.delete(
    "/docks/:id/hook-token",
    { schema: { params: dockParams } },
    async (request): Promise<DockAnswer> => {
      const dock = await ownedDock(request, request.params.id);
      await options.docks.revokeHookToken(dock.id);
      return { ok: true, dock: await dockJson(await ownedDock(request, dock.id)) };
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
      const dock = await ownedDock(request, request.params.id);
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
      await options.docks.updateIntegrations(dock.id, {
        ...(format !== undefined ? { inboundFormat: format } : {}),
        ...(value !== undefined ? { template: value } : {}),
      });
      return { ok: true, dock: await dockJson(await ownedDock(request, dock.id)) };
    },
  );

  routes.post(
    "/docks/:id/integrations/preview",
    { schema: { params: dockParams, body: previewBody } },
    async (request): Promise<PreviewAnswer> => {
      const dock = await ownedDock(request, request.params.id);
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
        templates: options.templates,
        renderBudget: previewTime,
        ...(format === "template" && template !== undefined
          ? { template: await checkedTemplate(template) }
          : {}),
      });
      if (result.kind === "skip")
        return { ok: true, format: result.format, result: { kind: "skip", reason: result.reason } };
      let content: Awaited<ReturnType<typeof prepareContent>>;
      try {
        content = await prepareContent(result.msg, result.options);
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
      const dock = await ownedDock(request, request.params.id);
      const page = await options.report.history(dock.id, historyQuery(request.query));
      return { ok: true, messages: page.messages.map(messageReport), next_before: page.nextBefore };
    },
  );

  routes.get(
    "/docks/:id/messages/:messageId",
    { schema: { params: messageParams, querystring: messageDetailQuery }, onRequest: quietly },
    async (request): Promise<MessageDetailAnswer> => {
      const dock = await ownedDock(request, request.params.id);
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
    const dock = await ownedDock(request, request.params.id);
    // Through the same door as the send API: the Dock's rate limit and the counters apply.
    const result = await options.intake.acceptAuthenticated({
      dockId: dock.id,
      text: TEST_MESSAGE,
      source: "console",
    });
    return reply.code(202).send({
      ok: true,
      message_id: result.messageId,
      subscribers: result.subscribers,
    } satisfies TestMessageAnswer);
  });
}
