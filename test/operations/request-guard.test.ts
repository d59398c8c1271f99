import { once } from "node:events";
import { createServer, request as httpRequest, type Server } from "node:http";
import { connect } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { SANDBOX_BOT_TOKEN } from "../../src/telegram/sandbox-bot.ts";
import { chromiumPath, launchChromium } from "../helpers/browser.ts";
import { sandboxOf } from "../helpers/delivery-harness.ts";
import { type RunningService, startService } from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

interface Answer {
  status: number;
  code?: string;
}

/**
 * One request over node:http (fetch will not send a Host header of our choosing), answered with
 * its status and error code.
 */
function request(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const sent = httpRequest(
      url,
      { method: init.method ?? "GET", headers: init.headers ?? {} },
      (response) => {
        let text = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => {
          text += chunk;
        });
        response.on("end", () => resolve(answerOf(response.statusCode ?? 0, text)));
      },
    );
    sent.on("error", reject);
    sent.end(init.body);
  });
}

function answerOf(status: number, text: string): Answer {
  let code: string | undefined;
  try {
    code = (JSON.parse(text) as { error?: { code?: string } }).error?.code;
  } catch {
    // a page, not JSON
  }
  return { status, ...(code ? { code } : {}) };
}

/**
 * The browser-facing parts (console, sandbox, API reference) answer only to our own host names,
 * and refuse what a browser sends on another site's behalf; machines (no Sec-Fetch-*, no Origin)
 * and the machine endpoints are not affected.
 */
