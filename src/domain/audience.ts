/**
 * A Dock's audience (issue 37): who may subscribe to it. Pure rules; the store keeps the rows
 * (store/invite-links.ts, store/join-requests.ts), the bot and the console are two faces of them.
 */

/**
 * Who may subscribe: `open` (anyone who has the Dock ID, the default), `invite` (only through an
 * invite link: the ID alone is refused), `approval` (the ID or a link asks the Dock's owner, who
 * approves or declines). Changing it never drops a subscriber.
 */
export type Visibility = "open" | "invite" | "approval";

export const VISIBILITIES: readonly Visibility[] = ["open", "invite", "approval"];

export function isVisibility(value: unknown): value is Visibility {
  return (VISIBILITIES as readonly unknown[]).includes(value);
}

/** The deep-link payload of a Dock's invite link: `join_<token>` (never the Dock ID). */
export const JOIN_PAYLOAD_PREFIX = "join_";

/** An invite link's token: 22 base62 characters (131 bits), as a Dock ID, so it cannot be guessed. */
export const JOIN_TOKEN_PATTERN = /^[A-Za-z0-9]{22}$/;

/** Bounds of an invite link, Telegram's own for a chat's (`createChatInviteLink`). */
export const INVITE_NAME_MAX = 32;
export const INVITE_USES_MAX = 99_999;
/** How far ahead an invite link's expiry may be set: a year. */
export const INVITE_EXPIRY_MAX_MS = 366 * 24 * 60 * 60 * 1000;

/** How long a join request waits for a decision by default (JOIN_REQUEST_TTL_DAYS). */
export const JOIN_REQUEST_TTL_DAYS = 7;

/** What an invite link asks of whoever opens it. */
export interface InviteLinkRules {
  name: string | null;
  /** How many chats may join through it; null: no limit. */
  usageLimit: number | null;
  /** When it stops working (ms since the epoch); null: never. */
  expiresAt: number | null;
  /** Whoever opens it asks to join (a join request) instead of joining at once. */
  approval: boolean;
}

/** Where an invite link stands, as its list and the person who opens it see it. */
export type InviteLinkState = "active" | "expired" | "used_up" | "revoked";

export function inviteLinkState(
  link: { revokedAt: number | null; expiresAt: number | null; usageLimit: number | null; uses: number },
  now: number,
): InviteLinkState {
  if (link.revokedAt !== null) return "revoked";
  if (link.expiresAt !== null && link.expiresAt <= now) return "expired";
  if (link.usageLimit !== null && link.uses >= link.usageLimit) return "used_up";
  return "active";
}

/** Whether joining through this link (or, without one, by the Dock ID) asks the owner first. */
export function needsApproval(visibility: Visibility, link: { approval: boolean } | null): boolean {
  return visibility === "approval" || link?.approval === true;
}

export interface RuleProblem {
  field: "name" | "usage_limit" | "expires_at" | "approval";
  message: string;
}

/**
 * Checks an invite link's settings as the console API and the CLI take them (`name`,
 * `usage_limit`, `expires_at` in ms, `approval`); every problem names its field.
 */
export function validateInviteRules(
  input: { name?: unknown; usage_limit?: unknown; expires_at?: unknown; approval?: unknown },
  now: number,
): { ok: true; value: InviteLinkRules } | { ok: false; errors: RuleProblem[] } {
  const errors: RuleProblem[] = [];
  let name: string | null = null;
  if (input.name !== undefined && input.name !== null) {
    if (typeof input.name !== "string" || !input.name.isWellFormed() || input.name.includes("\u0000")) {
      errors.push({ field: "name", message: "name must be text" });
    } else {
      const trimmed = input.name.trim();
      if ([...trimmed].length > INVITE_NAME_MAX)
        errors.push({ field: "name", message: `name must be at most ${INVITE_NAME_MAX} characters` });
      else name = trimmed === "" ? null : trimmed;
    }
  }
  let usageLimit: number | null = null;
  if (input.usage_limit !== undefined && input.usage_limit !== null) {
    if (
      typeof input.usage_limit !== "number" ||
      !Number.isInteger(input.usage_limit) ||
      input.usage_limit < 1 ||
      input.usage_limit > INVITE_USES_MAX
    ) {
      errors.push({
        field: "usage_limit",
        message: `usage_limit must be a whole number from 1 to ${INVITE_USES_MAX}, or null for no limit`,
      });
    } else usageLimit = input.usage_limit;
  }
  let expiresAt: number | null = null;
  if (input.expires_at !== undefined && input.expires_at !== null) {
    if (typeof input.expires_at !== "number" || !Number.isSafeInteger(input.expires_at)) {
      errors.push({ field: "expires_at", message: "expires_at must be a time in milliseconds, or null" });
    } else if (input.expires_at <= now) {
      errors.push({ field: "expires_at", message: "expires_at must be in the future" });
    } else if (input.expires_at > now + INVITE_EXPIRY_MAX_MS) {
      errors.push({ field: "expires_at", message: "expires_at must be within a year" });
    } else expiresAt = input.expires_at;
  }
  if (input.approval !== undefined && typeof input.approval !== "boolean") {
    errors.push({ field: "approval", message: "approval must be true or false" });
  }
  if (errors.length > 0) return { ok: false, errors };
  return { ok: true, value: { name, usageLimit, expiresAt, approval: input.approval === true } };
}

const UNIT_MS: Record<string, number> = {
  m: 60_000,
  h: 60 * 60_000,
  d: 24 * 60 * 60_000,
  w: 7 * 24 * 60 * 60_000,
};

/** A duration as the CLI takes it (`30m`, `12h`, `7d`, `2w`) in milliseconds; null when it is none. */
export function parseDuration(text: string): number | null {
  const match = /^([1-9]\d{0,5})([mhdw])$/.exec(text.trim());
  if (match === null) return null;
  return Number(match[1]) * (UNIT_MS[match[2] as string] as number);
}
