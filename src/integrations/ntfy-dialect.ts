import { isUtf8 } from "node:buffer";
import { type Given, MAX_BUTTONS_PER_ROW, OPTION_NAMES, type OptionName } from "../domain/message-options.ts";

/*
 * ntfy's way of giving a message's options, which every send door speaks (so an ntfy script or
 * tool ports by changing its URL): `/webhook`'s headers and query parameters in ntfy's names, its
 * header values in RFC 2047 words, and its action syntax for buttons (`view, Label, https://…`),
 * in a header or a JSON field alike. What the options mean and which values they take is the
 * domain's (domain/message-options.ts readOptions); this file only finds them.
 */

/**
 * For `/webhook`, the header and query names that carry each option: ntfy's. The first header name
 * is the one the docs show.
 */
export const OPTION_SOURCES: Record<OptionName, { headers: string[]; query: string[] }> = {
  title: { headers: ["title", "x-title", "ti", "t"], query: ["title", "ti", "t"] },
  priority: { headers: ["priority", "x-priority", "prio", "p"], query: ["priority", "prio", "p"] },
  tags: { headers: ["tags", "x-tags", "tag", "ta"], query: ["tags", "tag", "ta"] },
  format: { headers: ["format", "x-format"], query: ["format"] },
  markdown: { headers: ["markdown", "x-markdown", "md"], query: ["markdown", "md"] },
  click: { headers: ["click", "x-click"], query: ["click"] },
  buttons: { headers: ["actions", "x-actions", "action"], query: ["actions", "action"] },
  silent: { headers: ["x-silent"], query: ["silent"] },
  link_preview: { headers: ["x-link-preview"], query: ["link_preview"] },
  protect_content: { headers: ["x-protect-content"], query: ["protect_content"] },
  ack: { headers: ["x-ack"], query: ["ack"] },
  remind_every: { headers: ["x-remind-every"], query: ["remind_every"] },
  remind_for: { headers: ["x-remind-for"], query: ["remind_for"] },
  escalate: { headers: ["x-escalate"], query: ["escalate"] },
};

