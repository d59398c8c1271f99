import { describe, expect, it } from "vitest";
import { cutPoint, renderNotification, splitText, TELEGRAM_TEXT_LIMIT } from "../../src/domain/render.ts";

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
