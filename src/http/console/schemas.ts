import { type Static, Type } from "typebox";
import { changeCountsSchema, entitySchema, storedOptionsSchema } from "../message-schemas.ts";

/**
 * The console API's schemas: what its routes take and what they answer. The answer types are the
 * one description of those bodies: the routes are type-checked against them and the console in
 * web/ imports them (`import type`, so no TypeBox reaches the browser). This module must import
 * nothing but TypeBox (and message-schemas.ts, which holds to the same rule), or web/ would
 * type-check server code.
 */

// ---- Requests ----

/**
 * A Dock's editable fields; validated by `validateDockFields` (and `visibility` by the route),
 * whose messages the form shows per field.
 */
export const dockFieldsBody = Type.Object({
  name: Type.Optional(Type.Unknown()),
  link: Type.Optional(Type.Unknown()),
  description: Type.Optional(Type.Unknown()),
  callback_url: Type.Optional(Type.Unknown()),
  visibility: Type.Optional(Type.Unknown()),
});

/** A Dock's integration settings; the template is checked by `validateTemplate` (problems per field). */
export const integrationsBody = Type.Object({
  inbound_format: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  template: Type.Optional(Type.Unknown()),
});

/** A payload pasted into the console, shown as the message it makes. */
export const previewBody = Type.Object({
  format: Type.String({ description: "An inbound format's name, or template." }),
  /** The payload as the tool would send it (JSON, a form, XML or text). */
  sample: Type.String({ maxLength: 262_144 }),
  /** For format template: the template being edited (else the Dock's saved one). */
  template: Type.Optional(Type.Unknown()),
  /** Headers the tool sends that the format reads (GitHub's X-GitHub-Event). */
  headers: Type.Optional(Type.Record(Type.String(), Type.String({ maxLength: 200 }))),
});

export const signOutBody = Type.Optional(
  Type.Object({
    everywhere: Type.Optional(Type.Boolean({ description: "End every session of this person." })),
  }),
);

export const signInFinishBody = Type.Object({
  user_id: Type.Integer({
    description: "The Telegram user id that /sign-in/check named: the session starts only for that person.",
  }),
});

export const dockParams = Type.Object({ id: Type.String() });
/** `days`: 7 or 30 (checked by the route, which names what is wrong). */
export const activityQuery = Type.Object({ days: Type.Optional(Type.String()) });
export const subscriberParams = Type.Object({ id: Type.String(), chatId: Type.String() });
export const messageParams = Type.Object({ id: Type.String(), messageId: Type.String() });
export const credentialParams = Type.Object({ id: Type.String(), credentialId: Type.String() });
export const inviteLinkParams = Type.Object({ id: Type.String(), inviteId: Type.String() });
export const requestParams = Type.Object({ id: Type.String(), requestId: Type.String() });
export const banParams = Type.Object({ id: Type.String(), chatId: Type.String() });

/** `POST /docks/{id}/requests/{requestId}/decline`: `ban` also bans the chat from asking again. */
export const declineBody = Type.Optional(Type.Object({ ban: Type.Optional(Type.Boolean()) }));

/** `POST /docks/{id}/bans`: the chat to ban (removed first, if subscribed). */
export const banBody = Type.Object({ chat_id: Type.Integer() });

/** `POST /docks/{id}/invites`: checked by `validateInviteRules`, whose problems name the field. */
export const inviteLinkBody = Type.Object({
  name: Type.Optional(Type.Unknown()),
  usage_limit: Type.Optional(Type.Unknown()),
  expires_at: Type.Optional(Type.Unknown()),
  approval: Type.Optional(Type.Unknown()),
});

export const coOwnerParams = Type.Object({ id: Type.String(), userId: Type.String() });
export const coOwnerInviteParams = Type.Object({ id: Type.String(), inviteId: Type.String() });

/** `POST /docks/{id}/co-owners/invites` and `PUT …/co-owners/{userId}/role`: the role, checked by the route. */
export const coOwnerRoleBody = Type.Object({ role: Type.Optional(Type.Unknown()) });

/** `GET /docks/{id}/audit`: strings, checked by the route so that its answer names the parameter. */
export const auditQuery = Type.Object({
  limit: Type.Optional(Type.String({ description: "Entries per page, 1 to 200; 50 when left out." })),
  before: Type.Optional(
    Type.String({ description: "The previous page's next_before: only entries older than that one." }),
  ),
});

/** `POST /docks/{id}/credentials`: checked by the route, which names the field at fault. */
export const credentialBody = Type.Object({
  name: Type.Optional(Type.Unknown()),
  scope: Type.Optional(Type.Unknown()),
});

/** `GET /docks/{id}/messages`: strings, checked by the route so that its answer names the parameter. */
export const messageHistoryQuery = Type.Object({
  limit: Type.Optional(Type.String({ description: "Messages per page, 1 to 100; 20 when left out." })),
  before: Type.Optional(
    Type.String({ description: "The previous page's next_before: only messages older than that one." }),
  ),
  q: Type.Optional(
    Type.String({
      description: "Only messages whose text or key holds this, letter case aside; at most 200 characters.",
    }),
  ),
  state: Type.Optional(
    Type.String({
      description:
        "failed (a copy failed or its chat is gone), pending (a copy still to be sent), delivered (every copy sent), no_subscribers.",
    }),
  ),
});

