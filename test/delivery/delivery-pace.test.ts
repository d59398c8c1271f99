import { describe, expect, it } from "vitest";
import { deliveryStates, ping, sandboxOf } from "../helpers/delivery-harness.ts";
import { type RunningService, startService } from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

/** What `/readyz` says of Telegram (as the dispatcher sees it), and the `dock_notify_telegram_up` gauge. */
async function telegramState(service: RunningService): Promise<{ state: string; up: number }> {
  const body = (await (await fetch(`${service.url}/readyz`)).json()) as {
    checks: { telegram: { state: string } };
  };
  const metrics = await (await fetch(`${service.url}/metrics`)).text();
  return {
    state: body.checks.telegram.state,
    up: Number(/^dock_notify_telegram_up (\d)$/m.exec(metrics)?.[1]),
  };
}

/**
 * Delivery at Telegram's real pace: every message exactly once, in order, without a single 429, and
 * at the pace's minimum. The tests spend their time waiting for that pace (and for an outage), each
 * on a service and a sandbox of its own, so they wait side by side. A neighbour keeping the event
 * loop busy cannot fake a burst: the pacer holds each send's place until a window after Telegram's
 * answer (Window in pacer.ts).
 */
describe.concurrent("Telegram's pace", () => {
  /**
   * By the hundred: the sandbox's limits on (the default) and the pacer's Telegram's own, as in
   * production. About 10 s of sending at 30 a second: 50 chats together could take 50 a second, so
   * the bot's limit is the one kept. (The dispatcher's own tests pin the rest call by call.)
   */
  describe("delivery at Telegram's pace", () => {
    it("300 messages to 50 chats from 3 Docks: each delivered exactly once, in order, zero 429s", async ({
      onTestFinished,
    }) => {
      const service = await startService("sqlite", { AUTH_FAILURES_PER_MINUTE: "0", DOCK_RATE_BURST: "0" });
      onTestFinished(() => service.close());
      const sandbox = sandboxOf(service);
      const docks = await Promise.all(
        [0, 1, 2].map((i) =>
          service.app.docks.create(1, { name: `Dock ${i}`, link: null, description: null }),
        ),
      );
      const chats: { id: number; dock: number }[] = [];
      for (let i = 0; i < 50; i++) {
        const id = await sandbox.person(`Reader ${i}`);
        chats.push({ id, dock: i % 3 });
        await service.subscriptions.subscribe((docks[i % 3] as (typeof docks)[number]).id, id, "private");
      }
      await sandbox.control("DELETE", "/stats"); // the bot's welcomes are not part of this count
      // 6 messages per Dock: 17 + 17 + 16 subscribers × 6 = 300 Telegram messages.
      for (let n = 1; n <= 6; n++) {
        for (const [d, dock] of docks.entries()) await ping(service.url, dock, `dock ${d} message ${n}`);
      }
      await waitFor(
        "300 deliveries sent",
        async () => (await deliveryStates(service)).sent === 300,
        120_000,
        250,
      );

      for (const chat of chats) {
        const expected = Array.from(
          { length: 6 },
          (_, i) => `Dock ${chat.dock}\ndock ${chat.dock} message ${i + 1}`,
        );
        expect(await sandbox.botTexts(chat.id)).toEqual(expected);
      }
      const stats = await sandbox.stats();
      expect(stats.too_many_requests).toBe(0);
      expect(stats.send_message).toBe(300);
    }, 180_000);
  });

  /**
   * Telegram down for a while, then back: the deliveries that waited are woken when it answers
   * again, not each left to its own backoff (which grows to minutes), and drain at the pacer's pace:
   * every one, in its chat's order, without a 429. How soon is a matter of time, which a starved
   * machine stretches: not asserted here.
   */
  describe("Telegram coming back", () => {
    it("wakes the deliveries that waited out a backoff once Telegram answers again; all go, in order", async ({
      onTestFinished,
    }) => {
      const running = await startService("sqlite", { DOCK_RATE_BURST: "0", AUTH_FAILURES_PER_MINUTE: "0" });
      onTestFinished(() => running.close());
      const sandbox = sandboxOf(running);
      const chats = 15;
      const perChat = 9;
      const dock = await running.app.docks.create(1, { name: "Outage", link: null, description: null });
      const readers: number[] = [];
      for (let i = 0; i < chats; i++) {
        const reader = await sandbox.person(`Reader ${i}`);
        readers.push(reader);
        await running.subscriptions.subscribe(dock.id, reader, "private");
      }
      expect(await telegramState(running)).toEqual({ state: "up", up: 1 });

      // Telegram fails every send…
      await sandbox.control("POST", "/faults", { kind: "server_error", methods: ["sendMessage"], rate: 1 });
      for (let n = 1; n <= perChat; n++) await ping(running.url, dock, `n${n}`);
      await waitFor(
        "Telegram seen as down",
        async () => (await telegramState(running)).state === "down",
        20_000,
        100,
      );
      expect(await telegramState(running)).toEqual({ state: "down", up: 0 });
      expect((await deliveryStates(running)).sent ?? 0).toBe(0);

      await sandbox.control("DELETE", "/faults");
      await waitFor(
        "every delivery sent",
        async () => (await deliveryStates(running)).sent === chats * perChat,
        120_000,
        100,
      );
      // The deliveries that sat out a backoff were woken when Telegram answered (the log counts them).
      const resumed = running.logs.lines
        .map((line) => JSON.parse(line) as { msg?: string; woken?: number })
        .find((entry) => entry.msg === "Telegram answers again; deliveries resume");
      expect(resumed?.woken).toBeGreaterThan(0);

      const expected = Array.from({ length: perChat }, (_, i) => `Outage\nn${i + 1}`);
      for (const reader of readers) expect(await sandbox.botTexts(reader)).toEqual(expected);
      expect((await sandbox.stats()).too_many_requests).toBe(0);
      expect(await telegramState(running)).toEqual({ state: "up", up: 1 });
      expect(running.logs.text).toContain("Telegram answers again; deliveries resume");
    }, 120_000);

    it("notices Telegram is back even with nothing left to send (it asks who the bot is)", async ({
      onTestFinished,
    }) => {
      const running = await startService("sqlite", { DOCK_RATE_BURST: "0" });
      onTestFinished(() => running.close());
      const sandbox = sandboxOf(running);
      const dock = await running.app.docks.create(1, { name: "Idle", link: null, description: null });
      const reader = await sandbox.person("Iris");
      await running.subscriptions.subscribe(dock.id, reader, "private");
      await sandbox.control("POST", "/faults", {
        kind: "server_error",
        methods: ["sendMessage", "getMe"],
        rate: 1,
      });
      await ping(running.url, dock, "lost in the outage");
      await waitFor(
        "Telegram seen as down",
        async () => (await telegramState(running)).state === "down",
        20_000,
        100,
      );
      // The only subscriber leaves: the queue empties while Telegram is still down.
      expect(await running.subscriptions.transition(reader, "active", "removed", dock.id)).toBe(1);
      await waitFor(
        "the queue empty",
        async () => (await deliveryStates(running)).queued === undefined,
        20_000,
        100,
      );
      expect((await telegramState(running)).state).toBe("down");

      await sandbox.control("DELETE", "/faults");
      await waitFor(
        "Telegram seen as up again",
        async () => (await telegramState(running)).state === "up",
        10_000,
        100,
      );
    });
  });
});
