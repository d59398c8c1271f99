import { describe, expect, it } from "vitest";
import { dockIdFrom } from "../../src/domain/dock-reference.ts";

const ID = "4fGh2kLmN8pQrS0tUvWxYz";

describe("dockIdFrom: the Dock ID in what a person pasted", () => {
  it.each([
    [ID, "the bare ID"],
    [`  ${ID}\n`, "the ID with whitespace around it"],
    [`https://t.me/DockNotifyBot?start=${ID}`, "a t.me link"],
    [`t.me/DockNotifyBot?start=${ID}`, "a t.me link without the scheme"],
    [`http://127.0.0.1:8080/sandbox?start=${ID}`, "a sandbox link"],
    [`tg://resolve?domain=DockNotifyBot&start=${ID}`, "a tg: link"],
  ])("finds it in %j (%s)", (text) => {
    expect(dockIdFrom(text)).toBe(ID);
  });

  it.each([
    ["", "nothing"],
    ["hello", "a word"],
    [`${ID}x`, "an ID one character too long"],
    [`${ID} ${ID}`, "two IDs"],
    [`https://t.me/DockNotifyBot?start=login_${ID}`, "a sign-in link"],
    [`https://t.me/DockNotifyBot`, "a link without start"],
    [`javascript:alert(1)?start=${ID}`, "another URL scheme"],
  ])("finds none in %j (%s)", (text) => {
    expect(dockIdFrom(text)).toBeNull();
  });
});
