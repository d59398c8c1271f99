import { describe, expect, it } from "vitest";
import {
  type MessageContent,
  type MessageOptions,
  prepareContent,
} from "../../src/domain/message-options.ts";
import {
  cutPoint,
  type RenderedPart,
  renderNotification,
  splitText,
  TELEGRAM_TEXT_LIMIT,
} from "../../src/domain/render.ts";
import { entityProblems } from "../../src/domain/telegram-format.ts";

const dock = { name: "Deploys", link: null };

describe("rendering a notification", () => {
  it("puts the Dock's name in bold on the first line, then the text exactly", () => {
    const [part, ...rest] = renderNotification(dock, "Line 1\nLine 2 🚀 <b>not bold</b> *nor this*");
    expect(rest).toEqual([]);
    expect(part?.text).toBe("Deploys\nLine 1\nLine 2 🚀 <b>not bold</b> *nor this*");
    expect(part?.entities).toEqual([{ type: "bold", offset: 0, length: 7 }]);
  });

  it("counts the header in UTF-16 units (an emoji name is two units per emoji)", () => {
    const [part] = renderNotification({ name: "🚀 Ops", link: null }, "x");
    expect(part?.entities[0]).toEqual({ type: "bold", offset: 0, length: 6 });
  });

  it("offers the link as a button under the last part", () => {
    const parts = renderNotification({ name: "CI", link: "https://ci.example.com/builds" }, "y".repeat(9000));
    expect(parts.length).toBeGreaterThan(1);
    expect(parts.at(-1)?.reply_markup).toEqual({
      inline_keyboard: [[{ text: "Open ci.example.com", url: "https://ci.example.com/builds" }]],
    });
    expect(parts[0]?.reply_markup).toBeUndefined();
  });

  it("keeps a text that fits exactly in one message, and splits one unit more", () => {
    const room = TELEGRAM_TEXT_LIMIT - "Deploys\n".length;
    expect(renderNotification(dock, "a".repeat(room))).toHaveLength(1);
    const parts = renderNotification(dock, "a".repeat(room + 1));
    expect(parts).toHaveLength(2);
    expect(parts.map((p) => p.text.split("\n")[0])).toEqual(["Deploys (1/2)", "Deploys (2/2)"]);
  });

  it.each([
    ["ASCII words", () => "word ".repeat(2000)],
    ["lines", () => "a line of text\n".repeat(700)],
    ["emoji only", () => "😀".repeat(5000)],
    ["family emoji (ZWJ sequences)", () => "👩‍👩‍👧‍👦".repeat(1500)],
    ["CJK", () => "漢字かな交じり文".repeat(1200)],
    ["RTL", () => "שלום עולם مرحبا بالعالم ".repeat(400)],
    ["4096 units", () => "b".repeat(4096)],
    ["4097 units", () => "b".repeat(4097)],
  ])("splits %s into parts within the limit, in order, losing nothing", (_name, make) => {
    const text = make();
    const parts = renderNotification(dock, text);
    for (const part of parts) {
      expect(part.text.length).toBeLessThanOrEqual(TELEGRAM_TEXT_LIMIT);
      expect(part.text.isWellFormed()).toBe(true);
    }
    const bodies = parts.map((p) => p.text.slice(p.text.indexOf("\n") + 1));
    expect(bodies.join("")).toBe(text);
  });

  it("never cuts inside a surrogate pair at the cut point", () => {
    const text = `${"a".repeat(99)}😀${"b".repeat(50)}`;
    // The emoji straddles unit 100: cutting at 100 would split it.
    const cut = cutPoint(text, 100);
    expect(cut).toBe(99);
    expect(splitText(text, 100).every((piece) => piece.isWellFormed())).toBe(true);
  });

  it("prefers a line break, then a space, to a hard cut", () => {
    expect(cutPoint(`${"a".repeat(70)}\n${"b".repeat(50)}`, 100)).toBe(71);
    expect(cutPoint(`${"a".repeat(70)} ${"b".repeat(50)}`, 100)).toBe(71);
    expect(cutPoint("c".repeat(150), 100)).toBe(100);
  });
});

