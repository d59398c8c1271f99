import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { constantTimeEqual } from "../../domain/constant-time.ts";
import { randomBase62 } from "../../domain/ids.ts";
import type { TelegramIdentity } from "../../domain/telegram-identity.ts";
import { botLink, telegramLink } from "../../domain/telegram-link.ts";
import { verifyLoginWidget } from "../../domain/telegram-login-widget.ts";
import { perMinuteBuckets } from "../../domain/token-bucket.ts";
import { BUILT_IN_FORMATS } from "../../integrations/formats.ts";
import { quietly } from "../../runtime/log.ts";
import {
  LOGIN_PAYLOAD_PREFIX,
  type LoginTokenRepository,
  type LoginTokenState,
  linkTokenFor,
} from "../../store/login-tokens.ts";
import type { OwnerRepository } from "../../store/owners.ts";
import type { SessionRepository } from "../../store/sessions.ts";
import { ApiError } from "../errors.ts";
import { qrSvg } from "../qr.ts";
import {
  clearCookie,
  cookieOptions,
  csrfToken,
  LOGIN_COOKIE,
  requireSession,
  SESSION_COOKIE,
  type SignedIn,
} from "../session.ts";
import {
  type InfoAnswer,
  type OkAnswer,
  type SessionAnswer,
  type SignInCancelAnswer,
  type SignInCheckAnswer,
  type SignInFinishAnswer,
  type SignInStartAnswer,
  signInFinishBody,
  signOutBody,
} from "./schemas.ts";

export interface SignInOptions {
  loginTokens: LoginTokenRepository;
  sessions: SessionRepository;
  /** Who may sign in (OWNERS, the administrator's owners); a session is started for no one else. */
  owners: OwnerRepository;
  maxDocksPerOwner: number;
  publicUrl: string;
  /** True when the built-in sandbox plays Telegram: links go to its chat page. */
  sandbox: boolean;
  botUsername: () => Promise<string>;
  /** Verifies Telegram Login Widget data; the widget is offered only with `loginWidgetDomain`. */
  botToken: string;
  loginWidgetDomain: string | null;
  sessionTtlMs: number;
  signInAttemptsPerMinute: number;
  now: () => number;
}

/** Holds the Login Widget sign-in's state between the console page and Telegram's redirect. */
const WIDGET_COOKIE = "dn_widget";

/** Why `POST /sign-in/finish` started no session, by the sign-in's state. */
const NOT_FINISHED: Record<LoginTokenState, string> = {
  unknown: "No sign-in is in progress in this browser; start again.",
  pending: "The sign-in is not confirmed in Telegram yet.",
  // Continue named another person than the one who confirmed (the browser's sign-in changed since).
  confirmed:
    "Someone other than the person shown confirmed this sign-in; nobody was signed in. Check the name again.",
  declined: "The sign-in was cancelled; start again.",
  expired: "The sign-in link expired; start again.",
  used: "The sign-in link was already used; start again.",
};

/**
 * Who is at the console: what the sign-in page needs to know (`/info`), sign-in through the bot or
 * the Telegram Login Widget, the session, and sign-out. Part of `consoleApi`, which provides the
 * cookies and `request.signedIn`.
 */
