import { createHmac } from "node:crypto";

/*
 * What the API reference (/docs, /openapi.json) shows as examples, in one place: values of the real
 * shapes (a Dock ID, a message ID, a Telegram chat), so an example reads like a real request and its
 * answer, and placeholders that say so for the secrets, which no example may hold. Each route's
 * `curl` is run as written by test/send/api-reference.test.ts, with a real Dock's ID and secrets swapped
 * in for these.
 */

/** Example values; the secrets are placeholders (a real secret key's 33 characters are base62). */
export const EXAMPLE = {
  dockId: "3kTMd9Qx7pLr2vNw8YbZc4",
  secretKey: "dnsk_YOUR_SECRET_KEY",
  hookToken: "dnhk_YOUR_HOOK_TOKEN",
  githubSecret: "dngh_YOUR_GITHUB_SECRET",
  sendCredential: "dnsc_YOUR_SEND_CREDENTIAL",
  metricsToken: "YOUR_METRICS_TOKEN",
  messageId: "msg_0MWUIWXS0xMzssZ8DjGILp",
  key: "deploy-api-prod",
  idempotencyKey: "deploy-api-prod-4711",
  chatId: 100000001,
  telegramMessageId: 4711,
  at: "2026-11-24T10:00:00.000Z",
} as const;

/** Where a command names the service; docs.ts writes the service's PUBLIC_URL there. */
export const PUBLIC_URL_PLACEHOLDER = "{PUBLIC_URL}";

const base = PUBLIC_URL_PLACEHOLDER;
const basic = `-u '${EXAMPLE.dockId}:${EXAMPLE.secretKey}'`;
const json = "-H 'Content-Type: application/json'";

/** One curl command, a continued line per argument as a reader copies it. */
const curl = (...lines: string[]) => lines.join(" \\\n  ");
/** A JSON body for `-d '…'` (no single quote may appear in it): on one line if short, else indented. */
const body = (value: unknown) => {
  const line = JSON.stringify(value);
  return `-d '${line.length <= 72 ? line : JSON.stringify(value, null, 2).replaceAll("\n", "\n  ")}'`;
};

/** Prometheus Alertmanager's webhook body, cut to what shows (docs/integrations.md). */
export const ALERTMANAGER_PAYLOAD = {
  version: "4",
  status: "firing",
  groupKey: '{}:{alertname="DiskFull"}',
  commonLabels: { alertname: "DiskFull", severity: "critical" },
  alerts: [
    {
      status: "firing",
      labels: { alertname: "DiskFull", instance: "db-1", severity: "critical" },
      annotations: { summary: "Disk almost full on db-1 (97 %)" },
      startsAt: "2026-11-24T10:00:00Z",
    },
  ],
};

/** GitLab's pipeline event, cut to what shows: a pipeline that failed. */
export const GITLAB_PAYLOAD = {
  object_kind: "pipeline",
  object_attributes: {
    id: 31,
    ref: "main",
    status: "failed",
    url: "https://gitlab.example.com/group/app/-/pipelines/31",
  },
  project: { path_with_namespace: "group/app", web_url: "https://gitlab.example.com/group/app" },
  user: { name: "Ann Lee" },
};

/** A Slack-style incoming webhook's body. */
export const SLACK_PAYLOAD = { text: "Deploy of *api* finished :white_check_mark:" };

/** GitHub's ping, the first delivery of a new webhook (answered 200 skipped: nothing to show). */
export const GITHUB_PING = { zen: "Keep it logically awesome.", hook_id: 12345678 };

/** X-Hub-Signature-256 as GitHub sends it with GITHUB_PING, signed with the example GitHub credential. */
export const EXAMPLE_SIGNATURE = `sha256=${createHmac("sha256", EXAMPLE.githubSecret).update(JSON.stringify(GITHUB_PING)).digest("hex")}`;

/** Every route's commands, as its description shows them (a code block each). */
export const CURL = {
  ping: [
    curl(
      `curl -X POST '${base}/ping'`,
      json,
      body({
        dock_id: EXAMPLE.dockId,
        secret_key: EXAMPLE.secretKey,
        msg: "Deploy of api finished ✅\nversion 2.4.1",
        title: "Production",
        tags: ["rocket"],
      }),
    ),
  ],
  webhook: [
    curl(
      `curl -X POST '${base}/webhook'`,
      basic,
      "-H 'Title: Backup' -H 'Priority: high' -H 'Tags: warning'",
      "-d 'Backup of db-1 failed: disk full'",
    ),
    curl(
      `curl -X POST '${base}/webhook'`,
      basic,
      json,
      body({ msg: "Deploy of api started", key: EXAMPLE.key }),
    ),
  ],
  messageStatus: [curl(`curl '${base}/messages/${EXAMPLE.messageId}'`, basic)],
  messageByKey: [curl(`curl '${base}/messages?key=${EXAMPLE.key}'`, basic)],
  editMessage: [
    curl(
      `curl -X PATCH '${base}/messages/${EXAMPLE.messageId}'`,
      basic,
      json,
      body({ msg: "Deploy of api finished ✅", priority: null }),
    ),
  ],
  deleteMessage: [curl(`curl -X DELETE '${base}/messages/${EXAMPLE.messageId}'`, basic)],
  webhookFormat: [
    curl(`curl -X POST '${base}/webhook/alertmanager'`, basic, json, body(ALERTMANAGER_PAYLOAD)),
  ],
  webhookFormatDock: [
    curl(
      `curl -X POST '${base}/webhook/gitlab/${EXAMPLE.dockId}'`,
      `-H 'X-Gitlab-Token: ${EXAMPLE.sendCredential}'`,
      "-H 'X-Gitlab-Event: Pipeline Hook'",
      json,
      body(GITLAB_PAYLOAD),
    ),
  ],
  hook: [curl(`curl -X POST '${base}/hook/${EXAMPLE.hookToken}'`, "-d 'Backup of db-1 finished'")],
  hookFormat: [curl(`curl -X POST '${base}/hook/${EXAMPLE.hookToken}/slack'`, json, body(SLACK_PAYLOAD))],
  healthz: [`curl '${base}/healthz'`],
  readyz: [`curl '${base}/readyz'`],
  metrics: [curl(`curl '${base}/metrics'`, `-H 'Authorization: Bearer ${EXAMPLE.metricsToken}'`)],
} as const satisfies Record<string, readonly string[]>;
