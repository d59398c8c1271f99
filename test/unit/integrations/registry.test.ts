import { existsSync, readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { BUILT_IN_FORMATS, DETECTED_WITH_MSG, detectFormat } from "../../../src/integrations/formats.ts";
import { HOOK_TOKEN_PLACEHOLDER, type SettingsTarget } from "../../../src/integrations/settings.ts";
import { integrationSnippets } from "../../../src/integrations/snippets.ts";
import { FIXTURES, notified, received, sent } from "./harness.ts";

/*
 * "Adding a tool is adding a file" (docs/architecture.md): every format in the registry brings
 * what the rest of the product takes from it — a fixture folder of its tool's payloads, a unit
 * test file, a section in docs/integrations.md, settings that name the door its authentication
 * uses, and a sample the console offers that is read as that very format.
 */

const root = new URL("../../../", import.meta.url);
const docs = readFileSync(new URL("docs/integrations.md", root), "utf8");
const headings = docs.split("\n").filter((line) => line.startsWith("## "));

const target: SettingsTarget = {
  base: "https://notify.example.com",
  dockId: "Abcdefghijklmnopqrstuv",
  secretKey: "dnsk_secretsecretsecretsecretsecret1",
  hook: "https://notify.example.com/hook/dnhk_token",
  hookTokenMissing: false,
};

describe.each(BUILT_IN_FORMATS.map((format) => [format.name, format] as const))("%s", (name, format) => {
  it("has a fixture folder of its tool's payloads and a unit test file", () => {
    const folder = new URL(`${name}/`, FIXTURES);
    expect(existsSync(folder) && readdirSync(folder).length > 0, `test/fixtures/integrations/${name}/`).toBe(
      true,
    );
    expect(existsSync(new URL(`test/unit/integrations/${name}.test.ts`, root))).toBe(true);
  });

  it("has a section in docs/integrations.md named after its tool", () => {
    // The tool's name is the label's first word ("Grafana Alerting", "Slack (incoming webhook)").
    const tool = format.label.split(" ")[0] as string;
    expect(
      headings.some((heading) => heading.includes(tool)),
      `a "## …" heading naming ${tool}`,
    ).toBe(true);
  });

  it("writes settings that name the door its authentication uses", () => {
    const settings = format.settings(target);
    expect(settings.tool).not.toBe("");
    expect(settings.where).not.toBe("");
    expect(settings.usesHookUrl).toBe(format.authentication === "hook-url");
    const door = {
      basic: `/webhook/${name}`,
      "hook-url": `${target.hook}/${name}`,
      signature: `${target.base}/webhook/${name}/${target.dockId}`,
      token: `${target.base}/webhook/${name}/${target.dockId}`,
    }[format.authentication];
    expect(settings.text).toContain(door);
    // Basic: the settings carry the Dock's credentials; the others never the secret key.
    if (format.authentication === "basic") expect(settings.text).toContain(target.dockId);
    else expect(settings.text).not.toContain(target.secretKey);
  });

  it("offers a sample that is detected as this format and makes one message within the budgets", async () => {
    // Header names as the HTTP edge hands them on: in lower case.
    const headers = Object.fromEntries(
      Object.entries(format.sample.headers ?? {}).map(([header, value]) => [header.toLowerCase(), value]),
    );
    const inbound = received(format.sample.body, "application/json", headers);
    expect(detectFormat(inbound)?.name).toBe(name);
    await sent(await notified(format, inbound), name);
  });
});

describe("the registry", () => {
  it("reads a body with a msg of its own as a payload only for the formats that say they tell it apart", () => {
    // Each sample with a msg beside its fields: our own message, unless the format is one that
    // recognises its payloads anyway (by a header, or fields beside msg).
    for (const format of BUILT_IN_FORMATS) {
      const body = { ...JSON.parse(format.sample.body), msg: "hello" };
      const headers = Object.fromEntries(
        Object.entries(format.sample.headers ?? {}).map(([header, value]) => [header.toLowerCase(), value]),
      );
      const detected = detectFormat(received(JSON.stringify(body), "application/json", headers))?.name;
      expect(detected, format.name).toBe(format.detectedWithMsg ? format.name : undefined);
    }
    expect([...DETECTED_WITH_MSG].sort()).toEqual(["github", "gitlab", "uptime-kuma"]);
  });

  it("gives the console one snippet per format, in its order, then Home Assistant's and the template's", () => {
    const snippets = integrationSnippets({
      publicUrl: `${target.base}/`,
      dockId: target.dockId,
      secretKey: target.secretKey,
      hookToken: null,
    });
    expect(snippets.map((snippet) => snippet.format)).toEqual([
      ...BUILT_IN_FORMATS.map((format) => format.name),
      "message",
      "template",
    ]);
    // Without a hook token, exactly the settings that use the hook URL say they need one.
    for (const snippet of snippets) {
      expect(snippet.needsHookToken, snippet.format).toBe(snippet.text.includes(HOOK_TOKEN_PLACEHOLDER));
    }
  });
});
