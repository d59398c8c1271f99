import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { type ParsedFormat, readFormat } from "../src/domain/message-options.ts";
import { PayloadThread, THREAD_TEXT_FROM } from "../src/http/payload-thread.ts";

/*
 * A long formatted text is read in the payload thread, a short one on the event loop: where a text
 * is read must never change what it becomes, nor which texts are refused and why.
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
    const hasty = new PayloadThread({ deadlineMs: 1 });
    try {
      const refused = await outcome(() => hasty.read("markdown", "**_".repeat(5461)));
      expect(refused).toEqual({
        error:
          "OptionsError: msg: took too long to read as Markdown: stopped after 1 ms. Send a shorter text, or it as plain text.",
      });
      const short = "**_".repeat(Math.floor((THREAD_TEXT_FROM - 1) / 3));
      expect(await hasty.read("markdown", short)).toEqual(await readFormat("markdown", short));
      // And the next long text gets a new thread (stopped again: nothing meets this deadline).
      expect(await outcome(() => hasty.read("html", "<b>x</b>".repeat(1000)))).toEqual({
        error:
          "OptionsError: msg: took too long to read as Telegram HTML: stopped after 1 ms. Send a shorter text, or it as plain text.",
      });
    } finally {
      await hasty.close();
    }
  });
});
