import { createHash, createHmac } from "node:crypto";
import { constantTimeEqual } from "./constant-time.ts";
import type { TelegramIdentity } from "./telegram-identity.ts";

/** How old a widget sign-in may be: the browser posts it right after the person pressed the button. */
export const WIDGET_MAX_AGE_SECONDS = 10 * 60;

/**
 * Checks what the Telegram Login Widget hands the page (`id`, `first_name`, …, `auth_date`, `hash`)
 * as Telegram documents it: `hash` is HMAC-SHA-256 of the other fields, sorted and joined as
 * `key=value` lines, keyed with SHA-256 of the bot token. Returns who signed in, or null when the
 * data is forged, incomplete or older than `maxAgeSeconds`.
 */
export function verifyLoginWidget(
  fields: Record<string, unknown>,
  botToken: string,
  nowMs: number,
  maxAgeSeconds: number = WIDGET_MAX_AGE_SECONDS,
): TelegramIdentity | null {
  const { hash, ...rest } = fields;
  if (typeof hash !== "string" || !/^[0-9a-f]{64}$/.test(hash)) return null;
  const entries = Object.entries(rest);
  if (entries.some(([, value]) => typeof value !== "string")) return null;
  const checkString = entries
    .map(([key, value]) => `${key}=${value as string}`)
    .sort()
    .join("\n");
  const secret = createHash("sha256").update(botToken).digest();
  const expected = createHmac("sha256", secret).update(checkString).digest();
  if (!constantTimeEqual(expected, Buffer.from(hash, "hex"))) return null;

  const id = Number(rest.id);
  const authDate = Number(rest.auth_date);
  if (!Number.isSafeInteger(id) || id <= 0 || !Number.isSafeInteger(authDate)) return null;
  const age = nowMs / 1000 - authDate;
  if (age > maxAgeSeconds || age < -60) return null;
  return {
    id,
    first_name: typeof rest.first_name === "string" ? rest.first_name : undefined,
    username: typeof rest.username === "string" ? rest.username : undefined,
  };
}
