import { describe, expect, it } from "vitest";
import { InFlightLimit } from "../../src/delivery/in-flight.ts";

describe("sends in flight, sized from the rate and the time sends take", () => {
  it("keeps the floor while sends are quick, whatever the rate", () => {
    const limit = new InFlightLimit({ rate: 30, cap: 500 });
    expect(limit.value).toBe(16);
    for (let i = 0; i < 100; i++) limit.observe(100);
    // 30/s × 0.1 s × 1.5 = 4.5: the floor's 16 are more than enough.
    expect(limit.value).toBe(16);
  });

  it("paid broadcast at 1000/s through 100 ms round trips: the rate × the time, with headroom", () => {
    const limit = new InFlightLimit({ rate: 1000, cap: 500 });
    for (let i = 0; i < 200; i++) limit.observe(100);
    expect(limit.value).toBe(150);
    // Telegram slows down: more in flight, never above the cap.
    for (let i = 0; i < 200; i++) limit.observe(2_000);
    expect(limit.value).toBe(500);
    // …and back: the limit follows down within a few dozen sends.
    for (let i = 0; i < 100; i++) limit.observe(100);
    expect(limit.value).toBeLessThanOrEqual(151);
  });

  it("never more than the rate: each send holds one of the bot's places in a second's window", () => {
    const limit = new InFlightLimit({ rate: 30, cap: 500 });
    for (let i = 0; i < 200; i++) limit.observe(5_000);
    expect(limit.value).toBe(30);
  });

  it("a cap below the floor wins (DELIVERY_CONCURRENCY=4)", () => {
    const limit = new InFlightLimit({ rate: 1000, cap: 4 });
    expect(limit.value).toBe(4);
    limit.observe(1_000);
    expect(limit.value).toBe(4);
  });
});
