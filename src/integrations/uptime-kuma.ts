import type { Priority } from "../domain/message-options.ts";
import {
  buttonRows,
  type Conversion,
  clip,
  escapedClip,
  type InboundFormat,
  isRecord,
  linkButton,
  livingKey,
  PayloadError,
  TEXT_BUDGET,
  textOf,
} from "./inbound.ts";
import { jsonSample } from "./settings.ts";

/*
 * Uptime Kuma's webhook notification (JSON body `{heartbeat, monitor, msg}`). A monitor going down
 * and coming back up is one living message keyed by the monitor: "is down" becomes "is up" in
 * place, and up is the key's last word. Kuma also posts without a heartbeat (a certificate about
 * to expire: the monitor and a msg) and with neither (the "Test" button: a msg alone).
 */

/** How each heartbeat status (Kuma's DOWN 0, UP 1, PENDING 2, MAINTENANCE 3) reads. */
const STATUSES: Record<number, { title: (name: string) => string; priority?: Priority; final?: true }> = {
  0: { title: (name) => `🔴 ${name} is down`, priority: "high" },
  1: { title: (name) => `✅ ${name} is up`, final: true },
  2: { title: (name) => `🟡 ${name} is pending` },
  3: { title: (name) => `🔧 ${name} is under maintenance` },
};

/** Kuma's times are UTC in SQL form: "2026-11-24 10:00:00.123". */
const SQL_TIME = /^(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d)(?::(\d\d))?/;

function sqlTime(value: unknown): number | undefined {
  const match = SQL_TIME.exec(textOf(value));
  if (match === null) return undefined;
  const [y = 0, mo = 1, d, h, mi, s] = match.slice(1).map((part) => Number(part ?? 0));
  return Date.UTC(y, mo - 1, d, h, mi, s);
}

/** "2026-11-24 10:00 UTC". */
function utc(value: unknown): string | undefined {
  const match = SQL_TIME.exec(textOf(value));
  return match === null ? undefined : `${match[1]}-${match[2]}-${match[3]} ${match[4]}:${match[5]} UTC`;
}

/** "3 h 5 min", "12 min", "40 s". */
function span(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  return hours < 48 ? `${hours} h ${minutes % 60} min` : `${Math.floor(hours / 24)} days`;
}

/** What the monitor watches, as Kuma shows it: a URL, or a host and port. */
function address(monitor: Record<string, unknown>): string {
  const url = textOf(monitor.url);
  if (/^https?:\/\/./i.test(url)) return url;
  const host = textOf(monitor.hostname);
  const port = textOf(monitor.port);
  return host === "" ? "" : port === "" ? host : `${host}:${port}`;
}

function checked(value: unknown, name: string): Record<string, unknown> | null {
  if (value === null || value === undefined) return null;
  if (!isRecord(value)) throw new PayloadError(`${name} must be an object or null`);
  return value;
}

/** Uptime Kuma's webhook notification (its "application/json" body). */
export const uptimeKuma: InboundFormat = {
  name: "uptime-kuma",
  label: "Uptime Kuma",
  detect({ body }) {
    return isRecord(body) && "heartbeat" in body && "monitor" in body;
  },
  convert({ body }): Conversion {
    if (!isRecord(body)) throw new PayloadError("the body must be a JSON object");
    const heartbeat = checked(body.heartbeat, "heartbeat");
    const monitor = checked(body.monitor, "monitor");
    const msg = typeof body.msg === "string" ? textOf(body.msg) : "";
    if (heartbeat === null) {
      // A test, or a notice about the monitor (a certificate about to expire): Kuma's text as it is.
      if (msg.trim() === "")
        throw new PayloadError("msg must be a non-empty string when there is no heartbeat");
      const name = monitor === null ? "" : clip(textOf(monitor.name), 250, true);
      return {
        kind: "notify",
        notification: {
          msg: textOf(clip(msg, TEXT_BUDGET)),
          options: name === "" ? {} : { title: textOf(name) },
        },
      };
    }
    const name = clip(textOf(monitor?.name) || "Monitor", 200, true);
    const status = typeof heartbeat.status === "number" ? STATUSES[heartbeat.status] : undefined;
    const lines: string[] = [];
    const said = textOf(heartbeat.msg);
    if (said.trim() !== "" && said !== "N/A") lines.push(escapedClip(said, 2000));
    const where = monitor === null ? "" : address(monitor);
    if (where !== "") lines.push(escapedClip(where, 600, true));
    const local = textOf(heartbeat.localDateTime);
    const zone = textOf(heartbeat.timezone);
    const at =
      local !== ""
        ? `${clip(local, 40, true)}${zone === "" ? "" : ` (${clip(zone, 60, true)})`}`
        : utc(heartbeat.time);
    const details: string[] = [];
    if (at !== undefined) details.push(escapedClip(at, 300, true));
    if (heartbeat.status === 1 && typeof heartbeat.ping === "number")
      details.push(`${Math.round(heartbeat.ping)} ms`);
    const downSince = sqlTime(heartbeat.lastDownTime);
    const now = sqlTime(heartbeat.time);
    if (heartbeat.status === 1 && downSince !== undefined && now !== undefined && now > downSince)
      details.push(`down for ${span(now - downSince)}`);
    if (details.length > 0) lines.push(`<i>${details.join(" · ")}</i>`);
    if (lines.length === 0) lines.push(escapedClip(msg || name, 2000));
    const id = monitor === null ? "" : textOf(monitor.id);
    const key = livingKey("uptime-kuma", id || name);
    const buttons = buttonRows([linkButton("Open", monitor?.url)]);
    return {
      kind: "notify",
      notification: {
        msg: textOf(lines.join("\n")),
        options: {
          format: "html",
          title: textOf(
            status?.title(name) ?? `${name}: status ${clip(textOf(heartbeat.status), 20, true) || "unknown"}`,
          ),
          ...(status?.priority === undefined ? {} : { priority: status.priority }),
          ...(buttons === undefined ? {} : { buttons }),
        },
        ...(key === undefined ? {} : { key }),
        ...(status?.final ? { final: true } : {}),
      },
    };
  },
  detectedWithMsg: true,
  authentication: "hook-url",
  settings: ({ hook }) => ({
    tool: "Uptime Kuma",
    where: "Settings → Notifications → Setup Notification → Notification Type: Webhook",
    text: [`Post URL: ${hook}/uptime-kuma`, "Request Body: Preset - application/json"].join("\n"),
    usesHookUrl: true,
  }),
  // Trimmed from test/fixtures/integrations/uptime-kuma/down.json (the monitor's settings left out).
  sample: jsonSample({
    heartbeat: {
      monitorID: 3,
      status: 0,
      time: "2026-11-24 10:00:00.421",
      msg: "timeout of 48000ms exceeded",
      ping: null,
      important: true,
      duration: 60,
      timezone: "Europe/Berlin",
      timezoneOffset: "+01:00",
      localDateTime: "2026-11-24 11:00:00",
    },
    monitor: { id: 3, name: "Website", url: "https://www.example.com/health", type: "http" },
    msg: "[Website] [🔴 Down] timeout of 48000ms exceeded",
  }),
};
