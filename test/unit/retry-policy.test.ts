import { describe, expect, it } from "vitest";
import { backoffMs } from "../../src/delivery/retry-policy.ts";

describe("backoff", () => {
  it("doubles from about a second, with jitter between half and all of it, capped at five minutes", () => {
    expect(backoffMs(1, () => 0)).toBe(500);
    expect(backoffMs(1, () => 1)).toBe(1000);
    expect(backoffMs(4, () => 1)).toBe(8000);
    expect(backoffMs(30, () => 1)).toBe(300_000);
    expect(backoffMs(30, () => 0)).toBe(150_000);
  });
});
