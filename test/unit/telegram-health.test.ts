import { describe, expect, it } from "vitest";
import {
  DOWN_AFTER_FAILURES,
  PROBE_FIRST_MS,
  PROBE_MAX_MS,
  TelegramHealth,
} from "../../src/delivery/telegram-health.ts";

function healthAt(start = 1_000_000) {
  const clock = { now: start };
  return { clock, health: new TelegramHealth(() => clock.now) };
}

describe("Telegram's health as the dispatcher sees it", () => {
  it("is down only after DOWN_AFTER_FAILURES failures in a row; an answer between resets the count", () => {
    const { health } = healthAt();
    for (let i = 1; i < DOWN_AFTER_FAILURES; i++) expect(health.failed("timeout")).toBe(false);
    expect(health.answered()).toBeNull();
    for (let i = 1; i < DOWN_AFTER_FAILURES; i++) expect(health.failed("timeout")).toBe(false);
    expect(health.down).toBe(false);
    expect(health.failed("502 Bad Gateway")).toBe(true);
    expect(health.status()).toMatchObject({ state: "down", reason: "502 Bad Gateway" });
  });

  it("probes one send at a time while down, at growing intervals up to the cap", () => {
    const { clock, health } = healthAt();
    expect(health.probeWait()).toBe(0);
    for (let i = 0; i < DOWN_AFTER_FAILURES; i++) health.failed("timeout");
    expect(health.probeWait()).toBe(PROBE_FIRST_MS);
    clock.now += PROBE_FIRST_MS;
    expect(health.probeWait()).toBe(0);
    health.probeStarted();
    expect(health.probeWait()).toBeNull();
    health.failed("timeout");
    health.probeEnded();
    expect(health.probeWait()).toBe(PROBE_FIRST_MS * 2);
    const delays: number[] = [];
    for (let i = 0; i < 5; i++) {
      clock.now += health.probeWait() ?? 0;
      health.probeStarted();
      health.failed("timeout");
      health.probeEnded();
      delays.push(health.probeWait() ?? -1);
    }
    expect(delays.at(-1)).toBe(PROBE_MAX_MS);
    expect(Math.max(...delays)).toBe(PROBE_MAX_MS);
  });

  it("a probe without an answer either way is tried again after the current delay", () => {
    const { clock, health } = healthAt();
    for (let i = 0; i < DOWN_AFTER_FAILURES; i++) health.failed("timeout");
    clock.now += PROBE_FIRST_MS;
    health.probeStarted();
    // The database failed around the send: neither answered nor failed for Telegram's reasons.
    health.probeEnded();
    expect(health.probeWait()).toBe(PROBE_FIRST_MS);
  });

  it("an answer ends the outage and tells since when sends had failed", () => {
    const { clock, health } = healthAt();
    const firstFailure = clock.now;
    health.failed("timeout");
    clock.now += 100;
    health.failed("timeout");
    clock.now += 100;
    health.failed("timeout");
    const downSince = clock.now;
    clock.now += 5000;
    expect(health.answered()).toEqual({ failingSince: firstFailure, downSince });
    expect(health.status()).toEqual({ state: "up", since: clock.now });
    expect(health.probeWait()).toBe(0);
    expect(health.answered()).toBeNull();
  });
});
