import { describe, expect, it } from "vitest";
import { parseHtml } from "../../../src/domain/telegram-format.ts";
import { alertmanager } from "../../../src/integrations/alertmanager.ts";
import { ENTITY_BUDGET } from "../../../src/integrations/inbound.ts";
import { formatHarness, sent } from "./harness.ts";

const { fixture, inbound, convert, refusal } = formatHarness(alertmanager);

/** A group of `n` alerts like the fixture's, each with its own instance. */
function bigGroup(n: number, extra: Record<string, unknown> = {}) {
  const group = fixture("firing.json");
  const [template] = group.alerts;
  group.alerts = Array.from({ length: n }, (_, i) => ({
    ...template,
    labels: { ...template.labels, instance: `api-${i}.example.com:9100` },
    annotations: { ...template.annotations, summary: `p99 latency above 500 ms on api-${i}` },
  }));
  return { ...group, ...extra };
}

describe("Alertmanager", () => {
  it("a firing group reads as one message: common labels once, then each alert with its own labels and start", async () => {
    const notification = await convert(fixture("firing.json"));
    expect(notification.msg).toBe(
      [
        "env=prod, job=api",
        "The 99th percentile of request latency has been above 500 ms for 10 minutes.",
        "",
        "🔥 <b>HighLatency</b> · warning",
        "p99 latency above 500 ms on api-1.example.com:9100",
        "instance=api-1.example.com:9100 · since 24 Nov 10:02 UTC",
        "",
        "🔥 <b>HighLatency</b> · warning",
        "p99 latency above 500 ms on api-2.example.com:9100",
        "instance=api-2.example.com:9100 · since 24 Nov 10:03 UTC",
        "",
        "🔥 <b>HighLatency</b> · warning",
        "p99 latency above 500 ms on api-3.example.com:9100",
        "instance=api-3.example.com:9100 · since 24 Nov 10:05 UTC",
      ].join("\n"),
    );
    expect(notification.options).toEqual({
      format: "html",
      title: "🔥 3 firing: HighLatency",
      priority: "high",
      buttons: [
        [
          {
            text: "Source",
            url: "https://prometheus.example.com/graph?g0.expr=histogram_quantile%280.99%2C+rate%28http_request_duration_seconds_bucket%5B5m%5D%29%29+%3E+0.5&g0.tab=1",
          },
          { text: "Runbook", url: "https://runbooks.example.com/api/high-latency" },
          { text: "Alertmanager", url: "https://alertmanager.example.com" },
        ],
      ],
    });
    expect(notification.key).toBe('alertmanager:{}/{severity="warning"}:{alertname="HighLatency"}');
    expect(notification.final).toBeUndefined();
    await sent(notification);
  });

  it("a resolved group replaces its firing message and frees its key", async () => {
    const firing = await convert(fixture("firing.json"));
    const resolved = await convert(fixture("resolved.json"));
    expect(resolved.key).toBe(firing.key);
    expect(resolved.final).toBe(true);
    expect(resolved.options.title).toBe("✅ 3 resolved: HighLatency");
    expect(resolved.options.priority).toBeUndefined();
    expect(resolved.msg).toContain("✅ <b>HighLatency</b> · warning");
    expect(resolved.msg).toContain("instance=api-1.example.com:9100 · resolved 24 Nov 10:31 UTC");
    await sent(resolved);
  });

  it("a single alert is titled FIRING with its name, and its severity leads its details", async () => {
    const notification = await convert(fixture("probe-failure.json"));
    expect(notification.options.title).toBe("🔥 FIRING: ProbeFailure");
    expect(notification.msg).toBe(
      [
        "BlackBox Probe Failure: https://server.example.org",
        "Instance https://server.example.org has been down for over 5m. Job: http_checks",
        "critical · instance=https://server.example.org, job=http_checks, monitor=master · since 6 Feb 13:08 UTC",
      ].join("\n"),
    );
    expect(notification.options.priority).toBe("urgent");
    // The sample's generatorURL holds a backslash (\u0026 escaped twice): Telegram would refuse it.
    expect(notification.options.buttons).toEqual([
      [{ text: "Alertmanager", url: "http://prometheus.example.org:9093" }],
    ]);
    await sent(notification);
  });

  it("Alertmanager's own test alert, with a description only, reads plainly", async () => {
    const notification = await convert(fixture("test-alert.json"));
    expect(notification.options.title).toBe("🔥 FIRING: Test");
    expect(notification.msg).toBe(
      "some description\ndc=eu-west-1, instance=localhost:9090, job=prometheus24 · since 3 Aug 07:52 UTC",
    );
    expect(notification.options.priority).toBeUndefined();
    await sent(notification);
  });

  it.each([
    ["critical", "urgent"],
    ["page", "urgent"],
    ["Critical", "urgent"],
    ["error", "high"],
    ["high", "high"],
    ["warning", "high"],
    ["info", "low"],
    ["none", undefined],
  ])("severity %s gives priority %s", async (severity, priority) => {
    const group = fixture("probe-failure.json");
    group.alerts[0].labels.severity = severity;
    group.commonLabels.severity = severity;
    expect((await convert(group)).options.priority).toBe(priority);
  });

  it("a group with firing and resolved alerts counts the firing ones and marks each alert", async () => {
    const group = fixture("firing.json");
    group.alerts[1].status = "resolved";
    group.alerts[1].endsAt = "2026-11-24T10:20:00Z";
    const notification = await convert(group);
    expect(notification.options.title).toBe("🔥 2 firing: HighLatency");
    expect(notification.msg).toContain("✅ <b>HighLatency</b> · warning\np99 latency above 500 ms on api-2");
    expect(notification.msg).toContain("resolved 24 Nov 10:20 UTC");
    expect(notification.final).toBeUndefined();
  });

  it("URLs Telegram refuses (localhost, a host without a dot) are left out of the buttons", async () => {
    const group = fixture("probe-failure.json");
    group.alerts[0].generatorURL = "http://localhost:9090/graph?g0.expr=up";
    group.externalURL = "http://prometheus:9090";
    const notification = await convert(group);
    expect(notification.options.buttons).toBeUndefined();
    await sent(notification);
    group.alerts[0].annotations.runbook_url = "https://runbooks.example.com/probe";
    expect((await convert(group)).options.buttons).toEqual([
      [{ text: "Runbook", url: "https://runbooks.example.com/probe" }],
    ]);
  });

  it("payload text is escaped: tags, ampersands, emoji and right-to-left text arrive as written", async () => {
    const group = fixture("probe-failure.json");
    group.alerts[0].annotations = { summary: "<b>not bold</b> & <a href='x'>", description: "🔥 שלום مرحبا" };
    group.alerts[0].labels.team = 'a"b<c>';
    group.groupLabels.alertname = "<i>Name</i>";
    const notification = await convert(group);
    const parsed = parseHtml(notification.msg);
    expect(parsed.entities).toEqual([]);
    expect(parsed.text).toContain("<b>not bold</b> & <a href='x'>\n🔥 שלום مرحبا");
    expect(parsed.text).toContain('team=a"b<c>');
    expect(notification.options.title).toBe("🔥 FIRING: <i>Name</i>");
    await sent(notification);
  });

  it("a group key too long for a message key is hashed, the same way every time", async () => {
    const groupKey = `{}/{team="payments"}:{alertname="${"x".repeat(200)}"}`;
    const group = { ...fixture("firing.json"), groupKey };
    const first = await convert(group);
    expect(first.key).toMatch(/^alertmanager:[0-9a-f]{64}$/);
    expect((await convert(group)).key).toBe(first.key);
    expect((await convert({ ...group, groupKey: `${groupKey}y` })).key).not.toBe(first.key);
  });

  it("a group of 100 alerts stays one message: as many as fit, then how many more (truncated ones too)", async () => {
    const notification = await convert(bigGroup(100, { truncatedAlerts: 5 }));
    expect(notification.options.title).toBe("🔥 100 firing: HighLatency");
    const shown = notification.msg.match(/🔥 <b>HighLatency<\/b>/g)?.length ?? 0;
    expect(shown).toBeGreaterThan(10);
    expect(notification.msg.endsWith(`… and ${100 - shown + 5} more (5 not in the payload)`)).toBe(true);
    await sent(notification);
  });

  it("alerts that each carry many entities stop at the entity budget, not only at the length", async () => {
    const group = bigGroup(100);
    for (const alert of group.alerts) {
      alert.annotations = {};
      alert.labels = { alertname: "A" };
    }
    const notification = await convert(group);
    expect(parseHtml(notification.msg).entities.length).toBeLessThanOrEqual(ENTITY_BUDGET);
    expect(notification.msg).toMatch(/… and \d+ more$/);
    await sent(notification);
  });

  it("a megabyte of description and labels is cut to fit", async () => {
    const group = fixture("probe-failure.json");
    group.alerts[0].annotations.description = "&<".repeat(500_000);
    group.alerts[0].annotations.summary = "s".repeat(1_000_000);
    group.alerts[0].labels.huge = "l".repeat(1_000_000);
    group.groupLabels.alertname = "n".repeat(10_000);
    const notification = await convert(group);
    expect(notification.options.title?.length).toBeLessThanOrEqual(250);
    await sent(notification);
  });

  it("missing optional fields, nulls and values of the wrong type are left out", async () => {
    const notification = await convert({
      status: 7,
      alerts: [
        { labels: null, annotations: { summary: 5, description: null }, startsAt: 3, generatorURL: {} },
      ],
      commonLabels: "x",
      externalURL: 42,
    });
    expect(notification.options).toEqual({ format: "html", title: "🔥 FIRING: alerts" });
    expect(notification.msg).toBe("5");
    expect(notification.key).toBeUndefined();
    await sent(notification);
  });

  it.each([
    [{ alerts: "many" }, "alerts must be an array"],
    [{ version: "4" }, "alerts must be an array"],
    [{ alerts: [] }, "alerts must hold at least one alert"],
    [{ alerts: [{}, 5] }, "alerts[1] must be an object"],
    [[], "the body must be a JSON object"],
    [null, "the body must be a JSON object"],
  ])("a body that is not Alertmanager's is refused, naming the field (%j)", async (body, message) => {
    expect(await refusal(body)).toBe(message);
  });

  it("is detected by version 4, a group key and alerts — not by Grafana's payload or a message", () => {
    expect(alertmanager.detect(inbound(fixture("firing.json")))).toBe(true);
    expect(alertmanager.detect(inbound({ ...fixture("firing.json"), orgId: 1 }))).toBe(false);
    expect(alertmanager.detect(inbound({ ...fixture("firing.json"), version: "3" }))).toBe(false);
    expect(alertmanager.detect(inbound({ msg: "hello" }))).toBe(false);
  });
});
