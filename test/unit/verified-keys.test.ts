import { describe, expect, it } from "vitest";
import { VERIFIED_KEY_TTL_MS, VerifiedKeys } from "../../src/store/verified-keys.ts";

const dock = (id: string) => ({ id, name: id, watched: false, inbound: null });

describe("VerifiedKeys: secret keys found right lately", () => {
  it("answers only the right key of the right Dock, until its time is up", () => {
    let now = 1000;
    const keys = new VerifiedKeys(() => now);
    keys.remember("key-a", dock("A"));
    expect(keys.get("A", "key-a")).toEqual(dock("A"));
    expect(keys.get("A", "key-b")).toBeUndefined();
    expect(keys.get("B", "key-a")).toBeUndefined();
    now += VERIFIED_KEY_TTL_MS - 1;
    expect(keys.get("A", "key-a")).toBeDefined();
    now += 1;
    expect(keys.get("A", "key-a")).toBeUndefined();
  });

  it("forgets every key of a Dock, and only that Dock's", () => {
    const keys = new VerifiedKeys(() => 0);
    keys.remember("old", dock("A"));
    keys.remember("new", dock("A"));
    keys.remember("other", dock("B"));
    keys.forget("A");
    expect(keys.get("A", "old")).toBeUndefined();
    expect(keys.get("A", "new")).toBeUndefined();
    expect(keys.get("B", "other")).toBeDefined();
  });

  it("never remembers a named credential or a hook (only the secret key itself)", () => {
    const keys = new VerifiedKeys(() => 0);
    keys.remember("dnc_x", { ...dock("A"), principal: { kind: "hook" } });
    expect(keys.get("A", "dnc_x")).toBeUndefined();
  });

  it("stays bounded: past 10,000 entries the oldest goes first", () => {
    const keys = new VerifiedKeys(() => 0);
    for (let i = 0; i <= 10_000; i++) keys.remember(`k${i}`, dock(`D${i}`));
    expect(keys.get("D0", "k0")).toBeUndefined();
    expect(keys.get("D1", "k1")).toBeDefined();
    expect(keys.get("D10000", "k10000")).toBeDefined();
  });
});
