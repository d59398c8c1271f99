import { type ChildProcess, execFile, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DockWithSecret } from "../../src/store/docks.ts";
import { freePort } from "../helpers/browser.ts";
import { sandboxOf } from "../helpers/delivery-harness.ts";
import { type RunningService, startService } from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON the sandbox answered.
type Json = any;

/*
 * The senders people run, unchanged, pointed at the URL the console's snippet gives: Debian's
 * Prometheus Alertmanager and Apprise (`.ci/run` installs both). Missing in CI is an error; on a
 * developer's machine without them these tests are skipped, with a warning.
 */

function installed(command: string): string | undefined {
  const path = spawnSync("sh", ["-c", `command -v ${command}`], { encoding: "utf8" }).stdout.trim();
  if (path !== "") return path;
  if (process.env.CI) throw new Error(`${command} is required in CI (.ci/run installs it with apt-get)`);
  console.warn(`real-sender tests skipped: no ${command} here`);
  return undefined;
}

const alertmanagerPath = installed("prometheus-alertmanager");
const apprisePath = installed("apprise");
const run = promisify(execFile);

/** A service with one Dock and one subscriber, for one sender's tests. */
function scene() {
  const ctx = {} as {
    service: RunningService;
    dock: DockWithSecret;
    sandbox: ReturnType<typeof sandboxOf>;
    person: number;
    dir: string;
  };
  beforeAll(async () => {
    ctx.dir = mkdtempSync(join(tmpdir(), "dock-notify-senders-"));
    // Not about the pace: Telegram's limits off, so no message waits out a chat's one a second.
    ctx.service = await startService(
      "sqlite",
      { AUTH_FAILURES_PER_MINUTE: "0", DOCK_RATE_BURST: "0" },
      { pace: "unpaced" },
    );
    ctx.dock = await ctx.service.app.docks.create(1, { name: "Monitoring", link: null, description: null });
    ctx.sandbox = sandboxOf(ctx.service);
    ctx.person = await ctx.sandbox.person("Ada");
    await ctx.service.subscriptions.subscribe(ctx.dock.id, ctx.person, "private");
  });
  afterAll(async () => {
    await ctx.service?.close();
    if (ctx.dir) rmSync(ctx.dir, { recursive: true, force: true });
  });
  /** The bot's messages to the person, waited for until `done` holds. */
  const messagesWhen = (what: string, done: (messages: Json[]) => boolean) =>
    waitFor(
      what,
      async () => {
        const messages = await ctx.sandbox.botMessages(ctx.person);
        return done(messages) ? messages : undefined;
      },
      60_000,
    );
  return { ctx, messagesWhen };
}

