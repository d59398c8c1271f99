import { describe, expect, it } from "vitest";
import { ntfy } from "../../../src/integrations/ntfy.ts";
import { formatHarness, sent } from "./harness.ts";

const { fixture, inbound, convert, refusal } = formatHarness(ntfy);

describe("ntfy", () => {
  it("the docs' example keeps its title, tags, priority, click and view action; the attachment is a button", async () => {
    const notification = await convert(fixture("publish.json"));
    expect(notification).toEqual({
      msg: "Disk space is low at 5.1 GB",
      options: {
        title: "Low disk space alert",
        priority: "high",
        tags: ["warning", "cd"],
        click: "https://homecamera.lan/xasds1h2xsSsa/",
        buttons: [
          [
            { text: "Admin panel", url: "https://filesrv.lan/admin" },
            { text: "Attachment: diskspace.jpg", url: "https://filesrv.lan/space.jpg" },
          ],
        ],
      },
    });
    const part = await sent(notification);
    expect(part?.text).toBe("❗ Ops\n⚠️💿 Low disk space alert\nDisk space is low at 5.1 GB");
  });

  it("only view actions become buttons: http, broadcast and copy cannot run from Telegram", async () => {
    const notification = await convert(fixture("actions.json"));
    expect(notification).toEqual({
      msg: "You left the house. Turn down the A/C?",
      options: { buttons: [[{ text: "Open portal", url: "https://home.nest.com/" }]] },
    });
    await sent(notification);
  });

  it("a Markdown message is kept as written, in Markdown", async () => {
    const notification = await convert(fixture("markdown.json"));
    expect(notification).toEqual({
      msg: "Look ma, **bold text**, *italics*, ...",
      options: { format: "markdown" },
    });
    const part = await sent(notification);
    expect(part?.text).toBe("Ops\nLook ma, bold text, italics, ...");
  });

  it("a plain message is text: nothing in it is taken for markup", async () => {
    const message = "<b>not bold</b> & **not bold** 🚀 שלום";
    const notification = await convert({ topic: "t", message });
    expect(notification).toEqual({ msg: message, options: {} });
    expect((await sent(notification))?.text).toBe(`Ops\n${message}`);
  });

  it.each([
    [1, "min"],
    [2, "low"],
    [3, undefined],
    [4, "high"],
    [5, "urgent"],
    ["5", "urgent"],
    ["max", "urgent"],
    ["High", "high"],
  ])("priority %j is %s", async (priority, expected) => {
    expect((await convert({ topic: "t", message: "m", priority })).options.priority).toBe(expected);
  });

  it("tags may be a comma-separated string; at most ten are kept, each at most 64 characters", async () => {
    expect((await convert({ topic: "t", message: "m", tags: "warning, skull ,,x" })).options.tags).toEqual([
      "warning",
      "skull",
      "x",
    ]);
    const many = await convert({
      topic: "t",
      message: "m",
      tags: Array.from({ length: 20 }, (_, i) => `t${i}${"x".repeat(100)}`),
    });
    expect(many.options.tags).toHaveLength(10);
    expect(many.options.tags?.every((tag) => tag.length <= 64)).toBe(true);
    await sent(many);
  });

  it("without a message, it says what ntfy would: triggered, or the file received", async () => {
    expect((await convert({ topic: "t" })).msg).toBe("triggered");
    expect((await convert({ topic: "t", message: " ", attach: "https://example.com/a.pdf" })).msg).toBe(
      "You received a file: attachment",
    );
    expect(
      (await convert({ topic: "t", attach: "https://example.com/a.pdf", filename: "report.pdf" })).msg,
    ).toBe("You received a file: report.pdf");
  });

  it("a click URL or action Telegram refuses is left out; a label with control characters is cleaned", async () => {
    const notification = await convert({
      topic: "t",
      message: "m",
      click: "http://localhost:8080",
      attach: "file:///etc/passwd",
      actions: [
        { action: "view", label: "Local", url: "http://nas/admin" },
        { action: "VIEW", label: "\u0007Bell\u0000", url: "https://example.com/bell" },
        { action: "view", url: "https://example.com/nolabel" },
      ],
    });
    expect(notification.options).toEqual({
      buttons: [
        [
          { text: "Bell", url: "https://example.com/bell" },
          { text: "Open", url: "https://example.com/nolabel" },
        ],
      ],
    });
    await sent(notification);
  });

  it("a megabyte of Markdown with thousands of entities is cut until one message holds it", async () => {
    const notification = await convert({
      topic: "t",
      message: "**bold** _it_ `code` [l](https://example.com)\n".repeat(25_000),
      markdown: true,
      title: "t".repeat(1000),
    });
    expect(notification.options.format).toBe("markdown");
    expect(notification.options.title?.length).toBeLessThanOrEqual(250);
    await sent(notification);
    const oneLine = await convert({ topic: "t", message: "**b** ".repeat(1000), markdown: true });
    expect(oneLine.options.format).toBeUndefined();
    await sent(oneLine);
    const twoLines = await convert({
      topic: "t",
      message: `${"**b** ".repeat(50)}\n${"_i_ ".repeat(50)}`,
      markdown: true,
    });
    expect(twoLines.msg).toBe("**b** ".repeat(50).trim());
    expect(twoLines.options.format).toBe("markdown");
    await sent(twoLines);
    await sent(await convert({ topic: "t", message: "<&>".repeat(400_000) }));
  });

  it.each([
    [{ topic: "t", message: 5 }, "message must be a string"],
    [{ topic: "t", message: "m", title: ["x"] }, "title must be a string"],
    [
      { topic: "t", message: "m", priority: 6 },
      "priority must be 1 to 5 (or min, low, default, high, urgent)",
    ],
    [
      { topic: "t", message: "m", priority: true },
      "priority must be 1 to 5 (or min, low, default, high, urgent)",
    ],
    [{ topic: "t", message: "m", tags: [1] }, "tags must be an array of strings"],
    [{ topic: "t", message: "m", actions: "view, A, https://a.example" }, "actions must be an array"],
    [{ topic: "t", message: "m", actions: [5] }, "actions[0] must be an object"],
    [{ topic: "t", message: "m", markdown: "yes" }, "markdown must be true or false"],
    ["text", "the body must be a JSON object"],
  ])("a body that is not ntfy's is refused, naming the field (%j)", async (body, message) => {
    expect(await refusal(body)).toBe(message);
  });

  it("is detected by a topic beside a message", () => {
    expect(ntfy.detect(inbound(fixture("publish.json")))).toBe(true);
    expect(ntfy.detect(inbound({ topic: "t" }))).toBe(false);
    expect(ntfy.detect(inbound({ message: "m" }))).toBe(false);
  });
});
