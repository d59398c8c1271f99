import { describe, expect, it } from "vitest";
import { GLOBAL_RESERVE_MS, Pacer, TELEGRAM_LIMITS } from "../src/delivery/pacer.ts";

/** A pacer on a clock the test moves, started warm (no cold start) unless asked. */
function pacerAt(globalPerSecond: number, coldStartMs = 0) {
  const clock = { now: 1_000_000 };
  const pacer = new Pacer({ ...TELEGRAM_LIMITS, globalPerSecond }, () => clock.now, coldStartMs);
  /** Sends to `chats` distinct private chats (one each, round-robin) whenever allowed, for `ms`. */
  const sendFor = (ms: number, chats = 1_000_000) => {
    let sent = 0;
    const end = clock.now + ms;
    for (let chat = 1; clock.now <= end; ) {
      const at = pacer.readyAt(chat, "private");
      if (at > end) break;
      clock.now = Math.max(clock.now, at);
      pacer.take(chat, "private");
      sent++;
      chat = (chat % chats) + 1;
    }
    clock.now = end;
    return sent;
  };
  return { pacer, clock, sendFor };
}

describe("the pacer", () => {
  it("holds back 250 ms of the bot's rate from a burst, and keeps the full rate after it", () => {
    const { sendFor } = pacerAt(30);
    const burst = 30 - Math.ceil((30 * GLOBAL_RESERVE_MS) / 1000);
    expect(burst).toBe(22);
    expect(sendFor(0)).toBe(burst);
    // Then 30 a second: the reserve costs the first burst, never the rate.
    expect(sendFor(10_000)).toBe(300);
  });

  it("holds back in proportion with paid broadcast (1,000 a second)", () => {
    const { sendFor } = pacerAt(1000);
    expect(sendFor(0)).toBe(750);
    expect(sendFor(1000)).toBe(1000);
  });

  it("lets a private chat have a burst of two, then one a second", () => {
    const { sendFor } = pacerAt(30);
    expect(sendFor(0, 1)).toBe(2);
    expect(sendFor(5000, 1)).toBe(5);
  });

  it("starts empty after a restart, for what Telegram still counts from the process before", () => {
    const { pacer, clock, sendFor } = pacerAt(30, 3000);
    expect(sendFor(0)).toBe(0);
    // A chat first seen meanwhile starts empty too: its first message waits a second.
    expect(pacer.readyAt(1, "private")).toBe(clock.now + 1000);
    clock.now += 3000;
    // Telegram has forgotten the last process's sends: bursts are allowed again.
    expect(sendFor(0)).toBe(22);
  });

  it("stops everything for Telegram's retry_after, then resumes", () => {
    const { pacer, clock, sendFor } = pacerAt(30);
    pacer.pause(7, 5);
    expect(pacer.readyAt(8, "private")).toBe(clock.now + 5000);
    expect(sendFor(4999)).toBe(0);
    expect(sendFor(1)).toBeGreaterThan(0);
  });
});
