import { describe, expect, it } from "vitest";
import { GROWTH_MB, IDLE_UTILIZATION, shouldCompact } from "../../src/runtime/heap.ts";

describe("when the service gives idle memory back", () => {
  it("the first time it is idle", () => {
    expect(shouldCompact({ utilization: 0.001, rssMb: 170, rssAfterLastMb: null })).toBe(true);
  });

  it("never while the event loop is busy, however much it has grown", () => {
    expect(shouldCompact({ utilization: IDLE_UTILIZATION, rssMb: 400, rssAfterLastMb: 140 })).toBe(false);
    expect(shouldCompact({ utilization: 0.5, rssMb: 400, rssAfterLastMb: null })).toBe(false);
  });

  it("again once idle after it has grown by GROWTH_MB since the last time, not before", () => {
    expect(shouldCompact({ utilization: 0, rssMb: 140 + GROWTH_MB - 1, rssAfterLastMb: 140 })).toBe(false);
    expect(shouldCompact({ utilization: 0, rssMb: 140 + GROWTH_MB, rssAfterLastMb: 140 })).toBe(true);
  });
});
