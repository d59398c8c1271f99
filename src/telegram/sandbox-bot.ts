/**
 * Who the sandbox bot is: known to the service (which talks to it when no bot token is set) and to
 * the sandbox (which plays it), so it lives beside both rather than in either. The token is public
 * on purpose: the sandbox guards nothing, and a fixed token in Telegram's shape
 * (`<digits>:<35 characters>`) lets any Bot API client be pointed at it unchanged. docs/sandbox.md
 * lists the same values.
 */
export const SANDBOX_BOT_TOKEN = "7000000001:AAE-sandbox-DockNotify-not-a-secret";

/** The sandbox bot's user id: the digits before the colon of its token, as on Telegram. */
export const SANDBOX_BOT_ID = 7000000001;

/** The sandbox bot's username, used in `t.me/<username>?start=…` links and `/command@username`. */
export const SANDBOX_BOT_USERNAME = "DockNotifySandboxBot";

/** The sandbox bot's display name. */
export const SANDBOX_BOT_NAME = "Dock Notify (sandbox)";

/**
 * Whether the chats a service with this bot token talks to are the sandbox's: the built-in sandbox
 * (no token), or a sandbox reached with its public token (a rehearsal against `dock-notify
 * sandbox`). Their ids are real Telegram ids too (store/sandbox-chats.ts).
 */
export function sandboxChats(token: string | null): boolean {
  return token === null || token === SANDBOX_BOT_TOKEN;
}
