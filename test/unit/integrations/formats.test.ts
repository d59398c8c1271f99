import { readdirSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { OptionsError } from "../../../src/domain/message-options.ts";
import {
  ALL_FORMAT_NAMES,
  BUILT_IN_FORMATS,
  DETECTED_WITH_MSG,
  detectFormat,
  FORMAT_NAMES,
  formatNamed,
} from "../../../src/integrations/formats.ts";
import { type Inbound, PayloadError } from "../../../src/integrations/inbound.ts";
import { FIXTURES, fixtureText, json, received, sent } from "./harness.ts";

/** A fixture as the HTTP edge reads it, with the headers its tool sends (GitHub names its event). */
function fixture(format: string, file: string): Inbound {
  const headers: Record<string, string> =
    format === "github" ? { "x-github-event": file.split("-")[0] as string } : {};
  const mediaType = file.endsWith(".xml")
    ? "application/xml"
    : file.endsWith(".form.txt")
      ? "application/x-www-form-urlencoded"
      : "application/json";
  return received(fixtureText(format, file), mediaType, headers);
}

const everyFixture = readdirSync(FIXTURES, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .flatMap((dir) => readdirSync(new URL(`${dir.name}/`, FIXTURES)).map((file) => [dir.name, file] as const));

/** Every path into a JSON value: ["alerts", 0, "labels", "severity"], … */
function paths(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  if (typeof value !== "object" || value === null) return [prefix];
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v] as const) : Object.entries(value);
  return [prefix, ...entries.flatMap(([key, v]) => paths(v, [...prefix, key]))];
}

/** A copy of `body` with the value at `path` replaced. */
function replaced(body: unknown, path: (string | number)[], value: unknown): unknown {
  if (path.length === 0) return value;
  const copy = structuredClone(body) as Record<string | number, unknown>;
  let node = copy;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  node[path.at(-1) as string | number] = value;
  return copy;
}

/** What Telegram-bound text a hostile payload might hold: markup, entities, lone surrogates, NUL. */
const hostileText = fc.oneof(
  fc.string({
    unit: fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)),
    maxLength: 40,
  }),
  fc.constantFrom(
    "<b>",
    "</i>",
    "&amp;",
    "&",
    "\u0000",
    "http://localhost:9090",
    "https://example.com/a?b=<c>",
    "*_~`<@U1>",
  ),
  fc.string({ maxLength: 5000 }),
);
const hostileValue = fc.oneof(
  hostileText,
  fc.jsonValue({ maxDepth: 2 }),
  fc.array(hostileText, { maxLength: 3 }),
  fc.dictionary(hostileText, hostileText, { maxKeys: 3 }),
);

/** What the honest-links rule says of a link whose text names another address (domain/deceptive-links.ts). */
const DECEPTIVE_LINK =
  /: a link whose text is an address must go to that address's host\.$|names a Telegram chat but the link goes elsewhere/;

