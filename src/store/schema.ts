import type { Generated } from "kysely";
import type { Visibility } from "../domain/audience.ts";
import type { DockRole } from "../domain/dock-roles.ts";
import type { OwnerRole } from "../domain/owners.ts";
import type { ReminderKind } from "../domain/render.ts";

/** Times are milliseconds since the Unix epoch, stored as 64-bit integers in both dialects. */
type Millis = number;

export interface UsersTable {
  telegram_id: number;
  first_name: string | null;
  username: string | null;
  created_at: Millis;
}

export interface DocksTable {
  id: string;
  owner_id: number;
  name: string;
  link: string | null;
  description: string | null;
  /** Hex SHA-256 of the secret key, for constant-time comparison. */
  secret_hash: string;
  /** The secret key sealed with the server's encryption key (AES-256-GCM). */
  secret_sealed: string;
  /** Where the Dock's events are posted (signed with its signing secret); null: none. */
  callback_url: string | null;
  /**
   * The signing secret (`dnss_…`, the HMAC key of the Dock's events) sealed like the secret key.
   * Set for every Dock (migration 0014 gave each existing one its secret key of the time).
   */
  signing_sealed: string;
  /** Hex SHA-256 of the hook token (`/hook/<token>`); null: the Dock has none. */
  hook_hash: string | null;
  /** The hook token sealed like the secret key, so the console can show it again. */
  hook_sealed: string | null;
  /**
   * The secrets of the Dock's GitHub credentials, sealed together (migration 0016; see
   * store/dock-credentials.ts, GithubSlots); null: it has never had one.
   */
  github_sealed: string | null;
  /** How a body without `msg` is read (a format's name, or `template`); null: detected. */
  inbound_format: string | null;
  /** The Dock's template (JSON of its fields); null: none. */
  template: string | null;
  /** Who may subscribe (migration 0017; domain/audience.ts): `open` unless its owner chose otherwise. */
  visibility: Generated<Visibility>;
  /**
   * Moves whenever the Dock's invite links, join requests or bans change (migration 0017;
   * store/dock-stamps.ts, audienceChanged): the console's live stream reads it with the Dock.
   */
  audience_at: Generated<Millis>;
  /** Moved forward whenever refused requests of the Dock are written (the live stream's `refused`). */
  refused_at: Generated<Millis>;
  created_at: Millis;
  updated_at: Millis;
}

export type SubscriptionState = "active" | "blocked" | "removed";

/**
 * A group's, supergroup's or channel's title as the bot last saw it (migration 0012): the console
 * names subscribed groups by it. Private chats are named by `users`.
 */
export interface ChatsTable {
  chat_id: number;
  title: string;
  updated_at: Millis;
}

export interface SubscriptionsTable {
  id: Generated<number>;
  dock_id: string;
  chat_id: number;
  /** Telegram's chat type: private, group, supergroup or channel (pacing differs). */
  chat_type: string;
  state: SubscriptionState;
  created_at: Millis;
  updated_at: Millis;
  /**
   * When the chat (re)subscribed: set on subscribing and on coming back after removing the
   * subscription, kept through a block and unblock. A message reaches the subscriptions active
   * since before it was accepted (Outbox.fanOut).
   */
  active_since: Millis;
  /** The invite link the chat joined through (migration 0017); null: by the Dock ID, or before. */
  invite_id: string | null;
  /**
   * Whose chat (migration 0022): 0, a real one; 1, the sandbox's (subscribed while the built-in
   * sandbox played Telegram); 2, the sandbox's, ended when a real bot started (SandboxChats); 3,
   * the sandbox's, ended before that.
   */
  sandbox: Generated<number>;
}

