import { createHmac } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { constantTimeEqual } from "../domain/constant-time.ts";
import type { Session, SessionRepository } from "../store/sessions.ts";
import { ApiError } from "./errors.ts";

/** The console session cookie: HttpOnly, so page scripts (and injected ones) never see it. */
export const SESSION_COOKIE = "dn_session";

/** Holds a pending sign-in's login token, so only the browser that started it can finish it. */
export const LOGIN_COOKIE = "dn_login";

/** Both cookies are sent only to the console API. */
export const COOKIE_PATH = "/console/api";

/** The header that carries the CSRF token on every state-changing console call. */
export const CSRF_HEADER = "x-csrf-token";

/**
 * The CSRF token of a session: an HMAC of the session token, so it needs no storage, changes with
 * every session and cannot be computed without the (HttpOnly) cookie. The console reads it from
 * `GET /console/api/session` and sends it back in `X-CSRF-Token`. Another site can neither read it
 * nor set a custom header on a cross-origin request without a CORS preflight, which we never allow.
 */
export function csrfToken(sessionToken: string): string {
  return createHmac("sha256", sessionToken).update("dock-notify console csrf").digest("base64url");
}

function csrfMatches(sessionToken: string, presented: string | string[] | undefined): boolean {
  return typeof presented === "string" && constantTimeEqual(presented, csrfToken(sessionToken));
}

/** A signed-in request: who it is, and the token that proves it. */
export interface SignedIn extends Session {
  token: string;
}

/** Cookie attributes shared by both console cookies. */
export function cookieOptions(secure: boolean, expiresAt: number) {
  return {
    path: COOKIE_PATH,
    httpOnly: true,
    sameSite: "lax" as const,
    secure,
    expires: new Date(expiresAt),
  };
}

/** Tells the browser to forget a console cookie. */
export function clearCookie(reply: FastifyReply, name: string, secure: boolean): void {
  reply.clearCookie(name, { path: COOKIE_PATH, httpOnly: true, sameSite: "lax", secure });
}

/**
 * The session behind the request's cookie, or `not_signed_in`. State-changing methods must also
 * carry the session's CSRF token, or get `csrf_rejected`.
 */
export async function requireSession(
  request: FastifyRequest,
  sessions: SessionRepository,
): Promise<SignedIn> {
  const token = request.cookies[SESSION_COOKIE];
  const session = token ? await sessions.get(token) : null;
  if (!token || !session) throw new ApiError("not_signed_in");
  const safe = request.method === "GET" || request.method === "HEAD";
  if (!safe && !csrfMatches(token, request.headers[CSRF_HEADER])) throw new ApiError("csrf_rejected");
  return { ...session, token };
}
