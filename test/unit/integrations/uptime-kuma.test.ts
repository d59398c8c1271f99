import { describe, expect, it } from "vitest";
import { parseHtml } from "../../../src/domain/telegram-format.ts";
import { uptimeKuma } from "../../../src/integrations/uptime-kuma.ts";
import { formatHarness, sent } from "./harness.ts";

const { fixture, inbound, convert, refusal } = formatHarness(uptimeKuma);

describe("Uptime Kuma", () => {
  it("a monitor going down is a high-priority message keyed by the monitor, with Kuma's error and time", async () => {
    const notification = await convert(fixture("down.json"));
    expect(notification.msg).toBe(
      [
        "timeout of 48000ms exceeded",
        "https://www.example.com/health",
        "<i>2026-11-24 11:00:00 (Europe/Berlin)</i>",
      ].join("\n"),
    );
    expect(notification.options).toEqual({
      format: "html",
      title: "🔴 Website is down",
      priority: "high",
      buttons: [[{ text: "Open", url: "https://www.example.com/health" }]],
    });
    expect(notification.key).toBe("uptime-kuma:3");
    expect(notification.final).toBeUndefined();
    const part = await sent(notification);
    expect(part?.text).toBe(
      "❗ Ops\n🔴 Website is down\ntimeout of 48000ms exceeded\nhttps://www.example.com/health\n2026-11-24 11:00:00 (Europe/Berlin)",
    );
  });

  it("the monitor coming back up replaces the down message and frees its key, saying how long it was down", async () => {
    const notification = await convert(fixture("up.json"));
    expect(notification.msg).toBe(
      [
        "200 - OK",
        "https://www.example.com/health",
        "<i>2026-11-24 11:12:30 (Europe/Berlin) · 143 ms · down for 13 min</i>",
      ].join("\n"),
    );
    expect(notification.options.title).toBe("✅ Website is up");
    expect(notification.options.priority).toBeUndefined();
    expect(notification.key).toBe((await convert(fixture("down.json"))).key);
    expect(notification.final).toBe(true);
    await sent(notification);
  });

  it.each([
    [2, "🟡 Website is pending"],
    [3, "🔧 Website is under maintenance"],
    [9, "Website: status 9"],
  ])("status %i reads as %s, and keeps the key", async (status, title) => {
    const body = fixture("down.json");
    body.heartbeat.status = status;
    const notification = await convert(body);
    expect(notification.options.title).toBe(title);
    expect(notification.options.priority).toBeUndefined();
    expect(notification.final).toBeUndefined();
    expect(notification.key).toBe("uptime-kuma:3");
  });

  it("Kuma's test notification (no heartbeat, no monitor) is its text alone", async () => {
    const notification = await convert(fixture("test.json"));
    expect(notification).toEqual({ msg: "Telegram via Dock Notify Testing", options: {} });
    await sent(notification);
  });

  it("a certificate notice (no heartbeat) is Kuma's text, plain: nothing in it is taken for markup", async () => {
    const notification = await convert(fixture("certificate.json"));
    expect(notification.msg).toBe(
      "[Website][https://www.example.com/health] TLS certificate www.example.com will expire in 7 days",
    );
    expect(notification.options.format).toBeUndefined();
    expect(notification.key).toBeUndefined();
    const withMonitor = { ...fixture("certificate.json"), monitor: fixture("down.json").monitor };
    expect((await convert(withMonitor)).options).toEqual({ title: "Website" });
  });

  it("a monitor that is not a web page has no button and shows its host and port; no id keys by name", async () => {
    const body = fixture("down.json");
    body.monitor = { name: "Database", type: "port", url: "https://", hostname: "db.internal", port: 5432 };
    const notification = await convert(body);
    expect(notification.msg.split("\n")[1]).toBe("db.internal:5432");
    expect(notification.options.buttons).toBeUndefined();
    expect(notification.key).toBe("uptime-kuma:Database");
  });

  it("a local URL Telegram refuses is shown but not made a button", async () => {
    const body = fixture("down.json");
    body.monitor.url = "http://localhost:8080/";
    const notification = await convert(body);
    expect(notification.msg.split("\n")[1]).toBe("http://localhost:8080/");
    expect(notification.options.buttons).toBeUndefined();
    await sent(notification);
  });

  it("payload text is escaped: tags, ampersands, emoji and right-to-left text arrive as written", async () => {
    const body = fixture("down.json");
    body.monitor.name = "<b>API</b> & 🚀";
    body.heartbeat.msg = 'Error: <html> "boom" שלום';
    const notification = await convert(body);
    expect(notification.options.title).toBe("🔴 <b>API</b> & 🚀 is down");
    expect(parseHtml(notification.msg).text.split("\n")[0]).toBe('Error: <html> "boom" שלום');
    await sent(notification);
  });

  it("a megabyte of error text and a huge name are cut to fit", async () => {
    const body = fixture("down.json");
    body.heartbeat.msg = "<&".repeat(500_000);
    body.monitor.name = "n".repeat(1_000_000);
    body.monitor.url = `https://example.com/${"p".repeat(1_000_000)}`;
    const notification = await convert(body);
    expect(notification.key?.length).toBeLessThanOrEqual(128);
    await sent(notification);
    await sent(await convert({ heartbeat: null, monitor: null, msg: "m".repeat(1_000_000) }));
  });

  it("a heartbeat with nothing to show still says something", async () => {
    const notification = await convert({
      heartbeat: { status: 0 },
      monitor: { id: 1, name: "Site" },
      msg: "",
    });
    expect(notification.msg).toBe("Site");
    await sent(notification);
  });

  it.each([
    [{ heartbeat: "down", monitor: null, msg: "x" }, "heartbeat must be an object or null"],
    [{ heartbeat: null, monitor: [1], msg: "x" }, "monitor must be an object or null"],
    [{ heartbeat: null, monitor: null, msg: 5 }, "msg must be a non-empty string when there is no heartbeat"],
    ["text", "the body must be a JSON object"],
  ])("a body that is not Kuma's is refused, naming the field (%j)", async (body, message) => {
    expect(await refusal(body)).toBe(message);
  });

  it("is detected by heartbeat and monitor, even both null, even beside its msg", () => {
    expect(uptimeKuma.detect(inbound(fixture("test.json")))).toBe(true);
    expect(uptimeKuma.detect(inbound(fixture("down.json")))).toBe(true);
    expect(uptimeKuma.detect(inbound({ msg: "x", heartbeat: {} }))).toBe(false);
  });
});
