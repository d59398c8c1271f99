import { type Alert, alertGroupConversion, firstButton, groupTitle, readAlertGroup } from "./alertmanager.ts";
import { clip, escapedClip, type InboundFormat, isRecord, linkButton } from "./inbound.ts";
import { jsonSample } from "./settings.ts";

/*
 * Grafana's unified alerting webhook contact point: Alertmanager's group payload (Grafana runs an
 * Alertmanager inside) plus orgId, the values that fired each alert, and links to its dashboard,
 * panel and silence page. Shown like Alertmanager's groups (alertmanager.ts).
 */

/** A value as people read it: 44.23943737541908 as 44.24, 0.000123456 as 0.000123. */
function formatValue(value: number): string {
  if (Number.isInteger(value)) return String(value);
  return String(Number(Math.abs(value) >= 1 ? value.toFixed(2) : value.toPrecision(3)));
}

/**
 * The values that fired the alert, as "B=44.24, C=1" (`values`, Grafana 9 and later), else the
 * older `valueString` ("[ metric='' labels={} value=14151.33 ]").
 */
function valueLine(alert: Alert): string[] {
  const { values, valueString } = alert.raw;
  if (isRecord(values)) {
    const shown = Object.entries(values)
      .map(([name, value]) =>
        typeof value === "number" && Number.isFinite(value)
          ? `${name}=${formatValue(value)}`
          : typeof value === "string"
            ? `${name}=${value}`
            : undefined,
      )
      .filter((entry) => entry !== undefined);
    if (shown.length > 0) return [escapedClip(shown.join(", "), 300, true)];
  }
  if (typeof valueString === "string" && valueString.trim() !== "")
    return [escapedClip(valueString, 300, true)];
  return [];
}

/** Grafana's unified alerting webhook (payload version 1). */
export const grafana: InboundFormat = {
  name: "grafana",
  label: "Grafana Alerting",
  detect({ body }) {
    return (
      isRecord(body) &&
      typeof body.orgId === "number" &&
      typeof body.groupKey === "string" &&
      Array.isArray(body.alerts)
    );
  },
  convert({ body }) {
    const group = readAlertGroup(body);
    // Grafana's own title ("[FIRING:2] (blue)", or the user's template) when it sends one.
    const given = isRecord(body) && typeof body.title === "string" ? clip(body.title, 240, true) : "";
    const marker = group.status === "firing" ? "🔥" : "✅";
    const { alerts } = group;
    return alertGroupConversion(group, {
      name: "grafana",
      title: given === "" ? groupTitle(group) : `${marker} ${given}`,
      alertLines: valueLine,
      buttons: [
        firstButton("Dashboard", alerts, (alert) => alert.raw.dashboardURL),
        firstButton("Panel", alerts, (alert) => alert.raw.panelURL),
        firstButton("Silence", alerts, (alert) => alert.raw.silenceURL),
        firstButton("Rule", alerts, (alert) => alert.generatorURL),
        firstButton("Runbook", alerts, (alert) => alert.annotations.runbook_url),
        firstButton("Image", alerts, (alert) => alert.raw.imageURL),
        linkButton("Grafana", isRecord(body) ? body.externalURL : undefined),
      ],
    });
  },
  authentication: "basic",
  settings: ({ base, dockId, secretKey }) => ({
    tool: "Grafana",
    where: "Alerting → Contact points → Add contact point → Integration: Webhook",
    text: [
      `URL: ${base}/webhook/grafana`,
      "HTTP Method: POST",
      `Basic Authentication User: ${dockId}`,
      `Basic Authentication Password: ${secretKey}`,
    ].join("\n"),
    usesHookUrl: false,
  }),
  // test/fixtures/integrations/grafana/firing.json, its message text left out.
  sample: jsonSample({
    receiver: "My Super Webhook",
    status: "firing",
    orgId: 1,
    alerts: [
      {
        status: "firing",
        labels: {
          alertname: "High memory usage",
          team: "blue",
          zone: "us-1",
        },
        annotations: {
          description: "The system has high memory usage",
          runbook_url: "https://myrunbook.com/runbook/1234",
          summary: "This alert was triggered for zone us-1",
        },
        startsAt: "2021-10-12T09:51:03.157076+02:00",
        endsAt: "0001-01-01T00:00:00Z",
        generatorURL: "https://play.grafana.org/alerting/1afz29v7z/edit",
        fingerprint: "c6eadffa33fcdf37",
        silenceURL:
          "https://play.grafana.org/alerting/silence/new?alertmanager=grafana&matchers=alertname%3DT2%2Cteam%3Dblue%2Czone%3Dus-1",
        dashboardURL: "",
        panelURL: "",
        values: {
          B: 44.23943737541908,
          C: 1,
        },
      },
      {
        status: "firing",
        labels: {
          alertname: "High CPU usage",
          team: "blue",
          zone: "eu-1",
        },
        annotations: {
          description: "The system has high CPU usage",
          runbook_url: "https://myrunbook.com/runbook/1234",
          summary: "This alert was triggered for zone eu-1",
        },
        startsAt: "2021-10-12T09:56:03.157076+02:00",
        endsAt: "0001-01-01T00:00:00Z",
        generatorURL: "https://play.grafana.org/alerting/d1rdpdv7k/edit",
        fingerprint: "bc97ff14869b13e3",
        silenceURL:
          "https://play.grafana.org/alerting/silence/new?alertmanager=grafana&matchers=alertname%3DT1%2Cteam%3Dblue%2Czone%3Deu-1",
        dashboardURL: "",
        panelURL: "",
        values: {
          B: 44.23943737541908,
          C: 1,
        },
      },
    ],
    groupLabels: {},
    commonLabels: {
      team: "blue",
    },
    commonAnnotations: {},
    externalURL: "https://play.grafana.org/",
    version: "1",
    groupKey: "{}:{}",
    truncatedAlerts: 0,
    title: "[FIRING:2]  (blue)",
    state: "alerting",
  }),
};
