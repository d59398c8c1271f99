import { hash, timingSafeEqual } from "node:crypto";

/**
 * Whether a presented secret equals the expected one, in time that does not depend on where they
 * differ — for every credential the service compares (keys, signatures, tokens, CSRF and sign-in
 * states). Both sides are hashed (SHA-256) first, so any input is fine: strings of any length or
 * alphabet (a UTF-8 character may be several bytes; `timingSafeEqual` throws on unequal lengths),
 * and the length of the expected secret is not told either.
 */
export function constantTimeEqual(given: string | Uint8Array, expected: string | Uint8Array): boolean {
  return timingSafeEqual(hash("sha256", given, "buffer"), hash("sha256", expected, "buffer"));
}
