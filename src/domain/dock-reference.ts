import { DOCK_ID_PATTERN } from "./ids.ts";

/**
 * The Dock ID in what a person pasted into the bot: the bare ID, or a link that opens the bot
 * with it (`https://t.me/<bot>?start=<id>`, `t.me/<bot>?start=<id>`, the sandbox's
 * `<PUBLIC_URL>/sandbox?start=<id>`), with any whitespace around it. Null when the text holds
 * nothing shaped like a Dock ID; whether that Dock exists is for the store to say.
 */
export function dockIdFrom(text: string): string | null {
  const trimmed = text.trim();
  if (DOCK_ID_PATTERN.test(trimmed)) return trimmed;
  const candidate = /^(t\.me|telegram\.me)\//i.test(trimmed) ? `https://${trimmed}` : trimmed;
  let url: URL;
  try {
    url = new URL(candidate);
  } catch {
    return null;
  }
  if (url.protocol !== "https:" && url.protocol !== "http:" && url.protocol !== "tg:") return null;
  const start = url.searchParams.get("start");
  return start !== null && DOCK_ID_PATTERN.test(start) ? start : null;
}