/** `GET /docks/{id}/messages/{messageId}`: which page of the message's copies. */
export const messageDetailQuery = Type.Object({
  limit: Type.Optional(Type.String({ description: "Copies per page, 1 to 1000; 500 when left out." })),
  after: Type.Optional(Type.String({ description: "The previous page's next_after." })),
});

// ---- Parts of answers ----

const ok = Type.Literal(true);
const stringOrNull = Type.Union([Type.String(), Type.Null()]);
const time = Type.Integer({ description: "Milliseconds since the Unix epoch." });

/** A Telegram account as the console shows it: the signed-in person, or who confirmed a sign-in. */
export const telegramAccount = Type.Object({
  id: Type.Integer(),
  first_name: stringOrNull,
  username: stringOrNull,
});
export type TelegramAccount = Static<typeof telegramAccount>;

/** Where a sign-in of this browser stands; `none`: no sign-in is in progress here. */
export const signInState = Type.Union([
  Type.Literal("none"),
  Type.Literal("pending"),
  Type.Literal("confirmed"),
  Type.Literal("declined"),
  Type.Literal("expired"),
  Type.Literal("used"),
]);
export type SignInState = Static<typeof signInState>;

/** A Dock's template: Liquid templates per field (integrations/template.ts). */
export const templateSchema = Type.Object({
  text: Type.String(),
  format: Type.Optional(Type.Union([Type.Literal("text"), Type.Literal("markdown"), Type.Literal("html")])),
  title: Type.Optional(Type.String()),
  key: Type.Optional(Type.String()),
  final: Type.Optional(Type.String()),
  tags: Type.Optional(Type.String()),
  priority: Type.Optional(Type.String()),
  click: Type.Optional(Type.String()),
  buttons: Type.Optional(Type.String()),
});

/**
 * What the list of Docks says of each: from the daily activity counts and the newest message, read
 * for the whole list at once (a fixed number of queries, however many Docks).
 */
export const dockStats = Type.Object({
  subscribers: Type.Integer({ description: "Active subscribers." }),
  accepted_7d: Type.Integer({
    description: "Messages accepted in the last 7 days (UTC days, today included).",
  }),
  failed_7d: Type.Integer({
    description: "Copies that failed in the last 7 days (UTC days, today included).",
  }),
  last_message: Type.Union(
    [
      Type.Object({
        id: Type.String(),
        created_at: time,
        preview: Type.String({ description: "The first 100 characters the message shows, as plain text." }),
        states: Type.Partial(
          Type.Record(
            // The states of deliveryState (below), as MessageReport.states counts them.
            Type.Union([
              Type.Literal("queued"),
              Type.Literal("sending"),
              Type.Literal("sent"),
              Type.Literal("failed"),
              Type.Literal("gone"),
            ]),
            Type.Integer(),
          ),
          { description: "How many copies are in each state; states with none are left out." },
        ),
      }),
      Type.Null(),
    ],
    { description: "The newest message; null: none yet." },
  ),
});
export type DockStats = Static<typeof dockStats>;

/** Who may subscribe to a Dock (domain/audience.ts). */
export const visibility = Type.Union(
  [Type.Literal("open"), Type.Literal("invite"), Type.Literal("approval")],
  {
    description:
      "Who may subscribe: open (anyone with the Dock ID), invite (only through an invite link), approval (the owner approves each join request).",
  },
);
export type Visibility = Static<typeof visibility>;

/** A person's role on a Dock (domain/dock-roles.ts). */
export const dockRole = Type.Union(
  [Type.Literal("owner"), Type.Literal("editor"), Type.Literal("approver"), Type.Literal("viewer")],
  {
    description:
      "owner: everything; editor: settings, templates, credentials, sending; approver: subscribers; viewer: history and activity.",
  },
);
export type DockRole = Static<typeof dockRole>;

/** What a role on a Dock allows (domain/dock-roles.ts DockAction). */
export const dockAction = Type.Union([
  Type.Literal("read"),
  Type.Literal("edit_settings"),
  Type.Literal("manage_credentials"),
  Type.Literal("send"),
  Type.Literal("manage_subscribers"),
  Type.Literal("manage_co_owners"),
  Type.Literal("delete_dock"),
]);
export type DockAction = Static<typeof dockAction>;

/** Null for a role that may not see it: the secrets and settings a role without the right never gets. */
const hidden = "null for a role that may not see it.";

/**
 * A Dock as the signed-in person sees it: all of it for its owners and editors (the secret key
 * included); without the secrets, the callback URL and the settings written with them for a role
 * that may not manage its credentials or settings.
 */
