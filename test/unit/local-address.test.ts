import { describe, expect, it } from "vitest";
import { onlyOnThisComputer } from "../../web/src/local-address.ts";

describe("a link only this computer can open (the console says so beside it)", () => {
  it.each([
    "http://127.0.0.1:8080/sandbox?start=abc",
    "http://127.1.2.3/sandbox",
    "http://localhost:8080/sandbox",
    "http://dock.localhost/sandbox",
    "http://[::1]:8080/sandbox",
  ])("%s", (link) => expect(onlyOnThisComputer(link)).toBe(true));

  it.each([
    "https://t.me/DockNotifyBot?start=abc",
    "http://192.168.1.10:8080/sandbox",
    "http://notify.example.com/",
    "not a URL",
  ])("not %s", (link) => expect(onlyOnThisComputer(link)).toBe(false));
});
