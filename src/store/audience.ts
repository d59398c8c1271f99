import type { InviteLinkRules, Visibility } from "../domain/audience.ts";
import type { AuditSink } from "../domain/audit.ts";
import type { DockRepository } from "./docks.ts";
import type { InviteLink, InviteLinkRepository } from "./invite-links.ts";

export interface AudienceOptions {
  docks: DockRepository;
  invites: InviteLinkRepository;
  /** Where every action is recorded once done (store/audit.ts's DockAudit, once wired). */
  audit: AuditSink;
}

/**
 * What a Dock's owner does to its audience (issue 37) — who may subscribe, invite links, join
 * requests, removing and banning — as one set of actions, whichever face they come through (the
 * console, the bot's buttons, the CLI): each is done in the store, then recorded in the audit log.
 * `actor` is the Telegram user who acted; null for the operator's CLI.
 */
export class Audience {
  readonly #o: AudienceOptions;
  /** The Dock's invite links, to read (what changes them is here). */
  readonly invites: InviteLinkRepository;

  constructor(options: AudienceOptions) {
    this.#o = options;
    this.invites = options.invites;
  }

  /** Who may subscribe to the Dock; true when it changed. Nobody subscribed is dropped. */
  async setVisibility(dockId: string, visibility: Visibility, actor: number | null): Promise<boolean> {
    const from = await this.#o.docks.setVisibility(dockId, visibility);
    if (from === null) return false;
    await this.#o.audit.record({
      dockId,
      actor,
      action: "visibility_changed",
      detail: { from, to: visibility },
    });
    return true;
  }

  /** A new invite link of the Dock (its token is never recorded). */
  async createInvite(dockId: string, rules: InviteLinkRules, actor: number | null): Promise<InviteLink> {
    const link = await this.#o.invites.create(dockId, actor, rules);
    await this.#o.audit.record({
      dockId,
      actor,
      action: "invite_created",
      detail: {
        invite_id: link.id,
        name: link.name,
        usage_limit: link.usageLimit,
        expires_at: link.expiresAt,
        approval: link.approval,
      },
    });
    return link;
  }

  /** Revokes an invite link; undefined when the Dock has no such link still working. */
  async revokeInvite(
    dockId: string,
    inviteId: string,
    actor: number | null,
  ): Promise<InviteLink | undefined> {
    const link = await this.#o.invites.revoke(dockId, inviteId);
    if (link === undefined) return undefined;
    await this.#o.audit.record({
      dockId,
      actor,
      action: "invite_revoked",
      detail: { invite_id: link.id, name: link.name, uses: link.uses },
    });
    return link;
  }
}
