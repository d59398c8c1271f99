/**
 * Ready-to-paste settings for the tools people already run, filled with a Dock's real URL and
 * credentials: what the console's Integrations section shows and docs/integrations.md explains.
 * Each is what the tool's own settings screen or file asks for, so nothing has to be translated.
 */

/** Settings for one tool. */
export interface Snippet {
  /** The inbound format it sends (`/webhook/<format>`), or `message` for our own message body. */
  format: string;
  /** As people know the tool. */
  tool: string;
  /** Where it goes, in the tool's own words. */
  where: string;
  /** What to paste: a file's lines, a form's fields, or a command. */
  text: string;
  /**
   * Needs the Dock's hook token (a URL-only credential) and the Dock has none: `text` then shows
   * `<HOOK_TOKEN>`, and the owner creates one first.
   */
  needsHookToken: boolean;
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
function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/** A YAML double-quoted scalar (JSON's string syntax is valid YAML). */
const yamlString = (value: string) => JSON.stringify(value);

/**
 * An Apprise URL for one of its generic services (json://, form://, xml://): the scheme says
 * http or https (jsons://), the credentials go in the user info, the path is ours.
 */
function appriseUrl(kind: "json" | "form" | "xml", publicUrl: string, dockId: string, secret: string) {
  const url = new URL(publicUrl);
  const scheme = url.protocol === "https:" ? `${kind}s` : kind;
  const path = `${url.pathname.replace(/\/$/, "")}/webhook/apprise`;
  return `${scheme}://${encodeURIComponent(dockId)}:${encodeURIComponent(secret)}@${url.host}${path}`;
}

/**
 * Every tool's settings for a Dock. `hookToken` null: the URL-only snippets show
 * HOOK_TOKEN_PLACEHOLDER and say so (`needsHookToken`).
 */
export function integrationSnippets(input: {
  publicUrl: string;
  dockId: string;
  secretKey: string;
  hookToken: string | null;
}): Snippet[] {
  const base = input.publicUrl.replace(/\/$/, "");
  const { dockId, secretKey } = input;
  const token = input.hookToken ?? HOOK_TOKEN_PLACEHOLDER;
  const needsHookToken = input.hookToken === null;
  const hook = `${base}/hook/${token}`;
  return [
    {
      format: "alertmanager",
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
      needsHookToken: false,
    },
    {
      format: "grafana",
      tool: "Grafana",
      where: "Alerting → Contact points → Add contact point → Integration: Webhook",
      text: [
        `URL: ${base}/webhook/grafana`,
        "HTTP Method: POST",
        `Basic Authentication User: ${dockId}`,
        `Basic Authentication Password: ${secretKey}`,
      ].join("\n"),
      needsHookToken: false,
    },
    {
      format: "github",
      tool: "GitHub",
      where: "Repository (or organisation) → Settings → Webhooks → Add webhook",
      text: [
        `Payload URL: ${base}/webhook/github/${dockId}`,
        "Content type: application/json",
        `Secret: ${GITHUB_SECRET_PLACEHOLDER}`,
        "Which events: the ones you want (push, pull requests, issues, releases, workflow runs…)",
      ].join("\n"),
      needsHookToken: false,
    },
    {
      format: "gitlab",
      tool: "GitLab",
      where: "Project → Settings → Webhooks → Add new webhook",
      text: [
        `URL: ${base}/webhook/gitlab/${dockId}`,
        `Secret token: ${SEND_CREDENTIAL_PLACEHOLDER}`,
        "Trigger: push, tag push, merge request, pipeline and issue events (any others are summarised)",
      ].join("\n"),
      needsHookToken: false,
    },
    {
      format: "uptime-kuma",
      tool: "Uptime Kuma",
      where: "Settings → Notifications → Setup Notification → Notification Type: Webhook",
      text: [`Post URL: ${hook}/uptime-kuma`, "Request Body: Preset - application/json"].join("\n"),
      needsHookToken,
    },
    {
      format: "apprise",
      tool: "Apprise",
      where: "An Apprise URL (apprise CLI, Apprise API, or any tool built on Apprise)",
      text: [
        appriseUrl("json", base, dockId, secretKey),
        "",
        "# or as a form or XML:",
        appriseUrl("form", base, dockId, secretKey),
        appriseUrl("xml", base, dockId, secretKey),
        "",
        `apprise -t 'Backup' -b 'Backup finished' ${shellQuote(appriseUrl("json", base, dockId, secretKey))}`,
      ].join("\n"),
      needsHookToken: false,
    },
    {
      format: "slack",
      tool: "Slack-compatible webhook",
      where: "Any tool that posts to a Slack incoming-webhook URL: paste this as the webhook URL",
      text: `${hook}/slack`,
      needsHookToken,
    },
    {
      format: "ntfy",
      tool: "ntfy clients and scripts",
      where: "Where a script publishes to an ntfy topic URL: the hook URL takes the same body and headers",
      text: [
        `curl -H 'Title: Backup' -H 'Tags: white_check_mark' -d 'Backup finished' ${shellQuote(hook)}`,
        "",
        "# ntfy's JSON publishing:",
        `curl -d ${shellQuote(JSON.stringify({ topic: "backups", message: "Backup finished", priority: 4 }))} ${shellQuote(`${hook}/ntfy`)}`,
      ].join("\n"),
      needsHookToken,
    },
    {
      format: "message",
      tool: "Home Assistant",
      where: "configuration.yaml: a RESTful notifier (then call notify.dock_notify)",
      text: [
        "notify:",
        "  - name: dock_notify",
        "    platform: rest",
        `    resource: ${yamlString(hook)}`,
        "    method: POST_JSON",
        "    message_param_name: msg",
        "    title_param_name: title",
      ].join("\n"),
      needsHookToken,
    },
    {
      format: "template",
      tool: "Your own payload (the Dock's template)",
      where: "Any tool that posts JSON: the Dock's template turns it into the message",
      text: [
        `curl -X POST ${shellQuote(`${base}/webhook/template`)} \\`,
        `  -u ${shellQuote(`${dockId}:${secretKey}`)} \\`,
        "  -H 'Content-Type: application/json' \\",
        `  -d ${shellQuote(JSON.stringify({ status: "firing", name: "disk", value: 97 }))}`,
      ].join("\n"),
      needsHookToken: false,
    },
  ];
}