export interface MessagesTable {
  id: string;
  dock_id: string;
  text: string;
  /** Active subscribers the message was queued for when accepted. */
  subscribers: number;
  idempotency_key: string | null;
  /**
   * Hex SHA-256 of the message text (and its content, when it has one), to tell an idempotent
   * replay from a conflicting reuse.
   */
  request_hash: string | null;
  created_at: Millis;
  /** JSON of MessageContent (domain/message-options.ts); null for a plain text message. */
  content: string | null;
  /** The sender's name for the message: a send with the same key replaces it (unique per Dock while not deleted). */
  key: string | null;
  /** Counts the message's changes (edits, replacements, an acknowledgement); starts at 1. */
  revision: Generated<number>;
  /** When the last change was made; null while the message is as it was sent. */
  revised_at: Millis | null;
  /** When the sender deleted it: its copies are deleted, what was still queued is not sent. */
  deleted_at: Millis | null;
  /** Who acknowledged it first (Telegram user id, name) and when; null until someone does. */
  acked_by: number | null;
  acked_name: string | null;
  acked_at: Millis | null;
  /** 1 while the Dock's callback URL is still to be told that the message was delivered (or failed). */
  report_pending: Generated<number>;
  /**
   * Which credential sent it: a dock_credentials id, `hook` (the hook URL), or null (the secret
   * key, the console). A send-only sender replaces by key only its own messages.
   */
  sender: string | null;
  /** When the next round of reminders is due; null when there are none (or they ended). Migration 0024. */
  remind_next_at: Millis | null;
  /** When reminders stop, unacknowledged. */
  remind_until: Millis | null;
  /** Rounds of reminders queued so far (since the message, or the replacement that asked anew). */
  remind_rounds: Generated<number>;
  /** Why the reminders stopped: acknowledged, resolved, deleted, expired; null while they go on. */
  remind_ended: ReminderEnd | null;
  /** 1 once a reminder or a change that rings was queued for it (they are then to be cleaned up). */
  reminded: Generated<number>;
  /** When the next step of its escalation is due (null: none, or it ended); which step that is (0-based). */
  escalate_next_at: Millis | null;
  escalate_step: Generated<number>;
  /** Which escalation of the message this is (one more each time it starts over), and since when. */
  escalate_run: Generated<number>;
  escalate_started_at: Millis | null;
  /** A message an escalation made: the message it escalated, and the step (1-based). */
  escalated_from: string | null;
  escalation_step: number | null;
}

export type ReminderEnd = "acknowledged" | "resolved" | "deleted" | "expired";

/** One reminder to one copy of a message (migration 0024). */
export interface RemindersTable {
  id: Generated<number>;
  message_id: string;
  dock_id: string;
  chat_id: number;
  /** The copy (its `send` delivery) the reminder replies to. */
  copy_id: number;
  /** A reminder, or a change that rings (store/reminder-schedule.ts ringOf). */
  kind: Generated<ReminderKind>;
  /** The round it belongs to (1, 2, …), shown in its text; 0 for a change that rings. */
  round: number;
  state: DeliveryState;
  attempts: Generated<number>;
  next_attempt_at: Millis;
  lease_until: Millis | null;
  last_error: string | null;
  telegram_message_id: number | null;
  /** 1: its Telegram message is still to be deleted (replaced by the next, or the reminders ended); 2: done. */
  cleanup: Generated<number>;
  created_at: Millis;
  updated_at: Millis;
}

/** A person's snooze of a message's reminders in one chat (migration 0024). */
export interface ReminderSnoozesTable {
  message_id: string;
  chat_id: number;
  user_id: number;
  user_name: string;
  until: Millis;
  created_at: Millis;
}

/** An invite link of a Dock (migration 0017), modelled on Telegram's ChatInviteLink. */
export interface DockInvitesTable {
  /** `dinv_…`: names the link in the console and the CLI (revoking it); not a secret. */
  id: string;
  dock_id: string;
  /** Hex SHA-256 of the token in the link (`/start join_<token>`), to find it. */
  token_hash: string;
  /** The token sealed with the server's key: the console shows the link again. */
  token_sealed: string;
  name: string | null;
  /** Who made it; null: the operator's CLI. */
  created_by: number | null;
  created_at: Millis;
  /** When it stops working; null: never. */
  expires_at: Millis | null;
  /** How many chats may join through it; null: no limit. */
  usage_limit: number | null;
  /** Chats that joined through it so far. */
  uses: Generated<number>;
  /** 1: whoever opens it asks to join (a join request) instead of joining at once. */
  approval: number;
  revoked_at: Millis | null;
  /** When its uses or state last changed (the console's live stream watches it). */
  updated_at: Millis;
}

/** Where a join request stands: waiting, or how it ended. */
export type JoinRequestState = "pending" | "approved" | "declined" | "expired";

