/**
 * Who is acting on a Dock through the send API, and what that allows (issue 35, review D1). The
 * secret key may do everything; a `manage` credential may send and edit, delete and read the
 * status of any message; a `send` credential, and the hook URL, may only send, and replace by key
 * only the messages they sent. A `github` credential is a GitHub webhook's secret: it only ever
 * signs deliveries (`X-Hub-Signature-256`), never stands where the secret key goes, and may what a
 * `send` credential may. The HTTP edge asks `may` and maps a refusal to the catalogue.
 */
export type Scope = "send" | "manage" | "github";

export const SCOPES: readonly Scope[] = ["send", "manage", "github"];

/** The scopes whose secret is presented where the secret key goes (/ping, Basic, GitLab's token). */
export const PRESENTED_SCOPES: readonly Scope[] = ["send", "manage"];

/**
 * GitHub credentials one Dock may have at once: two let a team rotate without a refused delivery
 * (create the new one, paste it into GitHub, revoke the old), one more leaves room for a second
 * organisation or a repository kept apart. Every signed delivery is checked against this many
 * secrets and the secret key, whichever Dock it names (see DockRepository.signersOf), so it stays small.
 */
export const MAX_GITHUB_CREDENTIALS = 3;

export type Principal =
  | { kind: "secret_key" }
  | { kind: "credential"; id: string; scope: Scope }
  | { kind: "hook" };

/** The secret key's principal: what every authentication before credentials meant. */
export const SECRET_KEY: Principal = { kind: "secret_key" };

export type Action = "send" | "manage_messages";

export function may(principal: Principal, action: Action): boolean {
  if (action === "send") return true;
  return principal.kind === "secret_key" || (principal.kind === "credential" && principal.scope === "manage");
}

/**
 * What a message's `sender` column records for it: the credential's id, `hook`, or null for the
 * secret key (and the console).
 */
export function senderOf(principal: Principal): string | null {
  return principal.kind === "credential" ? principal.id : principal.kind === "hook" ? "hook" : null;
}

/** Whether this principal replaces by key only the messages it sent itself. */
export function replacesOnlyOwn(principal: Principal): boolean {
  return !may(principal, "manage_messages");
}
