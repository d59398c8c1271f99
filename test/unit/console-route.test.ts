import { describe, expect, it } from "vitest";
import { DOCK_TABS, dockHref, hrefOf, parseRoute } from "../../web/src/route.ts";

describe("the console's addresses (the URL's fragment)", () => {
  it("every page's address reads back as that page", () => {
    for (const tab of DOCK_TABS) {
      expect(parseRoute(dockHref("Abc123", tab))).toEqual({
        page: "dock",
        id: "Abc123",
        tab,
        messageId: null,
      });
    }
    expect(parseRoute(dockHref("Abc123", "messages", "msg_1"))).toEqual({
      page: "dock",
      id: "Abc123",
      tab: "messages",
      messageId: "msg_1",
    });
    for (const page of ["docks", "new", "help", "owners"] as const)
      expect(parseRoute(hrefOf({ page }))).toEqual({ page });
  });

  it("anything else is the list: an unknown page, a Dock ID that is none, a malformed escape", () => {
    for (const hash of [
      "",
      "#",
      "#/",
      "#/nowhere",
      "#/docks",
      "#/docks/a%2Fb",
      "#/docks/%E0",
      "#/%",
      "#/docks/x/%zz",
    ]) {
      expect(parseRoute(hash), hash).toEqual({ page: "docks" });
    }
    // An unknown section of a Dock is its first one.
    expect(parseRoute("#/docks/Abc123/nowhere")).toMatchObject({ page: "dock", tab: "send" });
  });
});
