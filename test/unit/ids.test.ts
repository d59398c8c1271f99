import { describe, expect, it } from "vitest";
import { DOCK_ID_PATTERN, MESSAGE_ID_PATTERN, newDockId, newMessageId } from "../../src/domain/ids.ts";

describe("IDs", () => {
  it("Dock IDs are 22 characters of [A-Za-z0-9], all different", () => {
    const ids = new Set(Array.from({ length: 10_000 }, () => newDockId()));
    expect(ids.size).toBe(10_000);
    for (const id of ids) expect(id).toMatch(DOCK_ID_PATTERN);
  });

  it("message IDs sort by creation time, byte-wise and under a locale's collation", () => {
    const times = [0, 1, 35, 36, 1_000, Date.UTC(2026, 10, 21), Date.UTC(2026, 10, 21) + 1, 36 ** 9 - 1];
    const ids = times.map((t) => newMessageId(t));
    for (const id of ids) expect(id).toMatch(MESSAGE_ID_PATTERN);
    const byBytes = [...ids].reverse().sort();
    const byLocale = [...ids].reverse().sort((a, b) => a.slice(0, 13).localeCompare(b.slice(0, 13), "en"));
    expect(byBytes).toEqual(ids);
    expect(byLocale).toEqual(ids);
  });

  it("message IDs made in the same millisecond still differ", () => {
    const ids = new Set(Array.from({ length: 10_000 }, () => newMessageId(1_700_000_000_000)));
    expect(ids.size).toBe(10_000);
  });
});
