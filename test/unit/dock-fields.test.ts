import { describe, expect, it } from "vitest";
import { CallbackTargets } from "../../src/domain/callback-target.ts";
import { validateDockFields as validate } from "../../src/domain/dock.ts";

const PUBLIC_ONLY = new CallbackTargets([]);
const validateDockFields = (input: Parameters<typeof validate>[0]) => validate(input, PUBLIC_ONLY);

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
  it("a dotted host name means https://; another must say its scheme, and the error shows how", () => {
    expect(validateDockFields({ name: "CI", callback_url: "hooks.example.com/dock" })).toMatchObject({
      ok: true,
      value: { callback_url: "https://hooks.example.com/dock" },
    });
    expect(validateDockFields({ name: "CI", callback_url: "receiver:3000/events" })).toEqual({
      ok: false,
      errors: [
        { field: "callback_url", message: expect.stringContaining("https://hooks.example.com/events") },
      ],
    });
  });

  it.each([
    ["http://localhost:3000/events", "localhost", "loopback"],
    ["http://127.0.0.7/", "127.0.0.7", "loopback"],
    ["http://2130706439/", "127.0.0.7", "loopback"],
    ["http://[::ffff:127.0.0.7]/", "[::ffff:7f00:7]", "loopback"],
    ["http://10.0.0.5:8080/events", "10.0.0.5", "private network"],
    ["http://169.254.169.254/latest/meta-data/", "169.254.169.254", "link-local"],
  ])("%s is refused when set, naming the address and why", (url, host, reason) => {
    expect(validateDockFields({ name: "CI", callback_url: url })).toEqual({
      ok: false,
      errors: [
        {
          field: "callback_url",
          message: `callback_url must not point to ${host} (${reason}): events go only to public addresses unless the operator allows the network with CALLBACK_ALLOWED_NETWORKS`,
        },
      ],
    });
  });

  it("an allowed network's address is taken; the Dock's own stored URL is kept while another field changes", () => {
    const internal = new CallbackTargets(["10.0.0.0/8"]);
    expect(validate({ name: "CI", callback_url: "http://10.0.0.5:8080/events" }, internal).ok).toBe(true);
    const stored = "http://192.168.1.5/events";
    expect(validate({ name: "Renamed", callback_url: stored }, PUBLIC_ONLY, stored).ok).toBe(true);
    expect(validate({ name: "CI", callback_url: "http://192.168.1.6/events" }, PUBLIC_ONLY, stored).ok).toBe(
      false,
    );
  });
});
