import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningService, startService } from "../helpers/harness.ts";

describe("console page and security headers", () => {
  let service: RunningService;
  beforeAll(async () => {
    service = await startService("sqlite");
  });
  afterAll(async () => service.close());

  it("/ and /console send visitors to the console", async () => {
    for (const path of ["/", "/console"]) {
      const response = await fetch(`${service.url}${path}`, { redirect: "manual" });
      await response.arrayBuffer();
      expect(response.status).toBe(302);
      expect(response.headers.get("location")).toBe("/console/");
    }
  });

  it("/console/ is the built app under a strict policy: own scripts and styles only, no framing", async () => {
    const response = await fetch(`${service.url}/console/`);
    expect(response.status).toBe(200);
    const html = await response.text();
    expect(html).toContain('<div id="root"></div>');
    expect(html).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
    const csp = response.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self';");
    expect(csp).toContain("style-src 'self';");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("object-src 'none'");
    expect(csp).not.toContain("unsafe-inline");
    expect(csp).not.toContain("upgrade-insecure-requests");
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(response.headers.get("referrer-policy")).toBe("no-referrer");
    expect(response.headers.get("cache-control")).toBe("no-cache");

    const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    const asset = await fetch(`${service.url}${script}`);
    // Read to the end: a body left unread holds its connection (the server's write waits on it),
    // and closing the service then waits for that connection (the afterAll hook once hung 60 s).
    await asset.arrayBuffer();
    expect(asset.status).toBe(200);
    expect(asset.headers.get("cache-control")).toContain("immutable");
  });

  it("/docs has a policy of its own: Swagger UI's files only, no inline code, no framing", async () => {
    const response = await fetch(`${service.url}/docs`);
    await response.arrayBuffer();
    expect(response.status).toBe(200);
    const csp = response.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("script-src 'self';");
    expect(csp).toContain("style-src 'self';");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain("unsafe-inline");
    expect(csp).not.toContain("https:");
    // Over http (as here), asking the browser to upgrade would break the page.
    expect(csp).not.toContain("upgrade-insecure-requests");
  });

  it("the sandbox chat page allows exactly its own inline script and style, by hash", async () => {
    const response = await fetch(`${service.url}/sandbox`);
    const html = await response.text();
    const csp = response.headers.get("content-security-policy") ?? "";
    const hash = (text: string) => `'sha256-${createHash("sha256").update(text).digest("base64")}'`;
    const script = /<script type="module">([\s\S]*?)<\/script>/.exec(html)?.[1] ?? "";
    const style = /<style>([\s\S]*?)<\/style>/.exec(html)?.[1] ?? "";
    expect(script.length).toBeGreaterThan(1000);
    expect(csp).toContain(`script-src ${hash(script)}`);
    expect(csp).toContain(`style-src ${hash(style)}`);
    expect(csp).not.toContain("unsafe-inline");
  });

  it("the send API's JSON answers get the short set meant for answers nobody renders", async () => {
    for (const [path, init] of [
      ["/ping", { method: "POST", body: "{}" }],
      ["/webhook", { method: "POST", body: "{}" }],
      ["/ping", { method: "GET" }],
      ["/messages/msg_x", {}],
    ] as const) {
      const response = await fetch(`${service.url}${path}`, init);
      await response.arrayBuffer();
      expect(response.status, path).toBeGreaterThanOrEqual(400);
      expect(response.headers.get("content-security-policy")).toBe(
        "default-src 'none'; frame-ancestors 'none'",
      );
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
      expect(response.headers.get("cache-control")).toBe("no-store");
      // The page set's browser-only headers are left out.
      expect(response.headers.get("x-dns-prefetch-control")).toBeNull();
      expect(response.headers.get("cross-origin-opener-policy")).toBeNull();
    }
    // Everything else keeps the page set.
    const health = await fetch(`${service.url}/healthz`);
    await health.arrayBuffer();
    expect(health.headers.get("content-security-policy")).toContain("default-src 'self'");
    expect(health.headers.get("x-dns-prefetch-control")).toBe("off");
  });

  it("https deployments also upgrade requests and send HSTS, on pages and API answers", async () => {
    const https = await startService("sqlite", { PUBLIC_URL: "https://notify.example.com" });
    try {
      const response = await fetch(`${https.url}/console/`);
      await response.arrayBuffer();
      expect(response.headers.get("content-security-policy")).toContain("upgrade-insecure-requests");
      expect(response.headers.get("strict-transport-security")).toMatch(/max-age=\d+/);
      const api = await fetch(`${https.url}/ping`, { method: "POST", body: "{}" });
      await api.arrayBuffer();
      expect(api.headers.get("strict-transport-security")).toMatch(/max-age=\d+/);
    } finally {
      await https.close();
    }
  });
});