describe("requests from other sites", () => {
  let service: RunningService;
  let webhookInfo: () => Promise<string>;
  beforeAll(async () => {
    service = await startService("sqlite", { ALLOWED_HOSTS: "notify.internal" });
    webhookInfo = async () => {
      const response = await fetch(`${service.url}/sandbox/bot${SANDBOX_BOT_TOKEN}/getWebhookInfo`);
      return ((await response.json()) as { result: { url: string } }).result.url;
    };
  });
  afterAll(async () => service.close());

  const port = () => new URL(service.url).port;

  it("a Host that is not ours (DNS rebinding) is refused on the console, the sandbox and the reference", async () => {
    for (const path of [
      "/console/api/info",
      "/sandbox/api/users",
      `/sandbox/bot${SANDBOX_BOT_TOKEN}/getMe`,
      "/docs",
      "/console/",
    ]) {
      expect(await request(`${service.url}${path}`, { headers: { host: `evil.test:${port()}` } })).toEqual({
        status: 421,
        code: "host_not_allowed",
      });
    }
    // Ours: PUBLIC_URL's, the loopback names, ALLOWED_HOSTS.
    for (const host of [`127.0.0.1:${port()}`, `localhost:${port()}`, `[::1]:${port()}`, "notify.internal"]) {
      expect((await request(`${service.url}/console/api/info`, { headers: { host } })).status).toBe(200);
    }
  });

  it("machine endpoints answer whatever the Host: clients and probes use addresses and internal names", async () => {
    const headers = { host: "10.1.2.3:8080" };
    expect((await request(`${service.url}/healthz`, { headers })).status).toBe(200);
    expect((await request(`${service.url}/readyz`, { headers })).status).toBe(200);
    expect((await request(`${service.url}/metrics`, { headers })).status).toBe(200);
    const dock = await service.app.docks.create(1, { name: "Machines", link: null, description: null });
    const ping = await request(`${service.url}/ping`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({ dock_id: dock.id, secret_key: dock.secretKey, msg: "by address" }),
    });
    expect(ping.status).toBe(202);
  });

  it("a request without a Host header: machine routes answer, the others say so in the error format", async () => {
    const { hostname, port: portNumber } = new URL(service.url);
    const raw = async (path: string) => {
      const socket = connect(Number(portNumber), hostname);
      let text = "";
      socket.setEncoding("utf8");
      socket.on("data", (chunk: string) => {
        text += chunk;
      });
      socket.write(`GET ${path} HTTP/1.1\r\nConnection: close\r\n\r\n`);
      await once(socket, "close");
      return text;
    };
    expect(await raw("/healthz")).toMatch(/^HTTP\/1\.1 200 /);
    const consoleAnswer = await raw("/console/api/info");
    expect(consoleAnswer).toMatch(/^HTTP\/1\.1 421 /);
    expect(consoleAnswer).toContain('"code":"host_not_allowed"');
  });

  it("cross-site requests to the sandbox and the console API are refused; the browser's own and machines' pass", async () => {
    const people = sandboxOf(service);
    const person = await people.person("Vera");
    const block = (headers: Record<string, string>) =>
      request(`${service.url}/sandbox/api/users/${person}/block`, { method: "POST", headers });
    const setWebhook = (headers: Record<string, string>) =>
      request(
        `${service.url}/sandbox/bot${SANDBOX_BOT_TOKEN}/setWebhook?url=${encodeURIComponent("http://evil.test/hook")}`,
        { headers },
      );
    const refused = { status: 403, code: "cross_site_request" };
    const crossSiteHeaders: Record<string, string>[] = [
      { "sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors" },
      { "sec-fetch-site": "same-site", "sec-fetch-mode": "cors" },
      { origin: "http://evil.test" },
      { origin: "null" },
    ];
    for (const headers of crossSiteHeaders) {
      expect(await block(headers)).toEqual(refused);
      expect(await setWebhook(headers)).toEqual(refused);
      expect(await request(`${service.url}/console/api/info`, { headers })).toEqual(refused);
    }
    // The same paths spelled with %-escapes (the router decodes them) are the same routes.
    expect(
      await request(`${service.url}/%73andbox/api/users/${person}/block`, {
        method: "POST",
        headers: { "sec-fetch-site": "cross-site" },
      }),
    ).toEqual(refused);
    expect(
      await request(`${service.url}/%73andbox/bot${SANDBOX_BOT_TOKEN}/setWebhook?url=http://evil.test/hook`, {
        headers: { origin: "http://evil.test" },
      }),
    ).toEqual(refused);
    expect(
      await request(`${service.url}/console/%61pi/info`, { headers: { origin: "http://evil.test" } }),
    ).toEqual(refused);
    // A link clicked on another site may open the sandbox's chat page, not change anything.
    expect(
      (
        await request(`${service.url}/sandbox?start=hello`, {
          headers: { "sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate" },
        })
      ).status,
    ).toBe(200);
    expect(await setWebhook({ "sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate" })).toEqual(
      refused,
    );
    expect(await webhookInfo()).toBe("");
    const chat = (await people.control("GET", `/chats/${person}`)) as { blocked: boolean };
    expect(chat.blocked).toBe(false);

    // The console's own page, and curl, get through.
    expect(
      (await request(`${service.url}/console/api/info`, { headers: { "sec-fetch-site": "same-origin" } }))
        .status,
    ).toBe(200);
    expect(
      (await request(`${service.url}/console/api/info`, { headers: { origin: service.url } })).status,
    ).toBe(200);
    expect((await block({})).status).toBe(200);
  });
});