describe("rendering very long texts", () => {
  it("keeps every part within the limit when there are 100 parts or more (three-digit numbers)", () => {
    const text = "z".repeat(4090 * 120);
    const parts = renderNotification({ name: "Big", link: null }, text);
    expect(parts.length).toBeGreaterThanOrEqual(100);
    for (const part of parts) expect(part.text.length).toBeLessThanOrEqual(TELEGRAM_TEXT_LIMIT);
    expect(parts.at(-1)?.text.startsWith(`Big (${parts.length}/${parts.length})\n`)).toBe(true);
  });
});

describe("rendering a rich notification", () => {
  const content = async (msg: string, options: MessageOptions) =>
    (await prepareContent(msg, options)) as MessageContent;
  /** Each part's entities as `type:"text"`, and the check that Telegram shows them as given. */
  const shown = (part: RenderedPart | undefined) => {
    expect(entityProblems(part?.text ?? "", part?.entities ?? [])).toEqual([]);
    return (part?.entities ?? []).map(
      (e) => `${e.type}:${JSON.stringify(part?.text.slice(e.offset, e.offset + e.length))}`,
    );
  };

  it("the issue's example: marker, Dock name, emoji and title, formatted text, link", async () => {
    const msg = "**Build 42** failed on `main`\n[logs](https://ci.example/42)";
    const [part, ...rest] = renderNotification(
      { name: "Deploys", link: null },
      msg,
      await content(msg, { format: "markdown", title: "CI", priority: "high", tags: ["warning"] }),
    );
    expect(rest).toEqual([]);
    expect(part?.text).toBe("❗ Deploys\n⚠️ CI\nBuild 42 failed on main\nlogs");
    expect(shown(part)).toEqual([
      'bold:"❗ Deploys"',
      'bold:"⚠️ CI"',
      'bold:"Build 42"',
      'code:"main"',
      'text_link:"logs"',
    ]);
    expect(part?.entities.at(-1)).toMatchObject({ url: "https://ci.example/42" });
    expect(part?.disable_notification).toBeUndefined();
    expect(part?.link_preview_options).toEqual({ is_disabled: true });
  });

  it("without a title the emoji begin the text; free tags end it as hashtags", async () => {
    const [part] = renderNotification(
      dock,
      "done",
      await content("done", { tags: ["white_check_mark", "nightly"] }),
    );
    expect(part?.text).toBe("Deploys\n✅ done\n\n#nightly");
    expect(shown(part)).toEqual(['bold:"Deploys"', 'hashtag:"#nightly"']);
  });

  it("urgent is marked 🚨; min and low are sent silently; protect_content and link_preview pass on", async () => {
    const [urgent] = renderNotification(dock, "x", await content("x", { priority: "urgent" }));
    expect(urgent?.text.startsWith("🚨 Deploys\n")).toBe(true);
    const [low] = renderNotification(
      dock,
      "x",
      await content("x", { priority: "low", protect_content: true, link_preview: true }),
    );
    expect(low?.text.startsWith("Deploys\n")).toBe(true);
    expect(low).toMatchObject({ disable_notification: true, protect_content: true });
    expect(low?.link_preview_options).toBeUndefined();
  });

  it("buttons: the sender's rows, then Open for click, then the Dock's link, under the last part only", async () => {
    const options = {
      buttons: [
        [{ text: "Logs", url: "https://ci.example/42/log" }],
        [{ text: "Retry", url: "https://ci.example/42/retry" }],
      ],
      click: "https://ci.example/42",
    };
    const parts = renderNotification(
      { name: "CI", link: "https://ci.example" },
      "y".repeat(9000),
      await content("y".repeat(9000), options),
    );
    expect(parts.length).toBe(3);
    expect(parts.slice(0, -1).every((p) => p.reply_markup === undefined)).toBe(true);
    expect(parts.at(-1)?.reply_markup?.inline_keyboard).toEqual([
      [{ text: "Logs", url: "https://ci.example/42/log" }],
      [{ text: "Retry", url: "https://ci.example/42/retry" }],
      [{ text: "Open", url: "https://ci.example/42" }],
      [{ text: "Open ci.example", url: "https://ci.example" }],
    ]);
  });

  it("splits formatted text at 4,096 units with every entity valid in its part, closed and reopened at the cut", async () => {
    // A code block and a bold run that both straddle the first boundary, and emoji around it.
    const msg = `**${"😀 bold ".repeat(300)}**\n\n\`\`\`\n${"code line\n".repeat(400)}\`\`\`\n\n*${"é".repeat(5000)}*`;
    const formatted = await content(msg, { format: "markdown", title: "Long", tags: ["ci"] });
    const parts = renderNotification(dock, msg, formatted);
    expect(parts.length).toBeGreaterThan(2);
    for (const [i, part] of parts.entries()) {
      expect(part.text.length).toBeLessThanOrEqual(TELEGRAM_TEXT_LIMIT);
      expect(part.text.isWellFormed()).toBe(true);
      expect(part.text.startsWith(`Deploys (${i + 1}/${parts.length})\n`)).toBe(true);
      shown(part);
    }
    expect(parts[0]?.text.split("\n")[1]).toBe("Long");
    expect(parts.slice(1).every((p) => !p.text.includes("\nLong\n"))).toBe(true);
    expect(parts.at(-1)?.text.endsWith("\n\n#ci")).toBe(true);
    // The body, reassembled, is the whole text, and each unit keeps the formatting it had.
    const body = `Long\n${formatted.body?.text}\n\n#ci`;
    expect(parts.map((p) => p.text.slice(p.text.indexOf("\n") + 1)).join("")).toBe(body);
    const before = [
      { type: "bold", offset: 0, length: "Long".length },
      ...(formatted.body?.entities ?? []).map((e) => ({ ...e, offset: e.offset + "Long\n".length })),
      { type: "hashtag", offset: body.length - "#ci".length, length: "#ci".length },
    ];
    const kinds = (entities: readonly { type: string; offset: number; length: number }[], at: number) =>
      entities
        .filter((e) => e.offset <= at && at < e.offset + e.length)
        .map((e) => e.type)
        .sort()
        .join(",");
    let start = 0;
    for (const part of parts) {
      const header = part.text.indexOf("\n") + 1;
      const inPart = part.entities
        .filter((e) => e.offset >= header)
        .map((e) => ({ ...e, offset: e.offset - header }));
      const length = part.text.length - header;
      for (let k = 0; k < length; k += 7) expect(kinds(inPart, k)).toBe(kinds(before, start + k));
      start += length;
    }
  });

  it("leaves out the Dock's link button when Telegram would refuse it (a link saved before links were checked)", () => {
    const [part] = renderNotification({ name: "Dev", link: "http://localhost:3000" }, "x");
    expect(part?.reply_markup).toBeUndefined();
  });

  it("ends a part early rather than send more than 100 entities: no formatting is lost", async () => {
    const msg = Array.from({ length: 300 }, (_, i) => `**${i}**`).join(" ");
    const formatted = await content(msg, { format: "markdown" });
    const parts = renderNotification(dock, msg, formatted);
    expect(parts.length).toBeGreaterThanOrEqual(4);
    for (const part of parts) {
      expect(part.entities.length).toBeLessThanOrEqual(100);
      shown(part);
    }
    // Every bold number arrives bold, each part under its own bold header.
    const bold = parts.flatMap((p) =>
      p.entities.slice(1).map((e) => p.text.slice(e.offset, e.offset + e.length)),
    );
    expect(bold).toEqual(Array.from({ length: 300 }, (_, i) => String(i)));
  });

  it("keeps a code block whole across the part that the entity limit ends early", async () => {
    const items = Array.from({ length: 60 }, (_, i) => `- *item* \`${i}\``).join("\n");
    const code = Array.from({ length: 60 }, (_, i) => `line ${String(i).padStart(3, "0")}`).join("\n");
    const msg = `${items}\n\n\`\`\`python\n${code}\n\`\`\``;
    const parts = renderNotification(dock, msg, await content(msg, { format: "markdown" }));
    const pre = parts.flatMap((p) =>
      p.entities.filter((e) => e.type === "pre").map((e) => p.text.slice(e.offset, e.offset + e.length)),
    );
    // The code arrives as code blocks (one, or two if the length limit cuts it), every line in one.
    expect(pre.join("\n").split("\n")).toEqual(code.split("\n"));
    for (const part of parts) shown(part);
  });
});
