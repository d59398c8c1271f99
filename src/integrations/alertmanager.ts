import type { Button, Priority } from "../domain/message-options.ts";
import {
  buttonRows,
  type Conversion,
  clip,
  ENTITY_BUDGET,
  escapedClip,
  escapeHtml,
  type InboundFormat,
  isRecord,
  linkButton,
  livingKey,
  PayloadError,
  TEXT_BUDGET,
  textOf,
} from "./inbound.ts";
import { jsonSample, yamlString } from "./settings.ts";

/*
 * Prometheus Alertmanager's webhook (payload version 4): one notification group per request, shown
 * as one living message keyed by the group, so the group's resolution replaces its firing message.
 * Grafana's unified alerting sends the same shape with a few fields more (grafana.ts), so the
 * reading and the layout of an alert group live here and are shared.
 */

/** One alert of a group, its fields read defensively (anything that is not text is left out). */
export interface Alert {
  status: "firing" | "resolved";
  labels: Record<string, string>;
  annotations: Record<string, string>;
  startsAt: string;
  endsAt: string;
  /** The alert's own source: for Alertmanager the Prometheus graph, for Grafana the rule. */
  generatorURL: unknown;
  /** The payload's alert object as it came, for fields only one format knows (Grafana's values). */
  raw: Record<string, unknown>;
}

/** A notification group as Alertmanager and Grafana post it. */
export interface AlertGroup {
  status: "firing" | "resolved";
  receiver: string;
  groupKey: string;
  groupLabels: Record<string, string>;
  commonLabels: Record<string, string>;
  commonAnnotations: Record<string, string>;
  externalURL: unknown;
  /** The alerts read: the payload's first MAX_ALERTS_READ. */
  alerts: Alert[];
  /** Alerts in the payload beyond those read (counted, not shown). */
  unread: number;
  /** Every alert of the payload by status, read or not. */
  counts: Record<"firing" | "resolved", number>;
  /** Alerts the sender left out of the payload (its max_alerts). */
  truncatedAlerts: number;
}

/**
 * Alerts read in full from one payload: a message shows a few dozen at most, and a megabyte of
 * alerts read whole held the event loop for 130 ms. The rest are counted ("… and N more") by status;
 * the group's priority is that of the alerts read.
 */
export const MAX_ALERTS_READ = 500;

/** A label or annotation map; values that are not scalars are left out. */
function stringMap(value: unknown): Record<string, string> {
  // No prototype: a label named "constructor" or "__proto__" is a label like any other.
  const map: Record<string, string> = Object.create(null);
  if (!isRecord(value)) return map;
  for (const [name, raw] of Object.entries(value)) {
    const value = textOf(raw);
    if (value !== "") map[name] = value;
  }
  return map;
}

function statusOf(value: unknown): "firing" | "resolved" | undefined {
  return value === "firing" || value === "resolved" ? value : undefined;
}

/**
 * Reads an Alertmanager-shaped group. Only `alerts` is required (an array of objects, at least
 * one); everything else may be missing or of the wrong type and is then left out.
 */
export function readAlertGroup(body: unknown): AlertGroup {
  if (!isRecord(body)) throw new PayloadError("the body must be a JSON object");
  const { alerts } = body;
  if (!Array.isArray(alerts)) throw new PayloadError("alerts must be an array");
  if (alerts.length === 0) throw new PayloadError("alerts must hold at least one alert");
  const groupStatus = statusOf(body.status);
  const counts = { firing: 0, resolved: 0 };
  const read: Alert[] = [];
  for (const [i, alert] of alerts.entries()) {
    if (!isRecord(alert)) throw new PayloadError(`alerts[${i}] must be an object`);
    const status = statusOf(alert.status) ?? groupStatus ?? "firing";
    counts[status]++;
    if (i >= MAX_ALERTS_READ) continue;
    read.push({
      status,
      labels: stringMap(alert.labels),
      annotations: stringMap(alert.annotations),
      startsAt: textOf(alert.startsAt),
      endsAt: textOf(alert.endsAt),
      generatorURL: alert.generatorURL,
      raw: alert,
    });
  }
  const truncated = typeof body.truncatedAlerts === "number" ? body.truncatedAlerts : 0;
  return {
    status: groupStatus ?? (counts.firing > 0 ? "firing" : "resolved"),
    receiver: textOf(body.receiver),
    groupKey: textOf(body.groupKey),
    groupLabels: stringMap(body.groupLabels),
    commonLabels: stringMap(body.commonLabels),
    commonAnnotations: stringMap(body.commonAnnotations),
    externalURL: body.externalURL,
    alerts: read,
    unread: alerts.length - read.length,
    counts,
    truncatedAlerts: Number.isSafeInteger(truncated) && truncated > 0 ? truncated : 0,
  };
}