export const dock = Type.Object({
  id: Type.String(),
  name: Type.String(),
  link: stringOrNull,
  description: stringOrNull,
  role: dockRole,
  may: Type.Array(dockAction, { description: "What the signed-in person's role allows on this Dock." }),
  visibility,
  callback_url: Type.Union([Type.String(), Type.Null()], {
    description: `Where the Dock's events are posted (signed with its signing secret); null: none, or ${hidden}`,
  }),
  secret_key: Type.Union([Type.String(), Type.Null()], { description: `The secret key; ${hidden}` }),
  signing_secret: Type.Union([Type.String(), Type.Null()], {
    description: `The key of the Dock-Signature on its callback events (dnss_…), apart from the secret key; ${hidden}`,
  }),
  hook_token: Type.Union([Type.String(), Type.Null()], {
    description: `The hook token (POST /hook/<token>), a URL-only credential; null: none, or ${hidden}`,
  }),
  hook_url: Type.Union([Type.String(), Type.Null()], {
    description: `The Dock's hook URL (PUBLIC_URL/hook/<token>); null: none, or ${hidden}`,
  }),
  inbound_format: Type.Union([Type.String(), Type.Null()], {
    description: "How a body without msg is read (a format, or template); null: detected.",
  }),
  template: Type.Union([templateSchema, Type.Null()]),
  integrations: Type.Array(
    Type.Object({
      format: Type.String(),
      tool: Type.String(),
      where: Type.String(),
      text: Type.String(),
      needs_hook_token: Type.Boolean(),
    }),
    {
      description:
        "Ready-to-paste settings per tool, with the Dock's real credentials; empty for a role that may not see them.",
    },
  ),
  subscribers: Type.Integer({ description: "Active subscribers." }),
  pending_requests: Type.Integer({ description: "Join requests waiting for a decision." }),
  created_at: time,
  updated_at: time,
  open_in_telegram: Type.String({ description: "Opens the bot with this Dock, to subscribe." }),
  examples: Type.Union([
    Type.Object(
      {
        ping: Type.String({ description: "Send, credentials in the JSON body." }),
        webhook: Type.String({ description: "Send, credentials in HTTP Basic authentication." }),
        replace: Type.String({
          description: "Send with a key: a later send with the same key edits it in place.",
        }),
        edit: Type.String({ description: "Edit a sent message (PATCH /messages/<MESSAGE_ID>)." }),
        delete: Type.String({
          description: "Delete a sent message from every chat (DELETE /messages/<MESSAGE_ID>).",
        }),
        ack: Type.String({ description: "Send with an Acknowledge button." }),
      },
      { description: `Ready-to-run curl commands with the Dock's real credentials; ${hidden}` },
    ),
    Type.Null(),
  ]),
  stats: dockStats,
});
export type Dock = Static<typeof dock>;

/**
 * A Dock on the list: what the list shows, and none of its credentials — a list of 60 Docks need
 * not carry 60 secret keys (and every tool's settings written with them) to the browser.
 */
export const dockSummary = Type.Pick(dock, [
  "id",
  "name",
  "role",
  "link",
  "description",
  "visibility",
  "subscribers",
  "pending_requests",
  "created_at",
  "updated_at",
  "stats",
]);
export type DockSummary = Static<typeof dockSummary>;

/** How the console names a chat, the same everywhere (store/chats.ts). */
const chatNameSchema = Type.Union([Type.String(), Type.Null()], {
  description:
    "The chat as the console names it: a group's title, or a person's name and @username; null when the service knows neither.",
});

/** The invite link something came through (a subscriber, a join request); null: none. */
const throughLink = Type.Union([Type.Object({ id: Type.String(), name: stringOrNull }), Type.Null()], {
  description: "The invite link it came through (its id and name); null: the Dock ID.",
});

/** A chat that receives (or, blocked, no longer can receive) a Dock's messages. */
export const subscriber = Type.Object({
  chat_id: Type.Integer(),
  chat_type: Type.String({ description: "Telegram's chat type: private, group, supergroup or channel." }),
  state: Type.Union([Type.Literal("active"), Type.Literal("blocked"), Type.Literal("removed")]),
  first_name: stringOrNull,
  username: stringOrNull,
  title: Type.Union([Type.String(), Type.Null()], {
    description:
      "A group's, supergroup's or channel's title as the bot last saw it (kept up to date on renames); null for a private chat, or a group the bot has not heard from since it was subscribed.",
  }),
  name: chatNameSchema,
  since: time,
  invite: throughLink,
});
export type Subscriber = Static<typeof subscriber>;

/** A Dock's invite link as its owner sees it, modelled on Telegram's ChatInviteLink. */
export const inviteLink = Type.Object({
  id: Type.String({ description: "dinv_…: names the link (to revoke it); not a secret." }),
  name: stringOrNull,
  link: Type.String({ description: "The link into the bot (start=join_<token>): whoever has it may join." }),
  creator: Type.Union([Type.Object({ id: Type.Integer(), name: stringOrNull }), Type.Null()], {
    description: "Who made it; null: the operator's CLI.",
  }),
  created_at: time,
  expires_at: Type.Union([time, Type.Null()], { description: "When it stops working; null: never." }),
  usage_limit: Type.Union([Type.Integer(), Type.Null()], {
    description: "How many chats may join through it; null: no limit.",
  }),
  uses: Type.Integer({ description: "Chats that joined through it so far." }),
  approval: Type.Boolean({ description: "Whoever opens it asks to join; the owner approves." }),
  revoked_at: Type.Union([time, Type.Null()]),
  state: Type.Union(
    [Type.Literal("active"), Type.Literal("expired"), Type.Literal("used_up"), Type.Literal("revoked")],
    { description: "Whether it works now, and if not why." },
  ),
});
export type InviteLinkView = Static<typeof inviteLink>;