/** Header values arrive as Latin-1; ntfy's clients send UTF-8 raw or as RFC 2047 words. */
export function decodeHeaderValue(raw: string): string {
  const encoded = /^=\?utf-8\?([bq])\?([^?]*)\?=$/i.exec(raw.trim());
  if (encoded) {
    const [, kind, data = ""] = encoded;
    if (kind?.toLowerCase() === "b") return Buffer.from(data, "base64").toString("utf8");
    const bytes = data
      .replaceAll("_", " ")
      .replace(/=([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
    return Buffer.from(bytes, "latin1").toString("utf8");
  }
  const bytes = Buffer.from(raw, "latin1");
  // Only when every character fit in a byte and the bytes are UTF-8: otherwise it was text already.
  return bytes.toString("latin1") === raw && isUtf8(bytes) ? bytes.toString("utf8") : raw;
}

/**
 * Collects the options from the JSON body, then the headers, then the query: the first place that
 * has an option wins (a body field over a header over a query parameter). Buttons given as text
 * are read from ntfy's action syntax here.
 */
export function gatherOptions(
  body: Record<string, unknown>,
  headers: Record<string, string | string[] | undefined> = {},
  query: Record<string, unknown> = {},
): Map<OptionName, Given> {
  const found = new Map<OptionName, Given>();
  const put = (option: OptionName, given: Given) =>
    found.set(option, option === "buttons" && typeof given.value === "string" ? readActions(given) : given);
  for (const option of OPTION_NAMES) {
    const names = OPTION_SOURCES[option];
    if (body[option] !== undefined && body[option] !== null) {
      put(option, { value: body[option], field: option });
      continue;
    }
    const header = names.headers.find(
      (name) => headers[name] !== undefined && !(option === "priority" && isHttpPriority(headers[name])),
    );
    if (header !== undefined) {
      const raw = headers[header];
      const value = decodeHeaderValue(Array.isArray(raw) ? raw.join(", ") : (raw as string));
      put(option, { value, field: `the ${headerName(header)} header` });
      continue;
    }
    const parameter = names.query.find((name) => query[name] !== undefined);
    if (parameter !== undefined) {
      const raw = query[parameter];
      put(option, {
        value: Array.isArray(raw) ? raw.join(",") : String(raw),
        field: `the ${parameter} query parameter`,
      });
    }
  }
  return found;
}

/**
 * HTTP's own `Priority` header (RFC 9218: `u=3`, `u=1, i`, `i=?0`), which browsers, HTTP/2 clients and
 * proxies such as Cloudflare add: not ours, so not read (ntfy learned the same).
 */
function isHttpPriority(value: string | string[] | undefined): boolean {
  const text = Array.isArray(value) ? value.join(",") : (value ?? "");
  return /^\s*(u=\d|i(=\?[01])?)\s*(,\s*(u=\d|i(=\?[01])?)\s*)*$/i.test(text);
}

const headerName = (lower: string) =>
  lower.length <= 2
    ? lower
    : lower.replace(/(^|-)([a-z])/g, (_, dash: string, c: string) => dash + c.toUpperCase());

/** ntfy's kinds of action; only `view` opens a URL. */
const NTFY_ACTIONS = new Set(["view", "http", "broadcast", "copy"]);

/**
 * Buttons given as text: ntfy's actions, one row of them (`view` a URL button, `ack` the
 * Acknowledge button), or what is wrong with the text.
 */
function readActions(given: Given): Given {
  const refused = (message: string, field = given.field): Given => ({
    ...given,
    refused: { field, message },
  });
  const actions = parseActions(String(given.value));
  if (actions === undefined) return refused("is not a JSON array of actions.");
  for (const [n, action] of (actions as { action?: unknown }[]).entries()) {
    const kind = typeof action?.action === "string" ? action.action.toLowerCase() : "view";
    if (kind === "view" || kind === "ack") continue;
    return refused(
      NTFY_ACTIONS.has(kind)
        ? `only "view" actions (URL buttons) and "ack" (an Acknowledge button) can be shown; "${kind}" cannot.`
        : `is not in ntfy's action form "view, Label, https://…" ("${String(action.action).slice(0, 32)}" is not an action).`,
      `${given.field} (action ${n + 1})`,
    );
  }
  if (actions.length > MAX_BUTTONS_PER_ROW)
    return refused(`may hold at most ${MAX_BUTTONS_PER_ROW} actions.`);
  return { ...given, value: [actions], actions: true };
}

/**
 * ntfy's `Actions` header in its short form (`view, Label, https://…; view, …`), its `key=value`
 * form, or as JSON (undefined: not a JSON array). Only `view` actions open a URL, the one thing a
 * Telegram button can do here.
 */
function parseActions(text: string): unknown[] | undefined {
  const trimmed = text.trim();
  if (trimmed.startsWith("[")) {
    try {
      const parsed = JSON.parse(trimmed) as unknown;
      if (Array.isArray(parsed)) {
        return parsed.map((action) =>
          typeof action === "object" && action !== null
            ? {
                action: (action as { action?: unknown }).action,
                text: (action as { label?: unknown }).label,
                url: (action as { url?: unknown }).url,
              }
            : action,
        );
      }
    } catch {
      // Refused like any other malformed value.
    }
    return undefined;
  }
  const actions: unknown[] = [];
  for (const definition of trimmed.split(";")) {
    if (definition.trim() === "") continue;
    const parts = definition.split(",").map((part) => part.trim());
    const action: Record<string, string> = {};
    const positional = ["action", "text", "url"];
    for (const part of parts) {
      const pair = /^(action|label|url|clear)\s*=\s*(.*)$/i.exec(part);
      if (pair)
        action[pair[1]?.toLowerCase() === "label" ? "text" : (pair[1]?.toLowerCase() as string)] =
          pair[2] as string;
      else {
        const name = positional.find((key) => action[key] === undefined);
        // A URL may hold commas: the rest of the definition belongs to it.
        if (name === "url") {
          action.url = parts
            .slice(parts.indexOf(part))
            .filter((p) => !/^clear\s*=/i.test(p))
            .join(",");
          break;
        }
        if (name !== undefined) action[name] = part;
      }
    }
    actions.push(action);
  }
  return actions;
}