describe.skipIf(alertmanagerPath === undefined)("Prometheus Alertmanager", () => {
  const { ctx, messagesWhen } = scene();
  let alertmanager: ChildProcess;
  let api: string;

  beforeAll(async () => {
    const port = await freePort();
    api = `http://127.0.0.1:${port}`;
    // The receiver as the console's snippet writes it, with quick grouping so the test is short.
    const snippet = (await ctx.service.app.docks.get(ctx.dock.id)) as DockWithSecret;
    const config = [
      "route:",
      "  receiver: dock-notify",
      "  group_by: [alertname]",
      "  group_wait: 1s",
      "  group_interval: 1s",
      "  repeat_interval: 1h",
      "receivers:",
      "  - name: dock-notify",
      "    webhook_configs:",
      `      - url: ${JSON.stringify(`${ctx.service.url}/webhook/alertmanager`)}`,
      "        send_resolved: true",
      "        http_config:",
      "          basic_auth:",
      `            username: ${JSON.stringify(snippet.id)}`,
      `            password: ${JSON.stringify(snippet.secretKey)}`,
    ].join("\n");
    writeFileSync(join(ctx.dir, "alertmanager.yml"), config);
    alertmanager = spawn(
      alertmanagerPath as string,
      [
        `--config.file=${join(ctx.dir, "alertmanager.yml")}`,
        `--storage.path=${join(ctx.dir, "data")}`,
        `--web.listen-address=127.0.0.1:${port}`,
        "--cluster.listen-address=",
        `--web.external-url=${api}`,
      ],
      { stdio: "ignore" },
    );
    await waitFor(
      "Alertmanager ready",
      async () => (await fetch(`${api}/-/ready`).catch(() => undefined))?.ok || undefined,
      30_000,
    );
  });
  afterAll(() => {
    alertmanager?.kill("SIGKILL");
  });

  const postAlert = async (endsAt?: string) => {
    const response = await fetch(`${api}/api/v2/alerts`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify([
        {
          labels: { alertname: "DiskFull", severity: "critical", instance: "db-1" },
          annotations: { summary: "Disk almost full on db-1", description: "97% used on /var" },
          generatorURL: "http://127.0.0.1:9090/graph?g0.expr=disk",
          ...(endsAt ? { endsAt } : {}),
        },
      ]),
    });
    expect(response.status).toBe(200);
  };

  it("a group raised from warning to critical is edited in place and rings: a reply with sound says so", async () => {
    const fire = async (instance: string, severity: string) => {
      const response = await fetch(`${api}/api/v2/alerts`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify([
          {
            labels: { alertname: "SlowQueries", severity, instance },
            annotations: { summary: `Queries slow on ${instance}` },
          },
        ]),
      });
      expect(response.status).toBe(200);
    };
    const before = (await ctx.sandbox.botMessages(ctx.person)).length;
    await fire("db-1", "warning");
    const fired = await messagesWhen("the warning in the chat", (m) =>
      m.slice(before).some((x: Json) => x.text.includes("SlowQueries")),
    );
    const message = fired.slice(before).find((x: Json) => x.text.includes("SlowQueries"));
    await fire("db-2", "critical");
    const after = await messagesWhen("the group raised, and a reply that rings", (m) =>
      m.some((x: Json) => x.reply_to_message?.message_id === message.message_id),
    );
    const ring = after.find((x: Json) => x.reply_to_message?.message_id === message.message_id);
    expect(ring.text).toMatch(/^⬆ Now urgent: /);
    // With sound: the sandbox marks a message sent without one.
    expect(ring.disable_notification).toBeUndefined();
    const edited = after.find((x: Json) => x.message_id === message.message_id);
    expect(edited.text).toContain("db-2");
    expect(edited.text).toContain("🚨");
    // One message for the group (edited), and the one reply.
    const mine = after.slice(before).filter((x: Json) => x.text.includes("SlowQueries"));
    expect(mine.map((x: Json) => x.message_id === message.message_id || x === ring)).toEqual([true, true]);
  });

  it("an alert fired through Alertmanager's API arrives formatted, and its resolution turns the same message resolved", async () => {
    const before = (await ctx.sandbox.botMessages(ctx.person)).length;
    await postAlert();
    const fired = await messagesWhen("the firing alert in the chat", (m) =>
      m.slice(before).some((x: Json) => x.text.includes("DiskFull")),
    );
    const message = fired.slice(before).find((x: Json) => x.text.includes("DiskFull"));
    expect(message.text).toContain("Disk almost full on db-1");
    expect(message.text).toMatch(/firing/i);

    await postAlert(new Date(Date.now() - 1000).toISOString());
    const after = await messagesWhen("the same message turned resolved", (m) => {
      const same = m.find((x: Json) => x.message_id === message.message_id);
      return same !== undefined && /resolved/i.test(same.text);
    });
    const resolved = after.find((x: Json) => x.message_id === message.message_id);
    expect(resolved.edit_date).toBeDefined();
    expect(resolved.text).toContain("DiskFull");
    // One message for the group, edited in place: no second message.
    expect(after.slice(before).filter((x: Json) => x.text.includes("DiskFull"))).toHaveLength(1);
  });
});

describe.skipIf(apprisePath === undefined)("Apprise", () => {
  const { ctx, messagesWhen } = scene();
  const appriseUrl = (kind: string) => {
    const url = new URL(ctx.service.url);
    return `${kind}://${ctx.dock.id}:${ctx.dock.secretKey}@${url.host}/webhook/apprise`;
  };
  for (const kind of ["json", "form", "xml"]) {
    it(`apprise ${kind}:// delivers title, body and type`, async () => {
      const before = (await ctx.sandbox.botMessages(ctx.person)).length;
      const body = `Backup via ${kind} finished`;
      await run(
        apprisePath as string,
        ["-t", `Nightly ${kind}`, "-b", body, "-n", "warning", appriseUrl(kind)],
        {
          timeout: 30_000,
        },
      );
      const messages = await messagesWhen(`Apprise's ${kind} message in the chat`, (m) =>
        m.slice(before).some((x: Json) => x.text.includes(body)),
      );
      const message = messages.slice(before).find((x: Json) => x.text.includes(body));
      expect(message.text).toContain(`Nightly ${kind}`);
      expect(message.text).toContain("⚠");
    });
  }
});