/** A chat asking to join a Dock, as its owner's queue shows it. */
export const joinRequest = Type.Object({
  id: Type.String({ description: "jr_…" }),
  chat_id: Type.Integer(),
  chat_type: Type.String({ description: "private, group or supergroup." }),
  name: chatNameSchema,
  requested_by: Type.Object(
    { id: Type.Integer(), name: stringOrNull },
    { description: "Who asked: the person, or in a group the administrator who asked for it." },
  ),
  member_count: Type.Union([Type.Integer(), Type.Null()], {
    description: "A group's member count when it asked; null for a person.",
  }),
  invite: throughLink,
  state: Type.Union([
    Type.Literal("pending"),
    Type.Literal("approved"),
    Type.Literal("declined"),
    Type.Literal("expired"),
  ]),
  created_at: time,
  expires_at: time,
  decided_by: Type.Union([Type.Object({ id: Type.Integer(), name: stringOrNull }), Type.Null()]),
  decided_at: Type.Union([time, Type.Null()]),
});
export type JoinRequestView = Static<typeof joinRequest>;

/** A chat banned from a Dock: it may neither join nor ask to. */
export const ban = Type.Object({
  chat_id: Type.Integer(),
  name: chatNameSchema,
  banned_by: Type.Union([Type.Integer(), Type.Null()], { description: "Who banned it; null: the CLI." }),
  banned_at: time,
});
export type BanView = Static<typeof ban>;

export const deliveryState = Type.Union([
  Type.Literal("queued"),
  Type.Literal("sending"),
  Type.Literal("sent"),
  Type.Literal("failed"),
  Type.Literal("gone"),
]);
export type DeliveryState = Static<typeof deliveryState>;

/** Where a copy's latest edit or its deletion stands, named as the send API's `GET /messages/{id}` names it. */
export const copyChangeState = Type.Union([
  Type.Literal("queued"),
  Type.Literal("done"),
  Type.Literal("failed"),
  Type.Literal("gone"),
]);
export type CopyChangeState = Static<typeof copyChangeState>;

/** A copy's latest edit or its deletion; null: none. */
export const copyChange = Type.Union(
  [
    Type.Object({
      state: copyChangeState,
      outcome: Type.Union([Type.String(), Type.Null()], {
        description:
          "Once done — an edit: edited, unchanged, resent; a delete: deleted, already_deleted, not_deleted.",
      }),
      last_error: stringOrNull,
      updated_at: time,
    }),
    Type.Null(),
  ],
  {
    description:
      "queued (or under way), done, failed (Telegram refused), gone (the chat left, or cancelled).",
  },
);
export type CopyChange = Static<typeof copyChange>;

/** One recipient's delivery of a message. */
export const deliveryLine = Type.Object({
  chat_id: Type.Integer(),
  state: deliveryState,
  last_error: stringOrNull,
  updated_at: time,
  edit: copyChange,
  delete: copyChange,
  name: chatNameSchema,
});
export type DeliveryLine = Static<typeof deliveryLine>;

/** One recipient's delivery on the message's own page: also who it is and how often it was tried. */
export const deliveryDetail = Type.Object({
  ...deliveryLine.properties,
  attempts: Type.Integer({ description: "Tries so far; a 429 (Telegram asking to wait) is not counted." }),
  chat_type: Type.Union([Type.String(), Type.Null()], {
    description: "private, group, supergroup or channel; null once the chat has no subscription to the Dock.",
  }),
  first_name: stringOrNull,
  username: stringOrNull,
  sent_at: Type.Union([time, Type.Null()], {
    description: "When the copy went out; null until it did, and once an edit of it is done.",
  }),
});
export type DeliveryDetail = Static<typeof deliveryDetail>;

/** A message as Telegram shows it under the Dock's name: title, formatted text, tags. */
const entityTextSchema = Type.Object(
  { text: Type.String(), entities: Type.Array(entitySchema) },
  { description: "The message as Telegram shows it under the Dock's name: title, formatted text, tags." },
);

