import { readdirSync, readFileSync } from "node:fs";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { type ParsedFormat, readFormat } from "../../src/domain/message-options.ts";
import { inboundOf } from "../../src/http/inbound.ts";
import { PayloadThread, THREAD_TEXT_FROM } from "../../src/http/payload-thread.ts";
import { detectFormat, formatNamed } from "../../src/integrations/formats.ts";

/*
 * A long formatted text or a large body is read in the payload thread, a short one on the event
 * loop: where it is read must never change what it becomes, nor what is refused and why.
 */

/** What reading a text gives: its text and entities, or the error's class and message. */
async function outcome(read: () => Promise<unknown>): Promise<unknown> {
  try {
    return { read: await read() };
  } catch (error) {
    return { error: `${(error as Error).name}: ${(error as Error).message}` };
  }
}

/** The pieces every format's syntax is made of, and text around them. */
const piece = fc.constantFrom(
  "*",
  "**",
  "_",
  "__",
  "~~",
  "`",
  "```js\n",
  "\n```\n",
  "[",
  "]",
  "](https://a.example/x)",
  "<https://b.example>",
  "https://c.example/y ",
  "![alt](https://d.example/i.png)",
  "<b>",
  "</b>",
  "<i>",
  "</i>",
  "<code>",
  "</code>",
  '<a href="https://e.example/">',
  "</a>",
  "<blockquote>",
  "</blockquote>",
  "&amp;",
  "&lt;",
  "||",
  "\\",
  "\\*",
  "- ",
  "1. ",
  "> ",
  "# ",
  "    ",
  "\n",
  "\n\n",
  " ",
  "word",
  "😀",
  "漢字",
  ".",
  "!",
);

/** A text of at least THREAD_TEXT_FROM units (read in the thread): pieces, repeated as needed. */
const longText = fc.array(piece, { minLength: 1, maxLength: 600 }).map((pieces) => {
  const text = pieces.join("");
  return text.repeat(Math.ceil(THREAD_TEXT_FROM / text.length));
});

describe("the payload thread", () => {
  const thread = new PayloadThread();
  afterAll(async () => thread.close());

  it.each<ParsedFormat>(["markdown", "html", "telegram_markdownv2"])(
    "reads long %s exactly as the event loop does: the same text and entities, or the same error (property)",
    async (format) => {
      await fc.assert(
        fc.asyncProperty(longText, async (source) => {
          expect(source.length).toBeGreaterThanOrEqual(THREAD_TEXT_FROM);
          const here = await outcome(() => readFormat(format, source));
          const there = await outcome(() => thread.read(format, source));
          expect(there).toEqual(here);
        }),
        { numRuns: 60 },
      );
    },
  );

  it("stops a text that overruns its deadline and refuses it, naming msg; a shorter text is read on the event loop, whatever the deadline", async () => {
    const hasty = new PayloadThread({ deadlineMs: 0 });
    try {
      const refused = await outcome(() => hasty.read("markdown", "**_".repeat(5461)));
      expect(refused).toEqual({
        error:
          "OptionsError: msg: took too long to read as Markdown: stopped after 0 ms. Send a shorter text, or it as plain text.",
      });
      const short = "**_".repeat(Math.floor((THREAD_TEXT_FROM - 1) / 3));
      expect(await hasty.read("markdown", short)).toEqual(await readFormat("markdown", short));
      // And the next long text gets a new thread (stopped again: nothing meets this deadline).
      expect(await outcome(() => hasty.read("html", "<b>x</b>".repeat(1000)))).toEqual({
        error:
          "OptionsError: msg: took too long to read as Telegram HTML: stopped after 0 ms. Send a shorter text, or it as plain text.",
      });
    } finally {
      await hasty.close();
    }
  });
});

