import { alertmanager } from "./alertmanager.ts";
import { apprise } from "./apprise.ts";
import { github } from "./github.ts";
import { gitlab } from "./gitlab.ts";
import { grafana } from "./grafana.ts";
import { type Inbound, type InboundFormat, isRecord } from "./inbound.ts";
import { ntfy } from "./ntfy.ts";
import { slack } from "./slack.ts";
import { uptimeKuma } from "./uptime-kuma.ts";

/*
 * The built-in inbound formats, found by name (`/webhook/<name>`, `?format=`) or by detection (a
 * plain /webhook body that is not a message of our own). The registry: a format is its file (its
 * payloads, detection, authentication, settings and sample) and one line in BUILT_IN_FORMATS
 * (docs/architecture.md, "Adding a tool").
 */

/**
 * Every built-in format, in the order detection tries them: those known by a header (GitHub,
 * GitLab) first, then by fields only their payloads have, the loosest (Slack's, whose `text` alone
 * is enough) last.
 */
export const BUILT_IN_FORMATS: readonly InboundFormat[] = [
  github,
  gitlab,
  grafana,
  alertmanager,
  uptimeKuma,
  apprise,
  ntfy,
  slack,
];

/** The built-in formats' names, as URLs and `?format=` take them. */
export const FORMAT_NAMES: readonly string[] = BUILT_IN_FORMATS.map((format) => format.name);

/** Every inbound format's name: the built-in ones and "template" (the Dock's own, template.ts). */
export const ALL_FORMAT_NAMES: readonly string[] = [...FORMAT_NAMES, "template"];

/**
 * Formats whose payloads are told apart even when the body has a string `msg` of its own (each
 * says so: InboundFormat.detectedWithMsg). A body with `msg` is otherwise an ordinary message,
 * never another format's payload.
 */
export const DETECTED_WITH_MSG: ReadonlySet<string> = new Set(
  BUILT_IN_FORMATS.filter((format) => format.detectedWithMsg).map((format) => format.name),
);

/** The built-in format of that name (as in URLs: lower case), if there is one. */
export function formatNamed(name: string): InboundFormat | undefined {
  const wanted = name.trim().toLowerCase();
  return BUILT_IN_FORMATS.find((format) => format.name === wanted);
}

/**
 * The built-in format a body is unmistakably in, for any body a /webhook request may carry: one
 * with a string `msg` is only ever one of DETECTED_WITH_MSG's (else it is our own message).
 */
export function detectFormat(inbound: Inbound): InboundFormat | undefined {
  const hasMsg = isRecord(inbound.body) && typeof inbound.body.msg === "string";
  return BUILT_IN_FORMATS.find(
    (format) => (!hasMsg || DETECTED_WITH_MSG.has(format.name)) && format.detect(inbound),
  );
}
