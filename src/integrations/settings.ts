/*
 * What a format says about its tool beyond its payloads: the settings that make the tool send to a
 * Dock (the console's Integrations, docs/integrations.md) and a payload to try (the console's Try
 * a sample). The helpers here are what several tools' settings are written with.
 */

/** The Dock a tool's settings are written for: its addresses and credentials. */
export interface SettingsTarget {
  /** PUBLIC_URL, without a trailing slash. */
  base: string;
  dockId: string;
  secretKey: string;
  /** `<base>/hook/<token>`, or with HOOK_TOKEN_PLACEHOLDER when the Dock has no hook token yet. */
  hook: string;
  /** The Dock has no hook token: settings that use `hook` need one made first. */
  hookTokenMissing: boolean;
}

/** One tool's settings, as its own settings screen or file asks for them. */
export interface ToolSettings {
  /** As people know the tool. */
  tool: string;
  /** Where it goes, in the tool's own words. */
  where: string;
  /** What to paste: a file's lines, a form's fields, or a command. */
  text: string;
  /** Uses the Dock's hook URL (a URL-only credential). */
  usesHookUrl: boolean;
}

/**
 * How a tool proves who it is, which decides the door its settings name: HTTP Basic on
 * `/webhook/<format>`; the hook URL `/hook/<token>/<format>`; GitHub's signature or GitLab's
 * token on `/webhook/<format>/<dock_id>`.
 */
export type ToolAuthentication = "basic" | "hook-url" | "signature" | "token";

/** A payload as the tool sends it, for the console's Try a sample (a unit test converts each). */
export interface FormatSample {
  /** The body's text. */
  body: string;
  /** Headers the format reads (GitHub's event name). */
  headers?: Record<string, string>;
}

/** Where a snippet needs the hook token the Dock does not have yet. */
export const HOOK_TOKEN_PLACEHOLDER = "<HOOK_TOKEN>";

/**
 * Where GitHub's settings take a GitHub credential's secret: shown once when it is made, so no
 * snippet can hold it (docs/integrations.md#github).
 */
export const GITHUB_SECRET_PLACEHOLDER = "<GITHUB_SECRET>";

/**
 * Where GitLab's settings take a `send` credential's secret (its Secret token): shown once when it
 * is made, like a GitHub credential's (docs/integrations.md#gitlab).
 */
export const SEND_CREDENTIAL_PLACEHOLDER = "<SEND_CREDENTIAL>";

/** Quotes a value for a POSIX shell. */
export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/** A YAML double-quoted scalar (JSON's string syntax is valid YAML). */
export const yamlString = (value: string) => JSON.stringify(value);

/** A JSON payload as a tool sends it (pretty-printed, to read and edit in the console). */
export function jsonSample(payload: object, headers?: Record<string, string>): FormatSample {
  return { body: JSON.stringify(payload, null, 2), ...(headers === undefined ? {} : { headers }) };
}

/**
 * An Apprise URL for one of its generic services (json://, form://, xml://): the scheme says
 * http or https (jsons://), the credentials go in the user info, the path is ours.
 */
export function appriseUrl(kind: "json" | "form" | "xml", publicUrl: string, dockId: string, secret: string) {
  const url = new URL(publicUrl);
  const scheme = url.protocol === "https:" ? `${kind}s` : kind;
  const path = `${url.pathname.replace(/\/$/, "")}/webhook/apprise`;
  return `${scheme}://${encodeURIComponent(dockId)}:${encodeURIComponent(secret)}@${url.host}${path}`;
}