/** A chat asking to join a Dock (migration 0017); one per Dock × chat (a new one replaces an ended one). */
export interface JoinRequestsTable {
  /** `jr_…`: in the decision buttons' data and the console's routes. */
  id: string;
  dock_id: string;
  chat_id: number;
  chat_type: string;
  /** Who asked: the person (in a group, the administrator who asked for it). */
  user_id: number;
  /** The invite link it came through; null: the Dock ID. */
  invite_id: string | null;
  /** A group's member count when it asked; null in private (or when Telegram did not say). */
  member_count: number | null;
  state: JoinRequestState;
  created_at: Millis;
  /** When it expires unanswered (JOIN_REQUEST_TTL_DAYS after it was made). */
  expires_at: Millis;
  decided_by: number | null;
  decided_at: Millis | null;
  /** When it last changed (the console's live stream watches it). */
  updated_at: Millis;
}

/** A chat a Dock's owner banned from asking (or joining) again (migration 0017). */
export interface DockBansTable {
  dock_id: string;
  chat_id: number;
  /** Who banned it; null: the operator's CLI. */
  banned_by: number | null;
  banned_at: Millis;
}

/**
 * What a bot notice is: `request_copy`, a join request as one decider sees it (edited as it
 * ends); `request_outcome` (`detail`: approved, declined, expired), `removed` and `dock_deleted`,
 * told once to the chat concerned.
 */
export type NoticeKind = "request_copy" | "request_outcome" | "removed" | "dock_deleted";

export type NoticeState = "queued" | "sending" | "done" | "failed";

/** Something the bot tells a chat outside a conversation (migration 0017), sent durably. */
export interface BotNoticesTable {
  id: Generated<number>;
  chat_id: number;
  kind: NoticeKind;
  /** `request_copy`: the request it shows (the copy goes with the request). */
  request_id: string | null;
  /** The Dock's name when the notice was made (the Dock may be gone when it is sent). */
  dock_name: string | null;
  detail: string | null;
  /** `request_copy`: the Telegram message of the copy once sent (later edits change it). */
  message_id: number | null;
  /**
   * `request_copy`: counts the request's changes. A change made while the copy is being sent
   * leaves it queued once the send settles, so that it is edited to the change.
   */
  version: Generated<number>;
  /** `queued`: to be sent (or, for a copy, edited to the request as it is now). */
  state: NoticeState;
  attempts: Generated<number>;
  next_attempt_at: Millis;
  lease_until: Millis | null;
  last_error: string | null;
  created_at: Millis;
  updated_at: Millis;
}

/** A named credential of a Dock (migration 0015): what it may do is its scope. */
export interface DockCredentialsTable {
  id: string;
  dock_id: string;
  name: string;
  /** `send`, `manage` or `github` (domain/principal.ts). */
  scope: string;
  /** Hex SHA-256 of the credential's secret (the secret itself is shown once, never stored). */
  secret_hash: string;
  /** The secret's first characters, to tell credentials apart in a list. */
  prefix: string;
  created_at: Millis;
  /** When it last authenticated a request, to the minute (written at most once a minute). */
  last_used_at: Millis | null;
}

/**
 * A Dock's activity on one UTC day (migration 0011), counted as it happens (store/rollups.ts):
 * messages accepted; copies (send deliveries) that were sent, put back for another try, failed, or
 * ended gone. `changed`: what else the console's live stream watches (message changes, and the
 * settling of edits and deletes of copies).
 */
export interface DockDaysTable {
  id: Generated<number>;
  dock_id: string;
  /** YYYY-MM-DD, UTC. */
  day: string;
  accepted: number;
  sent: number;
  retried: number;
  failed: number;
  gone: number;
  changed: number;
}

/** A message waiting to be fanned out into one delivery per subscriber (see migration 0004). */
export interface FanoutsTable {
  /** Increasing id: each Dock's messages are fanned out in the order they were accepted. */
  id: Generated<number>;
  message_id: string;
  dock_id: string;
  created_at: Millis;
  /** The message's subscribers when it was accepted (for the queue-depth gauge); for a change, its copies. */
  subscribers: number;
  /** `send`: the message's copies are to be created; `edit`, `delete`: a change of its copies (migration 0009). */
  kind: Generated<"send" | "edit" | "delete">;
  /** 1: a message sent with priority `urgent`, fanned out ahead of the Dock's others (migration 0023). */
  urgent: Generated<number>;
}

