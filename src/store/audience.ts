import type { InviteLinkRules, Visibility } from "../domain/audience.ts";
import type { AuditAction, AuditEntry, AuditSink } from "../domain/audit.ts";
import { type DecidingDock, type DockTeam, deciders, mayDecide } from "../domain/deciders.ts";
import type { Db } from "./db.ts";
import { banChat, type DockBanRepository, isBanned } from "./dock-bans.ts";
import type { DockRepository } from "./docks.ts";
import type { InviteLink, InviteLinkRepository } from "./invite-links.ts";
import type { Asking, AskOutcome, DecideOutcome, JoinRequestRepository } from "./join-requests.ts";
import type { NoticeQueue } from "./notices.ts";
import { removeChat } from "./subscriptions.ts";

export interface AudienceOptions {
  db: Db;
  docks: DockRepository;
  invites: InviteLinkRepository;
  requests: JoinRequestRepository;
  bans: DockBanRepository;
  /** The bot's notices: told when some were queued here, so that they go at once. */
  notices: NoticeQueue;
  /** Where every action is recorded once done (store/audit.ts's DockAudit). */
  audit: AuditSink;
  /** Who has which role on each Dock: who decides its join requests (domain/deciders.ts). */
  team: DockTeam;
  now?: () => number;
}

/**
 * What a Dock's owner does to its audience (issue 37) — who may subscribe, invite links, join
 * requests, removing and banning — as one set of actions, whichever face they come through (the
 * console, the bot's buttons, the CLI): each is done in the store, then recorded in the audit log,
 * and the bot's notices it queued are sent. `actor` is the Telegram user who acted; null for the
 * operator's CLI. Who may act is the caller's to check (`mayDecide`, domain/deciders.ts).
 */
export class Audience {
  readonly #o: AudienceOptions;
  /** The Dock's invite links, to read (what changes them is here). */
  readonly invites: InviteLinkRepository;
  /** Join requests, to read (what decides them is here). */
  readonly requests: JoinRequestRepository;
  /** Banned chats, to read (what bans and unbans them is here). */
  readonly bans: DockBanRepository;
  readonly #now: () => number;

  constructor(options: AudienceOptions) {
    this.#o = options;
    this.invites = options.invites;
    this.requests = options.requests;
    this.bans = options.bans;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Records an action done. With no actor it was the operator's command line, and its entry says
   * so (`via: cli`), as every other change the command line makes (store/audit.ts's writeAuditBy).
   */
  #record(entry: {
    dockId: string;
    actor: number | null;
    action: AuditAction;
    detail: AuditEntry["detail"];
  }) {
    return this.#o.audit.record(
      entry.actor === null ? { ...entry, detail: { ...entry.detail, via: "cli" } } : entry,
    );
  }

  /** Who may subscribe to the Dock; true when it changed. Nobody subscribed is dropped. */
  async setVisibility(dockId: string, visibility: Visibility, actor: number | null): Promise<boolean> {
    const from = await this.#o.docks.setVisibility(dockId, visibility);
    if (from === null) return false;
    await this.#record({
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
    await this.#record({
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
    await this.#record({
      dockId,
      actor,
      action: "invite_revoked",
      detail: { invite_id: link.id, name: link.name, uses: link.uses },
    });
    return link;
  }

  /** Whether the chat is banned from the Dock: it may neither join nor ask to. */
  banned(dockId: string, chatId: number): Promise<boolean> {
    return isBanned(this.#o.db.kysely, dockId, chatId);
  }

  /** Whether `userId` may decide the Dock's join requests (and join it without a link). */
  mayDecide(dock: DecidingDock, userId: number): Promise<boolean> {
    return mayDecide(this.#o.team, dock, userId);
  }

  /** A chat asks to join the Dock: every decider gets the request in the bot. */
  async ask(dock: DecidingDock, asking: Omit<Asking, "dockId">): Promise<AskOutcome> {
    const outcome = await this.#o.requests.ask(
      { ...asking, dockId: dock.id },
      await deciders(this.#o.team, dock),
    );
    if (outcome.kind === "sent") this.#o.notices.queued();
    return outcome;
  }

  /**
   * Approves or declines a join request as `actor` (whom the caller checked may decide); declining
   * with `ban` also bans the chat from asking again.
   */
  async decide(
    dockId: string,
    requestId: string,
    decision: "approved" | "declined",
    actor: number,
    options: { ban?: boolean } = {},
  ): Promise<DecideOutcome> {
    const outcome = await this.#o.requests.decide(dockId, requestId, decision, actor, options);
    if (outcome.kind === "ended") this.#o.notices.queued();
    if (outcome.kind !== "decided") return outcome;
    this.#o.notices.queued();
    const { request } = outcome;
    await this.#record({
      dockId,
      actor,
      action: decision === "approved" ? "request_approved" : "request_declined",
      detail: { request_id: request.id, chat_id: request.chatId, invite_id: request.invite?.id ?? null },
    });
    if (decision === "declined" && options.ban) {
      await this.#record({
        dockId,
        actor,
        action: "subscriber_banned",
        detail: { chat_id: request.chatId },
      });
    }
    return outcome;
  }

  /**
   * Removes a chat from the Dock: it stops receiving at once (what was queued for it is not sent)
   * and is told once. False: it was not subscribed. (Removing and banning at once is `ban`.)
   */
  async remove(dockId: string, chatId: number, actor: number | null): Promise<boolean> {
    const now = this.#now();
    const removed = await this.#o.db.kysely
      .transaction()
      .execute(async (tx) => removeChat(tx, dockId, chatId, now));
    if (!removed) return false;
    this.#o.notices.queued();
    await this.#record({ dockId, actor, action: "subscriber_removed", detail: { chat_id: chatId } });
    return true;
  }

  /**
   * Bans a chat from the Dock: it is removed if subscribed (and told), its request waiting is
   * declined, and it may not join or ask again until unbanned. False: it was banned already.
   */
  async ban(dockId: string, chatId: number, actor: number): Promise<boolean> {
    const now = this.#now();
    const done = await this.#o.db.kysely.transaction().execute(async (tx) => ({
      removed: await removeChat(tx, dockId, chatId, now),
      banned: await banChat(tx, dockId, chatId, actor, now),
    }));
    if (done.removed) {
      this.#o.notices.queued();
      await this.#record({
        dockId,
        actor,
        action: "subscriber_removed",
        detail: { chat_id: chatId },
      });
    }
    const waiting = (await this.#o.requests.pending(dockId)).find((request) => request.chatId === chatId);
    if (waiting !== undefined) await this.decide(dockId, waiting.id, "declined", actor);
    if (!done.banned) return false;
    await this.#record({ dockId, actor, action: "subscriber_banned", detail: { chat_id: chatId } });
    return true;
  }

  /** Lets a banned chat join (or ask) again; false when it was not banned. */
  async unban(dockId: string, chatId: number, actor: number | null): Promise<boolean> {
    if (!(await this.#o.bans.unban(dockId, chatId))) return false;
    await this.#record({ dockId, actor, action: "subscriber_unbanned", detail: { chat_id: chatId } });
    return true;
  }

  /** Deletes the Dock; its active subscribers are told (DockRepository.delete queues it). */
  async deleteDock(dockId: string): Promise<boolean> {
    const deleted = await this.#o.docks.delete(dockId);
    if (deleted) this.#o.notices.queued();
    return deleted;
  }
}