/** A recent message of a Dock and where each of its deliveries stands. */
export const messageReport = Type.Object({
  id: Type.String(),
  text: Type.String({ description: "The text as sent (msg)." }),
  shown: entityTextSchema,
  options: storedOptionsSchema,
  created_at: time,
  subscribers: Type.Integer({ description: "Active subscribers when the message arrived." }),
  key: Type.Union([Type.String(), Type.Null()], { description: "The sender's key for the message, if any." }),
  revision: Type.Integer({
    description: "1 as sent; each edit, replacement by key and acknowledgement adds one.",
  }),
  revised_at: Type.Union([time, Type.Null()]),
  deleted_at: Type.Union([time, Type.Null()]),
  acknowledged: Type.Union([Type.Object({ name: Type.String(), at: time }), Type.Null()], {
    description: "Who pressed Acknowledge first, and when; null: nobody (yet).",
  }),
  reminders: Type.Union(
    [
      Type.Object({
        rounds: Type.Integer({ description: "Rounds of reminders so far." }),
        next_at: Type.Union([time, Type.Null()], {
          description: "When the next round is due; null once ended.",
        }),
        ended: Type.Union([Type.String(), Type.Null()], {
          description: "acknowledged, resolved, deleted or expired; null while they go on.",
        }),
      }),
      Type.Null(),
    ],
    { description: "Reminders until acknowledged; null when the message never had any." },
  ),
  changes: changeCountsSchema,
  states: Type.Partial(Type.Record(deliveryState, Type.Integer()), {
    description: "How many deliveries are in each state; states with none are left out.",
  }),
  deliveries_total: Type.Integer({
    description: "How many copies were made: deliveries lists some of them.",
  }),
  deliveries: Type.Array(deliveryLine, {
    description:
      "At most 10 copies in a page of messages: failed and gone first, then those retried after an error.",
  }),
});
export type MessageReport = Static<typeof messageReport>;

/** A message on its own page: a page of its copies, each with who received it and its tries. */
export const messageDetail = Type.Object({
  ...messageReport.properties,
  deliveries: Type.Array(deliveryDetail, {
    description: "A page of the copies, in the order they were queued.",
  }),
});
export type MessageDetail = Static<typeof messageDetail>;

// ---- Answers, one per route ----

/** `GET /info`: what the sign-in and help pages show, before anyone signs in. */
export const infoAnswer = Type.Object({
  ok,
  bot_username: Type.String(),
  bot_link: Type.String(),
  docs_url: Type.String(),
  api_base_url: Type.String(),
  sandbox: Type.Boolean(),
  owners: Type.Union([Type.Literal("anyone"), Type.Literal("invited")], {
    description:
      "Who may sign in: `anyone` with Telegram (OWNERS=*, or the sandbox), or only `invited` owners (OWNERS, the administrator's invitations).",
  }),
  awaits_claim: Type.Boolean({
    description:
      "The instance has no administrator yet: whoever opens the claim link the service printed at start becomes it.",
  }),
  login_widget: Type.Union(
    [Type.Object({ bot_username: Type.String(), auth_url: Type.String() }), Type.Null()],
    {
      description: "Telegram's Login Widget, offered when the service has a login domain.",
    },
  ),
  formats: Type.Array(
    Type.Object({
      name: Type.String(),
      label: Type.String(),
      sample: Type.Object({
        body: Type.String(),
        headers: Type.Optional(Type.Record(Type.String(), Type.String())),
      }),
    }),
    {
      description:
        "The built-in integration formats (integrations/formats.ts), each with a payload as its tool sends it: the console's format lists and Try a sample.",
    },
  ),
});
export type InfoAnswer = Static<typeof infoAnswer>;

/** `GET /session`: who is signed in, and the token every state-changing call must carry. */
export const ownerRole = Type.Union([Type.Literal("admin"), Type.Literal("owner")], {
  description: "`admin` also manages who may own Docks.",
});
export type OwnerRole = Static<typeof ownerRole>;

/** What the signed-in person is in the console (domain/owners.ts ConsoleRole). */
export const consoleRole = Type.Union(
  [Type.Literal("admin"), Type.Literal("owner"), Type.Literal("co_owner")],
  {
    description:
      "`admin` also manages who may own Docks; `co_owner`: no owner here, let in for the Docks shared with them (creates none).",
  },
);
export type ConsoleRole = Static<typeof consoleRole>;

export const sessionAnswer = Type.Object({
  ok,
  user: telegramAccount,
  role: consoleRole,
  max_docks: Type.Union([Type.Integer(), Type.Null()], {
    description: "How many Docks one owner may create (MAX_DOCKS_PER_OWNER); null: no cap.",
  }),
  expires_at: time,
  csrf_token: Type.String(),
});
export type SessionAnswer = Static<typeof sessionAnswer>;

/** Someone allowed into the console, in the administrators' list. */
export const ownerSchema = Type.Object({
  id: Type.Integer(),
  first_name: stringOrNull,
  username: stringOrNull,
  role: consoleRole,
  source: Type.Union([Type.Literal("config"), Type.Literal("store"), Type.Literal("co_owner")], {
    description:
      "`config`: named by OWNERS (only the configuration removes them); `co_owner`: no owner, let in for the Docks shared with them (their owners remove them).",
  }),
  added_at: Type.Union([time, Type.Null()]),
  docks: Type.Integer({ description: "Docks they own; for a co_owner, the Docks shared with them." }),
});
export type OwnerView = Static<typeof ownerSchema>;

/** An invitation that can still be used (its link was shown once, when it was made). */
export const inviteSchema = Type.Object({
  id: Type.String(),
  created_by: Type.Union([Type.Integer(), Type.Null()]),
  created_at: time,
  expires_at: time,
});
export type InviteView = Static<typeof inviteSchema>;

