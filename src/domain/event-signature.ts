import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * The signature on an event posted to a Dock's callback URL, in the `Dock-Signature` header:
 * `t=<unix seconds>,v1=<hex HMAC-SHA-256>`, the HMAC keyed by the Dock's secret key over
 * `<t>.<body>` (the body exactly as sent). A receiver recomputes it and compares in constant time,
 * and refuses a `t` far from its clock (a replayed old event). docs/api.md shows how.
 */
export const SIGNATURE_HEADER = "Dock-Signature";

export function signEvent(secretKey: string, timestamp: number, body: string): string {
  const mac = createHmac("sha256", secretKey).update(`${timestamp}.${body}`).digest("hex");
  return `t=${timestamp},v1=${mac}`;
}

/** Whether `header` signs `body` with `secretKey`, within `toleranceSeconds` of `nowSeconds`. */
export function verifyEvent(
  secretKey: string,
  header: string,
  body: string,
  nowSeconds: number,
  toleranceSeconds = 300,
): boolean {
  const fields = new Map(
    header.split(",").map((part) => {
      const at = part.indexOf("=");
      return [part.slice(0, at).trim(), part.slice(at + 1).trim()] as const;
    }),
  );
  const timestamp = Number(fields.get("t"));
  const given = fields.get("v1") ?? "";
  if (!Number.isSafeInteger(timestamp) || Math.abs(nowSeconds - timestamp) > toleranceSeconds) return false;
  const expected = signEvent(secretKey, timestamp, body).split("v1=")[1] as string;
  return given.length === expected.length && timingSafeEqual(Buffer.from(given), Buffer.from(expected));
}