describe.skipIf(!chromiumPath)("requests from other sites, in Chromium", () => {
  let service: RunningService;
  let webhookInfo: () => Promise<string>;
  let attacker: Server;
  let attackerUrl: string;
  beforeAll(async () => {
    service = await startService("sqlite");
    webhookInfo = async () => {
      const response = await fetch(`${service.url}/sandbox/bot${SANDBOX_BOT_TOKEN}/getWebhookInfo`);
      return ((await response.json()) as { result: { url: string } }).result.url;
    };
    // Another site (localhost vs 127.0.0.1: another host, so another site, for the browser).
    attacker = createServer((incoming, response) => {
      const target = service.url;
      const victim = new URL(incoming.url ?? "/", "http://attacker").searchParams.get("victim") ?? "0";
      response.writeHead(200, { "content-type": "text/html" });
      response.end(`<!doctype html><body>
<img src="${target}/sandbox/bot${SANDBOX_BOT_TOKEN}/setWebhook?url=http://evil.test/hook">
<form id="f" method="post" action="${target}/sandbox/api/users/${victim}/block"></form>
<script>
  fetch("${target}/sandbox/api/users", { method: "POST", mode: "no-cors", body: '{"first_name":"Mallory"}',
    headers: { "content-type": "text/plain" } });
  fetch("${target}/console/api/info", { mode: "no-cors" });
  setTimeout(() => document.getElementById("f").submit(), 300);
</script></body>`);
    });
    await new Promise<void>((resolve) => attacker.listen(0, "127.0.0.1", resolve));
    const address = attacker.address();
    attackerUrl = `http://localhost:${typeof address === "object" && address ? address.port : 0}/`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => attacker.close(() => resolve()));
    await service.close();
  });

  it("a page on another site cannot redirect the bot's webhook, add people or block one", async () => {
    const people = sandboxOf(service);
    const victim = await people.person("Walt");
    const before = ((await people.control("GET", "/users")) as unknown[]).length;
    const webhookRefusals = () =>
      service.logs.lines.filter((line) => {
        const entry = JSON.parse(line) as { url?: string; status?: number };
        return entry.url?.includes("/setWebhook") && entry.status === 403;
      }).length;
    const refusedBefore = webhookRefusals();
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const refusals: number[] = [];
      page.on("response", (response) => {
        if (response.url().startsWith(service.url)) refusals.push(response.status());
      });
      await page.goto(`${attackerUrl}?victim=${victim}`);
      // The page's form post navigates to our refusal: wait for it, and for the others. (The
      // image's answer is not shown to the page at all, so it is read from the service's log.)
      await waitFor("the attack's requests answered", () => refusals.length >= 3, 15_000);
      expect(refusals.every((status) => status === 403)).toBe(true);
      await waitFor("the image's request refused", () => webhookRefusals() > refusedBefore);
    } finally {
      await browser.close();
    }
    expect(await webhookInfo()).toBe("");
    expect(((await people.control("GET", "/users")) as unknown[]).length).toBe(before);
    expect(((await people.control("GET", `/chats/${victim}`)) as { blocked: boolean }).blocked).toBe(false);
  });
});

/**
 * Sandbox mode: the sandbox acts as any simulated person (and so can sign in to the console), so
 * it answers only requests made on this machine — not another machine's, and not anyone's that a
 * reverse proxy in front carries to it.
 */
describe("the sandbox behind a reverse proxy", () => {
  let service: RunningService | undefined;
  afterEach(async () => {
    await service?.close();
    service = undefined;
  });

  it("refuses requests a proxy carries (the public name, a forwarding header) unless SANDBOX_ALLOW_REMOTE", async () => {
    service = await startService("sqlite", { PUBLIC_URL: "https://notify.example.test" });
    const running = service;
    const refused = { status: 403, code: "sandbox_not_local" };
    const create = (headers: Record<string, string>) =>
      request(`${running.url}/sandbox/api/users`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ first_name: "Remote" }),
      });
    expect(await create({ host: "notify.example.test" })).toEqual(refused);
    expect(await create({ "x-forwarded-for": "203.0.113.7" })).toEqual(refused);
    expect(await create({ forwarded: "for=203.0.113.7" })).toEqual(refused);
    expect(await request(`${running.url}/sandbox`, { headers: { host: "notify.example.test" } })).toEqual(
      refused,
    );
    // The console is the proxy's to serve; only its sandbox is not.
    expect(
      (await request(`${running.url}/console/api/info`, { headers: { host: "notify.example.test" } })).status,
    ).toBe(200);
    // On this machine it works, and so does the service's own bot.
    expect((await create({})).status).toBe(201);
    await waitFor("the bot running", async () => {
      const body = (await (await fetch(`${running.url}/readyz`)).json()) as {
        checks: { bot: { state: string } };
      };
      return body.checks.bot.state === "running";
    });

    await running.close();
    service = await startService("sqlite", {
      PUBLIC_URL: "https://notify.example.test",
      SANDBOX_ALLOW_REMOTE: "true",
    });
    expect(
      (
        await request(`${service.url}/sandbox/api/users`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            host: "notify.example.test",
            "x-forwarded-for": "203.0.113.7",
          },
          body: JSON.stringify({ first_name: "Remote" }),
        })
      ).status,
    ).toBe(201);
  });
});
