import { timingSafeEqual } from "node:crypto";
import cookie from "@fastify/cookie";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import QRCode from "qrcode";
import { Type } from "typebox";
import { curlExamples } from "../domain/curl-examples.ts";
import { validateDockFields } from "../domain/dock.ts";
import { DOCK_ID_PATTERN, randomBase62 } from "../domain/ids.ts";
import { botLink, telegramLink } from "../domain/telegram-link.ts";
import { verifyLoginWidget } from "../domain/telegram-login-widget.ts";
import { perMinuteBuckets } from "../domain/token-bucket.ts";
import type { Intake } from "../intake.ts";
import type { DeliveryReport } from "../store/delivery-report.ts";
import type { DockRepository, DockWithSecret } from "../store/docks.ts";
import {
  LOGIN_PAYLOAD_PREFIX,
  type LoginTokenRepository,
  type LoginTokenState,
  linkTokenFor,
  type TelegramIdentity,
} from "../store/login-tokens.ts";
import type { SessionRepository } from "../store/sessions.ts";
import type { SubscriptionRepository } from "../store/subscriptions.ts";
import { ApiError } from "./errors.ts";
import {
  clearCookie,
  cookieOptions,
  csrfToken,
  LOGIN_COOKIE,
  requireSession,
  SESSION_COOKIE,
  type SignedIn,
} from "./session.ts";

export interface ConsoleApiOptions {
  docks: DockRepository;
  /** How the test message enters, like any other: rate limit, storage, counters. */
  intake: Intake;
  subscriptions: SubscriptionRepository;
  loginTokens: LoginTokenRepository;
  sessions: SessionRepository;
  report: DeliveryReport;
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

/** Messages shown per Dock card. */
const RECENT_MESSAGES = 10;

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

/** What "Send test message" sends. */
export const TEST_MESSAGE =
  "Test message from the Dock Notify console ✅\nIf you can read this, delivery works.";

const dockFieldsBody = Type.Object({
  name: Type.Optional(Type.Unknown()),
  link: Type.Optional(Type.Unknown()),
  description: Type.Optional(Type.Unknown()),
});

const signOutBody = Type.Optional(
  Type.Object({
    everywhere: Type.Optional(Type.Boolean({ description: "End every session of this person." })),
  }),
);

const signInFinishBody = Type.Object({
  user_id: Type.Integer({
    description: "The Telegram user id that /sign-in/check named: the session starts only for that person.",
  }),
});

const dockParams = Type.Object({ id: Type.String() });
const subscriberParams = Type.Object({ id: Type.String(), chatId: Type.String() });

declare module "fastify" {
  interface FastifyRequest {
    signedIn: SignedIn | null;
  }
}

/**
 * The control console's JSON API under `/console/api`: sign-in through the bot (or the Telegram
 * Login Widget), sessions, and everything an owner does with their Docks. Every Dock route checks
 * ownership and answers `404` for another owner's Dock exactly as for a missing one; every
 * state-changing route needs the session's CSRF token.
 */
export async function consoleApi(app: FastifyInstance, options: ConsoleApiOptions): Promise<void> {
  const server = app.withTypeProvider<TypeBoxTypeProvider>();
  const secure = options.publicUrl.startsWith("https:");
  const signInAttempts = perMinuteBuckets(options.signInAttemptsPerMinute);

  await app.register(cookie);
  app.decorateRequest("signedIn", null);
  app.addHook("onSend", async (_request, reply) => {
    // Answers carry secret keys and personal data: never keep them in a cache.
    reply.header("cache-control", "no-store");
  });

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

  server.get("/info", async (_request, reply) => {
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
      login_widget:
        options.loginWidgetDomain === null
          ? null
          : {
              bot_username: username,
              auth_url: `${options.publicUrl}/console/api/sign-in/telegram-widget?state=${widgetState}`,
            },
    };
  });

  server.get("/session", async (request) => {
    const session = await requireSession(request, options.sessions);
    return {
      ok: true,
      user: {
        id: session.user.id,
        first_name: session.user.firstName,
        username: session.user.username,
      },
      expires_at: session.expiresAt,
      csrf_token: csrfToken(session.token),
    };
  });

