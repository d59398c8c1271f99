import { describe, expect, it } from "vitest";
import { apprise } from "../../../src/integrations/apprise.ts";
import type { Inbound } from "../../../src/integrations/inbound.ts";
import { fixtureText, json, notified, received, refused, sent } from "./harness.ts";

const fixture = (file: string): string => fixtureText("apprise", file);
const xml = (text: string) => received(text, "application/xml");
const convert = (input: Inbound) => notified(apprise, input);
const refusal = (input: Inbound) => refused(apprise, input);

const xmlEnvelope = (core: string) =>
  `<?xml version='1.0' encoding='utf-8'?><soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body><Notification>${core}</Notification></soapenv:Body></soapenv:Envelope>`;

describe("Apprise", () => {
  it.each([
    ["json://", "failure.json", "application/json"],
    ["form://", "failure.form.txt", "application/x-www-form-urlencoded"],
    ["xml://", "failure.xml", "application/xml"],
  ])("%s: a failure keeps its title and text, with ❌ and high priority", async (_, file, mediaType) => {
    const notification = await convert(received(fixture(file), mediaType));
    expect(notification).toEqual({
      msg: "The nightly backup of db-1 failed:\nrsync exited with code 23 (partial transfer).",
      options: { title: "Backup failed", priority: "high", tags: ["x"] },
    });
    const part = await sent(notification);
    expect(part?.text).toBe(
      "❗ Ops\n❌ Backup failed\nThe nightly backup of db-1 failed:\nrsync exited with code 23 (partial transfer).",
    );
  });

  it.each([
    ["success.json", "application/json"],
    ["success.form.txt", "application/x-www-form-urlencoded"],
    ["success.xml", "application/xml"],
  ])("a success without a title is its text as written (%s), with ✅", async (file, mediaType) => {
    const notification = await convert(received(fixture(file), mediaType));
    expect(notification).toEqual({
      msg: "Disk usage is back under 80 % on db-1 & db-2 <ok>",
      options: { tags: ["white_check_mark"] },
    });
    await sent(notification);
  });

  it.each([
    ["warning-attachment.json", "application/json"],
    ["warning-attachment.xml", "application/xml"],
  ])("attachments cannot be shown, so they are named (%s)", async (file, mediaType) => {
    const notification = await convert(received(fixture(file), mediaType));
    expect(notification).toEqual({
      msg: "db-1: /var is 91% full\n\n📎 Not shown: report.txt",
      options: { title: "Disk almost full", priority: "high", tags: ["warning"] },
    });
    await sent(notification);
  });

  it("an info notification has no tag and default priority; an unknown type is treated as info", async () => {
    const base = { version: "1.0", title: "Hi", message: "there", attachments: [] };
    expect((await convert(json({ ...base, type: "info" }))).options).toEqual({ title: "Hi" });
    expect((await convert(json({ ...base, type: "constructor" }))).options).toEqual({ title: "Hi" });
  });

  it("a title without a message becomes the message", async () => {
    const notification = await convert(
      json({ version: "1.0", title: "Only a title", message: "", type: "info" }),
    );
    expect(notification).toEqual({ msg: "Only a title", options: {} });
  });

  it("many attachments are counted, names or not", async () => {
    const attachments = [
      ...Array.from({ length: 7 }, (_, i) => ({
        filename: `file-${i}.log`,
        base64: "",
        mimetype: "text/plain",
      })),
      { base64: "" },
    ];
    const notification = await convert(json({ version: "1.0", message: "logs", type: "info", attachments }));
    expect(notification.msg).toBe(
      "logs\n\n📎 Not shown: file-0.log, file-1.log, file-2.log, file-3.log, file-4.log, 3 more attachments",
    );
  });

  it("a megabyte message is cut to fit, and its attachment note is kept", async () => {
    const notification = await convert(
      json({
        version: "1.0",
        title: "t".repeat(10_000),
        message: "m".repeat(1_000_000),
        type: "warning",
        attachments: [{ filename: "f".repeat(1000) }],
      }),
    );
    expect(notification.msg).toMatch(/…\n\n📎 Not shown: f+…$/);
    expect(notification.options.title?.length).toBeLessThanOrEqual(250);
    await sent(notification);
  });

  it("text is never taken for markup: tags, ampersands, emoji and right-to-left text are shown as written", async () => {
    const message = "<b>bold?</b> & *no* [link](https://example.com) 🚀 שלום";
    const notification = await convert(json({ version: "1.0", message, type: "info" }));
    expect(notification.options.format).toBeUndefined();
    const part = await sent(notification);
    expect(part?.text).toBe(`Ops\n${message}`);
  });

  it("XML is parsed with its entities, and its namespaces do not matter", async () => {
    const body = xmlEnvelope(
      "<Version>1.1</Version><Subject>A &amp; B</Subject><MessageType>success</MessageType><Message>x &lt; y &apos;z&apos;</Message>",
    )
      .replaceAll("<Notification>", '<ns:Notification xmlns:ns="urn:x">')
      .replaceAll("</Notification>", "</ns:Notification>");
    expect(await convert(xml(body))).toEqual({
      msg: "x < y 'z'",
      options: { title: "A & B", tags: ["white_check_mark"] },
    });
  });

  it.each([
    [xml("<not xml"), "the body is not well-formed XML"],
    [xml("<Envelope><Body/></Envelope>"), "the XML has no Notification element"],
    [
      xml(`<!DOCTYPE x [<!ENTITY a "aaaa">]>${xmlEnvelope("<Message>&a;</Message>")}`),
      "XML with a DOCTYPE is not accepted",
    ],
    [xml(xmlEnvelope("<Message></Message><MessageType>info</MessageType>")), "message must not be empty"],
    [json({ version: "1.0", message: 5, type: "info" }), "message must be a string"],
    [json(["a"]), "the body must be a JSON object, form fields or Apprise's XML"],
    [received("plain words", "text/plain"), "the body must be a JSON object, form fields or Apprise's XML"],
  ])("a body that is not Apprise's is refused, saying why (%#)", async (input, message) => {
    expect(await refusal(input)).toBe(message);
  });

  it("is detected by version, message and a known type in JSON or a form, and by the Notification element in XML", () => {
    const form = received(fixture("failure.form.txt"), "application/x-www-form-urlencoded");
    expect(apprise.detect(form)).toBe(true);
    expect(apprise.detect(received(fixture("failure.json"), "application/json"))).toBe(true);
    expect(apprise.detect(xml(fixture("failure.xml")))).toBe(true);
    expect(apprise.detect(json({ version: "1.0", message: "x", type: "urgent" }))).toBe(false);
    expect(apprise.detect(json({ version: "1.0", message: "x", type: "toString" }))).toBe(false);
    expect(apprise.detect(json({ message: "x", type: "info" }))).toBe(false);
    expect(apprise.detect(xml("<Envelope/>"))).toBe(false);
  });
});
