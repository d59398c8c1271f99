import type { DockRole } from "../domain/dock-roles.ts";

/**
 * Every word the bot says, in one place so it can be translated as a whole. Texts are Telegram
 * HTML (sent with `parse_mode: "HTML"`); anything that comes from people (Dock names,
 * descriptions, links, first names) goes through `escapeHtml` so it can never break the formatting.
 */

/** Makes text safe inside Telegram HTML: only `&`, `<` and `>` are special there. */
export function escapeHtml(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

/** A join request as its copies show it (store/join-requests.ts, rendered by bot/notices.ts). */
export interface RequestCard {
  dock: string;
  /** The person's name, or the group's title. */
  chat: string;
  group: boolean;
  members: number | null;
  /** Who asked (in a group, the admin). */
  requester: string;
  /** The invite link's name it came through; null: the Dock ID (or a link without a name). */
  link: string | null;
  state: "pending" | "approved" | "declined" | "expired";
  decidedBy: string | null;
}

/** What the bot shows about a Dock when it asks whether to subscribe. */
export interface DockCard {
  id: string;
  name: string;
  description: string | null;
  link: string | null;
}

function card(dock: DockCard): string {
  const lines = [`<b>${escapeHtml(dock.name)}</b>`];
  if (dock.description) lines.push(escapeHtml(dock.description));
  if (dock.link) lines.push(escapeHtml(dock.link));
  return lines.join("\n");
}

function dockName(name: string): string {
  return `<b>${escapeHtml(name)}</b>`;
}

/** What each role on a Dock lets a co-owner do, as the invitation tells them. */
const DOCK_ROLE_POWERS: Record<DockRole, string> = {
  owner: "everything, including deleting it and managing its co-owners",
  editor: "its settings, templates and credentials, and sending",
  approver: "its subscribers",
  viewer: "its message history and activity",
};

/** A role with its article, the role in bold: "an <b>approver</b>", "a <b>viewer</b>". */
function roleName(role: DockRole): string {
  return `${role === "viewer" ? "a" : "an"} <b>${role}</b>`;
}

/** The bot's texts, English. */
export const texts = {
  menu: {
    subscribe: "Subscribe",
    subscriptions: "My subscriptions",
    help: "Help",
    placeholder: "Choose an action",
  },
  buttons: {
    yes: "Yes",
    no: "No",
    unsubscribe: (name: string) => `Unsubscribe from ${name}`,
  },
  /** `setMyCommands`: what Telegram lists when a person types `/`. */
  commands: {
    start: "Start the bot and show the menu",
    subscribe: "Subscribe to a Dock by its ID",
    list: "Show my subscriptions",
    unsubscribe: "Leave a subscription",
    cancel: "Stop what the bot is asking for",
    help: "How this bot works",
  },

  /** An update the bot could not handle because its database is away (an outage, a full disk). */
  databaseAway:
    "Sorry, I cannot answer right now: my storage is unavailable for a moment. Please try again in a minute.",
  /** After a subscription by button in a private chat: the menu comes with it (a deep link never showed it). */
  menuReady:
    "The menu below is yours: <b>My subscriptions</b> lists your Docks (and unsubscribes), <b>Subscribe</b> adds another.",
  welcome: (botName: string) =>
    [
      `Hi! I am <b>${escapeHtml(botName)}</b>. I deliver notifications from applications to you.`,
      "",
      "An application sends its messages to a <b>Dock</b>; subscribe to the Dock and its messages appear here.",
      "Press <b>Subscribe</b> and send me the Dock ID, or open the Dock's link.",
    ].join("\n"),
  welcomeBack: (resumed: number) =>
    `Welcome back! ${resumed === 1 ? "Your subscription is" : `Your ${resumed} subscriptions are`} active again.`,
  help: [
    "<b>How to subscribe</b>",
    "• Open a Dock's link (from its owner, or the <i>Open in Telegram</i> button in the Dock console) and answer <b>Yes</b>.",
    "• Or press <b>Subscribe</b> and send me the Dock ID.",
    "• A private Dock takes an invite link from its owner, or asks its owner to let you in.",
    "",
    "<b>Commands</b>",
    "/subscribe — subscribe to a Dock by its ID",
    "/list — your subscriptions, each with an Unsubscribe button",
    "/unsubscribe — leave a subscription",
    "/cancel — stop what I am asking for",
    "",
    "In a group, add me and let an admin send <code>/subscribe</code>: the Dock's messages then go to the group. Only the group's admins can subscribe or unsubscribe it.",
  ].join("\n"),
  groupWelcome: (resumed: number) =>
    [
      "Hi! I deliver notifications from applications to this group.",
      resumed > 0
        ? `${resumed === 1 ? "Its subscription is" : `Its ${resumed} subscriptions are`} active again.`
        : "A group admin can subscribe the group to a Dock with /subscribe.",
    ].join("\n"),
  privatePaused: (paused: number) =>
    `${paused === 1 ? "Its subscription to a private Dock stays" : `Its ${paused} subscriptions to private Docks stay`} paused: an admin of this group resumes ${paused === 1 ? "it" : "them"} with /start.`,
  groupResumed: (resumed: number) =>
    `${resumed === 1 ? "This group's subscription is" : `This group's ${resumed} subscriptions are`} active again.`,
  unknownText: "I did not understand that. Press <b>Subscribe</b> to subscribe to a Dock, or see /help.",

  subscribePrompt: (dock: DockCard, group: boolean) =>
    `${card(dock)}\n\n${group ? "Subscribe this group to this Dock?" : "Subscribe to this Dock?"}`,
  subscribed: (name: string, group: boolean) =>
    `${group ? "This group is" : "You are"} now subscribed to ${dockName(name)}. Its messages will appear here.`,
  alreadySubscribed: (name: string, group: boolean) =>
    `${group ? "This group is" : "You are"} already subscribed to ${dockName(name)}.`,
  declined: (name: string) => `OK, not subscribed to ${dockName(name)}.`,
  noSuchDock: (id: string) =>
    `There is no Dock with the ID <code>${escapeHtml(id)}</code>. It may have been deleted; ask its owner for the current link.`,
  dockGone: "This Dock no longer exists.",
  // The Dock ID alone, for a Dock whose owner lets people in only by invite link (or by request).
  privateDock: "This Dock is private: ask its owner for an invite link.",
  inviteUnknown: "This invite link is not valid. Ask the Dock's owner for a new one.",
  inviteRevoked: "This invite link was revoked. Ask the Dock's owner for a new one.",
  inviteExpired: "This invite link has expired. Ask the Dock's owner for a new one.",
  inviteUsedUp:
    "This invite link has been used as many times as it allows. Ask the Dock's owner for a new one.",

  /** Asking to join a Dock whose owner approves who subscribes (the ID of an `approval` Dock, or a link that asks). */
  askPrompt: (dock: DockCard, group: boolean) =>
    `${card(dock)}\n\nIts owner approves who subscribes. ${group ? "Ask to subscribe this group?" : "Ask to join?"}`,
  requestSent: (name: string, group: boolean) =>
    `${group ? "This group's" : "Your"} request to join ${dockName(name)} is sent. Its owner decides; I will tell you here.`,
  requestWaiting: (name: string, group: boolean) =>
    `${group ? "This group has" : "You have"} asked to join ${dockName(name)} already: its owner has not decided yet.`,
  banned: (name: string) => `The owner of ${dockName(name)} does not accept this chat.`,
  requestApproved: (name: string, group: boolean) =>
    `${group ? "This group's" : "Your"} request to join ${dockName(name)} was approved: its messages will appear here.`,
  requestDeclined: (name: string, group: boolean) =>
    `${group ? "This group's" : "Your"} request to join ${dockName(name)} was declined.`,
  requestExpired: (name: string, group: boolean) =>
    `${group ? "This group's" : "Your"} request to join ${dockName(name)} expired before its owner decided. You may ask again.`,
  removed: (name: string, group: boolean) =>
    `${group ? "This group was" : "You were"} removed from ${dockName(name)}. Its messages will no longer arrive.`,
  dockDeleted: (name: string) =>
    `${dockName(name)} was deleted by its owner. Its messages will no longer arrive.`,

  /** A join request as each of the Dock's deciders gets it: who asks, how they came, and (once ended) how it ended. */
  requestCopy: (request: RequestCard) => {
    const lines = [
      request.group
        ? `The group <b>${escapeHtml(request.chat)}</b>${request.members === null ? "" : ` (${request.members === 1 ? "1 member" : `${request.members} members`})`} asks to join ${dockName(request.dock)}. Asked by ${escapeHtml(request.requester)}.`
        : `<b>${escapeHtml(request.chat)}</b> asks to join ${dockName(request.dock)}.`,
    ];
    if (request.link !== null) lines.push(`Through the invite link “${escapeHtml(request.link)}”.`);
    switch (request.state) {
      case "approved":
        lines.push("", `✔ Approved by ${escapeHtml(request.decidedBy ?? "the Dock's owner")}.`);
        break;
      case "declined":
        lines.push("", `✖ Declined by ${escapeHtml(request.decidedBy ?? "the Dock's owner")}.`);
        break;
      case "expired":
        lines.push("", "⌛ Expired: nobody decided in time.");
        break;
    }
    return lines.join("\n");
  },
  requestButtons: { approve: "Approve", decline: "Decline" },
  approvedAnswer: "Approved: they are subscribed, and told.",
  declinedAnswer: "Declined: they are told.",
  requestEnded: (state: "approved" | "declined" | "expired" | "pending", by: string | null) =>
    state === "expired" || state === "pending"
      ? "This request has expired."
      : `Already ${state} by ${by ?? "the Dock's owner"}.`,
  requestGone: "This request no longer exists.",
  notDecider: "Only the Dock's owners and approvers can decide this request.",

  askDockId: "Send me the Dock ID (or paste the Dock's link).\nSend /cancel to stop.",
  askDockIdPlaceholder: "Dock ID",
  notADockId:
    "That is not a Dock ID. A Dock ID is 22 letters and digits, like <code>4fGh2kLmN8pQrS0tUvWxYz</code>. Check it and send it again, or /cancel.",
  unknownDockId: (id: string) =>
    `There is no Dock with the ID <code>${escapeHtml(id)}</code>. Check it and send it again, or /cancel.`,
  cancelled: "Cancelled.",
  nothingToCancel: "There is nothing to cancel.",

  subscriptionsHeader: (count: number, group: boolean) =>
    count === 0
      ? `${group ? "This group has" : "You have"} no subscriptions. Press <b>Subscribe</b> or open a Dock's link to add one.`
      : `${group ? "This group is" : "You are"} subscribed to ${count === 1 ? "1 Dock" : `${count} Docks`}:`,
  subscriptionLine: (name: string) => `• ${escapeHtml(name)}`,
  waitingHeader: "Waiting for an owner's approval:",
  waitingLine: (name: string) => `⏳ ${escapeHtml(name)}`,
  unsubscribed: (name: string) => `Unsubscribed from ${name}.`,
  unsubscribedMessage: (name: string) =>
    `Unsubscribed from ${dockName(name)}. Its messages will no longer arrive.`,
  notSubscribed: "Not subscribed to that Dock any more.",

  adminsOnly: "Only this group's admins can change its subscriptions.",
  privateOnly: "Sign-in works only in a private chat with me. Open the link from the console again.",

  loginPrompt: (name: string) =>
    [
      `Sign in to the Dock console as <b>${escapeHtml(name)}</b>?`,
      "",
      // Whoever started this sign-in gets the session: a link someone sent you is an attempt to
      // take over your account.
      "Press Yes only if you started this sign-in yourself, just now, in your own browser. If someone sent you this link, press No.",
    ].join("\n"),
  loginConfirmed: (userId: number) =>
    `Confirmed. Go back to the Dock console: it shows your Telegram ID, ${userId}. If it does, press Continue there to sign in.`,
  loginDeclined: "Sign-in cancelled. Nobody was signed in.",
  loginOutdated: "This sign-in prompt is out of date. Open the sign-in link from the console again.",
  loginExpired: "This sign-in link has expired. Start again from the console's sign-in page.",
  loginUsed: "This sign-in link was already used. Start again from the console's sign-in page.",
  loginAlreadyConfirmed:
    "This sign-in is already confirmed. Go back to the Dock console and press Continue there.",
  // Someone else pressed Yes on this link first: the console shows their name to whoever started
  // the sign-in, who can refuse it there.
  loginConfirmedElsewhere:
    "Someone else already confirmed this sign-in link, so it cannot sign you in. If you started this sign-in, press “That's not me” in the console and start again.",
  loginUnknown: "This sign-in link is not valid. Start again from the console's sign-in page.",
  // Confirmed, but OWNERS (or the administrator) does not let this person in: the console says the same.
  loginNotOwner: (userId: number, unclaimed: boolean) =>
    unclaimed
      ? `This Dock Notify has no administrator yet, so nobody can sign in. Whoever runs it first opens the claim link the service printed when it started (your Telegram ID is ${userId}).`
      : `You are not an owner of this Dock Notify, so this sign-in cannot go on. Ask its administrator for an invitation (your Telegram ID is ${userId}).`,

  claimPrompt: (consoleUrl: string) =>
    [
      `This Dock Notify (${escapeHtml(consoleUrl)}) has no administrator yet.`,
      "",
      "Become its administrator? You will decide who else may create Docks. Press Yes only if you run this service.",
    ].join("\n"),
  claimed: (consoleUrl: string) =>
    `Done: you are the administrator of this Dock Notify. Sign in at ${escapeHtml(consoleUrl)} to create Docks and invite other owners.`,
  claimDeclined: "Nothing changed: the claim link stays unused.",
  invitePrompt: (inviter: string | null, consoleUrl: string) =>
    [
      `${inviter === null ? "You are invited" : `<b>${escapeHtml(inviter)}</b> invites you`} to own Docks on this Dock Notify (${escapeHtml(consoleUrl)}).`,
      "",
      "Accept? You can then sign in to the console and create Docks.",
    ].join("\n"),
  inviteAccepted: (consoleUrl: string) =>
    `Welcome: you are an owner of this Dock Notify. Sign in at ${escapeHtml(consoleUrl)} to create your first Dock.`,
  inviteDeclined:
    "Invitation declined. Nothing changed; the link still works for the person it was meant for until it expires.",
  alreadyOwner: (role: "admin" | "owner", consoleUrl: string) =>
    `You already are ${role === "admin" ? "an administrator" : "an owner"} of this Dock Notify: sign in at ${escapeHtml(consoleUrl)}. The invitation stays unused.`,
  coOwnerPrompt: (inviter: string | null, dock: string, role: DockRole, consoleUrl: string) =>
    [
      `${inviter === null ? "You are invited" : `<b>${escapeHtml(inviter)}</b> invites you`} to co-own the Dock ${dockName(dock)} on this Dock Notify (${escapeHtml(consoleUrl)}) as ${roleName(role)}, for ${DOCK_ROLE_POWERS[role]}.`,
      "",
      "Accept? You can then sign in to the console and see this Dock.",
    ].join("\n"),
  coOwnerAccepted: (dock: string, role: DockRole, consoleUrl: string) =>
    `Done: you are ${roleName(role)} of ${dockName(dock)}. Sign in at ${escapeHtml(consoleUrl)} to see it.`,
  alreadyCoOwner: (dock: string, role: DockRole, consoleUrl: string) =>
    `You already are ${roleName(role)} of ${dockName(dock)}: sign in at ${escapeHtml(consoleUrl)}. The invitation stays unused.`,
  coOwnerLinkUsed: "This link was already used. Ask the Dock's owner for a new invitation.",
  coOwnerLinkRevoked: "This invitation was withdrawn. Ask the Dock's owner for a new one.",
  coOwnerLinkExpired: "This link has expired. Ask the Dock's owner for a new invitation.",
  coOwnerLinkUnknown:
    "This link is not valid (or its Dock was deleted). Ask the Dock's owner for a new invitation.",
  ownerLinkUsed: "This link was already used. Ask the administrator for a new invitation.",
  ownerLinkRevoked: "This invitation was withdrawn. Ask the administrator for a new one.",
  ownerLinkExpired:
    "This link has expired. Ask the administrator for a new invitation (or, for the claim link, restart the service to print a new one).",
  ownerLinkUnknown: "This link is not valid. Ask the administrator for a new invitation.",
  claimLinkUnknown: "This claim link is not valid. Use the link the service printed when it last started.",
  claimReplaced:
    "A newer claim link replaced this one: open the link the service printed when it last started.",
  alreadyClaimed: "This Dock Notify already has an administrator. Ask them for an invitation.",
  ownerLinkPrivateOnly: "Open this link in a private chat with me.",

  staleButton: "This button no longer works.",
  acknowledged: "✔ Acknowledged: everyone who got this message sees it was you.",
  alreadyAcknowledged: (name: string, at: string) => `Already acknowledged by ${name} at ${at}.`,
  acknowledgedDeleted: "This message was deleted by its sender.",
  snoozed: (until: string, group: boolean) =>
    `⏰ Snoozed until ${until}: no reminders of this message ${group ? "in this group" : "for you"} until then.`,
  remindersOver: "Its reminders have ended.",
};
