import cookie from "@fastify/cookie";
import type { FastifyInstance } from "fastify";
import type { DockAudit } from "../store/audit.ts";
import type { RefusedRequests } from "../store/refused-requests.ts";
import type { SandboxDocks } from "../store/sandbox-docks.ts";
import { type AudienceRoutesOptions, audience } from "./console/audience.ts";
import { audit } from "./console/audit.ts";
import { coOwners } from "./console/co-owners.ts";
import { type DocksOptions, docks } from "./console/docks.ts";
import type { LiveHub } from "./console/live.ts";
import { type MessageChangeRoutesOptions, messageChanges } from "./console/message-changes.ts";
import { owners } from "./console/owners.ts";
import { refused } from "./console/refused.ts";
import { type SignInOptions, signIn } from "./console/sign-in.ts";
import { stream } from "./console/stream.ts";
import type { SignedIn } from "./session.ts";

export { TEST_MESSAGE } from "./console/docks.ts";

export type ConsoleApiOptions = SignInOptions &
  DocksOptions &
  AudienceRoutesOptions &
  Pick<MessageChangeRoutesOptions, "changes" | "maxMessageLength"> & {
    /** Each Dock's audit log: written by the routes, read by its own. */
    audit: DockAudit;
    /** The console's live stream (one per process). */
    live: LiveHub;
    /** The Docks of the sandbox's people, offered to administrators on a real bot. */
    sandboxDocks: SandboxDocks;
    /** The Docks' refused requests, noted by the send doors. */
    refused: RefusedRequests;
  };

declare module "fastify" {
  interface FastifyRequest {
    /** Set by the console routes that need a session, once `requireSession` let the request in. */
    signedIn: SignedIn | null;
  }
}

/**
 * The control console's JSON API under `/console/api`: sign-in and sessions (`console/sign-in.ts`),
 * everything an owner does with their Docks (`console/docks.ts`), who may subscribe to them
 * (`console/audience.ts`), their messages edited or deleted (`console/message-changes.ts`), their co-owners (`console/co-owners.ts`) and audit logs
 * (`console/audit.ts`), refused requests (`console/refused.ts`), who may own Docks (administrators:
 * `console/owners.ts`) and the live stream of their
 * changes (`console/stream.ts`). They share what is set up
 * here: cookies, `request.signedIn`, and answers that are never cached. Every state-changing route
 * needs the session's CSRF token.
 */
export async function consoleApi(app: FastifyInstance, options: ConsoleApiOptions): Promise<void> {
  await app.register(cookie);
  app.decorateRequest("signedIn", null);
  app.addHook("onSend", async (_request, reply) => {
    // Answers carry secret keys and personal data: never keep them in a cache.
    reply.header("cache-control", "no-store");
  });

  // Each part gets its dependencies by name, not `options` itself: Fastify adds this plugin's
  // `prefix` to `options`, and a child registered with it would be mounted under it twice.
  await app.register(signIn, {
    loginTokens: options.loginTokens,
    sessions: options.sessions,
    owners: options.owners,
    maxDocksPerOwner: options.maxDocksPerOwner,
    publicUrl: options.publicUrl,
    sandbox: options.sandbox,
    botUsername: options.botUsername,
    botToken: options.botToken,
    loginWidgetDomain: options.loginWidgetDomain,
    sessionTtlMs: options.sessionTtlMs,
    signInAttemptsPerMinute: options.signInAttemptsPerMinute,
    now: options.now,
  });
  await app.register(docks, {
    docks: options.docks,
    coOwners: options.coOwners,
    audit: options.audit,
    audience: options.audience,
    intake: options.intake,
    sessions: options.sessions,
    report: options.report,
    activity: options.activity,
    callbackTargets: options.callbackTargets,
    payloadThread: options.payloadThread,
    maxDocksPerOwner: options.maxDocksPerOwner,
    publicUrl: options.publicUrl,
    sandbox: options.sandbox,
    botUsername: options.botUsername,
  });
  await app.register(coOwners, {
    docks: options.docks,
    coOwners: options.coOwners,
    owners: options.owners,
    sessions: options.sessions,
    publicUrl: options.publicUrl,
    sandbox: options.sandbox,
    botUsername: options.botUsername,
  });
  await app.register(audience, {
    docks: options.docks,
    coOwners: options.coOwners,
    audience: options.audience,
    subscriptions: options.subscriptions,
    sessions: options.sessions,
    publicUrl: options.publicUrl,
    sandbox: options.sandbox,
    botUsername: options.botUsername,
    now: options.now,
  });
  await app.register(messageChanges, {
    docks: options.docks,
    coOwners: options.coOwners,
    sessions: options.sessions,
    changes: options.changes,
    readFormat: options.payloadThread.read,
    maxMessageLength: options.maxMessageLength,
  });
  await app.register(audit, {
    docks: options.docks,
    coOwners: options.coOwners,
    audit: options.audit,
    sessions: options.sessions,
  });
  await app.register(refused, {
    docks: options.docks,
    coOwners: options.coOwners,
    refused: options.refused,
    sessions: options.sessions,
  });
  await app.register(owners, {
    owners: options.owners,
    sandboxDocks: options.sandboxDocks,
    sessions: options.sessions,
    publicUrl: options.publicUrl,
    sandbox: options.sandbox,
    botUsername: options.botUsername,
  });
  await app.register(stream, { hub: options.live, sessions: options.sessions });
}
