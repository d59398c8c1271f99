import { createHmac } from "node:crypto";
import type { FastifyRequest } from "fastify";
import { constantTimeEqual } from "../../domain/constant-time.ts";
import { isRecord } from "../../integrations/inbound.ts";
import { firstByte, readInbound, unreadBody } from "../inbound.ts";
import type { RawBody } from "../request-body.ts";

/*
 * GitHub's signed deliveries (also Gitea's and Forgejo's): who signed a body, whether it is shaped
 * as such a delivery, and the key that lets each one through once.
 */

/** A signed body that is not a JSON payload (see isSignedPayload). */
export const SIGNED_BODY =
  "A delivery signed with X-Hub-Signature-256 carries a JSON object (as GitHub sends it, as JSON or as a payload= form).";

/**
 * Which of `secrets` made GitHub's `X-Hub-Signature-256: sha256=<hex HMAC-SHA-256 of the raw body
 * with the secret>` (also Gitea's and Forgejo's): its index, or -1 for none. Every secret's HMAC is
 * computed and compared in constant time, whichever matched, so the time tells nothing of which
 * did or of how many of them are stand-ins (see DockRepository.signersOf).
 */
export function signedWith(raw: RawBody, header: string, secrets: readonly string[]): number {
  const match = /^sha256=([0-9a-f]{64})$/i.exec(header.trim());
  const given = Buffer.from(match?.[1] ?? "0".repeat(64), "hex");
  const body = raw ?? Buffer.alloc(0);
  let found = -1;
  for (let i = 0; i < secrets.length; i++) {
    const expected = createHmac("sha256", secrets[i] as string)
      .update(body)
      .digest();
    if (constantTimeEqual(expected, given) && found === -1) found = i;
  }
  return match === null ? -1 : found;
}

/**
 * Whether a signed body is a payload as GitHub (Gitea, Forgejo) sends one: a JSON object, or its
 * form with the JSON in `payload`. The secret key may be the signing key, and an upgraded Dock's
 * events are signed with that same key (`t.body`, see domain/event-signature.ts, migration 0014):
 * a body of any other shape could be an event replayed as a send.
 */
export function isSignedPayload(request: FastifyRequest): boolean {
  // A large JSON body is read in the payload thread: here its first character is its shape, and
  // the thread refuses it (400 invalid_json) unless it is all one JSON object.
  const unread = unreadBody(request);
  if (unread !== undefined)
    return unread.mediaType !== "application/x-www-form-urlencoded" && firstByte(unread.bytes) === 0x7b;
  try {
    const inbound = readInbound(request);
    return inbound.mediaType !== "application/x-www-form-urlencoded" && isRecord(inbound.body);
  } catch {
    return false;
  }
}

/**
 * The idempotency key of a signed delivery (GitHub's, Gitea's, Forgejo's): its body's digest. Its
 * signature never expires and covers only the body, so whoever sees a delivery once (a proxy's
 * log, a leaked request) could post it again, even with another X-GitHub-Delivery (which is not
 * signed): a repeat within the idempotency window (24 h) answers what the first did and sends
 * nothing. GitHub's own redelivery sends the same body, so it is caught too. A client's
 * Idempotency-Key on such a request is not read: it would let a repeat through.
 */
export function signedDeliveryKey(digest: string): string {
  return `signed-body:${digest}`;
}
