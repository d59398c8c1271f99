import { describe, expect, it } from "vitest";
import { validateDockFields } from "../../src/domain/dock.ts";

describe("a Dock's link", () => {
  it.each([
    ["ci.example.com", "https://ci.example.com"],
    ["ci.example.com/builds?x=1", "https://ci.example.com/builds?x=1"],
    ["status.example.co.uk:8443/x", "https://status.example.co.uk:8443/x"],
    ["http://ci.example.com", "http://ci.example.com"],
  ])("%s is kept as %s: a bare host name means https://", (given, kept) => {
    expect(validateDockFields({ name: "CI", link: given })).toMatchObject({
      ok: true,
      value: { link: kept },
    });
  });

  it.each(["javascript:alert(1)", "ftp://files.example.com", "localhost:3000", "builds"])(
    "%s is still refused",
    (given) => {
      expect(validateDockFields({ name: "CI", link: given }).ok).toBe(false);
    },
  );

  it.each(["localhost:3000", "localhost", "builds/x"])(
    "%s is refused for what it is (Telegram opens no such link), not for its missing scheme",
    (given) => {
      expect(validateDockFields({ name: "CI", link: given })).toEqual({
        ok: false,
        errors: [{ field: "link", message: expect.stringContaining("a URL Telegram can open") }],
      });
    },
  );
});

describe("a Dock's callback URL", () => {
  it("a dotted host name means https://; a local one must say its scheme, and the error shows how", () => {
    expect(validateDockFields({ name: "CI", callback_url: "hooks.example.com/dock" })).toMatchObject({
      ok: true,
      value: { callback_url: "https://hooks.example.com/dock" },
    });
    expect(validateDockFields({ name: "CI", callback_url: "http://localhost:3000/events" })).toMatchObject({
      ok: true,
      value: { callback_url: "http://localhost:3000/events" },
    });
    expect(validateDockFields({ name: "CI", callback_url: "localhost:3000/events" })).toEqual({
      ok: false,
      errors: [{ field: "callback_url", message: expect.stringContaining("http://localhost:3000/events") }],
    });
  });
});
