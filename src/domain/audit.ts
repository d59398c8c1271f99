/**
 * What a Dock's audit log is told (issue 37): who did what to the Dock, and when. The log itself
 * (store/audit.ts, `DockAudit`) is its own concern; the parts that act — the console, the bot, the
 * CLI — only know this sink, so an action is recorded the same whichever face it came through.
 */

/** The actions of a Dock's audience (who may subscribe, and who does) that the log records. */
export type AuditAction =
  | "visibility_changed"
  | "invite_created"
  | "invite_revoked"
  | "request_approved"
  | "request_declined"
  | "subscriber_removed"
  | "subscriber_banned"
  | "subscriber_unbanned";

/** One entry. `actor`: the Telegram user who acted; null for the operator's CLI. */
export interface AuditEntry {
  dockId: string;
  actor: number | null;
  action: AuditAction;
  /** What the action was about (an invite link's id and name, a chat's id): never a secret or a token. */
  detail?: Record<string, string | number | boolean | null>;
}

/** Where the actions go: recorded after they are done (not necessarily in the same transaction). */
export interface AuditSink {
  record(entry: AuditEntry): Promise<void>;
}

/** A sink that keeps nothing: where no audit log is wired (issue 37: the audit log replaces this). */
export const NO_AUDIT: AuditSink = { record: async () => {} };
