/** Telegram's rule for a deep-link `start` payload. */
export const START_PAYLOAD = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The link that opens the bot with `/start <payload>`: `https://t.me/<bot>?start=<payload>` on
 * Telegram, or `<PUBLIC_URL>/sandbox?start=<payload>` in sandbox mode, where the chat page plays
 * the Telegram app. Every "Open in Telegram" link the service produces goes through here.
 */
export function telegramLink(
  publicUrl: string,
  botUsername: string,
  payload: string,
  sandbox: boolean,
): string {
  if (!START_PAYLOAD.test(payload)) {
    throw new RangeError("a start payload is 1-64 characters of A-Z, a-z, 0-9, _ and -");
  }
  return sandbox ? `${publicUrl}/sandbox?start=${payload}` : `https://t.me/${botUsername}?start=${payload}`;
}

/** The bot itself, without a payload: `https://t.me/<bot>`, or the sandbox chat page. */
export function botLink(publicUrl: string, botUsername: string, sandbox: boolean): string {
  return sandbox ? `${publicUrl}/sandbox` : `https://t.me/${botUsername}`;
}
