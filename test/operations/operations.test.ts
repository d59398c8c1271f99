import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pkg from "../../package.json" with { type: "json" };
import { CLI_ERRORS } from "../../src/cli/errors.ts";
import { ERRORS } from "../../src/http/errors.ts";
import { dialects, type RunningService, startService } from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

const DIALECTS = await dialects();

describe.each(DIALECTS)("operations endpoints on %s", (dialect) => {
  let service: RunningService;
  beforeAll(async () => {
    service = await startService(dialect);
  });
  afterAll(async () => service.close());

  it("/healthz and /readyz answer 200", async () => {
    expect(await (await fetch(`${service.url}/healthz`)).json()).toEqual({ ok: true, version: pkg.version });
    const readyz = async () =>
      (await (await fetch(`${service.url}/readyz`)).json()) as { checks: { bot: { state: string } } };
    await waitFor("the bot running", async () => (await readyz()).checks.bot.state === "running");
    expect(await readyz()).toMatchObject({
      ok: true,
      checks: { database: "ok", bot: { state: "running", mode: "polling" }, telegram: { state: "up" } },
    });
  });

  it("/openapi.json is OpenAPI 3.1 describing both send endpoints", async () => {
    const doc = (await (await fetch(`${service.url}/openapi.json`)).json()) as {
      openapi: string;
      paths: Record<
        string,
        {
          post?: { requestBody?: unknown; responses?: Record<string, unknown> };
          get?: { responses?: Record<string, unknown> };
        }
      >;
    };
    expect(doc.openapi).toBe("3.1.0");
    const webhookBody = doc.paths["/webhook"]?.post?.requestBody as { content: Record<string, unknown> };
    expect(Object.keys(webhookBody.content)).toEqual(["application/json", "text/plain"]);
    // The operations endpoints too, with the readiness check's 503.
    expect(Object.keys(doc.paths["/readyz"]?.get?.responses ?? {})).toEqual(["200", "503"]);
    expect(doc.paths["/metrics"]?.get).toBeDefined();
    // Every message option, with examples; /webhook's ntfy headers and query parameters too.
    // biome-ignore lint/suspicious/noExplicitAny: the document read as plain JSON.
    const operation = (path: string): any => doc.paths[path]?.post;
    const pingJson = operation("/ping").requestBody.content["application/json"];
    const pingSchema = pingJson.schema as { properties: Record<string, unknown> };
    expect(Object.keys(pingSchema.properties)).toEqual(
      expect.arrayContaining([
        "title",
        "format",
        "priority",
        "silent",
        "tags",
        "buttons",
        "click",
        "link_preview",
      ]),
    );
    expect(pingJson.example).toMatchObject({ format: "markdown", priority: "high" });
    const parameters: { in: string; name: string; description: string }[] = operation("/webhook").parameters;
    expect(parameters.filter((p) => p.in === "header").map((p) => p.name)).toEqual(
      expect.arrayContaining([
        "title",
        "priority",
        "tags",
        "markdown",
        "click",
        "actions",
        "idempotency-key",
      ]),
    );
    const query = parameters.filter((p) => p.in === "query");
    expect(query.map((p) => p.name)).toEqual(
      expect.arrayContaining(["title", "priority", "tags", "markdown", "click", "actions"]),
    );
    // ntfy's short names, in the description of the parameter they stand for.
    const described = (name: string) =>
      (query.find((p) => p.name === name) as { description: string }).description;
    expect(described("title")).toContain("Also ti, t.");
    expect(described("markdown")).toContain("Also md.");
    for (const path of ["/ping", "/webhook"]) {
      expect(doc.paths[path]?.post?.requestBody).toBeDefined();
      expect(Object.keys(doc.paths[path]?.post?.responses ?? {})).toEqual(
        expect.arrayContaining(["202", "400", "401", "413", "415", "422", "429"]),
      );
    }
  });

  it("/docs serves the human-readable reference", async () => {
    const response = await fetch(`${service.url}/docs`);
    expect(response.status).toBe(200);
    expect(await response.text()).toContain("<html");
  });

  it("/metrics counts accepted messages in Prometheus format", async () => {
    const dock = await service.app.docks.create(3, { name: "Metered", link: null, description: null });
    await fetch(`${service.url}/ping`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ dock_id: dock.id, secret_key: dock.secretKey, msg: "count me" }),
    });
    const text = await (await fetch(`${service.url}/metrics`)).text();
    expect(text).toMatch(/dock_notify_messages_accepted_total\{endpoint="ping"\} 1/);
  });

  it("/metrics names Node's process metrics under the service's prefix, once", async () => {
    const text = await (await fetch(`${service.url}/metrics`)).text();
    // prom-client's own names (process_…, nodejs_…) with our prefix in front, as docs/deployment.md lists.
    expect(text).toMatch(/^dock_notify_process_cpu_seconds_total \d/m);
    expect(text).toMatch(/^dock_notify_process_resident_memory_bytes \d/m);
    expect(text).toMatch(/^dock_notify_nodejs_eventloop_lag_seconds \d/m);
    expect(text).not.toContain("process_process");
  });

  it("/readyz answers 503 in the error format when the database is gone", async () => {
    const other = await startService(dialect);
    await other.db.close();
    const response = await fetch(`${other.url}/readyz`);
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ ok: false, error: { code: "not_ready" } });
    await other.app.server.close();
  });
});

describe("error catalogue", () => {
  it("docs/api.md lists every error code with its status", () => {
    const doc = readFileSync(join(import.meta.dirname, "..", "..", "docs", "api.md"), "utf8");
    for (const [code, { status }] of Object.entries(ERRORS)) {
      expect(doc).toMatch(new RegExp(`\\| \`${code}\` \\| ${status} \\|`));
    }
    for (const [code, { exitCode }] of Object.entries(CLI_ERRORS)) {
      expect(doc).toMatch(new RegExp(`\\| \`${code}\` \\| ${exitCode} \\|`));
    }
  });
});

describe("configuration docs", () => {
  it("docs/configuration.md documents every environment variable the service reads", () => {
    const source = ["runtime/config.ts"]
      .map((f) => readFileSync(join(import.meta.dirname, "..", "..", "src", f), "utf8"))
      .join("\n");
    const names = new Set([...source.matchAll(/\(env, "([A-Z][A-Z0-9_]+)"/g)].map((m) => m[1] as string));
    for (const m of source.matchAll(/text\(env, "([A-Z][A-Z0-9_]+)"\)/g)) names.add(m[1] as string);
    expect(names.size).toBeGreaterThan(20);
    const doc = readFileSync(join(import.meta.dirname, "..", "..", "docs", "configuration.md"), "utf8");
    const missing = [...names].filter((name) => !doc.includes(`| \`${name}\` |`));
    expect(missing).toEqual([]);
  });
});
