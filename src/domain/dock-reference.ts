import { JOIN_PAYLOAD_PREFIX, JOIN_TOKEN_PATTERN } from "./audience.ts";
import { DOCK_ID_PATTERN } from "./ids.ts";

/**
 * The `start` payload in what a person pasted into the bot: a link that opens the bot with it
 * (`https://t.me/<bot>?start=<payload>`, `t.me/<bot>?start=<payload>`, the sandbox's
 * `<PUBLIC_URL>/sandbox?start=<payload>`, a `tg:` link), with any whitespace around it; the text
 * itself when it is no link. Null for a URL of another scheme.
 */
function payloadOf(text: string): string | null {
  const trimmed = text.trim();
  const candidate = /^(t\.me|telegram\.me)\//i.test(trimmed) ? `https://${trimmed}` : trimmed;
  let url: URL;
  try {
    url = new URL(candidate);
  } catch {
    return trimmed;
  }
  if (url.protocol !== "https:" && url.protocol !== "http:" && url.protocol !== "tg:") return null;
  return url.searchParams.get("start");
}

/**
 * The Dock ID in what a person pasted into the bot: the bare ID, or a link that opens the bot
 * with it, with any whitespace around it. Null when the text holds nothing shaped like a Dock
 * ID; whether that Dock exists is for the store to say.
 */
export function dockIdFrom(text: string): string | null {
  const payload = payloadOf(text);
  return payload !== null && DOCK_ID_PATTERN.test(payload) ? payload : null;
}

/**
 * The token of a Dock's invite link in what a person pasted (the link, or its `join_<token>`
 * payload); null when the text holds none.
 */
export function joinTokenFrom(text: string): string | null {
  const payload = payloadOf(text);
  if (payload === null || !payload.startsWith(JOIN_PAYLOAD_PREFIX)) return null;
  const token = payload.slice(JOIN_PAYLOAD_PREFIX.length);
  return JOIN_TOKEN_PATTERN.test(token) ? token : null;
}
