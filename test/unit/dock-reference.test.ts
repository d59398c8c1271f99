import { describe, expect, it } from "vitest";
import { dockIdFrom, joinTokenFrom } from "../../src/domain/dock-reference.ts";

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

describe("joinTokenFrom: an invite link's token in what a person pasted", () => {
  const TOKEN = "Zy9xW8vU7tS6rQ5pO4nM3l";

  it.each([
    [`https://t.me/DockNotifyBot?start=join_${TOKEN}`, "a t.me link"],
    [` t.me/DockNotifyBot?start=join_${TOKEN} `, "a t.me link without the scheme"],
    [`http://127.0.0.1:8080/sandbox?start=join_${TOKEN}`, "a sandbox link"],
    [`join_${TOKEN}`, "the payload alone"],
  ])("finds it in %j (%s)", (text) => {
    expect(joinTokenFrom(text)).toBe(TOKEN);
    expect(dockIdFrom(text)).toBeNull();
  });

  it.each([
    [TOKEN, "a bare token (a Dock ID's shape: that is what it is taken for)"],
    [`https://t.me/DockNotifyBot?start=join_${TOKEN}x`, "a token one character too long"],
    [`https://t.me/DockNotifyBot?start=invite_${TOKEN}`, "an invitation to own Docks"],
    [`javascript:alert(1)?start=join_${TOKEN}`, "another URL scheme"],
  ])("finds none in %j (%s)", (text) => {
    expect(joinTokenFrom(text)).toBeNull();
  });
});
