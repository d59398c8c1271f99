import { createHmac } from "node:crypto";

/**
 * The signature on an event posted to a Dock's callback URL, in the `Dock-Signature` header:
 * `t=<unix seconds>,v1=<hex HMAC-SHA-256>`, the HMAC keyed by the Dock's signing secret (`dnss_…`; not
 * its secret key, so a receiver holds nothing that can send) over `<t>.<body>` (the body exactly
 * as sent). A receiver recomputes it and compares in constant time,
 * and refuses a `t` far from its clock (a replayed old event). docs/api.md shows how.
 */
export const SIGNATURE_HEADER = "Dock-Signature";

export function signEvent(signingSecret: string, timestamp: number, body: string): string {
  const mac = createHmac("sha256", signingSecret).update(`${timestamp}.${body}`).digest("hex");
  return `t=${timestamp},v1=${mac}`;
}
