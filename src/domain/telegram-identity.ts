/** Who a person is on Telegram, as the bot or the Login Widget vouches for them. */
export interface TelegramIdentity {
  id: number;
  first_name?: string | undefined;
  username?: string | undefined;
}

/**
 * A Telegram user id written as text (an option, a path segment, OWNERS), or null: a positive
 * whole number that fits a JavaScript number exactly.
 */
export function telegramUserId(text: string): number | null {
  return /^[1-9]\d{0,15}$/.test(text) && Number.isSafeInteger(Number(text)) ? Number(text) : null;
}

/** How a person is named to others (an inviter, an owner in a list): first name and @username. */
export function personName(
  names: { first_name: string | null; username: string | null } | undefined,
  id: number,
): string {
  const name = [names?.first_name, names?.username ? `@${names.username}` : null].filter(Boolean).join(" ");
  return name || `Telegram user ${id}`;
}
