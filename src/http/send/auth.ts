import { hash } from "node:crypto";
import type { FastifyRequest } from "fastify";
import { type Attempt, AttemptLimiter, addressKey } from "../../domain/attempts.ts";
import { may, SECRET_KEY } from "../../domain/principal.ts";
import { perMinuteBuckets } from "../../domain/token-bucket.ts";
import type { DockCredentials } from "../../store/credentials.ts";
import { deadlinePassed } from "../../store/faults.ts";
import { EXAMPLE } from "../api-examples.ts";
import { ApiError } from "../errors.ts";
import type { SendApiOptions } from "./options.ts";
import { isSignedPayload, SIGNED_BODY, signedWith } from "./signatures.ts";
import { type CallbackHook, dockOf } from "./state.ts";

/*
 * Who sent a request, judged in one place for every door: HTTP Basic (the secret key or a
 * credential), a hook token in the path, GitLab's token, GitHub's signature — each check one
 * attempt of the client address's failed-authentication allowance. /ping's body credentials are
 * the one exception: its secret key is checked in the transaction that stores the message
 * (send/accept.ts), its attempt taken here all the same.
 */

export const WWW_AUTHENTICATE = { "WWW-Authenticate": 'Basic realm="dock-notify", charset="UTF-8"' };

/** `Authorization: Basic base64(dock_id:secret_key)`, or null when absent or malformed. */
export function parseBasicAuth(header: string | undefined): { user: string; password: string } | null {
  const match = /^Basic[ \t]+([A-Za-z0-9+/=_-]+)[ \t]*$/i.exec(header ?? "");
  if (!match?.[1]) return null;
  const decoded = Buffer.from(match[1], "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon <= 0) return null;
  return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/**
 * The 401 for credentials that are still the docs' and console's placeholders (code copied by
 * selection while the key was hidden): it says what to put there instead of "wrong secret key".
 * Not a guess at anyone's key, so not counted as one.
 */
export function placeholderRefusal(
  dockId: string,
  secretKey: string,
  headers?: Record<string, string>,
): ApiError | null {
  // The console's placeholders, and the API reference's (its example Dock ID among them).
  const placeholders = [
    (dockId === "<DOCK_ID>" || dockId === EXAMPLE.dockId) && dockId,
    (secretKey === "<SECRET_KEY>" || secretKey === EXAMPLE.secretKey) && secretKey,
  ];
  const named = placeholders.filter(Boolean);
  if (named.length === 0) return null;
  return new ApiError(
    "unauthorized",
    `${named.join(" and ")} ${named.length === 1 ? "is a placeholder" : "are placeholders"}: put in your Dock's ID and secret key (the console's Copy buttons copy code with them).`,
    headers,
  );
}

/** The 401 for a hook URL whose token opens no Dock. */
export function unknownHookToken(token: string): ApiError {
  return new ApiError(
    "unauthorized",
    token.startsWith("dnsk_")
      ? "That is a secret key, not a hook token: never put the secret key in a URL (rotate it now if this one was shared). Create a hook URL in the console or with dock-notify docks hook-token."
      : "Unknown hook token (it may have been rotated or removed).",
  );
}

/** The 401 for a secret a door took on a hint (request.deferred) and found wrong: its door's own. */
export function deferredRefusal(deferred: { kind: "key" | "hook"; secret: string }): ApiError {
  return deferred.kind === "hook"
    ? unknownHookToken(deferred.secret)
    : new ApiError("unauthorized", undefined, WWW_AUTHENTICATE);
}

export interface Authentication {
  /** onRequest: refuses (429) an address with too many failed authentications. */
  refuseIfBlocked: CallbackHook;
  /** One attempt of the address's allowance, taken before credentials are checked (see below). */
  beginAttempt(request: FastifyRequest, deadline?: number): Promise<Attempt>;
  /** Credentials looked up and judged as one attempt: the Dock found becomes `request.dock`. */
  judge(
    request: FastifyRequest,
    lookup: () => Promise<DockCredentials | undefined | null>,
    refusal: () => ApiError,
  ): Promise<void>;
  /** HTTP Basic, the Dock ID and its secret key or a credential. */
  basicAuth(request: FastifyRequest): Promise<void>;
  /**
   * The send doors' HTTP Basic (/webhook, /webhook/<format>): as basicAuth, but a secret key this
   * instance found right lately is let through at once, to be checked where the message is stored.
   */
  sendAuth(request: FastifyRequest): Promise<void>;
  /** The messages' routes: HTTP Basic with a principal that may manage messages. */
  manageAuth(request: FastifyRequest): Promise<void>;
  /** /webhook/<format>/<dock_id>: GitLab's token, HTTP Basic, or a signature checked later. */
  pathAuth(request: FastifyRequest): Promise<void>;
  /** Once the body is read: GitHub's X-Hub-Signature-256, if the request has one. */
  signedAuth(request: FastifyRequest): Promise<void>;
  /** /hook/<token>: the token in the path. */
  hookAuth(request: FastifyRequest): Promise<void>;
}

export function authentication(options: SendApiOptions): Authentication {
  const authFailures = perMinuteBuckets(options.authFailuresPerMinute);
  const attempts = authFailures === null ? null : new AttemptLimiter(authFailures);

  /** The 429 for a client address with too many failed authentications, if it has. */
  const blockedError = (request: FastifyRequest) => {
    const wait = attempts?.refusedFor(addressKey(request.ip)) ?? 0;
    return wait > 0 ? ApiError.retryAfter("too_many_auth_failures", wait) : undefined;
  };
  const refuseIfBlocked: CallbackHook = (request, _reply, done) => done(blockedError(request));

  /**
   * One of the address's failed-authentication allowance, taken *before* the credentials are
   * checked (see AttemptLimiter: concurrent guesses cannot outrun the limit, concurrent right
   * requests are never refused for it). An address over its allowance is refused even with the
   * right credentials: otherwise a 429-or-202 answer would tell a guesser which guess was right.
   * Waiting for the attempts being judged ends at `deadline`: they wait on a database that does
   * not answer, and this request is refused as they will be (503).
   */
  const beginAttempt = async (
    request: FastifyRequest,
    deadline = performance.now() + options.databaseTimeoutMs,
  ): Promise<Attempt> => {
    if (attempts === null) return { right: () => {}, wrong: () => {} };
    const attempt = await attempts.begin(addressKey(request.ip), deadline);
    if ("late" in attempt) throw deadlinePassed("waited for the attempts before it to be judged");
    if ("waitSeconds" in attempt) throw ApiError.retryAfter("too_many_auth_failures", attempt.waitSeconds);
    return attempt;
  };

  /**
   * Credentials judged as one attempt of the address's allowance: a Dock found is right (it becomes
   * `request.dock`), none is wrong (the refusal), and a lookup that failed (the database) or
   * threw its own answer was never judged.
   */
  const judge = async (
    request: FastifyRequest,
    lookup: () => Promise<DockCredentials | undefined | null>,
    refusal: () => ApiError,
  ) => {
    const attempt = await beginAttempt(request);
    let dock: DockCredentials | undefined | null;
    try {
      dock = await lookup();
    } catch (error) {
      attempt.right();
      throw error;
    }
    if (!dock) {
      attempt.wrong();
      throw refusal();
    }
    attempt.right();
    request.dock = dock;
  };

  /** Docks whose GitHub deliveries were seen signed with the secret key, each said once in the log. */
  const warnedSecretKeySigners = new Set<string>();
  const signedWithSecretKey = (request: FastifyRequest, dockId: string) => {
    if (warnedSecretKeySigners.has(dockId)) return;
    // Bounded, however many Docks there are: past it, a Dock may be said again.
    if (warnedSecretKeySigners.size >= 10_000) warnedSecretKeySigners.clear();
    warnedSecretKeySigners.add(dockId);
    request.log.warn(
      { dockId },
      "a signed delivery (GitHub, Gitea, Forgejo) was signed with the Dock's secret key, which is deprecated there: create a GitHub credential and make it the webhook's Secret",
    );
  };

  const basicAuth = (request: FastifyRequest) => basic(request, false);
  const sendAuth = (request: FastifyRequest) => basic(request, true);

  const basic = async (request: FastifyRequest, storing: boolean) => {
    const header = request.headers.authorization;
    // No credentials at all is no guess: many clients (wget, Python's urllib) send them only after
    // this challenge, and must not lock themselves out by doing so.
    if (header === undefined) {
      throw new ApiError(
        "unauthorized",
        "No credentials: send the Dock ID and secret key with HTTP Basic authentication (curl -u '<DOCK_ID>:<SECRET_KEY>'), or use the Dock's hook URL.",
        WWW_AUTHENTICATE,
      );
    }
    const credentials = parseBasicAuth(header);
    const placeholder =
      credentials && placeholderRefusal(credentials.user, credentials.password, WWW_AUTHENTICATE);
    if (placeholder) throw placeholder;
    // A door that stores the message: a key found right lately skips the lookup (a round trip to
    // the database per request, outside any batch), and is checked in the storing transaction as
    // /ping's is — a rotated key is refused there at once. The hint only lets the body be read.
    const known =
      storing && credentials !== null
        ? options.docks.recentlyVerified(credentials.user, credentials.password)
        : undefined;
    if (known !== undefined && credentials !== null) {
      const refused = blockedError(request);
      if (refused) throw refused;
      request.dock = known;
      request.deferred = { kind: "key", secret: credentials.password };
      return;
    }
    await judge(
      request,
      async () => credentials && (await options.docks.authenticate(credentials.user, credentials.password)),
      () => new ApiError("unauthorized", undefined, WWW_AUTHENTICATE),
    );
  };

  /**
   * The messages' routes (status, edit, delete, the list): Basic authentication, by the secret key
   * or a credential whose scope allows it — a send credential is refused (`403`), and so never
   * sees subscribers' chat ids.
   */
  const manageAuth = async (request: FastifyRequest) => {
    await basicAuth(request);
    if (!may(dockOf(request).principal ?? SECRET_KEY, "manage_messages")) {
      throw new ApiError("insufficient_scope");
    }
  };

  /**
   * /webhook/<format>/<dock_id>: for tools that sign the body or send a token instead of HTTP Basic
   * authentication — GitHub (and Gitea, Forgejo) sign with a GitHub credential in
   * X-Hub-Signature-256, GitLab sends a credential as X-Gitlab-Token. HTTP Basic works here too
   * (for the same Dock).
   */
  const pathAuth = async (request: FastifyRequest) => {
    const { dock_id: dockId } = request.params as { dock_id: string };
    const token = request.headers["x-gitlab-token"];
    // A signature covers the body: checked once it is read (signedAuth).
    if (typeof request.headers["x-hub-signature-256"] === "string") {
      const refused = blockedError(request);
      if (refused) throw refused;
      return;
    }
    if (typeof token !== "string") {
      if (request.headers.authorization === undefined) {
        throw new ApiError(
          "unauthorized",
          "No credentials: GitHub signs its deliveries only when the webhook has a Secret (set it to a GitHub credential of the Dock); GitLab sends its Secret token (a send credential of the Dock); anything else sends HTTP Basic authentication.",
        );
      }
      await sendAuth(request);
      if (dockOf(request).id !== dockId) throw new ApiError("unauthorized");
      return;
    }
    await judge(
      request,
      () => options.docks.authenticate(dockId, token),
      () =>
        new ApiError(
          "unauthorized",
          "Unknown Dock, or X-Gitlab-Token is neither one of the Dock's send credentials nor its secret key.",
        ),
    );
  };

  /**
   * GitHub's `X-Hub-Signature-256` (also Gitea's, Forgejo's), once the body is read: the Dock named
   * in the path, or the hook token's Dock (whose signature, if sent, must match too). Made with one
   * of the Dock's GitHub credentials (a send principal), or with its secret key (deprecated for
   * GitHub: said once per Dock in the log). Requests without one were authenticated before their
   * body was read.
   */
  const signedAuth = async (request: FastifyRequest) => {
    const signature = request.headers["x-hub-signature-256"];
    if (typeof signature !== "string") return;
    const dockId = request.dock?.id ?? (request.params as { dock_id: string }).dock_id;
    await judge(
      request,
      async () => {
        const signers = await options.docks.signersOf(dockId);
        const index = signedWith(request.body as Buffer | undefined, signature, signers.secrets);
        if (index === -1 || signers.dock === undefined) return undefined;
        // (Thrown inside the lookup: a right signature is no failed guess.)
        if (!isSignedPayload(request)) throw new ApiError("invalid_payload", SIGNED_BODY);
        request.signedBody = hash("sha256", request.body as Buffer, "hex");
        const credential = signers.credentials[index];
        if (credential === null || credential === undefined) {
          signedWithSecretKey(request, signers.dock.id);
          return signers.dock;
        }
        await options.docks.credentials.recordUse(credential.id);
        return { ...signers.dock, principal: { kind: "credential", id: credential.id, scope: "github" } };
      },
      () =>
        new ApiError(
          "unauthorized",
          "Unknown Dock, or X-Hub-Signature-256 does not match: set the webhook's Secret to a GitHub credential of the Dock (dngh_…, made in the console's Settings or with dock-notify docks credentials create --scope github).",
        ),
    );
  };

  /** /hook/<token>: the token in the URL is the credential, checked before the body is read. */
  const hookAuth = async (request: FastifyRequest) => {
    const { token } = request.params as { token: string };
    if (token === EXAMPLE.hookToken) {
      throw new ApiError(
        "unauthorized",
        `${token} is a placeholder: put in the Dock's hook token (the console's Integrations shows the Dock's hook URL).`,
      );
    }
    // Found right lately: checked where the message is stored (see sendAuth). hookAuth serves only
    // the send doors.
    const known = options.docks.recentlyVerifiedHook(token);
    if (known !== undefined) {
      request.dock = known;
      request.deferred = { kind: "hook", secret: token };
      return;
    }
    await judge(
      request,
      () => options.docks.authenticateHook(token),
      () => unknownHookToken(token),
    );
  };

  return {
    refuseIfBlocked,
    beginAttempt,
    judge,
    basicAuth,
    sendAuth,
    manageAuth,
    pathAuth,
    signedAuth,
    hookAuth,
  };
}
