import { describe, expect, it } from "vitest";
import { grafana } from "../../../src/integrations/grafana.ts";
import { formatHarness, sent } from "./harness.ts";

const { fixture, inbound, convert, refusal } = formatHarness(grafana);

describe("Grafana", () => {
  it("a firing group shows Grafana's title, each alert's summary, description and values, and its links", async () => {
    const notification = await convert(fixture("firing.json"));
    expect(notification.msg).toBe(
      [
        "team=blue",
        "",
        "🔥 <b>High memory usage</b>",
        "This alert was triggered for zone us-1",
        "The system has high memory usage",
        "B=44.24, C=1",
        "zone=us-1 · since 12 Oct 07:51 UTC",
        "",
        "🔥 <b>High CPU usage</b>",
        "This alert was triggered for zone eu-1",
        "The system has high CPU usage",
        "B=44.24, C=1",
        "zone=eu-1 · since 12 Oct 07:56 UTC",
      ].join("\n"),
    );
    expect(notification.options).toEqual({
      format: "html",
      title: "🔥 [FIRING:2] (blue)",
      buttons: [
        [
          {
            text: "Silence",
            url: "https://play.grafana.org/alerting/silence/new?alertmanager=grafana&matchers=alertname%3DT2%2Cteam%3Dblue%2Czone%3Dus-1",
          },
          { text: "Rule", url: "https://play.grafana.org/alerting/1afz29v7z/edit" },
          { text: "Runbook", url: "https://myrunbook.com/runbook/1234" },
        ],
        [{ text: "Grafana", url: "https://play.grafana.org/" }],
      ],
    });
    expect(notification.key).toBe("grafana:{}:{}");
    const part = await sent(notification);
    expect(part?.text.startsWith("Ops\n🔥 [FIRING:2] (blue)\nteam=blue\n\n🔥 High memory usage\n")).toBe(
      true,
    );
  });

  it("a resolved group replaces its firing message and frees its key", async () => {
    const firing = await convert(fixture("firing.json"));
    const resolved = await convert(fixture("resolved.json"));
    expect(resolved.key).toBe(firing.key);
    expect(resolved.final).toBe(true);
    expect(resolved.options.title).toBe("✅ [RESOLVED] (blue)");
    expect(resolved.msg).toContain("✅ <b>High CPU usage</b>");
    expect(resolved.msg).toContain("zone=eu-1 · resolved 12 Oct 08:26 UTC");
    await sent(resolved);
  });

  it("without Grafana's title, the title is built as for Alertmanager", async () => {
    const group = fixture("firing.json");
    delete group.title;
    expect((await convert(group)).options.title).toBe("🔥 2 firing: team=blue");
    group.alerts = group.alerts.slice(0, 1);
    group.title = "   ";
    expect((await convert(group)).options.title).toBe("🔥 FIRING: High memory usage");
  });

  it("the dashboard, panel and image links become buttons; empty ones are left out", async () => {
    const group = fixture("firing.json");
    group.alerts[0].dashboardURL = "https://grafana.example.com/d/abc";
    group.alerts[0].panelURL = "https://grafana.example.com/d/abc?viewPanel=2";
    group.alerts[1].imageURL = "https://grafana.example.com/public/img/1.png";
    const texts = (await convert(group)).options.buttons?.flat().map((button) => button.text);
    expect(texts).toEqual(["Dashboard", "Panel", "Silence", "Rule", "Runbook", "Image", "Grafana"]);
  });

  it("values read well: small ones keep three significant digits, text values stay, others are left out", async () => {
    const group = fixture("firing.json");
    group.alerts = group.alerts.slice(0, 1);
    group.alerts[0].values = { A: 0.000123456, B: -12.3456, C: "NaN", D: null, E: 14151.331895396988 };
    expect((await convert(group)).msg).toContain("\nA=0.000123, B=-12.35, C=NaN, E=14151.33\n");
    delete group.alerts[0].values;
    group.alerts[0].valueString = "[ metric='' labels={} value=14151.331895396988 ]";
    expect((await convert(group)).msg).toContain("\n[ metric='' labels={} value=14151.331895396988 ]\n");
  });

  it("a group of 100 alerts with values stays within one message", async () => {
    const group = fixture("firing.json");
    const [template] = group.alerts;
    group.alerts = Array.from({ length: 100 }, (_, i) => ({
      ...template,
      labels: { ...template.labels, zone: `zone-${i}` },
      values: { A: i, B: i / 3, C: "x".repeat(1000) },
    }));
    const notification = await convert(group);
    expect(notification.msg).toMatch(/… and \d+ more$/);
    await sent(notification);
  });

  it("URLs Telegram refuses are left out of the buttons", async () => {
    const group = fixture("firing.json");
    for (const alert of group.alerts) {
      alert.silenceURL = "http://localhost:3000/alerting/silence/new";
      alert.generatorURL = "http://grafana:3000/alerting/1/edit";
      alert.annotations = {};
    }
    group.externalURL = "http://localhost:3000/";
    const notification = await convert(group);
    expect(notification.options.buttons).toBeUndefined();
    await sent(notification);
  });

  it("a body that is not Grafana's is refused, naming the field", async () => {
    expect(await refusal({ orgId: 1, alerts: { a: 1 } })).toBe("alerts must be an array");
  });

  it("is detected by its orgId beside a group key and alerts", () => {
    expect(grafana.detect(inbound(fixture("firing.json")))).toBe(true);
    const { orgId: _, ...withoutOrg } = fixture("firing.json");
    expect(grafana.detect(inbound(withoutOrg))).toBe(false);
    expect(grafana.detect(inbound({ orgId: 1 }))).toBe(false);
  });
});