export type DeliveryState = "queued" | "sending" | "sent" | "failed" | "gone";

/** A delivery sends a copy, or edits or deletes the copy `target_id` (queued behind it in its chat). */
export type DeliveryKind = "send" | "edit" | "delete";

export interface DeliveriesTable {
  /** Increasing id: the order deliveries were queued in, which keeps each chat first-in first-out. */
  id: Generated<number>;
  message_id: string;
  dock_id: string;
  chat_id: number;
  state: DeliveryState;
  attempts: number;
  next_attempt_at: Millis;
  lease_until: Millis | null;
  last_error: string | null;
  /** Telegram message ids of the sent parts, comma-separated. */
  telegram_message_ids: string | null;
  created_at: Millis;
  updated_at: Millis;
  kind: Generated<DeliveryKind>;
  /** For an edit or a delete: the `send` delivery whose copy it changes. */
  target_id: number | null;
  /** A send: the message revision its copy shows (the oldest, if its parts differ). An edit: the revision it applied. */
  revision: number | null;
  /** What an edit or a delete came to (see EditOutcome in outbox.ts). */
  outcome: string | null;
  /**
   * A copy's attempts whose outcome was never recorded: the process sending it stopped between the
   * call and its record, so the chat may hold a copy from it that the service does not know of.
   */
  unknown_attempts: Generated<number>;
  /**
   * Telegram message ids of such copies learnt of since (a press on one's button; an outcome that
   * came after its lease had passed on), comma-separated: the copy's next edit or delete removes them.
   */
  stray_ids: string | null;
  /** 1: a copy of an urgent message, sent ahead of every other waiting (migration 0023). */
  urgent: Generated<number>;
}

export interface LoginTokensTable {
  token_hash: string;
  created_at: Millis;
  expires_at: Millis;
  /** Telegram user who confirmed the sign-in in the bot; null again once the console cancelled it. */
  confirmed_by: number | null;
  confirmed_at: Millis | null;
  /**
   * Set when the console exchanged the confirmed token for a session, or when the sign-in was
   * declined (then `confirmed_by` is null): a token works once.
   */
  consumed_at: Millis | null;
}

export interface SessionsTable {
  token_hash: string;
  user_id: number;
  created_at: Millis;
  expires_at: Millis;
  last_seen_at: Millis;
  revoked_at: Millis | null;
}

/** What the bot is waiting for from a person in a chat (e.g. a pasted Dock ID). */
export interface BotStatesTable {
  chat_id: number;
  user_id: number;
  state: string;
  /** JSON with whatever the state needs. */
  data: string | null;
  expires_at: Millis;
}

/** A Dock's rate allowance, shared by every instance (PostgreSQL only; migration 0006). */
export interface DockAllowancesTable {
  dock_id: string;
  /** Tokens left at `at`; the refill since is added when the row is next read. */
  tokens: number;
  at: Millis;
}

/** The row `/readyz` rewrites to check that the database takes writes (migration 0007). */
export interface WriteProbesTable {
  id: number;
  probed_at: Millis;
}

export type EventState = "queued" | "sending" | "sent" | "failed";

/** An event for a Dock's callback URL (migration 0009), retried until the receiver takes it. */
export interface EventsTable {
  id: Generated<number>;
  dock_id: string;
  message_id: string;
  /** message.delivered, message.failed, message.acknowledged */
  type: string;
  /** The JSON body posted, as it will be signed. */
  payload: string;
  state: EventState;
  attempts: number;
  next_attempt_at: Millis;
  lease_until: Millis | null;
  last_error: string | null;
  created_at: Millis;
  updated_at: Millis;
}

/** The Idempotency-Key of a send that replaced a message by its key (migration 0009). */
export interface ReplaysTable {
  dock_id: string;
  idempotency_key: string;
  message_id: string;
  subscribers: number;
  request_hash: string | null;
  created_at: Millis;
  /** The first answer's revision and edits (a replay answers them again). */
  revision: number;
  edits: number;
}

export type { OwnerRole };

