import type { InviteLinkRules, Visibility } from "../domain/audience.ts";
import { type DecidingDock, type DockTeam, deciders, mayDecide } from "../domain/deciders.ts";
import { writeAuditBy } from "./audit.ts";
import type { Db } from "./db.ts";
import { banChat, type DockBanRepository, isBanned } from "./dock-bans.ts";
import type { DockRepository } from "./docks.ts";
import type { InviteLink, InviteLinkRepository } from "./invite-links.ts";
import {
  type Asking,
  type AskOutcome,
  type DecideOutcome,
  decideIn,
  type JoinRequestRepository,
  waitingRequest,
} from "./join-requests.ts";
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
  /** Who has which role on each Dock: who decides its join requests (domain/deciders.ts). */
  team: DockTeam;
  now?: () => number;
}

/**
 * What a Dock's owner does to its audience (issue 37) — who may subscribe, invite links, join
 * requests, removing and banning — as one set of actions, whichever face they come through (the
 * console, the bot's buttons, the CLI): each is done in the store and recorded in the audit log in
 * the same transaction (an entry exists exactly when its change does), then the bot's notices it
 * queued are sent. `actor` is the Telegram user who acted; null for the
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

  /** Who may subscribe to the Dock; true when it changed. Nobody subscribed is dropped. */
  async setVisibility(dockId: string, visibility: Visibility, actor: number | null): Promise<boolean> {
    return (await this.#o.docks.setVisibility(dockId, visibility, { actor })) !== null;
  }

  /** A new invite link of the Dock (its token is never recorded). */
  createInvite(dockId: string, rules: InviteLinkRules, actor: number | null): Promise<InviteLink> {
    return this.#o.invites.create(dockId, { actor }, rules);
  }

  /** Revokes an invite link; undefined when the Dock has no such link still working. */
  revokeInvite(dockId: string, inviteId: string, actor: number | null): Promise<InviteLink | undefined> {
    return this.#o.invites.revoke(dockId, inviteId, { actor });
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
    if (outcome.kind !== "not_found") this.#o.notices.queued();
    return outcome;
  }

  /**
   * Removes a chat from the Dock: it stops receiving at once (what was queued for it is not sent)
   * and is told once. False: it was not subscribed. (Removing and banning at once is `ban`.)
   */
  async remove(dockId: string, chatId: number, actor: number | null): Promise<boolean> {
    const now = this.#now();
    const removed = await this.#o.db.kysely.transaction().execute(async (tx) => {
      if (!(await removeChat(tx, dockId, chatId, now))) return false;
      await writeAuditBy(tx, dockId, { actor }, "subscriber_removed", { chat_id: chatId }, now);
      return true;
    });
    if (removed) this.#o.notices.queued();
    return removed;
  }

  /**
   * Bans a chat from the Dock, in one transaction: it is removed if subscribed (and told), its
   * request waiting is declined, and it may not join or ask again until unbanned. False: it was
   * banned already.
   */
  async ban(dockId: string, chatId: number, actor: number): Promise<boolean> {
    const now = this.#now();
    const by = { actor };
    const done = await this.#o.db.kysely.transaction().execute(async (tx) => {
      const removed = await removeChat(tx, dockId, chatId, now);
      if (removed) await writeAuditBy(tx, dockId, by, "subscriber_removed", { chat_id: chatId }, now);
      const waiting = await waitingRequest(tx, dockId, chatId, now);
      const declined =
        waiting !== undefined &&
        (await decideIn(
          tx,
          { dockId, requestId: waiting, decision: "declined", by: actor, ban: false },
          now,
        ));
      const banned = await banChat(tx, dockId, chatId, actor, now);
      if (banned) await writeAuditBy(tx, dockId, by, "subscriber_banned", { chat_id: chatId }, now);
      return { told: removed || declined, banned };
    });
    if (done.told) this.#o.notices.queued();
    return done.banned;
  }

  /** Lets a banned chat join (or ask) again; false when it was not banned. */
  unban(dockId: string, chatId: number, actor: number | null): Promise<boolean> {
    return this.#o.bans.unban(dockId, chatId, { actor });
  }

  /** Deletes the Dock; its active subscribers are told (DockRepository.delete queues it). */
  async deleteDock(dockId: string): Promise<boolean> {
    const deleted = await this.#o.docks.delete(dockId);
    if (deleted) this.#o.notices.queued();
    return deleted;
  }
}
