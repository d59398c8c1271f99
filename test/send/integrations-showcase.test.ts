import { createHmac } from "node:crypto";
import { mkdirSync, readFileSync } from "node:fs";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { integrationSnippets } from "../../src/integrations/snippets.ts";
import type { DockWithSecret } from "../../src/store/docks.ts";
import { chromiumPath, launchChromium } from "../helpers/browser.ts";
import { sandboxOf } from "../helpers/delivery-harness.ts";
import { basic, type RunningService, startService } from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON the service and sandbox answered.
type Json = any;

const fixture = (path: string) => readFileSync(`test/fixtures/integrations/${path}`, "utf8");

/**
 * One delivery per tool, sent the way the tool sends it to the URL its console snippet gives
 * (issue "Done when": each tool produces a readable message in the sandbox, no relay), and
 * photographed in the sandbox's chat page for docs/integrations.md (test-results/integrations/).
 */
interface Case {
  format: string;
  /** What the message must show (a readable message, not a dump of the payload). */
  shows: RegExp[];
  request(
    dock: DockWithSecret,
    hookToken: string,
  ): { path: string; headers: Record<string, string>; body: string };
}

const json = { "Content-Type": "application/json" };

const CASES: Case[] = [
  {
    format: "alertmanager",
    shows: [/FIRING/i, /summary|Disk|latency/i],
    request: (dock) => ({
      path: "/webhook/alertmanager",
      headers: { ...json, Authorization: basic(dock.id, dock.secretKey) },
      body: fixture("alertmanager/firing.json"),
    }),
  },
  {
    format: "grafana",
    shows: [/firing/i],
    request: (dock) => ({
      path: "/webhook/grafana",
      headers: { ...json, Authorization: basic(dock.id, dock.secretKey) },
      body: fixture("grafana/firing.json"),
    }),
  },
  {
    format: "github",
    shows: [/pushed|push|branch/i],
    request: (dock) => {
      const body = fixture("github/push-new-branch.json");
      return {
        path: `/webhook/github/${dock.id}`,
        headers: {
          ...json,
          "X-GitHub-Event": "push",
          "X-Hub-Signature-256": `sha256=${createHmac("sha256", dock.secretKey).update(body).digest("hex")}`,
        },
        body,
      };
    },
  },
  {
    format: "gitlab",
    shows: [/merge request/i],
    request: (dock) => ({
      path: `/webhook/gitlab/${dock.id}`,
      headers: { ...json, "X-Gitlab-Event": "Merge Request Hook", "X-Gitlab-Token": dock.secretKey },
      body: fixture("gitlab/merge_request.json"),
    }),
  },
  {
    format: "uptime-kuma",
    shows: [/down/i],
    request: (_dock, token) => ({
      path: `/hook/${token}/uptime-kuma`,
      headers: json,
      body: fixture("uptime-kuma/down.json"),
    }),
  },
  {
    format: "apprise",
    shows: [/./],
    request: (dock) => ({
      path: "/webhook/apprise",
      headers: { ...json, Authorization: basic(dock.id, dock.secretKey) },
      body: fixture("apprise/failure.json"),
    }),
  },
  {
    format: "slack",
    shows: [/./],
    request: (_dock, token) => ({
      path: `/hook/${token}/slack`,
      headers: json,
      body: fixture("slack/attachments.json"),
    }),
  },
  {
    format: "template",
    shows: [/BILLING/, /down/],
    request: (dock) => ({
      path: "/webhook/template",
      headers: { ...json, Authorization: basic(dock.id, dock.secretKey) },
      body: JSON.stringify({
        service: "billing",
        status: "down",
        detail: "5xx above 2% for 5 minutes",
        dashboard: "https://grafana.example.com/d/billing",
      }),
    }),
  },
  {
    format: "ntfy",
    shows: [/./],
    request: (_dock, token) => ({
      path: `/hook/${token}/ntfy`,
      headers: json,
      body: fixture("ntfy/actions.json"),
    }),
  },
];

describe.skipIf(!chromiumPath)("every integration's message, as the sandbox shows it", () => {
  let service: RunningService;
  let dock: DockWithSecret;
  let token: string;
  let browser: Browser;
  let page: Page;
  let person: number;
  let sandbox: ReturnType<typeof sandboxOf>;

  beforeAll(async () => {
    // Not about the pace: Telegram's limits off, so no message waits out a chat's one a second.
    service = await startService(
      "sqlite",
      { AUTH_FAILURES_PER_MINUTE: "0", DOCK_RATE_BURST: "0" },
      { pace: "unpaced" },
    );
    dock = await service.app.docks.create(1, { name: "Ops", link: null, description: null });
    token = (await service.app.docks.rotateHookToken(dock.id)) as string;
    // The template docs/integrations.md shows.
    await service.app.docks.updateIntegrations(dock.id, {
      template: {
        title: "{{ service | upcase }}",
        text: "{{ status }}: {{ detail }}",
        key: "svc-{{ service }}",
        priority: "{% if status == 'down' %}high{% endif %}",
        tags: "{% if status == 'down' %}warning{% endif %}",
        buttons: "Dashboard | {{ dashboard }}",
      },
    });
    sandbox = sandboxOf(service);
    person = await sandbox.person("Ada");
    await service.subscriptions.subscribe(dock.id, person, "private");
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 480, height: 2000 } });
    await page.goto(`${service.url}/sandbox`);
    // The chat page is up (and its first render paid for) before the first case waits on it.
    await page.getByRole("log", { name: "Messages" }).waitFor({ timeout: 60_000 });
    mkdirSync("test-results/integrations", { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await service?.close();
  });

  it("every format's snippet names the door these requests use", () => {
    const snippets = integrationSnippets({
      publicUrl: service.url,
      dockId: dock.id,
      secretKey: dock.secretKey,
      hookToken: token,
    });
    for (const { format, request } of CASES) {
      const snippet = snippets.find((s) => s.format === format);
      const { path } = request(dock, token);
      // Apprise's snippet is an apprise URL (json://id:key@host/webhook/apprise): its path is the door.
      expect(snippet?.text, format).toContain(
        format === "apprise" ? "/webhook/apprise" : `${service.url}${path}`,
      );
    }
  });

  for (const testCase of CASES) {
    // A browser on a busy machine: as console-e2e's, more time than a plain request's test gets.
    it(`${testCase.format}: delivered readable, shown in the sandbox`, { timeout: 90_000 }, async () => {
      const before = (await sandbox.botMessages(person)).length;
      const { path, headers, body } = testCase.request(dock, token);
      const response = await fetch(`${service.url}${path}`, { method: "POST", headers, body });
      const answer = (await response.json()) as Json;
      expect(response.status, JSON.stringify(answer)).toBe(202);
      expect(answer.format).toBe(testCase.format);
      const message = await waitFor(
        `the ${testCase.format} message in the chat`,
        async () => (await sandbox.botMessages(person)).at(before),
        60_000,
      );
      for (const pattern of testCase.shows) expect(message.text).toMatch(pattern);
      // Readable: no JSON or markup leaked into the text.
      expect(message.text).not.toMatch(/[{}]"|<\/?[a-z]+>|&(amp|lt|gt);/);
      const shown = page.getByRole("log", { name: "Messages" }).locator("li").last();
      await shown.getByText(message.text.split("\n").at(-1).slice(0, 30), { exact: false }).waitFor();
      await shown.screenshot({ path: `test-results/integrations/${testCase.format}.png` });
    });
  }
});
