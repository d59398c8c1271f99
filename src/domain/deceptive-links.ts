import { domainToASCII } from "node:url";

/*
 * A link must not lie about where it goes: text that reads as an address (`https://bank.example`,
 * `www.bank.example`, `bank.example/login`) must lead to that address's host, or a reader trusts
 * the text and lands elsewhere (phishing through a notification). Checked when a message is
 * accepted, for the links in its text (Markdown, HTML, MarkdownV2) and for its buttons' labels.
 */

/** The dots a reader takes for one in a host name (IDNA maps the ideographic and full-width ones to `.`). */
const DOT = "[.\u3002\uff0e\uff61]";

/**
 * A word that is an address to any reader: it starts with a scheme and `//` (in any letters: `һttps`
 * with a Cyrillic һ reads as https), or with `www.`.
 */
const ADDRESS_WORD = new RegExp(`^(?:\\p{L}[\\p{L}\\p{N}+.-]*:\\/\\/|www${DOT})`, "iu");

/** What a reader takes for the host in an address: after the scheme, up to a port, path, query or user@. */
const WRITTEN_HOST = /^(?:\p{L}[\p{L}\p{N}+.-]*:\/\/)?([^/?#:@\\\s]*)/iu;

/** A Telegram username as a mention (`@DockNotifyBot`): it names that chat. */
const MENTION = /^@([A-Za-z0-9_]{4,32})$/;

/** Invisible characters (zero-width spaces and joiners, direction marks, soft hyphens): a reader does not see them. */
const INVISIBLE = /\p{Cf}/gu;

/** A bare host name with nothing else: dotted labels, the last of letters, then perhaps a port and a path. */
const HOST_NAME = new RegExp(
  `^(?:[\\p{L}\\p{N}](?:[\\p{L}\\p{N}-]*[\\p{L}\\p{N}])?${DOT})+\\p{L}{2,63}${DOT}?(?::\\d{1,5})?(?:[/?#]\\S*)?$`,
  "u",
);

/** An IPv4 address, perhaps with a port and a path. */
const IPV4 = /^\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?(?:[/?#]\S*)?$/;

/**
 * File name extensions that are also top-level domains (`README.md`, `Node.js`, `setup.sh`): a
 * name ending in one reads as a file, not as a site, unless written with a scheme or `www.`.
 */
const FILE_EXTENSIONS = new Set(
  (
    "md txt log csv json yaml yml toml xml ini cfg conf env lock js mjs cjs ts tsx jsx py rb go rs " +
    "java kt swift php pl sh bash ps1 sql html htm css scss pdf png jpg jpeg gif svg webp ico zip gz " +
    "tgz tar bz2 xz 7z rar exe dll so jar war apk deb rpm dmg iso img bin mp3 mp4 mov avi mkv wav doc " +
    "docx xls xlsx ppt pptx"
  ).split(" "),
);

/** Quotes, brackets and end punctuation around an address in a sentence: not part of it. */
const WRAPPING = /^[\s"'“”‘’«»<([{]+|[\s"'“”‘’«»>)\]}.,;:!?]+$/gu;

/** A host name as compared: IDNA's ASCII form, lower case, without a final dot or a leading `www.`. */
function comparable(host: string): string {
  const lower = host.toLowerCase().replace(/[.\u3002\uff0e\uff61]$/u, "");
  const ascii = domainToASCII(lower) || lower;
  return ascii.replace(/^www\./, "");
}

/** The host the words of a link's text name, in the order written (none: the text is no address). */
export function namedHosts(text: string): string[] {
  const hosts: string[] = [];
  const shown = text.replace(INVISIBLE, "");
  const whole = shown.replace(WRAPPING, "");
  const bare = !/\s/.test(whole) && (IPV4.test(whole) || HOST_NAME.test(whole));
  if (bare && !ADDRESS_WORD.test(whole)) {
    const host = WRITTEN_HOST.exec(whole)?.[1] ?? "";
    const extension = host.split(new RegExp(DOT, "u")).at(-1)?.toLowerCase() ?? "";
    if (!FILE_EXTENSIONS.has(extension)) hosts.push(host);
  }
  for (const word of shown.split(/\s+/)) {
    const address = word.replace(WRAPPING, "");
    if (!ADDRESS_WORD.test(address)) continue;
    const host = WRITTEN_HOST.exec(address)?.[1] ?? "";
    if (host !== "") hosts.push(host);
  }
  return hosts;
}

/** The host a link goes to (as the URL parser reads it), or "" for a link without one (`tg:`). */
function targetHost(url: string): string {
  try {
    const parsed = new URL(url);
    return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.hostname : "";
  } catch {
    return "";
  }
}

/**
 * The username a link opens in Telegram (`https://t.me/<name>`, `tg://resolve?domain=<name>`), in
 * lower case (usernames are case-insensitive), if any.
 */
function chatOf(url: string): string | undefined {
  const resolve = /^tg:(?:\/\/)?resolve\/?\?(?:[^#]*&)?domain=([A-Za-z0-9_]+)/i.exec(url)?.[1];
  if (resolve !== undefined) return resolve.toLowerCase();
  const host = comparable(targetHost(url));
  if (host !== "t.me" && host !== "telegram.me") return undefined;
  return /^https?:\/\/[^/]+\/([A-Za-z0-9_]+)\/?(?:[?#]|$)/i.exec(url)?.[1]?.toLowerCase();
}

/**
 * Why a link whose visible text is `text` and whose target is `url` would mislead its reader, or
 * undefined when it does not: every host its text names must be the target's own (`www.` aside),
 * and a mention (`@name`) must open that chat.
 */
export function deceptiveLink(text: string, url: string): string | undefined {
  const mention = MENTION.exec(text.replace(INVISIBLE, "").trim())?.[1];
  if (mention !== undefined && chatOf(url) !== mention.toLowerCase()) {
    return `the text "${text.trim()}" names a Telegram chat but the link goes elsewhere: a mention must go to t.me/${mention} or tg://resolve?domain=${mention}.`;
  }
  // `t.me/<name>` shown, the same chat opened in the app: where the text says.
  const shown = text.replace(INVISIBLE, "").replace(WRAPPING, "");
  const chat = chatOf(url);
  if (chat !== undefined && chatOf(/^https?:\/\//i.test(shown) ? shown : `https://${shown}`) === chat)
    return undefined;
  const target = targetHost(url);
  for (const named of namedHosts(text)) {
    if (target === "" || comparable(named) !== comparable(target)) {
      const goes = target === "" ? url.split(/[?#]/)[0]?.slice(0, 64) : target;
      return `the text "${text.trim().slice(0, 64)}" names ${named.slice(0, 64)} but the link goes to ${goes}: a link whose text is an address must go to that address's host.`;
    }
  }
  return undefined;
}
