import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import SwaggerParser from "@apidevtools/swagger-parser";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOCK_ID_PATTERN, MESSAGE_ID_PATTERN } from "../../src/domain/ids.ts";
import { EXAMPLE } from "../../src/http/api-examples.ts";
import { ERRORS, type ErrorCode } from "../../src/http/errors.ts";
import { chromiumPath, freePort, launchChromium } from "../helpers/browser.ts";
import { basic, dialects, type RunningService, startService } from "../helpers/harness.ts";

// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document, read as plain JSON.
type Json = any;

const DIALECTS = await dialects();
const run = promisify(execFile);
const METHODS = ["get", "put", "post", "delete", "patch"];

/** The public routes, each with its methods: what the reference must show, and nothing else. */
const PUBLIC_OPERATIONS = [
  "post /ping",
  "post /webhook",
  "post /webhook/{format}",
  "post /webhook/{format}/{dock_id}",
  "post /hook/{token}",
  "put /hook/{token}",
  "post /hook/{token}/{format}",
  "put /hook/{token}/{format}",
  "get /messages",
  "get /messages/{message_id}",
  "patch /messages/{message_id}",
  "delete /messages/{message_id}",
  "get /healthz",
  "get /readyz",
  "get /metrics",
];

/** Every operation of the document, as "method path" with its object. */
function operations(doc: Json): [string, Json][] {
  return Object.entries(doc.paths as Record<string, Json>).flatMap(([path, item]) =>
    METHODS.filter((method) => item[method]).map((method): [string, Json] => [
      `${method} ${path}`,
      item[method],
    ]),
  );
}

/** The commands in a description's code blocks. */
function commandsOf(description: string): string[] {
  return [...description.matchAll(/```sh\n([\s\S]*?)\n```/g)].map((match) => match[1] as string);
}

const hasExample = (schema: Json) =>
  schema.example !== undefined ||
  (Array.isArray(schema.examples) && schema.examples.length > 0) ||
  (Array.isArray(schema.enum) && schema.enum.length === 1) ||
  "const" in schema;

/** An object with properties (or a list of them, or a union holding one): its properties carry the examples. */
const isComposite = (schema: Json): boolean =>
  Object.keys(schema.properties ?? {}).length > 0 ||
  (schema.items !== undefined && isComposite(schema.items)) ||
  [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])].some(isComposite);

const exemplified = (schema: Json): boolean =>
  hasExample(schema) ||
  isComposite(schema) ||
  [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])].some(exemplified);

/** Where in `schema` (at any depth) a property has no example. */
function withoutExamples(schema: Json, at: string, found: string[] = []): string[] {
  for (const branch of [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])]) withoutExamples(branch, at, found);
  if (schema.items) withoutExamples(schema.items, `${at}[]`, found);
  for (const [name, property] of Object.entries((schema.properties ?? {}) as Record<string, Json>)) {
    if (!exemplified(property)) found.push(`${at}.${name}`);
    withoutExamples(property, `${at}.${name}`, found);
  }
  return found;
}

/**
 * Runs a command as its reader would, in a shell. curl writes the answer's status after its body,
 * told so by the .curlrc in `curlHome`: the commands stay as the reference shows them.
 */
async function runCommand(command: string, curlHome: string): Promise<{ status: number; body: string }> {
  const { stdout } = await run("sh", ["-c", command], {
    env: { ...process.env, CURL_HOME: curlHome },
    timeout: 60_000,
  });
  const cut = stdout.lastIndexOf("\n");
  return { status: Number(stdout.slice(cut + 1)), body: stdout.slice(0, cut) };
}