  server.post("/sign-in", async (request, reply) => {
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
    const qrSvg = await QRCode.toString(link, { type: "svg", margin: 1, errorCorrectionLevel: "M" });
    return { ok: true, link, qr_svg: qrSvg, expires_at: expiresAt };
  });

  // Polled by the page. A confirmed sign-in names who confirmed it and starts no session: the
  // person sees the name and presses Continue (finish) or "That's not me" (cancel). Someone who
  // saw the link and pressed Yes first in their own Telegram cannot sign this browser in unseen.
  server.post("/sign-in/check", async (request, reply) => {
    const browserSecret = request.cookies[LOGIN_COOKIE];
    if (!browserSecret) return { ok: true, state: "none" };
    const { state, confirmer } = await options.loginTokens.confirmation(linkTokenFor(browserSecret));
    if (state === "confirmed" && confirmer) {
      return {
        ok: true,
        state: "confirmed",
        user: { id: confirmer.id, first_name: confirmer.firstName, username: confirmer.username },
      };
    }
    if (state !== "pending") clearCookie(reply, LOGIN_COOKIE, secure);
    return { ok: true, state: state === "unknown" ? "none" : state };
  });

  // Continue: exchanges this browser's confirmed sign-in for a session, once, for the person the
  // page showed (another tab may have started a new sign-in, confirmed by someone else, since).
  server.post("/sign-in/finish", { schema: { body: signInFinishBody } }, async (request, reply) => {
    const browserSecret = request.cookies[LOGIN_COOKIE];
    if (!browserSecret) throw new ApiError("sign_in_not_confirmed", NOT_FINISHED.unknown);
    const token = linkTokenFor(browserSecret);
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
  });