describe("the built-in formats", () => {
  it("a payload with any field replaced by anything is a message Telegram takes, or a PayloadError — never a crash", async () => {
    const samples = everyFixture.filter(([format, file]) => fixture(format, file).body !== undefined);
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...samples),
        fc.nat(),
        hostileValue,
        async ([format, file], pick, value) => {
          const input = fixture(format, file);
          const all = paths(input.body);
          const path = all[pick % all.length] as (string | number)[];
          const body = replaced(input.body, path, value);
          let conversion: Awaited<ReturnType<NonNullable<ReturnType<typeof formatNamed>>["convert"]>>;
          try {
            conversion = await (formatNamed(format)?.convert({ ...input, body }) ?? Promise.reject());
          } catch (error) {
            expect(error, `${format} ${JSON.stringify(path)}`).toBeInstanceOf(PayloadError);
            return;
          }
          if (conversion.kind === "skip") return;
          try {
            await sent(conversion.notification);
          } catch (error) {
            // The one refusal a payload may earn after conversion, by design (issue 35, I10): a
            // link or button whose text is an address on another host (the door answers 400
            // invalid_fields). Any other option a format made that the service refuses is a bug.
            if (!(error instanceof OptionsError)) throw error;
            for (const problem of error.problems) {
              expect(problem.message, `${format} ${JSON.stringify(path)}`).toMatch(DECEPTIVE_LINK);
            }
          }
        },
      ),
      { numRuns: 600 },
    );
  });

  it("are named as URLs name them, and template is the one more", () => {
    expect(FORMAT_NAMES).toEqual([
      "github",
      "gitlab",
      "grafana",
      "alertmanager",
      "uptime-kuma",
      "apprise",
      "ntfy",
      "slack",
    ]);
    expect(ALL_FORMAT_NAMES).toEqual([...FORMAT_NAMES, "template"]);
    for (const format of BUILT_IN_FORMATS) expect(format.label).not.toBe("");
  });

  it("are found by name, whatever its case; other names find nothing", () => {
    expect(formatNamed("alertmanager")?.name).toBe("alertmanager");
    expect(formatNamed(" Uptime-Kuma ")?.name).toBe("uptime-kuma");
    expect(formatNamed("template")).toBeUndefined();
    expect(formatNamed("nagios")).toBeUndefined();
    expect(formatNamed("constructor")).toBeUndefined();
  });

  it("every tool's sample payload is detected as its own format", () => {
    expect(everyFixture.length).toBeGreaterThan(30);
    for (const [format, file] of everyFixture) {
      expect(detectFormat(fixture(format, file))?.name, `${format}/${file}`).toBe(format);
    }
  });

  it("every tool's sample payload becomes a message Telegram takes in one part (or a skip that says why)", async () => {
    for (const [format, file] of everyFixture) {
      const conversion = await (formatNamed(format)?.convert(fixture(format, file)) ?? Promise.reject());
      if (conversion.kind === "skip") {
        expect(conversion.reason, `${format}/${file}`).not.toBe("");
        continue;
      }
      await sent(conversion.notification, `${format}/${file}`);
    }
  });

  it("a body of our own (a msg) is never taken for another format's, except by their unmistakable marks", () => {
    expect(detectFormat(json({ msg: "hello" }))).toBeUndefined();
    expect(detectFormat(json({ msg: "hello", topic: "t", message: "m" }))).toBeUndefined();
    expect(detectFormat(json({ msg: "hello", text: "x" }))).toBeUndefined();
    expect(detectFormat(json({ msg: "down", heartbeat: null, monitor: null }))?.name).toBe("uptime-kuma");
    expect(detectFormat(json({ msg: "x" }, { "x-github-event": "push" }))?.name).toBe("github");
    expect([...DETECTED_WITH_MSG].sort()).toEqual(["github", "gitlab", "uptime-kuma"]);
  });

  it("an ordinary JSON body, or one that is not an object, is no format's", () => {
    for (const body of [
      { message: "hello", level: 3 },
      { title: "x" },
      {},
      [],
      null,
      "text",
      5,
      { alerts: [] },
    ]) {
      expect(detectFormat(json(body)), JSON.stringify(body)).toBeUndefined();
    }
    expect(
      detectFormat({ body: undefined, text: "plain words", mediaType: "text/plain", headers: {} }),
    ).toBeUndefined();
  });

  it("a header names the format before any body field does", () => {
    const slackLike = { text: "deploy done" };
    expect(detectFormat(json(slackLike))?.name).toBe("slack");
    expect(detectFormat(json(slackLike, { "x-gitlab-event": "Push Hook" }))?.name).toBe("gitlab");
    expect(detectFormat(json(slackLike, { "x-github-event": "push" }))?.name).toBe("github");
  });

  it("tells Grafana's group from Alertmanager's though they share their shape", () => {
    const grafana = fixture("grafana", "firing.json");
    expect(detectFormat(grafana)?.name).toBe("grafana");
    const { orgId: _, ...plain } = grafana.body as Record<string, unknown>;
    expect(detectFormat(json({ ...plain, version: "4" }))?.name).toBe("alertmanager");
  });
});