describe.each(DIALECTS)("the API reference on %s", (dialect) => {
  let service: RunningService;
  let doc: Json;
  let curlHome: string;
  const metricsToken = randomBytes(16).toString("hex");

  beforeAll(async () => {
    // The commands name PUBLIC_URL: it is where the service listens, so they can be run as written.
    const port = await freePort();
    service = await startService(dialect, {
      PORT: String(port),
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      METRICS_TOKEN: metricsToken,
    });
    doc = await (await fetch(`${service.url}/openapi.json`)).json();
    curlHome = mkdtempSync(join(tmpdir(), "dock-notify-curl-"));
    writeFileSync(join(curlHome, ".curlrc"), 'silent\nshow-error\nwrite-out = "\\n%{http_code}"\n');
  });
  afterAll(async () => {
    rmSync(curlHome, { recursive: true, force: true });
    await service?.close();
  });

  it("is a valid OpenAPI 3.1 document", async () => {
    expect(doc.openapi).toBe("3.1.0");
    // The parser dereferences what it is given: a copy.
    await expect(SwaggerParser.validate(structuredClone(doc))).resolves.toBeDefined();
  });

  it("keeps the rules the validator checks only for Swagger 2.0: unique operation IDs, declared path parameters", () => {
    const ids = operations(doc).map(([, operation]) => operation.operationId as string);
    expect(new Set(ids).size).toBe(ids.length);
    // An `_` in an operation's address makes Swagger UI log an error when the address is opened.
    for (const id of ids) expect(id).toMatch(/^[a-z][A-Za-z0-9]*$/);
    for (const [name, operation] of operations(doc)) {
      const inPath = [...name.matchAll(/\{(\w+)\}/g)].map((match) => match[1]).sort();
      const declared = (operation.parameters ?? [])
        .filter((parameter: Json) => parameter.in === "path")
        .map((parameter: Json) => parameter.name)
        .sort();
      expect(declared, name).toEqual(inPath);
    }
  });

  it("shows every public route and none of the console's, whatever routes it has", async () => {
    expect(
      operations(doc)
        .map(([name]) => name)
        .sort(),
    ).toEqual([...PUBLIC_OPERATIONS].sort());
    expect(
      Object.keys(doc.paths).filter((path) => !path.startsWith("/") || path.includes("console")),
    ).toEqual([]);
    // The console's routes exist (and answer), they are only left out of the reference.
    expect((await fetch(`${service.url}/console/api/info`)).status).toBe(200);
  });

  it("gives every operation a summary, a description with a command, and a section that says what it holds", () => {
    const sections = new Map((doc.tags as { name: string; description: string }[]).map((t) => [t.name, t]));
    expect([...sections.keys()]).toEqual(["Send", "Messages", "Integrations", "Operations"]);
    for (const tag of sections.values()) expect(tag.description.length).toBeGreaterThan(40);
    for (const [name, operation] of operations(doc)) {
      expect(operation.summary, name).toMatch(/\w{3}/);
      expect(operation.description, name).toMatch(/\w{3}/);
      expect(operation.tags, name).toHaveLength(1);
      expect(sections.has(operation.tags[0]), `${name}: ${operation.tags[0]}`).toBe(true);
      const commands = commandsOf(operation.description);
      expect(commands.length, name).toBeGreaterThan(0);
      for (const command of commands) expect(command, name).toContain(`curl`);
      expect(operation["x-codeSamples"], name).toEqual(
        commands.map((source) => ({ lang: "Shell", label: "curl", source })),
      );
    }
  });

  it("has an example on every parameter and every field of every body and answer", () => {
    const missing: string[] = [];
    for (const [name, operation] of operations(doc)) {
      for (const parameter of operation.parameters ?? []) {
        if (parameter.example === undefined && !hasExample(parameter.schema ?? {})) {
          missing.push(`${name} ${parameter.in} ${parameter.name}`);
        }
      }
      const bodies = Object.entries(operation.requestBody?.content ?? {}).map(([type, media]) => [
        `${name} body ${type}`,
        media,
      ]);
      const answers = Object.entries(operation.responses as Record<string, Json>).flatMap(
        ([status, answer]) =>
          Object.entries(answer.content ?? {}).map(([type, media]) => [`${name} ${status} ${type}`, media]),
      );
      for (const [where, media] of [...bodies, ...answers] as [string, Json][]) {
        const shown =
          media.example !== undefined || media.examples !== undefined || exemplified(media.schema);
        if (!shown) missing.push(where);
        withoutExamples(media.schema, where, missing);
      }
    }
    expect(missing).toEqual([]);
  });

  it("shows real shapes, and placeholders where a secret goes", () => {
    expect(EXAMPLE.dockId).toMatch(DOCK_ID_PATTERN);
    expect(EXAMPLE.messageId).toMatch(MESSAGE_ID_PATTERN);
    // Never mistaken for a real key or token (33 letters and digits after the prefix).
    expect(EXAMPLE.secretKey).toMatch(/^dnsk_/);
    expect(EXAMPLE.secretKey).not.toMatch(/^dnsk_[A-Za-z0-9]{33}$/);
    expect(EXAMPLE.hookToken).toMatch(/^dnhk_/);
    expect(EXAMPLE.hookToken).not.toMatch(/^dnhk_[A-Za-z0-9]{33}$/);
    expect(EXAMPLE.sendCredential).toMatch(/^dnsc_/);
    expect(EXAMPLE.sendCredential).not.toMatch(/^dnsc_[A-Za-z0-9]{33}$/);
    expect(JSON.stringify(doc)).not.toMatch(/"example":"string"|"examples":\["string"\]/);
  });

  it("gives each error answer an example of each code it may carry, with that code's status", () => {
    for (const [name, operation] of operations(doc)) {
      for (const [status, answer] of Object.entries(operation.responses as Record<string, Json>)) {
        if (Number(status) < 400) continue;
        const media = answer.content["application/json"];
        const examples: Json[] = media.examples
          ? Object.values(media.examples).map((example: Json) => example.value)
          : [media.example];
        expect(examples.length, `${name} ${status}`).toBeGreaterThan(0);
        for (const example of examples) {
          const code = example?.error?.code as ErrorCode;
          expect(ERRORS[code]?.status, `${name} ${status} ${code}`).toBe(Number(status));
          expect(example.ok).toBe(false);
        }
      }
    }
    // The statuses a sender meets, on the send routes.
    for (const path of ["/ping", "/webhook"]) {
      expect(Object.keys(doc.paths[path].post.responses)).toEqual(
        expect.arrayContaining(["202", "400", "401", "413", "415", "422", "429", "503"]),
      );
    }
    expect(Object.keys(doc.paths["/messages/{message_id}"].get.responses)).toEqual(
      expect.arrayContaining(["200", "401", "404", "429", "503"]),
    );
  });

  it("answers a command copied unchanged with what to put in place of its placeholders", async () => {
    const commandFor = (path: string, method: string) =>
      commandsOf(doc.paths[path][method].description)[0] as string;
    for (const [path, method, placeholders] of [
      ["/ping", "post", `${EXAMPLE.dockId} and ${EXAMPLE.secretKey} are placeholders`],
      ["/webhook", "post", `${EXAMPLE.dockId} and ${EXAMPLE.secretKey} are placeholders`],
      ["/hook/{token}", "post", `${EXAMPLE.hookToken} is a placeholder`],
    ] as const) {
      const answer = await runCommand(commandFor(path, method), curlHome);
      expect(answer.status, path).toBe(401);
      expect(JSON.parse(answer.body).error.message, path).toContain(placeholders);
    }
  });

  it("has commands that work as written, once a real Dock's ID and secrets replace the placeholders", async () => {
    const dock = await service.app.docks.create(7, { name: "Deploys", link: null, description: null });
    const hookToken = (await service.app.docks.rotateHookToken(dock.id)) as string;
    const { secret: sendCredential } = await service.app.docks.credentials.create(dock.id, "GitLab", "send");
    // The message the commands about messages name: sent with the key they name.
    const sent = await fetch(`${service.url}/webhook`, {
      method: "POST",
      headers: { authorization: basic(dock.id, dock.secretKey), "content-type": "application/json" },
      body: JSON.stringify({ msg: "Deploy of api started", key: EXAMPLE.key }),
    });
    const { message_id: messageId } = (await sent.json()) as { message_id: string };
    const real = (command: string) =>
      command
        .replaceAll(EXAMPLE.dockId, dock.id)
        .replaceAll(EXAMPLE.secretKey, dock.secretKey)
        .replaceAll(EXAMPLE.hookToken, hookToken)
        .replaceAll(EXAMPLE.sendCredential, sendCredential)
        .replaceAll(EXAMPLE.messageId, messageId)
        .replaceAll(EXAMPLE.metricsToken, metricsToken);
    const commands = [
      ...new Set(operations(doc).flatMap(([, operation]) => commandsOf(operation.description))),
    ];
    for (const command of commands) {
      expect(command).toContain(service.url);
      expect(command).not.toContain(dock.secretKey);
      expect(command).not.toContain(sendCredential);
    }
    // A deletion last: the commands before it change the message it deletes.
    const ordered = [
      ...commands.filter((command) => !command.includes("-X DELETE")),
      ...commands.filter((command) => command.includes("-X DELETE")),
    ];
    const answers: { command: string; status: number; body: string }[] = [];
    for (const command of ordered) answers.push({ command, ...(await runCommand(real(command), curlHome)) });
    for (const answer of answers) {
      expect(answer.status, `${answer.command}\n${answer.body}`).toBeGreaterThanOrEqual(200);
      expect(answer.status, `${answer.command}\n${answer.body}`).toBeLessThan(300);
      if (answer.command.includes("/metrics")) continue;
      const body = JSON.parse(answer.body);
      // Read as the message or payload it is, never skipped as one with nothing to show.
      expect(body, answer.command).toMatchObject({ ok: true });
      expect(body.skipped, answer.command).toBeUndefined();
    }
    const formats = answers.map(
      (answer) => JSON.parse(answer.body.startsWith("{") ? answer.body : "{}").format,
    );
    expect(formats).toEqual(expect.arrayContaining(["alertmanager", "gitlab", "slack"]));
    expect(answers.find((answer) => answer.command.includes("/metrics"))?.body).toContain(
      "dock_notify_messages_accepted_total",
    );
  });
});

