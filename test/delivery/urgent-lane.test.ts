import { describe, expect, it } from "vitest";
import type { DockWithSecret } from "../../src/store/docks.ts";
import { deliveryStates, ping, sandboxOf } from "../helpers/delivery-harness.ts";
import { dialects, startService } from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

const DIALECTS = await dialects();

/**
 * An urgent message goes ahead of everything waiting: of its own Dock's backlog (in each chat,
 * ahead of the earlier ordinary messages still waiting there) and of every other Dock's. At
 * Telegram's real pace (30 a second, each person 3 in any 3 seconds), a backlog of 8 messages to
 * 20 people takes seconds to go out; the urgent message sent after it must not wait for it.
 * Outcomes only: the order the messages reached each chat, never a time.
 */
describe.each(DIALECTS)("the urgent lane on %s", (dialect) => {
  it("an urgent message overtakes its Dock's backlog in every chat, and every other Dock's; the ordinary ones keep their order", async ({
    onTestFinished,
  }) => {
    const service = await startService(dialect, { AUTH_FAILURES_PER_MINUTE: "0", DOCK_RATE_BURST: "0" });
    onTestFinished(() => service.close());
    const sandbox = sandboxOf(service);
    const create = (name: string) => service.app.docks.create(1, { name, link: null, description: null });
    const backlog = await create("Backlog");
    const elsewhere = await create("Elsewhere");
    const readers: number[] = [];
    for (let i = 0; i < 20; i++) {
      const id = await sandbox.person(`Reader ${i}`);
      readers.push(id);
      await service.subscriptions.subscribe(backlog.id, id, "private");
    }
    const pager = await sandbox.person("On call");
    await service.subscriptions.subscribe(elsewhere.id, pager, "private");
    const urgent = async (dock: DockWithSecret, msg: string) => {
      const response = await fetch(`${service.url}/ping`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ dock_id: dock.id, secret_key: dock.secretKey, msg, priority: "urgent" }),
      });
      expect(response.status).toBe(202);
    };

    for (let n = 1; n <= 8; n++) await ping(service.url, backlog, `ordinary ${n}`);
    await urgent(backlog, "everyone, now");
    await urgent(elsewhere, "on call, now");
    await waitFor(
      "every copy sent",
      async () => (await deliveryStates(service)).sent === 20 * 9 + 1,
      120_000,
      250,
    );

    // A private chat's message ids are one sequence across the bot's chats: the order they went in.
    const lastOrdinary: number[] = [];
    for (const reader of readers) {
      const texts = (await sandbox.botMessages(reader)).map((m) => ({
        id: m.message_id as number,
        text: m.text as string,
      }));
      const ordinary = texts.filter((m) => m.text.includes("ordinary"));
      expect(ordinary.map((m) => m.text.split("\n").at(-1))).toEqual(
        Array.from({ length: 8 }, (_, i) => `ordinary ${i + 1}`),
      );
      const now = texts.findIndex((m) => m.text.includes("everyone, now"));
      // Ahead of the ordinary messages still waiting when it came (without the lane: after all 8).
      expect(now).toBeGreaterThanOrEqual(0);
      expect(now).toBeLessThan(texts.length - 1);
      lastOrdinary.push((ordinary.at(-1) as { id: number }).id);
    }
    const [onCall] = (await sandbox.botMessages(pager)).map((m) => m.message_id as number);
    // Another Dock's urgent message went before the backlog was through.
    expect(onCall).toBeLessThan(Math.max(...lastOrdinary));
    expect((await sandbox.stats()).too_many_requests).toBe(0);
  }, 180_000);
});