  // "That's not me": this browser's sign-in is declined for good, even once confirmed.
  server.post("/sign-in/cancel", async (request, reply) => {
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
      state.length === expectedState.length &&
      timingSafeEqual(Buffer.from(state), Buffer.from(expectedState));
    const user = stateMatches ? verifyLoginWidget(fields, options.botToken, options.now()) : null;
    if (!user) {
      // The browser arrives here from Telegram: answer with the console, which says what went wrong.
      return reply.redirect(`${options.publicUrl}/console/?sign_in=failed`, 303);
    }
    signInAttempts?.refund(request.ip);
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
    async (request, reply) => {
      const session = request.signedIn as SignedIn;
      if (request.body?.everywhere) await options.sessions.revokeAll(session.user.id);
      else await options.sessions.revoke(session.token);
      clearCookie(reply, SESSION_COOKIE, secure);
      return { ok: true };
    },
  );

  // Everything below needs a session (and, to change anything, its CSRF token).
  await app.register(async (owner) => {
    const routes = owner.withTypeProvider<TypeBoxTypeProvider>();
    owner.addHook("preHandler", async (request) => {
      request.signedIn = await requireSession(request, options.sessions);
    });

    const signedIn = (request: FastifyRequest) => request.signedIn as SignedIn;

    /** The caller's Dock, or 404 — the same answer for a Dock that is someone else's. */
    const ownedDock = async (request: FastifyRequest, id: string): Promise<DockWithSecret> => {
      const dock = DOCK_ID_PATTERN.test(id) ? await options.docks.get(id) : undefined;
      if (!dock || dock.ownerId !== signedIn(request).user.id)
        throw new ApiError("not_found", "No such Dock.");
      return dock;
    };

    const dockJson = async (dock: DockWithSecret) => {
      const username = await options.botUsername();
      return {
        id: dock.id,
        name: dock.name,
        link: dock.link,
        description: dock.description,
        secret_key: dock.secretKey,
        subscribers: dock.activeSubscribers,
        created_at: dock.createdAt,
        updated_at: dock.updatedAt,
        open_in_telegram: telegramLink(options.publicUrl, username, dock.id, options.sandbox),
        examples: curlExamples(options.publicUrl, dock.id, dock.secretKey),
      };
    };

    const validFields = (input: Record<string, unknown>) => {
      const result = validateDockFields(input);
      if (!result.ok) throw new ApiError("invalid_fields", undefined, {}, result.errors);
      return result.value;
    };

    routes.get("/docks", async (request) => {
      const docks = await options.docks.list(signedIn(request).user.id);
      return { ok: true, docks: await Promise.all(docks.map(dockJson)) };
    });

    routes.post("/docks", { schema: { body: dockFieldsBody } }, async (request, reply) => {
      const fields = validFields(request.body);
      const dock = await options.docks.create(signedIn(request).user.id, fields);
      return reply.code(201).send({ ok: true, dock: await dockJson(dock) });
    });

    routes.get("/docks/:id", { schema: { params: dockParams } }, async (request) => {
      return { ok: true, dock: await dockJson(await ownedDock(request, request.params.id)) };
    });

    routes.patch("/docks/:id", { schema: { params: dockParams, body: dockFieldsBody } }, async (request) => {
      const dock = await ownedDock(request, request.params.id);
      const fields = validFields({
        name: dock.name,
        link: dock.link,
        description: dock.description,
        ...request.body,
      });
      await options.docks.update(dock.id, fields);
      return { ok: true, dock: await dockJson(await ownedDock(request, dock.id)) };
    });

    routes.delete("/docks/:id", { schema: { params: dockParams } }, async (request) => {
      const dock = await ownedDock(request, request.params.id);
      await options.docks.delete(dock.id);
      return { ok: true };
    });

    routes.post("/docks/:id/rotate-secret", { schema: { params: dockParams } }, async (request) => {
      const dock = await ownedDock(request, request.params.id);
      await options.docks.rotateSecret(dock.id);
      return { ok: true, dock: await dockJson(await ownedDock(request, dock.id)) };
    });

    routes.get("/docks/:id/subscribers", { schema: { params: dockParams } }, async (request) => {
      const dock = await ownedDock(request, request.params.id);
      const subscribers = await options.subscriptions.list(dock.id);
      return {
        ok: true,
        subscribers: subscribers.map((s) => ({
          chat_id: s.chatId,
          chat_type: s.chatType,
          state: s.state,
          first_name: s.firstName,
          username: s.username,
          since: s.since,
        })),
      };
    });

    routes.delete(
      "/docks/:id/subscribers/:chatId",
      { schema: { params: subscriberParams } },
      async (request) => {
        const dock = await ownedDock(request, request.params.id);
        const chatId = /^-?\d{1,19}$/.test(request.params.chatId)
          ? Number(request.params.chatId)
          : Number.NaN;
        const removed = Number.isSafeInteger(chatId) && (await options.subscriptions.remove(dock.id, chatId));
        if (!removed) throw new ApiError("not_found", "This chat is not subscribed to the Dock.");
        return { ok: true };
      },
    );

    routes.get("/docks/:id/messages", { schema: { params: dockParams } }, async (request) => {
      const dock = await ownedDock(request, request.params.id);
      const messages = await options.report.recent(dock.id, RECENT_MESSAGES);
      return {
        ok: true,
        messages: messages.map((m) => ({
          id: m.id,
          text: m.text,
          created_at: m.createdAt,
          subscribers: m.subscribers,
          states: m.states,
          deliveries: m.deliveries.map((d) => ({
            chat_id: d.chatId,
            state: d.state,
            last_error: d.lastError,
            updated_at: d.updatedAt,
          })),
        })),
      };
    });

    routes.post("/docks/:id/test-message", { schema: { params: dockParams } }, async (request, reply) => {
      const dock = await ownedDock(request, request.params.id);
      // Through the same door as the send API: the Dock's rate limit and the counters apply.
      const result = await options.intake.acceptAuthenticated({
        dockId: dock.id,
        text: TEST_MESSAGE,
        source: "console",
      });
      return reply
        .code(202)
        .send({ ok: true, message_id: result.messageId, subscribers: result.subscribers });
    });
  });
}
