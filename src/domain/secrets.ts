import { createCipheriv, createDecipheriv, hash, randomBytes } from "node:crypto";
import { constantTimeEqual } from "./constant-time.ts";
import { randomBase62 } from "./ids.ts";

/**
 * Secret keys start with a fixed prefix so that secret scanners (and people) recognise a leaked one.
 * 33 base62 characters carry 196 bits.
 */
export const SECRET_KEY_PREFIX = "dnsk_";

export function newSecretKey(): string {
  return SECRET_KEY_PREFIX + randomBase62(192);
}

/**
 * A Dock's hook token: a credential that fits in a URL (`/hook/<token>`), for tools that cannot send
 * an Authorization header. Its own prefix: a scanner (and the log masking) tells it from a secret key.
 */
export const HOOK_TOKEN_PREFIX = "dnhk_";

export function newHookToken(): string {
  return HOOK_TOKEN_PREFIX + randomBase62(192);
}

/**
 * A Dock's signing secret: the HMAC key of the events posted to its callback URL
 * (domain/event-signature.ts). Its own secret, not the secret key, so that a receiver that verifies
 * events holds nothing that can send (review D1), and rotating either leaves the other as it is.
 */
export const SIGNING_SECRET_PREFIX = "dnss_";

export function newSigningSecret(): string {
  return SIGNING_SECRET_PREFIX + randomBase62(192);
}

/**
 * A named credential of a Dock (`send` or `manage`, domain/principal.ts), presented where the
 * secret key is. Its prefix tells it from the secret key before any lookup.
 */
export const CREDENTIAL_PREFIX = "dnsc_";

export function newCredentialSecret(): string {
  return CREDENTIAL_PREFIX + randomBase62(192);
}

/**
 * A GitHub credential's secret: the webhook's *Secret*, the key of the HMAC GitHub (Gitea,
 * Forgejo) signs each delivery with. Never presented itself, so its own prefix: it is no `dnsc_`
 * credential, and a scanner (and the log masking) recognises it.
 */
export const GITHUB_SECRET_PREFIX = "dngh_";

export function newGithubSecret(): string {
  return GITHUB_SECRET_PREFIX + randomBase62(192);
}

/**
 * Lookup hash of a secret key. Plain SHA-256 is enough: the key is high-entropy random, so there is
 * nothing to brute-force that a slow hash would protect.
 */
export function hashSecret(secret: string): Buffer {
  return hash("sha256", secret, "buffer");
}

/** Hex SHA-256 of a string: how tokens (sign-in, session) are stored, and how texts are compared. */
export function sha256Hex(value: string): string {
  return hash("sha256", value, "hex");
}

/** Constant-time check of a presented secret against a stored hash. */
export function secretMatches(presented: string, storedHash: Buffer): boolean {
  return constantTimeEqual(hashSecret(presented), storedHash);
}

/**
 * The console must show the secret again (spec), so it is kept encrypted (AES-256-GCM) with the
 * server's key rather than only hashed. Format: base64url(iv ‖ tag ‖ ciphertext).
 */
export function encryptSecret(secret: string, key: Buffer): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  const ciphertext = Buffer.concat([cipher.update(secret, "utf8"), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString("base64url");
}

export function decryptSecret(sealed: string, key: Buffer): string {
  const raw = Buffer.from(sealed, "base64url");
  const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8");
}
