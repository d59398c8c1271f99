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
});