/** People allowed to own Docks beside those OWNERS names (migration 0013). */
export interface OwnersTable {
  telegram_id: number;
  role: OwnerRole;
  /** Who invited them (an administrator); null: the claim, the CLI, or an upgrade. */
  added_by: number | null;
  added_at: Millis;
  /**
   * 1: made while the built-in sandbox played Telegram (migration 0020), for one of its people;
   * such a row lets nobody in on a real bot. 0: any other.
   */
  sandbox: Generated<number>;
}

/**
 * `claim`: makes the first administrator; `invite`: makes an owner; `co_owner`: gives a role on
 * one Dock (migration 0018). All single-use.
 */
export type OwnerInviteKind = "claim" | "invite" | "co_owner";

/** Single-use links into the bot that make an owner (migration 0013); the token is kept hashed. */
export interface OwnerInvitesTable {
  /** Names the invitation in the console (revoking it); not a secret. */
  id: string;
  token_hash: string;
  kind: OwnerInviteKind;
  created_by: number | null;
  created_at: Millis;
  expires_at: Millis;
  used_by: number | null;
  used_at: Millis | null;
  revoked_at: Millis | null;
  /** A co-owner invitation's Dock and the role it gives (migration 0018); null for the other kinds. */
  dock_id: string | null;
  dock_role: DockRole | null;
}

/** One row (id 1): whether someone has claimed the instance (migration 0013). */
export interface InstanceTable {
  id: number;
  claimed_at: Millis | null;
  /** The administrator who claimed it; null when it counts as claimed for another reason. */
  claimed_by: number | null;
  /** When an administrator dismissed the offer to take over the sandbox's Docks (migration 0020). */
  sandbox_offer_dismissed_at: Generated<Millis | null>;
  /** What the last start spoke to (migration 0022); null: not known (before it). */
  telegram: Generated<"sandbox" | "bot" | null>;
  /** When the sandbox's latest stretch of starts began (migration 0022); null: none yet. */
  sandbox_since: Generated<Millis | null>;
}

/** A person given a role on a Dock beside its own owner (migration 0018). */
export interface CoOwnersTable {
  dock_id: string;
  telegram_id: number;
  role: DockRole;
  /** Who invited them; null: the operator's command line. */
  added_by: number | null;
  added_at: Millis;
}

/** One entry of a Dock's audit log (migration 0018): who did what, and when. */
export interface DockAuditTable {
  id: Generated<number>;
  dock_id: string;
  at: Millis;
  /** The Telegram user who did it; null: the operator's command line, or the service itself. */
  actor: number | null;
  /** An AuditAction (domain/audit.ts). */
  action: string;
  /** JSON of the entry's names and ids (never a secret); null: none. */
  detail: string | null;
}

/** A Dock's refused requests, a bounded ring of them (migration 0021). */
export interface DockRefusalsTable {
  id: Generated<number>;
  dock_id: string;
  first_at: Millis;
  last_at: Millis;
  /** How many refusals alike (door, format, code, message, credentials) the row stands for. */
  count: number;
  /** The send door, as its route's pattern (`/hook/{token}`: never the token). */
  door: string;
  format: string | null;
  status: number;
  code: string;
  message: string;
  /** `right`, `wrong` or `unchecked`: what the request's credentials were found to be. */
  credentials: string;
}

export interface Database {
  users: UsersTable;
  docks: DocksTable;
  subscriptions: SubscriptionsTable;
  chats: ChatsTable;
  messages: MessagesTable;
  dock_days: DockDaysTable;
  deliveries: DeliveriesTable;
  reminders: RemindersTable;
  reminder_snoozes: ReminderSnoozesTable;
  fanouts: FanoutsTable;
  login_tokens: LoginTokensTable;
  sessions: SessionsTable;
  bot_states: BotStatesTable;
  dock_allowances: DockAllowancesTable;
  write_probes: WriteProbesTable;
  events: EventsTable;
  replays: ReplaysTable;
  owners: OwnersTable;
  owner_invites: OwnerInvitesTable;
  instance: InstanceTable;
  dock_credentials: DockCredentialsTable;
  co_owners: CoOwnersTable;
  dock_audit: DockAuditTable;
  dock_invites: DockInvitesTable;
  join_requests: JoinRequestsTable;
  dock_bans: DockBansTable;
  bot_notices: BotNoticesTable;
  dock_refusals: DockRefusalsTable;
}