/** `GET /owners`: who may own Docks, and the invitations still open. */
export const ownersAnswer = Type.Object({
  ok,
  owners: Type.Array(ownerSchema),
  invites: Type.Array(inviteSchema),
});
export type OwnersAnswer = Static<typeof ownersAnswer>;

/** `POST /owners/invites`: a new invitation; its link is shown this once. */
export const inviteAnswer = Type.Object({ ok, invite: inviteSchema, link: Type.String() });
export type InviteAnswer = Static<typeof inviteAnswer>;

/** A Dock made while the sandbox played Telegram, as an administrator is offered it on a real bot. */
export const sandboxDockSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  owner_id: Type.Integer({ description: "The sandbox's person who owns it (e.g. 100000001)." }),
  subscribers: Type.Integer({
    description: "Its active subscriptions: chats of the sandbox, which are not carried over.",
  }),
});
export type SandboxDockView = Static<typeof sandboxDockSchema>;

/** `GET /sandbox-docks` and `POST /sandbox-docks/take-over`: the sandbox's Docks offered, or taken over. */
export const sandboxDocksAnswer = Type.Object({ ok, docks: Type.Array(sandboxDockSchema) });
export type SandboxDocksAnswer = Static<typeof sandboxDocksAnswer>;

export const ownerParams = Type.Object({ id: Type.String() });
export const ownerRoleBody = Type.Object({ role: ownerRole });

/** Someone with a role on a Dock: its own owner, or a co-owner. */
export const coOwnerSchema = Type.Object({
  id: Type.Integer(),
  first_name: stringOrNull,
  username: stringOrNull,
  role: dockRole,
  owns_dock: Type.Boolean({
    description: "The Dock's own owner (created it, or was given it): keeps the role owner.",
  }),
  added_at: Type.Union([time, Type.Null()], { description: "Null for the Dock's own owner." }),
});
export type CoOwnerView = Static<typeof coOwnerSchema>;

/** A co-owner invitation that can still be used (its link was shown once, when it was made). */
export const coOwnerInviteSchema = Type.Object({
  id: Type.String(),
  role: dockRole,
  created_by: Type.Union([Type.Integer(), Type.Null()]),
  created_at: time,
  expires_at: time,
});
export type CoOwnerInviteView = Static<typeof coOwnerInviteSchema>;

/** `GET /docks/{id}/co-owners`: the Dock's team and its co-owner invitations still open. */
export const coOwnersAnswer = Type.Object({
  ok,
  co_owners: Type.Array(coOwnerSchema),
  invites: Type.Array(coOwnerInviteSchema),
});
export type CoOwnersAnswer = Static<typeof coOwnersAnswer>;

/** `POST /docks/{id}/co-owners/invites`: a new invitation; its link is shown this once. */
export const coOwnerInviteAnswer = Type.Object({ ok, invite: coOwnerInviteSchema, link: Type.String() });
export type CoOwnerInviteAnswer = Static<typeof coOwnerInviteAnswer>;

/** One entry of a Dock's audit log. */
export const auditEntrySchema = Type.Object({
  id: Type.Integer(),
  at: time,
  actor: Type.Union([telegramAccount, Type.Null()], {
    description: "Who did it; null: the operator's command line, or the service itself.",
  }),
  action: Type.String({ description: "What was done (docs/console.md lists them)." }),
  detail: Type.Record(
    Type.String(),
    Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()]),
    {
      description: "Names and ids that say what was done; never a secret.",
    },
  ),
});
export type AuditEntryView = Static<typeof auditEntrySchema>;

/** `GET /docks/{id}/audit`: a page of the audit log, newest first. */
export const auditAnswer = Type.Object({
  ok,
  entries: Type.Array(auditEntrySchema),
  next_before: Type.Union([Type.Integer(), Type.Null()], {
    description: "Ask with before=<this> for the next (older) page; null: this is the last.",
  }),
  people: Type.Record(Type.String(), Type.Object({ first_name: stringOrNull, username: stringOrNull }), {
    description:
      "By Telegram id, the names of the people the entries' details name (user, invited_by, from, to, a person's chat_id), as the bot last saw them.",
  }),
  groups: Type.Record(Type.String(), Type.String(), {
    description: "By chat id, the titles of the groups the entries' chat_id name, as the bot last saw them.",
  }),
});
export type AuditAnswer = Static<typeof auditAnswer>;

