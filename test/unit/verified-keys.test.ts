import { describe, expect, it } from "vitest";
import { VERIFIED_KEY_TTL_MS, VerifiedKeys } from "../../src/store/verified-keys.ts";

const dock = (id: string) => ({ id, name: id, watched: false, inbound: null });
const hooked = (id: string) => ({ ...dock(id), principal: { kind: "hook" as const } });

describe("VerifiedKeys: secret keys and hook tokens found right lately", () => {
  it("answers only the right key of the right Dock, until its time is up", () => {
    let now = 1000;
    const keys = new VerifiedKeys(() => now);
    keys.rememberKey("key-a", dock("A"), keys.generation);
    expect(keys.key("A", "key-a")).toEqual(dock("A"));
    expect(keys.key("A", "key-b")).toBeUndefined();
    expect(keys.key("B", "key-a")).toBeUndefined();
    // A key is not a hook token, nor the other way round.
    expect(keys.hook("key-a")).toBeUndefined();
    now += VERIFIED_KEY_TTL_MS - 1;
    expect(keys.key("A", "key-a")).toBeDefined();
    now += 1;
    expect(keys.key("A", "key-a")).toBeUndefined();
  });

  it("answers a hook token with its Dock, as the hook's principal", () => {
    const keys = new VerifiedKeys(() => 0);
    keys.rememberHook("dnhk_x", hooked("A"), keys.generation);
    expect(keys.hook("dnhk_x")).toEqual(hooked("A"));
    expect(keys.key("A", "dnhk_x")).toBeUndefined();
  });

  it("forgets every secret of a Dock, and only that Dock's", () => {
    const keys = new VerifiedKeys(() => 0);
    keys.rememberKey("old", dock("A"), keys.generation);
    keys.rememberKey("new", dock("A"), keys.generation);
    keys.rememberHook("dnhk_a", hooked("A"), keys.generation);
    keys.rememberKey("other", dock("B"), keys.generation);
    keys.forget("A");
    expect(keys.key("A", "old")).toBeUndefined();
    expect(keys.key("A", "new")).toBeUndefined();
    expect(keys.hook("dnhk_a")).toBeUndefined();
    expect(keys.key("B", "other")).toBeDefined();
  });

  it("never remembers a named credential as a key, nor a key as a hook", () => {
    const keys = new VerifiedKeys(() => 0);
    keys.rememberKey(
      "dnsc_x",
      { ...dock("A"), principal: { kind: "credential", id: "c1", scope: "send" } },
      keys.generation,
    );
    expect(keys.key("A", "dnsc_x")).toBeUndefined();
    keys.rememberHook("dnsk_y", dock("A"), keys.generation);
    expect(keys.hook("dnsk_y")).toBeUndefined();
  });

  it("never remembers what a lookup found when the Dock changed on this instance since it began", () => {
    const keys = new VerifiedKeys(() => 0);
    const began = keys.generation;
    keys.forget("A"); // a change committed while the lookup read the row as it was
    keys.rememberKey("old", dock("A"), began);
    expect(keys.key("A", "old")).toBeUndefined();
    keys.rememberKey("old", dock("A"), keys.generation);
    expect(keys.key("A", "old")).toBeDefined();
  });

  it("stays bounded: past 10,000 entries the oldest goes first", () => {
    const keys = new VerifiedKeys(() => 0);
    for (let i = 0; i <= 10_000; i++) keys.rememberKey(`k${i}`, dock(`D${i}`), keys.generation);
    expect(keys.key("D0", "k0")).toBeUndefined();
    expect(keys.key("D1", "k1")).toBeDefined();
    expect(keys.key("D10000", "k10000")).toBeDefined();
  });
});