describe("what waits for the payload thread", () => {
  const settled = async (jobs: Promise<unknown>[]) =>
    (await Promise.allSettled(jobs)).map((job) =>
      job.status === "fulfilled" ? "done" : (job.reason as { code?: string }).code,
    );
  const count = (outcomes: unknown[], outcome: unknown) => outcomes.filter((o) => o === outcome).length;

  it("a burst of 200 long texts at once is taken whole (a Dock may send 60 at once)", async () => {
    const thread = new PayloadThread();
    try {
      const text = "Some *emphasis* and **bold** with a [link](https://example.com).\n".repeat(256);
      const outcomes = await settled(Array.from({ length: 200 }, () => thread.read("markdown", text)));
      expect(count(outcomes, "done")).toBe(200);
    } finally {
      await thread.close();
    }
  });

  it("past 32 renders, or 32 MiB of bodies, waiting: 503 busy", async () => {
    const thread = new PayloadThread();
    try {
      // All asked for before the thread has started: every one of them waits.
      const renders = Array.from({ length: 40 }, () =>
        thread.render({ text: "{{ a }}" }, { text: '{"a":1}', as: "json" }),
      );
      const body = { bytes: Buffer.alloc(1024 * 1024, " "), mediaType: "application/json", headers: {} };
      const bodies = Array.from({ length: 40 }, () => thread.readBody(body, "alertmanager", false));
      const [rendered, read] = await Promise.all([settled(renders), settled(bodies)]);
      expect([count(rendered, "done"), count(rendered, "busy")]).toEqual([32, 8]);
      // (Blank bodies: read, and refused as not JSON; the ones that could not wait are busy.)
      expect([count(read, "invalid_json"), count(read, "busy")]).toEqual([32, 8]);
    } finally {
      await thread.close();
    }
  });
});

describe("the payload thread reads bodies as the event loop does", () => {
  const thread = new PayloadThread();
  afterAll(async () => thread.close());

  /** What the event loop makes of a body (inboundOf, then the format named or detected), as readBody answers. */
  const onTheLoop = (
    text: string,
    mediaType: string,
    headers: Record<string, string>,
    named: string | null,
  ) =>
    outcome(async () => {
      const inbound = inboundOf(text, mediaType, headers);
      const format = named ?? detectFormat(inbound)?.name;
      const convert = format === undefined ? undefined : formatNamed(format)?.convert;
      if (convert === undefined) return { kind: "payload", format };
      try {
        return { kind: "payload", format, result: await convert(inbound) };
      } catch (error) {
        return { kind: "payload", format, result: error };
      }
    });
  const inTheThread = (
    text: string,
    mediaType: string,
    headers: Record<string, string>,
    named: string | null,
  ) => outcome(() => thread.readBody({ bytes: Buffer.from(text), mediaType, headers }, named, false));

  const fixtures = new URL("../fixtures/integrations/", import.meta.url);
  const cases = readdirSync(fixtures, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((folder) =>
      readdirSync(new URL(`${folder.name}/`, fixtures)).map((file) => ({ format: folder.name, file })),
    );

  it.each(cases)("$format/$file: the same conversion, named and detected", async ({ format, file }) => {
    const text = readFileSync(new URL(`${format}/${file}`, fixtures), "utf8");
    const mediaType = file.endsWith(".xml")
      ? "application/xml"
      : file.endsWith(".form.txt")
        ? "application/x-www-form-urlencoded"
        : "application/json";
    const headers: Record<string, string> =
      format === "github" ? { "x-github-event": file.split("-")[0]?.replace(".json", "") ?? "" } : {};
    for (const named of [format, null]) {
      const here = await onTheLoop(text, mediaType, headers, named);
      expect(here).toMatchObject({ read: { format: named ?? expect.any(String) } });
      expect(await inTheThread(text, mediaType, headers, named)).toEqual(here);
    }
  });

  it("any JSON, read as any format or detected: the same conversion or the same refusal (property)", async () => {
    const formats = [...new Set(cases.map((c) => c.format))];
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.jsonValue().map((value) => JSON.stringify(value)),
          fc.string(),
          fc.constantFrom(
            ...cases.map((c) => readFileSync(new URL(`${c.format}/${c.file}`, fixtures), "utf8")),
          ),
        ),
        fc.constantFrom("application/json", "application/x-www-form-urlencoded", "text/plain"),
        fc.option(fc.constantFrom(...formats), { nil: null }),
        async (text, mediaType, named) => {
          expect(await inTheThread(text, mediaType, {}, named)).toEqual(
            await onTheLoop(text, mediaType, {}, named),
          );
        },
      ),
      { numRuns: 150 },
    );
  });

  it("picks a message's own fields out of a /webhook body, and nothing else", async () => {
    const body = {
      msg: "Backup done",
      title: "Nightly",
      key: "backup",
      priority: "high",
      extra: "x".repeat(70_000),
    };
    const read = await thread.readBody(
      { bytes: Buffer.from(JSON.stringify(body)), mediaType: "application/json", headers: {} },
      null,
      true,
    );
    expect(read).toEqual({
      kind: "message",
      fields: { msg: "Backup done", title: "Nightly", key: "backup", priority: "high" },
    });
  });
});