/** One row of a Dock's refused requests: one refusal, or repeats of it (`count`). */
export const refusedRequestSchema = Type.Object({
  id: Type.Integer(),
  first_at: time,
  last_at: { ...time, description: "The latest refusal the row counts (milliseconds since the Unix epoch)." },
  count: Type.Integer({ description: "How many refusals alike (each within a minute of the one before)." }),
  door: Type.String({ description: "The send door, as its route: /ping, /webhook/{format}, /hook/{token}…" }),
  format: Type.Union([Type.String(), Type.Null()], {
    description: "The integration format the body was read as, or named; null: none.",
  }),
  status: Type.Integer(),
  code: Type.String({ description: "The error code answered (docs/api.md lists them)." }),
  message: Type.String({ description: "The message answered; never a secret." }),
  credentials: Type.Union([Type.Literal("right"), Type.Literal("wrong"), Type.Literal("unverified")], {
    description:
      "right: the request proved it was the Dock's; wrong: it named the Dock with a wrong key, credential or signature; unverified: refused before or apart from the check of its key (anyone who knows the Dock ID can cause it).",
  }),
});
export type RefusedRequestView = Static<typeof refusedRequestSchema>;

/** `GET /docks/{id}/refused`: the Dock's refused requests, the latest first. */
export const refusedAnswer = Type.Object({
  ok,
  refused: Type.Array(refusedRequestSchema),
  limit: Type.Integer({ description: "How many rows a Dock keeps (its newest)." }),
});
export type RefusedAnswer = Static<typeof refusedAnswer>;

/** `POST /sign-in`: the single-use link to the bot, also as a QR code. */
export const signInStartAnswer = Type.Object({
  ok,
  link: Type.String(),
  qr_svg: Type.String(),
  expires_at: time,
});
export type SignInStartAnswer = Static<typeof signInStartAnswer>;

/** `POST /sign-in/check`: the sign-in's state and, once confirmed, who confirmed it. */
export const signInCheckAnswer = Type.Object({
  ok,
  state: signInState,
  user: Type.Optional(telegramAccount),
  may_sign_in: Type.Optional(
    Type.Boolean({
      description: "Once confirmed: false when the person who confirmed is not an owner of this instance.",
    }),
  ),
});
export type SignInCheckAnswer = Static<typeof signInCheckAnswer>;

/** `POST /sign-in/finish`: the session started. */
export const signInFinishAnswer = Type.Object({ ok, state: Type.Literal("signed_in") });
export type SignInFinishAnswer = Static<typeof signInFinishAnswer>;

/** `POST /sign-in/cancel`: the sign-in's state afterwards. */
export const signInCancelAnswer = Type.Object({ ok, state: signInState });
export type SignInCancelAnswer = Static<typeof signInCancelAnswer>;

/** `PATCH /docks/:id/messages/:messageId`: the message's new text (its options stay). */
export const messageEditBody = Type.Object({
  text: Type.String({ description: "The message's new text, in its format; every copy is edited into it." }),
});

/** The message edited: as the send API's PATCH answers. */
export const messageEditedAnswer = Type.Object({
  ok,
  message_id: Type.String(),
  revision: Type.Integer({ description: "The message's revision now." }),
  edits: Type.Integer({ description: "Copies sent (or being sent) that will be edited." }),
  queued: Type.Integer({ description: "Copies not sent yet, which go out in the new form." }),
});
export type MessageEditedAnswer = Static<typeof messageEditedAnswer>;

/** The message deleted: as the send API's DELETE answers. */
export const messageDeletedAnswer = Type.Object({
  ok,
  message_id: Type.String(),
  deleting: Type.Integer({ description: "Copies sent, each to be deleted from its chat." }),
  cancelled: Type.Integer({ description: "Copies not sent yet: never sent now." }),
  already_deleted: Type.Boolean({ description: "It was deleted before: nothing more was done." }),
});
export type MessageDeletedAnswer = Static<typeof messageDeletedAnswer>;

/** Done, nothing to tell: sign-out, deleting a Dock, removing a subscriber. */
export const okAnswer = Type.Object({ ok });
export type OkAnswer = Static<typeof okAnswer>;

/** `GET /docks`: the signed-in person's Docks. */
export const dockListAnswer = Type.Object({ ok, docks: Type.Array(dockSummary) });
export type DockListAnswer = Static<typeof dockListAnswer>;

/** One Dock: created, read, edited, or with its new secret key. */
export const dockAnswer = Type.Object({ ok, dock });
export type DockAnswer = Static<typeof dockAnswer>;

/** A named credential of a Dock, as its owner sees it: never its secret. */
export const credential = Type.Object({
  id: Type.String(),
  name: Type.String(),
  scope: Type.Union([Type.Literal("send"), Type.Literal("manage"), Type.Literal("github")], {
    description:
      "send: sends only; manage: also edits, deletes and reads messages; github: a GitHub webhook's Secret (signs deliveries, sends only).",
  }),
  prefix: Type.String({
    description: "The secret's first characters (dnsc_AbCd, dngh_AbCd for github), to tell it apart.",
  }),
  created_at: time,
  last_used_at: Type.Union([time, Type.Null()], {
    description: "When it last authenticated a request, to the minute; null: never.",
  }),
});
export type Credential = Static<typeof credential>;

/** `GET /docks/{id}/credentials`. */
export const credentialListAnswer = Type.Object({ ok, credentials: Type.Array(credential) });
export type CredentialListAnswer = Static<typeof credentialListAnswer>;