/** Formatting entities in HTML we wrote (payload text is escaped, so every tag is ours). */
function entityCount(html: string): number {
  return html.match(/<(?:b|i|s|u|code|pre|a|blockquote)[\s>]/g)?.length ?? 0;
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const RFC3339 = /^\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d(:\d\d(\.\d+)?)?([Zz]|[+-]\d\d:\d\d)$/;

/**
 * An RFC 3339 time as "12 Oct 07:51 UTC": the same for every reader, and no need for the year of
 * an alert that fired minutes ago. Undefined for anything else, and for Go's zero time, which
 * Alertmanager sends as the end of an alert still firing.
 */
function utcTime(value: string): string | undefined {
  if (!RFC3339.test(value)) return undefined;
  const date = new Date(Date.parse(value));
  if (Number.isNaN(date.getTime()) || date.getUTCFullYear() < 1970) return undefined;
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${date.getUTCDate()} ${MONTHS[date.getUTCMonth()]} ${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())} UTC`;
}

/** Severities as Prometheus rules and Grafana name them, by the priority they deserve. */
const URGENT = new Set(["critical", "page", "emergency", "fatal", "disaster", "p1"]);
const HIGH = new Set(["error", "high", "warning", "warn", "major", "p2"]);
/** Informational alerts arrive without a sound. */
const LOW = new Set(["info", "informational", "low", "p4", "p5"]);

/** The most pressing firing alert's priority; a resolved group notifies as default. */
function priorityOf(group: AlertGroup): Priority | undefined {
  if (group.status === "resolved") return undefined;
  const severities = group.alerts
    .filter((alert) => alert.status === "firing")
    .map((alert) => (alert.labels.severity ?? group.commonLabels.severity ?? "").trim().toLowerCase());
  if (severities.some((severity) => URGENT.has(severity))) return "urgent";
  if (severities.some((severity) => HIGH.has(severity))) return "high";
  if (severities.length > 0 && severities.every((severity) => LOW.has(severity))) return "low";
  return undefined;
}

/** Labels every reader of an alert already knows from its title and severity. */
const SHOWN_ELSEWHERE = new Set(["alertname", "severity"]);

function labelLine(labels: Record<string, string>, except: Record<string, string>): string {
  return Object.entries(labels)
    .filter(([name, value]) => !SHOWN_ELSEWHERE.has(name) && except[name] !== value)
    .map(([name, value]) => `${name}=${value}`)
    .join(", ");
}

/** What the group is about: its alert name, else its group labels, else its receiver. */
function groupName(group: AlertGroup): string {
  const names = new Set(group.alerts.map((alert) => alert.labels.alertname));
  const only = names.size === 1 ? [...names][0] : undefined;
  const name =
    group.groupLabels.alertname ??
    group.commonLabels.alertname ??
    only ??
    (labelLine(group.groupLabels, {}) || labelLine(group.commonLabels, {}) || group.receiver || "alerts");
  return clip(name, 200, true);
}

/** "🔥 FIRING: HighLatency", "🔥 3 firing: HighLatency", "✅ RESOLVED: HighLatency". */
export function groupTitle(group: AlertGroup): string {
  const count = group.counts[group.status];
  const marker = group.status === "firing" ? "🔥" : "✅";
  const word = group.status === "firing" ? "FIRING" : "RESOLVED";
  const title =
    count > 1
      ? `${marker} ${count} ${group.status}: ${groupName(group)}`
      : `${marker} ${word}: ${groupName(group)}`;
  return clip(title, 250, true);
}

/** How a format adds to the shared layout of a group. */
export interface GroupLayout {
  /** The key's prefix and the format's name: "alertmanager", "grafana". */
  name: string;
  /** The message's title (see groupTitle). */
  title: string;
  /** Lines (HTML) a format shows for each alert below its annotations: Grafana's values. */
  alertLines?: (alert: Alert) => string[];
  /** URL buttons in order; those Telegram would refuse are already dropped. */
  buttons: (Button | undefined)[];
}

/** Room kept for the line that says how many alerts were left out. */
const MORE_LINE = 80;

/** One alert: its name (in a group of several), annotations, the format's lines, labels and time. */
function alertBlock(alert: Alert, group: AlertGroup, layout: GroupLayout): string {
  const single = group.alerts.length === 1 && group.unread === 0;
  const lines: string[] = [];
  const severity = alert.labels.severity;
  if (!single) {
    const marker = alert.status === "firing" ? "🔥" : "✅";
    const name = escapedClip(alert.labels.alertname ?? "alert", 120, true);
    lines.push(
      `${marker} <b>${name}</b>${severity === undefined ? "" : ` · ${escapedClip(severity, 40, true)}`}`,
    );
  }
  const { summary, description } = alert.annotations;
  if (summary !== undefined && (single || summary !== group.commonAnnotations.summary))
    lines.push(escapedClip(summary, single ? 600 : 300));
  if (description !== undefined && (single || description !== group.commonAnnotations.description))
    lines.push(escapedClip(description, single ? 1800 : 400));
  lines.push(...(layout.alertLines?.(alert) ?? []));
  const meta: string[] = [];
  if (single && severity !== undefined) meta.push(escapedClip(severity, 40, true));
  const labels = labelLine(alert.labels, single ? {} : group.commonLabels);
  if (labels !== "") meta.push(escapedClip(labels, 400, true));
  const time = utcTime(alert.status === "firing" ? alert.startsAt : alert.endsAt);
  if (time !== undefined) meta.push(`${alert.status === "firing" ? "since" : "resolved"} ${time}`);
  if (meta.length > 0) lines.push(meta.join(" · "));
  return lines.join("\n");
}

/**
 * The group as one message: labels and annotations all alerts share, once; then each alert, as
 * many as fit in TEXT_BUDGET and ENTITY_BUDGET, then "… and N more". Keyed by the group (its
 * SHA-256 when the key would be too long), and final when the group is resolved.
 */
export function alertGroupConversion(group: AlertGroup, layout: GroupLayout): Conversion {
  const head: string[] = [];
  if (group.alerts.length > 1) {
    const common = labelLine(group.commonLabels, {});
    if (common !== "") head.push(escapedClip(common, 400, true));
    const { summary, description } = group.commonAnnotations;
    if (summary !== undefined) head.push(escapedClip(summary, 400));
    if (description !== undefined) head.push(escapedClip(description, 600));
  }
  let msg = head.join("\n");
  let entities = entityCount(msg);
  let shown = 0;
  for (const alert of group.alerts) {
    const block = alertBlock(alert, group, layout);
    if (block === "") {
      shown++;
      continue;
    }
    const separator = msg === "" ? "" : "\n\n";
    const blockEntities = entityCount(block);
    if (
      msg.length + separator.length + block.length + MORE_LINE > TEXT_BUDGET ||
      entities + blockEntities > ENTITY_BUDGET
    )
      break;
    msg += separator + block;
    entities += blockEntities;
    shown++;
  }
  const left = group.alerts.length - shown + group.unread + group.truncatedAlerts;
  if (left > 0) {
    const outside = group.truncatedAlerts > 0 ? ` (${group.truncatedAlerts} not in the payload)` : "";
    msg += `${msg === "" ? "" : "\n\n"}… and ${left} more${outside}`;
  }
  if (msg.trim() === "") msg = escapeHtml(groupName(group));
  const priority = priorityOf(group);
  const buttons = buttonRows(layout.buttons);
  const key = livingKey(layout.name, group.groupKey);
  return {
    kind: "notify",
    notification: {
      msg: textOf(msg),
      options: {
        format: "html",
        title: textOf(layout.title),
        ...(priority === undefined ? {} : { priority }),
        ...(buttons === undefined ? {} : { buttons }),
      },
      ...(key === undefined ? {} : { key }),
      ...(group.status === "resolved" ? { final: true } : {}),
    },
  };
}

/** The first of the alerts' values that makes a button (the first alert's, usually). */
export function firstButton(label: string, alerts: Alert[], value: (alert: Alert) => unknown) {
  for (const alert of alerts) {
    const button = linkButton(label, value(alert));
    if (button !== undefined) return button;
  }
  return undefined;
}

/** Prometheus Alertmanager's webhook_config payload (version 4). */
export const alertmanager: InboundFormat = {
  name: "alertmanager",
  label: "Prometheus Alertmanager",
  detect({ body }) {
    return (
      isRecord(body) &&
      body.version === "4" &&
      typeof body.groupKey === "string" &&
      Array.isArray(body.alerts) &&
      !("orgId" in body)
    );
  },
  convert({ body }) {
    const group = readAlertGroup(body);
    return alertGroupConversion(group, {
      name: "alertmanager",
      title: groupTitle(group),
      buttons: [
        firstButton("Source", group.alerts, (alert) => alert.generatorURL),
        firstButton("Runbook", group.alerts, (alert) => alert.annotations.runbook_url),
        linkButton("Alertmanager", group.externalURL),
      ],
    });
  },
  authentication: "basic",
  settings: ({ base, dockId, secretKey }) => ({
    tool: "Prometheus Alertmanager",
    where: "alertmanager.yml: a receiver, and the route that uses it",
    text: [
      "route:",
      "  receiver: dock-notify",
      "receivers:",
      "  - name: dock-notify",
      "    webhook_configs:",
      `      - url: ${yamlString(`${base}/webhook/alertmanager`)}`,
      "        send_resolved: true",
      "        http_config:",
      "          basic_auth:",
      `            username: ${yamlString(dockId)}`,
      `            password: ${yamlString(secretKey)}`,
    ].join("\n"),
    usesHookUrl: false,
  }),
  // Trimmed from test/fixtures/integrations/alertmanager/firing.json: its first alert of three.
  sample: jsonSample({
    version: "4",
    groupKey: '{}/{severity="warning"}:{alertname="HighLatency"}',
    truncatedAlerts: 0,
    status: "firing",
    receiver: "telegram",
    groupLabels: { alertname: "HighLatency" },
    commonLabels: { alertname: "HighLatency", env: "prod", job: "api", severity: "warning" },
    commonAnnotations: {
      description: "The 99th percentile of request latency has been above 500 ms for 10 minutes.",
      runbook_url: "https://runbooks.example.com/api/high-latency",
    },
    externalURL: "https://alertmanager.example.com",
    alerts: [
      {
        status: "firing",
        labels: {
          alertname: "HighLatency",
          env: "prod",
          instance: "api-1.example.com:9100",
          job: "api",
          severity: "warning",
        },
        annotations: {
          summary: "p99 latency above 500 ms on api-1.example.com:9100",
          description: "The 99th percentile of request latency has been above 500 ms for 10 minutes.",
          runbook_url: "https://runbooks.example.com/api/high-latency",
        },
        startsAt: "2026-11-24T10:02:41.512Z",
        endsAt: "0001-01-01T00:00:00Z",
        generatorURL:
          "https://prometheus.example.com/graph?g0.expr=histogram_quantile%280.99%2C+rate%28http_request_duration_seconds_bucket%5B5m%5D%29%29+%3E+0.5&g0.tab=1",
        fingerprint: "5ad1b1e7cb8f9f2a",
      },
    ],
  }),
};
