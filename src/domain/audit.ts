import {
  CREDENTIAL_PREFIX,
  GITHUB_SECRET_PREFIX,
  HOOK_TOKEN_PREFIX,
  SECRET_KEY_PREFIX,
  SIGNING_SECRET_PREFIX,
} from "./secrets.ts";

/**
 * What a Dock's audit log records (issue 37): who did what to the Dock, and when. Every part that
 * changes a Dock's settings, secrets, audience or team records through an AuditSink; the store's
 * DockAudit (store/audit.ts) is the one that keeps them.
 */
export type AuditAction =
  | "visibility_changed"
  | "invite_created"
  | "invite_revoked"
  | "request_approved"
  | "request_declined"
  | "subscriber_removed"
  | "subscriber_banned"
  | "subscriber_unbanned"
  | "dock_created"
  | "settings_changed"
  | "owner_changed"
  | "sandbox_taken_over"
  | "secret_key_rotated"
  | "signing_secret_rotated"
  | "hook_token_rotated"
  | "hook_token_revoked"
  | "credential_created"
  | "credential_revoked"
  | "test_message_sent"
  | "message_edited"
  | "message_deleted"
  | "co_owner_invited"
  | "co_owner_invite_withdrawn"
  | "co_owner_added"
  | "co_owner_removed"
  | "co_owner_role_changed";

/**
 * Where an action is recorded. `actor`: the Telegram user who did it; null for the operator's
 * command line or the service itself (an expiry). `detail`: names and ids that say what was done
 * (a credential's id and name, a co-owner's id and role) — never a secret, a token or a link that
 * holds one.
 */
export interface AuditSink {
  record(entry: {
    dockId: string;
    actor: number | null;
    action: AuditAction;
    detail?: Record<string, string | number | boolean | null>;
  }): Promise<void>;
}

/** One entry as an AuditSink takes it. */
export type AuditEntry = Parameters<AuditSink["record"]>[0];

/**
 * The prefixes of every secret the service makes (secret keys, signing secrets, credentials, hook
 * tokens): a detail value holding one is written `<redacted>`, so a mistake in a caller cannot put
 * a secret in the log that every co-owner reads.
 */
const SECRET_PREFIXES = [
  SECRET_KEY_PREFIX,
  SIGNING_SECRET_PREFIX,
  CREDENTIAL_PREFIX,
  GITHUB_SECRET_PREFIX,
  HOOK_TOKEN_PREFIX,
];

/** The detail as it is kept: every value that looks like a secret replaced by `<redacted>`. */
export function cleanDetail(detail: AuditEntry["detail"]): AuditEntry["detail"] {
  if (detail === undefined) return undefined;
  return Object.fromEntries(
    Object.entries(detail).map(([name, value]) => [
      name,
      typeof value === "string" && SECRET_PREFIXES.some((prefix) => value.includes(prefix))
        ? "<redacted>"
        : value,
    ]),
  );
}

/** A sink that keeps nothing: for parts run without the audit log (a test of the store alone). */
export const NO_AUDIT: AuditSink = { record: async () => {} };