describe.skipIf(!chromiumPath)("the API reference in Chromium", () => {
  let service: RunningService;
  let browser: Browser;
  beforeAll(async () => {
    service = await startService("sqlite");
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await service?.close();
  });

  it("/docs shows /openapi.json's sections with real examples, no console routes, and no policy violation", {
    timeout: 120_000,
  }, async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const problems: string[] = [];
    page.on("console", (message) => {
      if (message.type() === "error" || message.type() === "warning") problems.push(message.text());
    });
    page.on("pageerror", (error) => problems.push(error.message));
    // A CSP violation is an event too, whether or not the browser also logs it.
    await page.addInitScript(
      "document.addEventListener('securitypolicyviolation', (event) => console.error('CSP: ' + event.violatedDirective + ' ' + event.sample));",
    );
    const read = page.waitForResponse((response) => new URL(response.url()).pathname === "/openapi.json");
    await page.goto(`${service.url}/docs`);
    // The page reads the service's own document, at its own address.
    expect(await (await read).json()).toEqual(await (await fetch(`${service.url}/openapi.json`)).json());

    const sections = page.locator(".opblock-tag");
    await sections.first().waitFor();
    expect(await sections.locator("span").first().innerText()).toBe("Send");
    expect((await sections.allInnerTexts()).map((text) => text.split("\n")[0])).toEqual([
      "Send",
      "Messages",
      "Integrations",
      "Operations",
    ]);
    const paths = await page.locator(".opblock-summary-path").allInnerTexts();
    expect(paths).toContain("/ping");
    expect(paths.filter((path) => path.includes("console"))).toEqual([]);

    // Every operation opened: its examples are the document's, never Swagger UI's "string".
    const operations = page.locator(".opblock");
    const count = await operations.count();
    expect(count).toBe(PUBLIC_OPERATIONS.length);
    for (let i = 0; i < count; i++) {
      await operations.nth(i).locator(".opblock-summary-control").click();
      await operations.nth(i).locator(".opblock-body").waitFor();
    }
    const ping = await page.locator("#operations-Send-postPing").innerText();
    expect(ping).toContain(`curl -X POST '${service.config.publicUrl}/ping'`);
    expect(ping).toContain(`"dock_id": "${EXAMPLE.dockId}"`);
    expect(await page.locator("#swagger-ui").innerText()).not.toContain('"string"');
    // An operation's address, opened as a reader shares it: the operation open, nothing logged.
    await page.goto(`${service.url}/docs#/Messages/patchMessagesMessageId`);
    await page.locator("#operations-Messages-patchMessagesMessageId .opblock-body").waitFor();
    expect(problems).toEqual([]);
    await page.close();
  });
});
