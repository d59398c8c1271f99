import { describe, expect, it } from "vitest";
import { TokenBuckets } from "../../src/domain/token-bucket.ts";

describe("token buckets", () => {
  it("take an amount whole or not at all, and give back the part not used", () => {
    const clock = { now: 0 };
    // A Dock's template time: 1000 ms at once, 100 ms a second.
    const buckets = new TokenBuckets({ capacity: 1000, refillPerSecond: 100, now: () => clock.now });
    for (let i = 0; i < 4; i++) expect(buckets.take("dock", 250)).toBe(0);
    // The fifth waits until 250 ms have come back: 2.5 s.
    expect(buckets.take("dock", 250)).toBe(2.5);
    // A render that used 10 ms of its 250 gives 240 back: the next one fits.
    buckets.refund("dock", 240);
    expect(buckets.take("dock", 250)).toBeCloseTo(0.1);
    clock.now += 100;
    expect(buckets.take("dock", 250)).toBe(0);
    // Never above the capacity.
    buckets.refund("dock", 5000);
    expect(buckets.take("dock", 1001)).toBeCloseTo(0.01);
    expect(buckets.take("other", 1000)).toBe(0);
  });
});
