import type { CallbackTargets } from "./callback-target.ts";
import { isButtonUrl } from "./telegram-format.ts";

/** Bounds of a Dock's fields, documented in docs/api.md. */
export const DOCK_NAME_MAX = 64;
export const DOCK_DESCRIPTION_MAX = 512;
export const DOCK_LINK_MAX = 2048;

export interface DockFields {
  name: string;
  link: string | null;
  description: string | null;
  /** Where the Dock's events are posted, signed with its secret key (docs/api.md, "Events"); null: none. */
  callback_url?: string | null;
}

export interface FieldError {
  field: keyof DockFields;
  message: string;
}

export type DockValidation = { ok: true; value: DockFields } | { ok: false; errors: FieldError[] };

/** A link written without its scheme: a dotted host name, maybe a port, then a path or nothing. */
const BARE_HOST = /^[a-z0-9-]+(\.[a-z0-9-]+)+(:\d{1,5})?([/?#]|$)/i;
/** The same with a host of one label (`localhost:3000`): judged as the https:// link it would be. */
const SCHEMELESS = /^[a-z0-9-]+(\.[a-z0-9-]+)*(:\d{1,5})?([/?#]|$)/i;

/** Counts user-perceived characters as code points, so an emoji is one character, not two. */
function length(value: string): number {
  let count = 0;
  for (const _ of value) count++;
  return count;
}

/**
 * Validates and normalises a Dock's editable fields: trims, turns empty optional fields into null,
 * accepts only absolute http(s) links (a bare host name, `ci.example.com`, gets https://). A
 * callback URL whose host is an address `callbackTargets` refuses (or `localhost`) is refused
 * here, unless it is `storedCallbackUrl` (the Dock's own, kept while another field changes: the
 * sender refuses it anyway, and says so in its events' last error); a host name is judged by the
 * sender on every address it resolves to.
 */
export function validateDockFields(
  input: {
    name?: unknown;
    link?: unknown;
    description?: unknown;
    callback_url?: unknown;
  },
  callbackTargets: CallbackTargets,
  storedCallbackUrl: string | null = null,
): DockValidation {
  const errors: FieldError[] = [];
  const str = (field: keyof DockFields, value: unknown): string | null => {
    if (value === undefined || value === null) return null;
    if (typeof value !== "string") {
      errors.push({ field, message: `${field} must be a string` });
      return null;
    }
    if (!value.isWellFormed() || value.includes("\u0000")) {
      errors.push({ field, message: `${field} contains invalid Unicode` });
      return null;
    }
    const trimmed = value.trim();
    return trimmed === "" ? null : trimmed;
  };

  const name = str("name", input.name);
  if (name === null && !errors.some((e) => e.field === "name")) {
    errors.push({ field: "name", message: "name is required" });
  } else if (name !== null && length(name) > DOCK_NAME_MAX) {
    errors.push({ field: "name", message: `name must be at most ${DOCK_NAME_MAX} characters` });
  }

  const given = str("link", input.link);
  // `ci.example.com/builds` is what people paste: it means https://.
  // `localhost:3000` too, so that what is refused is said (Telegram opens no such link), not that a
  // scheme is missing.
  const link = given !== null && SCHEMELESS.test(given) ? `https://${given}` : given;
  if (link !== null) {
    let url: URL | null = null;
    try {
      url = new URL(link);
    } catch {
      url = null;
    }
    if (url === null || (url.protocol !== "http:" && url.protocol !== "https:") || url.hostname === "") {
      errors.push({ field: "link", message: "link must be an absolute http:// or https:// URL" });
    } else if (!isButtonUrl(link)) {
      // Its button goes under every message: Telegram would refuse them all.
      errors.push({
        field: "link",
        message:
          "link must be a URL Telegram can open: a dotted host name or an IP address (not localhost), no user name or password",
      });
    } else if (link.length > DOCK_LINK_MAX) {
      errors.push({ field: "link", message: `link must be at most ${DOCK_LINK_MAX} characters` });
    }
  }

  const description = str("description", input.description);
  if (description !== null && length(description) > DOCK_DESCRIPTION_MAX) {
    errors.push({
      field: "description",
      message: `description must be at most ${DOCK_DESCRIPTION_MAX} characters`,
    });
  }

  const givenCallback = str("callback_url", input.callback_url);
  // A dotted host name means https:// here too; another (`receiver:3000`) must say which scheme.
  const callbackUrl =
    givenCallback !== null && BARE_HOST.test(givenCallback) ? `https://${givenCallback}` : givenCallback;
  if (callbackUrl !== null) {
    let url: URL | null = null;
    try {
      url = new URL(callbackUrl);
    } catch {
      url = null;
    }
    if (url === null || (url.protocol !== "http:" && url.protocol !== "https:") || url.hostname === "") {
      errors.push({
        field: "callback_url",
        message:
          "callback_url must be an absolute http:// or https:// URL (https://hooks.example.com/events, say)",
      });
    } else if (url.username !== "" || url.password !== "") {
      // fetch refuses such a URL, and its refusal quotes it: a token there would reach the errors.
      errors.push({
        field: "callback_url",
        message: "callback_url must not hold a user name or password; put a token in its path or query",
      });
    } else if (callbackUrl.length > DOCK_LINK_MAX) {
      errors.push({
        field: "callback_url",
        message: `callback_url must be at most ${DOCK_LINK_MAX} characters`,
      });
    } else if (callbackUrl !== storedCallbackUrl) {
      const verdict = callbackTargets.judgeHost(url.hostname);
      if (verdict !== null && !verdict.allowed) {
        errors.push({
          field: "callback_url",
          message: `callback_url must not point to ${url.hostname} (${verdict.reason}): events go only to public addresses unless the operator allows the network with CALLBACK_ALLOWED_NETWORKS`,
        });
      }
    }
  }

  if (errors.length > 0) return { ok: false, errors };
  return { ok: true, value: { name: name as string, link, description, callback_url: callbackUrl } };
}