/** `POST /docks/{id}/credentials`: the credential and its secret, shown this once. */
export const credentialAnswer = Type.Object({
  ok,
  credential,
  secret: Type.String({
    description: "The credential's secret (dnsc_…, or dngh_… for github): shown only in this answer.",
  }),
});
export type CredentialAnswer = Static<typeof credentialAnswer>;

/** `GET /docks/{id}/invites`: the Dock's invite links, newest first, revoked ones included. */
export const inviteLinkListAnswer = Type.Object({ ok, invites: Type.Array(inviteLink) });
export type InviteLinkListAnswer = Static<typeof inviteLinkListAnswer>;

/** `POST /docks/{id}/invites`, `GET /docks/{id}/invites/{inviteId}`: one link, with its QR code. */
export const inviteLinkAnswer = Type.Object({ ok, invite: inviteLink, qr_svg: Type.String() });
export type InviteLinkAnswer = Static<typeof inviteLinkAnswer>;

/** `GET /docks/{id}/requests`: join requests waiting for a decision, oldest first. */
export const joinRequestListAnswer = Type.Object({ ok, requests: Type.Array(joinRequest) });
export type JoinRequestListAnswer = Static<typeof joinRequestListAnswer>;

/** `POST /docks/{id}/requests/{requestId}/approve|decline`: the request as decided. */
export const joinRequestAnswer = Type.Object({ ok, request: joinRequest });
export type JoinRequestAnswer = Static<typeof joinRequestAnswer>;

/** `GET /docks/{id}/bans`: the Dock's banned chats, the latest first. */
export const banListAnswer = Type.Object({ ok, bans: Type.Array(ban) });
export type BanListAnswer = Static<typeof banListAnswer>;

/** `GET /docks/{id}/subscribers`. */
export const subscriberListAnswer = Type.Object({ ok, subscribers: Type.Array(subscriber) });
export type SubscriberListAnswer = Static<typeof subscriberListAnswer>;

/** `GET /docks/{id}/messages`: a page of messages, the newest first. */
export const messageListAnswer = Type.Object({
  ok,
  messages: Type.Array(messageReport),
  next_before: Type.Union([Type.String(), Type.Null()], {
    description: "The before of the next (older) page; null: this is the last.",
  }),
});
export type MessageListAnswer = Static<typeof messageListAnswer>;

/** `GET /docks/{id}/messages/{messageId}`: one message and a page of its copies. */
export const messageDetailAnswer = Type.Object({
  ok,
  message: messageDetail,
  next_after: Type.Union([Type.Integer(), Type.Null()], {
    description: "The after of the next page of copies; null: this is the last.",
  }),
});
export type MessageDetailAnswer = Static<typeof messageDetailAnswer>;

/** One UTC day of a Dock's activity. */
export const activityDay = Type.Object({
  day: Type.String({ description: "YYYY-MM-DD, UTC." }),
  accepted: Type.Integer({
    description: "Messages accepted (a send that replaced one by its key is not counted).",
  }),
  sent: Type.Integer({ description: "Copies sent to a chat." }),
  retried: Type.Integer({
    description: "Tries that did not get through and were made again (Telegram's 429, a 5xx, the network).",
  }),
  failed: Type.Integer({ description: "Copies Telegram refused, or given up on after retrying too long." }),
  gone: Type.Integer({
    description:
      "Copies not sent because the chat is gone (it blocked the bot, left, was removed); not those of a message deleted before they went.",
  }),
});
export type ActivityDay = Static<typeof activityDay>;

/** `GET /docks/{id}/activity`: the last 7 or 30 days, oldest first, today last (zeros included). */
export const activityAnswer = Type.Object({ ok, days: Type.Array(activityDay) });
export type ActivityAnswer = Static<typeof activityAnswer>;

/** `POST /docks/{id}/test-message`: accepted like a message of the send API. */
export const testMessageAnswer = Type.Object({
  ok,
  message_id: Type.String(),
  subscribers: Type.Integer({ description: "Active subscribers the message was queued for." }),
});
export type TestMessageAnswer = Static<typeof testMessageAnswer>;

/** What a pasted payload makes: the message as it would be shown, or why there is none. */
export const previewAnswer = Type.Object({
  ok: Type.Literal(true),
  format: Type.String(),
  result: Type.Union([
    Type.Object({
      kind: Type.Literal("message"),
      shown: entityTextSchema,
      options: storedOptionsSchema,
      key: Type.Union([Type.String(), Type.Null()]),
      final: Type.Boolean(),
    }),
    Type.Object({ kind: Type.Literal("skip"), reason: Type.String() }),
  ]),
});
export type PreviewAnswer = Static<typeof previewAnswer>;

/**
 * The live stream's `dock` event (live.ts): which Dock, and which parts of it moved — its
 * `settings` (fields, key, hook token, template), `subscribers`, `messages` (and their copies), or
 * `audit` (its audit log, where every change of its team is written) and `audience` (invite links,
 * join requests, bans).
 */
export interface DockEvent {
  id: string;
  changed: DockPart[];
}
/** A part of a Dock the live stream tells apart (store/dock-stamps.ts's STAMP_PARTS). */
export type DockPart = "settings" | "subscribers" | "messages" | "audit" | "audience" | "refused";
