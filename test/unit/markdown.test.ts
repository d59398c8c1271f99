import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { escapeMarkdown, markdownParser, markdownToEntities } from "../../src/domain/markdown.ts";
import { entityProblems, type MessageEntity } from "../../src/domain/telegram-format.ts";

const md = await markdownParser();

/** The entities as `type:"covered text"` (plus url or language), easy to read in a table. */
function spans(source: string): { text: string; spans: string[] } {
  const { text, entities } = markdownToEntities(md, source);
  expect(entityProblems(text, entities)).toEqual([]);
  return {
    text,
    spans: entities.map((e: MessageEntity) => {
      const extra = e.url ? ` ${e.url}` : e.language ? ` ${e.language}` : "";
      return `${e.type}:${JSON.stringify(text.slice(e.offset, e.offset + e.length))}${extra}`;
    }),
  };
}

/** A table row: its name, the Markdown, the text it becomes, and its entities as spans() gives them. */
type Row = [string, string, string, string[]];

function renders(_name: string, source: string, text: string, expected: string[]): void {
  const result = spans(source);
  expect(result.text).toBe(text);
  expect(result.spans).toEqual(expected);
}

describe("Markdown to Telegram entities", () => {
  it.each<Row>([
    ["bold", "**Build 42** failed", "Build 42 failed", ['bold:"Build 42"']],
    ["bold with underscores", "__done__", "done", ['bold:"done"']],
    ["italic", "*soon* and _later_", "soon and later", ['italic:"soon"', 'italic:"later"']],
    ["strikethrough (GitHub)", "~~old~~ new", "old new", ['strikethrough:"old"']],
    ["inline code", "on `main`", "on main", ['code:"main"']],
    ["code keeps its markup", "`**not bold**`", "**not bold**", ['code:"**not bold**"']],
    ["fence with a language", "```js\nlet a = 1;\n```", "let a = 1;", ['pre:"let a = 1;" js']],
    ["fence without a language", "```\nplain\n```", "plain", ['pre:"plain"']],
    ["fence with a strange language", "```<script>\nx\n```", "x", ['pre:"x"']],
    ["indented code", "    indented", "indented", ['pre:"indented"']],
    ["link", "[logs](https://ci.example/42)", "logs", ['text_link:"logs" https://ci.example/42']],
    [
      "autolink",
      "<https://ci.example>",
      "https://ci.example",
      ['text_link:"https://ci.example" https://ci.example'],
    ],
    [
      "bare URL (GitHub)",
      "see https://ci.example/1 now",
      "see https://ci.example/1 now",
      ['text_link:"https://ci.example/1" https://ci.example/1'],
    ],
    ["tg link", "[chat](tg://resolve?domain=x)", "chat", ['text_link:"chat" tg://resolve?domain=x']],
    ["a link Telegram refuses stays text", "[run](javascript:alert(1))", "[run](javascript:alert(1))", []],
    ["a mailto link stays text", "[mail](mailto:a@b.example)", "mail", []],
    ["relative link stays text", "[here](/path)", "here", []],
    [
      "image becomes its alt text, linked",
      "![graph](https://img.example/g.png)",
      "graph",
      ['text_link:"graph" https://img.example/g.png'],
    ],
    [
      "image without alt text",
      "![](https://img.example/g.png)",
      "image",
      ['text_link:"image" https://img.example/g.png'],
    ],
    ["heading becomes a bold line", "# Deploy\ndone", "Deploy\n\ndone", ['bold:"Deploy"']],
    ["quote", "> careful\n> now", "careful\nnow", ['blockquote:"careful\\nnow"']],
    ["quote in a quote is one quote", "> a\n> > b", "a\n\nb", ['blockquote:"a\\n\\nb"']],
    ["bullet list", "- one\n- two", "• one\n• two", []],
    ["ordered list keeps its numbers", "3. three\n4. four", "3. three\n4. four", []],
    ["nested list is indented", "- a\n  - b", "• a\n   • b", []],
    ["thematic break", "a\n\n---\n\nb", "a\n\n——————\n\nb", []],
    ["table degrades to its text", "|a|b|\n|-|-|\n|1|2|", "|a|b|\n|-|-|\n|1|2|", []],
    ["line breaks are kept", "one\ntwo", "one\ntwo", []],
    ["paragraphs are kept apart", "one\n\ntwo", "one\n\ntwo", []],
  ])("%s", renders);

  it.each<Row>([
    ["bold inside italic", "*a **b** c*", "a b c", ['italic:"a b c"', 'bold:"b"']],
    [
      "bold inside a link",
      "[**x** y](https://a.example)",
      "x y",
      ['text_link:"x y" https://a.example', 'bold:"x"'],
    ],
    [
      "code inside a link loses its code (Telegram shows none)",
      "[`x`](https://a.example)",
      "x",
      ['text_link:"x" https://a.example'],
    ],
    [
      "a link inside a link is one link",
      "[![i](https://i.example/a.png)](https://a.example)",
      "i",
      ['text_link:"i" https://a.example'],
    ],
    ["adjacent entities", "**a***b*", "ab", ['bold:"a"', 'italic:"b"']],
    [
      "formatting in a quote",
      "> **bold** `code`",
      "bold code",
      ['blockquote:"bold code"', 'bold:"bold"', 'code:"code"'],
    ],
    ["formatting in a list item", "- **a** b", "• a b", ['bold:"a"']],
    ["empty bold", "x ****", "x ****", []],
    ["empty link text", "[](https://a.example) after", "after", []],
  ])("nesting: %s", renders);

  it.each<Row>([
    ["emoji before bold (two units each)", "🚀🚀 **go**", "🚀🚀 go", ['bold:"go"']],
    ["family emoji inside bold", "**👩‍👩‍👧‍👦 ok**", "👩‍👩‍👧‍👦 ok", ['bold:"👩‍👩‍👧‍👦 ok"']],
    ["CJK", "漢字 **かな** `交じり`", "漢字 かな 交じり", ['bold:"かな"', 'code:"交じり"']],
    ["RTL", "שלום **עולם** مرحبا", "שלום עולם مرحبا", ['bold:"עולם"']],
    ["astral in a link", "[𝒳 𝒴](https://a.example)", "𝒳 𝒴", ['text_link:"𝒳 𝒴" https://a.example']],
  ])("offsets in UTF-16: %s", renders);

  it.each<Row>([
    ["an unclosed bold", "**never closed", "**never closed", []],
    ["an unclosed code", "`half", "`half", []],
    ["an unclosed fence runs to the end", "```\nopen", "open", ['pre:"open"']],
    ["stars inside words", "2*3*4 = 24", "234 = 24", ['italic:"3"']],
    ["underscores inside words", "snake_case_name", "snake_case_name", []],
    ["backslash escapes", "\\*not italic\\* \\\\", "*not italic* \\", []],
    [
      "HTML is shown as written",
      "<b>x</b> <script>alert(1)</script>",
      "<b>x</b> <script>alert(1)</script>",
      [],
    ],
    ["an HTML block is shown as written", "<div>\nhi\n</div>", "<div>\nhi\n</div>", []],
    ["character references", "&amp; &lt; &#x1F600;", "& < 😀", []],
    [
      "MarkdownV2 reserved characters are plain",
      "1.5 - (x) = {y} | z! #tag",
      "1.5 - (x) = {y} | z! #tag",
      [],
    ],
  ])("hostile input: %s", renders);

  it("nesting deeper than the parser follows is sent as plain text, losing nothing", () => {
    const source = `${"> ".repeat(40)}deep **text**`;
    const { text, entities } = markdownToEntities(md, source);
    expect(text).toBe(source);
    expect(entities).toEqual([]);
    const lists = Array.from({ length: 30 }, (_, i) => `${"  ".repeat(i)}- item ${i}`).join("\n");
    expect(markdownToEntities(md, lists).text).toContain("item 29");
  });

  it("for any input, the entities are ones Telegram shows as given (property)", () => {
    const markdownish = fc.stringMatching(/^[-*_`~[\]()!<>#|\\:/.a-z0-9 \n😀漢]{0,200}$/u);
    // Markdown's own pieces strung together: nesting, unclosed markers and mixes come up often.
    const pieces = fc
      .array(
        fc.constantFrom(
          "**",
          "*",
          "_",
          "__",
          "~~",
          "`",
          "```",
          "```js\n",
          "\n",
          "\n\n",
          "> ",
          "- ",
          "1. ",
          "  ",
          "[",
          "](https://a.example)",
          "](tg://user?id=42)",
          "](http://localhost:3000)",
          "](tg://a.b)",
          "](javascript:x)",
          "![",
          "<https://x.example>",
          "# ",
          "    ",
          "\\",
          "word",
          " ",
          "😀",
          "漢字",
          "|a|",
          "---",
          "<b>",
          "&amp;",
        ),
        { maxLength: 80 },
      )
      .map((parts) => parts.join(""));
    fc.assert(
      fc.property(
        fc.oneof(markdownish, pieces, fc.string({ unit: "grapheme", maxLength: 200 })),
        (source) => {
          const { text, entities } = markdownToEntities(md, source);
          expect(entityProblems(text, entities)).toEqual([]);
          expect(text.isWellFormed()).toBe(true);
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe("escapeMarkdown", () => {
  /** Strings made of what Markdown reads as syntax, and of what linkify reads as a link. */
  const syntax = fc.string({
    unit: fc.constantFrom(
      ..."!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
      "\n",
      "\r",
      "\r\n",
      " ",
      "  ",
      "    ",
      "\t",
      "\u00a0",
      "\u2028",
      "\ufeff",
      "\u3000",
      "===",
      "---",
      "1. ",
      "1) ",
      "> ",
      "# ",
      "```",
      "~~~",
      "&amp;",
      "&#42;",
      "<b>",
      "<https://a.example>",
      "https://a.example/x",
      "www.a.example",
      "a@b.example",
      "mailto:a@b.example",
      "例え。テスト",
      "ｅｘａｍｐｌｅ．ｃｏｍ",
      "|a|b|",
      "word",
      "😀",
    ),
    maxLength: 60,
  });
  const anything = fc.oneof(
    syntax,
    fc.string({ unit: "grapheme", maxLength: 120 }),
    fc.string({ unit: "binary" }),
  );
  /** U+0000 is the one character Markdown cannot carry (CommonMark makes it U+FFFD). */
  const text = anything.filter((s) => !s.includes("\u0000"));

  it("gives back exactly the text, with no formatting, wherever it is put (property)", () => {
    fc.assert(
      fc.property(text, (value) => {
        const escaped = escapeMarkdown(value);
        // Inside a line, as a line of its own between others, and as the whole message (which is trimmed).
        for (const [source, expected] of [
          [`a${escaped}b`, `a${value}b`],
          [`Title\n${escaped}\nEnd`, `Title\n${value}\nEnd`],
          [escaped, value.trim()],
        ]) {
          expect(markdownToEntities(md, source as string)).toEqual({ text: expected, entities: [] });
        }
      }),
      { numRuns: 3000 },
    );
  });

  it.each([
    ["a setext heading's underline", "Build\n===", "Build\n==="],
    ["a list item", "- one\n+ two\n* three\n1. four", "- one\n+ two\n* three\n1. four"],
    ["indentation that would be code", "    code", "    code"],
    ["blank lines", "a\n\n\nb", "a\n\n\nb"],
    ["an entity", "&lt; &#42;", "&lt; &#42;"],
    [
      "a bare link",
      "see www.evil.example or https://evil.example",
      "see www.evil.example or https://evil.example",
    ],
  ])("keeps %s as text", (_name, value, expected) => {
    expect(markdownToEntities(md, `Alert:\n${escapeMarkdown(value)}`)).toEqual({
      text: `Alert:\n${expected}`,
      entities: [],
    });
  });
});
