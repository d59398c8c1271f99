/**
 * How the console names a chat: the service's name for it (a group's title, a person's name and
 * @username), else what kind of chat it is and its ID.
 */
export function chatLabel(chat: { name: string | null; chat_type?: string | null; chat_id: number }): string {
  if (chat.name) return chat.name;
  if (chat.chat_type === "private") return `Telegram user ${chat.chat_id}`;
  return chat.chat_type ? `${chat.chat_type} chat ${chat.chat_id}` : `Chat ${chat.chat_id}`;
}
