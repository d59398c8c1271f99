import { describe, expect, it } from "vitest";
import { alertmanager } from "../../../src/integrations/alertmanager.ts";
import { apprise } from "../../../src/integrations/apprise.ts";
import type { Inbound, InboundFormat } from "../../../src/integrations/inbound.ts";
import { ntfy } from "../../../src/integrations/ntfy.ts";
import { slack } from "../../../src/integrations/slack.ts";
import { notified } from "./harness.ts";

/*
 * A format reads no more of a payload's lists than a message can show: each list item here counts
 * the reads of its fields, and the limit is the number of items read — not how long it took (a
 * megabyte of Slack fields, read whole, held the event loop two seconds; see bench:hostile).
 */

/** A parsed body as the HTTP edge hands it on (its text is not what is read). */
const parsed = (body: unknown): Inbound => ({ body, text: "", mediaType: "application/json", headers: {} });

/** `count` items made by `make`, and the set of those whose field `field` was read. */
function watched(
  count: number,
  field: string,
  value: (i: number) => unknown,
  rest: (i: number) => object = () => ({}),
) {
  const read = new Set<number>();
  const items = Array.from({ length: count }, (_, i) =>
    Object.defineProperty({ ...rest(i) }, field, {
      enumerable: true,
      get: () => {
        read.add(i);
        return value(i);
      },
    }),
  );
  return { items, read };
}

const convert = (format: InboundFormat, body: unknown) => notified(format, parsed(body));

describe("formats read only what a message can show", () => {
  it("Slack: the first 50 blocks, as many as Slack itself takes", async () => {
    const { items, read } = watched(5000, "type", () => "divider");
    const notification = await convert(slack, { blocks: items });
    expect(notification.msg.startsWith("—————")).toBe(true);
    expect(read.size).toBe(50);
  });

  it("Slack: a section's first 10 fields, an attachment's first 100", async () => {
    const fields = watched(
      10_000,
      "text",
      (i) => `f${i}`,
      () => ({ type: "mrkdwn" }),
    );
    await convert(slack, { blocks: [{ type: "section", fields: fields.items }] });
    expect(fields.read.size).toBe(10);
    const attached = watched(
      10_000,
      "value",
      (i) => `v${i}`,
      (i) => ({ title: `t${i}` }),
    );
    await convert(slack, { attachments: [{ fields: attached.items }] });
    expect(attached.read.size).toBeLessThanOrEqual(100);
  });

  it("Alertmanager: the first 500 alerts in full, the rest counted", async () => {
    const { items, read } = watched(
      2000,
      "labels",
      (i) => ({ alertname: "DiskFull", instance: `db-${i}` }),
      () => ({ status: "firing" }),
    );
    const notification = await convert(alertmanager, {
      version: "4",
      groupKey: "{}:{}",
      status: "firing",
      alerts: items,
    });
    expect(read.size).toBe(500);
    expect(notification.options.title).toBe("🔥 2000 firing: DiskFull");
    const shown = notification.msg.match(/🔥 <b>DiskFull<\/b>/g)?.length ?? 0;
    expect(notification.msg.endsWith(`… and ${2000 - shown} more`)).toBe(true);
  });

  it("ntfy: actions up to the nine buttons a message holds", async () => {
    const { items, read } = watched(
      10_000,
      "action",
      () => "view",
      (i) => ({ label: `Open ${i}`, url: `https://example.com/${i}` }),
    );
    const notification = await convert(ntfy, { topic: "t", message: "m", actions: items });
    expect(notification.options.buttons?.flat()).toHaveLength(9);
    expect(read.size).toBe(9);
  });

  it("Apprise: the first 100 attachments' names, all of them counted", async () => {
    const { items, read } = watched(10_000, "filename", (i) => `f${i}.txt`);
    const notification = await convert(apprise, {
      version: "1.0",
      title: "Backup",
      message: "Done",
      type: "info",
      attachments: items,
    });
    expect(read.size).toBe(100);
    expect(notification.msg).toBe(
      "Done\n\n📎 Not shown: f0.txt, f1.txt, f2.txt, f3.txt, f4.txt, 9995 more attachments",
    );
  });
});