export async function signIn(app: FastifyInstance, options: SignInOptions): Promise<void> {
  const server = app.withTypeProvider<TypeBoxTypeProvider>();
  const secure = options.publicUrl.startsWith("https:");
  const signInAttempts = perMinuteBuckets(options.signInAttemptsPerMinute);

  const spendSignInAttempt = (request: FastifyRequest) => {
    const wait = signInAttempts?.take(request.ip) ?? 0;
    if (wait > 0) {
      throw ApiError.retryAfter("too_many_sign_in_attempts", wait);
    }
  };

  const startSession = async (reply: FastifyReply, user: TelegramIdentity) => {
    const { token, expiresAt } = await options.sessions.create(user, options.sessionTtlMs);
    reply.setCookie(SESSION_COOKIE, token, cookieOptions(secure, expiresAt));
  };

  server.get("/info", async (_request, reply): Promise<InfoAnswer> => {
    const username = await options.botUsername();
    // The widget's redirect carries a random state that must match this browser's cookie: a
    // page elsewhere cannot sign a visitor in to someone else's account (login CSRF).
    const widgetState = options.loginWidgetDomain === null ? null : randomBase62(128);
    if (widgetState !== null) {
      reply.setCookie(WIDGET_COOKIE, widgetState, cookieOptions(secure, options.now() + 15 * 60 * 1000));
    }
    return {
      ok: true,
      bot_username: username,
      bot_link: botLink(options.publicUrl, username, options.sandbox),
      docs_url: `${options.publicUrl}/docs`,
      api_base_url: options.publicUrl,
      sandbox: options.sandbox,
      owners: options.owners.policy.open ? "anyone" : "invited",
      awaits_claim: await options.owners.awaitsClaim(),
      login_widget:
        options.loginWidgetDomain === null
          ? null
          : {
              bot_username: username,
              auth_url: `${options.publicUrl}/console/api/sign-in/telegram-widget?state=${widgetState}`,
            },
      formats: BUILT_IN_FORMATS.map(({ name, label, sample }) => ({ name, label, sample })),
    };
  });

  server.get("/session", async (request): Promise<SessionAnswer> => {
    const session = await requireSession(request, options.sessions);
    return {
      ok: true,
      user: {
        id: session.user.id,
        first_name: session.user.firstName,
        username: session.user.username,
      },
      role: session.user.role,
      max_docks: options.maxDocksPerOwner === 0 ? null : options.maxDocksPerOwner,
      expires_at: session.expiresAt,
      csrf_token: csrfToken(session.token),
    };
  });

  server.post("/sign-in", async (request, reply): Promise<SignInStartAnswer> => {
    spendSignInAttempt(request);
    const username = await options.botUsername();
    // This browser's sign-in in progress, if any, ends here, confirmed or not: its cookie is about
    // to be replaced, so it could never be finished (and the bot would say a Yes on it worked).
    const previous = request.cookies[LOGIN_COOKIE];
    if (previous) await options.loginTokens.cancel(linkTokenFor(previous));
    const { token, browserSecret, expiresAt } = await options.loginTokens.create();
    const link = telegramLink(
      options.publicUrl,
      username,
      `${LOGIN_PAYLOAD_PREFIX}${token}`,
      options.sandbox,
    );
    // The link carries the token; only this browser gets the secret the token was made from.
    reply.setCookie(LOGIN_COOKIE, browserSecret, cookieOptions(secure, expiresAt));
    return { ok: true, link, qr_svg: await qrSvg(link), expires_at: expiresAt };
  });

  // Polled by the page. A confirmed sign-in names who confirmed it and starts no session: the
  // person sees the name and presses Continue (finish) or "That's not me" (cancel). Someone who
  // saw the link and pressed Yes first in their own Telegram cannot sign this browser in unseen.
  server.post(
    "/sign-in/check",
    { onRequest: quietly },
    async (request, reply): Promise<SignInCheckAnswer> => {
      const browserSecret = request.cookies[LOGIN_COOKIE];
      if (!browserSecret) return { ok: true, state: "none" };
      const { state, confirmer } = await options.loginTokens.confirmation(linkTokenFor(browserSecret));
      if (state === "confirmed" && confirmer) {
        return {
          ok: true,
          state: "confirmed",
          user: { id: confirmer.id, first_name: confirmer.firstName, username: confirmer.username },
          may_sign_in: (await options.owners.roleOf(confirmer.id)) !== null,
        };
      }
      if (state !== "pending") clearCookie(reply, LOGIN_COOKIE, secure);
      return { ok: true, state: state === "unknown" ? "none" : state };
    },
  );

  // Continue: exchanges this browser's confirmed sign-in for a session, once, for the person the
  // page showed (another tab may have started a new sign-in, confirmed by someone else, since).
  server.post(
    "/sign-in/finish",
    { schema: { body: signInFinishBody } },
    async (request, reply): Promise<SignInFinishAnswer> => {
      const browserSecret = request.cookies[LOGIN_COOKIE];
      if (!browserSecret) throw new ApiError("sign_in_not_confirmed", NOT_FINISHED.unknown);
      const token = linkTokenFor(browserSecret);
      // Before the token is spent: a person who may not own Docks is told so, and the sign-in
      // stays as it was (the page shows who confirmed and offers "That's not me").
      if ((await options.owners.roleOf(request.body.user_id)) === null) {
        const { state, confirmer } = await options.loginTokens.confirmation(token);
        if (state === "confirmed" && confirmer?.id === request.body.user_id)
          throw new ApiError("not_an_owner");
      }
      const userId = await options.loginTokens.consume(token, request.body.user_id);
      if (userId === null) {
        const state = await options.loginTokens.state(token);
        // Confirmed by someone else than shown: the page asks again and shows who.
        if (state !== "pending" && state !== "confirmed") clearCookie(reply, LOGIN_COOKIE, secure);
        throw new ApiError("sign_in_not_confirmed", NOT_FINISHED[state]);
      }
      // An identity with only the id keeps the names the bot stored when the person pressed Yes.
      await startSession(reply, { id: userId });
      clearCookie(reply, LOGIN_COOKIE, secure);
      return { ok: true, state: "signed_in" };
    },
  );

  // "That's not me": this browser's sign-in is declined for good, even once confirmed.
  server.post("/sign-in/cancel", async (request, reply): Promise<SignInCancelAnswer> => {
    const browserSecret = request.cookies[LOGIN_COOKIE];
    if (!browserSecret) return { ok: true, state: "none" };
    const state = await options.loginTokens.cancel(linkTokenFor(browserSecret));
    clearCookie(reply, LOGIN_COOKIE, secure);
    return { ok: true, state: state === "unknown" ? "none" : state };
  });

  // The Login Widget in redirect mode: Telegram sends the browser here with the signed fields.
  server.get("/sign-in/telegram-widget", async (request, reply) => {
    if (options.loginWidgetDomain === null) throw new ApiError("not_found");
    // Counted first, in the same step as the decision (concurrent forgeries cannot race the
    // count), and given back when the signature turns out right.
    spendSignInAttempt(request);
    const { state, ...fields } = request.query as Record<string, unknown>;
    const expectedState = request.cookies[WIDGET_COOKIE];
    const stateMatches =
      typeof state === "string" &&
      typeof expectedState === "string" &&
      constantTimeEqual(state, expectedState);
    const user = stateMatches ? verifyLoginWidget(fields, options.botToken, options.now()) : null;
    if (!user) {
      // The browser arrives here from Telegram: answer with the console, which says what went wrong.
      return reply.redirect(`${options.publicUrl}/console/?sign_in=failed`, 303);
    }
    signInAttempts?.refund(request.ip);
    if ((await options.owners.roleOf(user.id)) === null) {
      return reply.redirect(`${options.publicUrl}/console/?sign_in=not_owner`, 303);
    }
    await startSession(reply, user);
    return reply.redirect(`${options.publicUrl}/console/`, 303);
  });

  server.post(
    "/sign-out",
    {
      schema: { body: signOutBody },
      // The session first (401 without one, as every signed-in route), and no body means {}.
      preValidation: async (request) => {
        request.signedIn = await requireSession(request, options.sessions);
        request.body ??= {};
      },
    },
    async (request, reply): Promise<OkAnswer> => {
      const session = request.signedIn as SignedIn;
      if (request.body?.everywhere) await options.sessions.revokeAll(session.user.id);
      else await options.sessions.revoke(session.token);
      clearCookie(reply, SESSION_COOKIE, secure);
      return { ok: true };
    },
  );
}
