/** The sections of a Dock's page, in the order its navigation shows them. */
export const DOCK_TABS = [
  "send",
  "subscribers",
  "messages",
  "activity",
  "integrations",
  "settings",
  "co-owners",
  "audit",
] as const;
export type DockTab = (typeof DOCK_TABS)[number];

export const TAB_LABEL: Record<DockTab, string> = {
  send: "Send",
  subscribers: "Subscribers",
  messages: "Messages",
  activity: "Activity",
  integrations: "Integrations",
  settings: "Settings",
  "co-owners": "Co-owners",
  audit: "Audit log",
};

/**
 * Where the console is. In the URL's fragment (`#/docks/<id>/messages`), so the service serves one
 * page under any path prefix, and Back, reload and shared links all work.
 */
export type Route =
  | { page: "docks" }
  | { page: "new" }
  | { page: "help" }
  | { page: "owners" }
  | { page: "dock"; id: string; tab: DockTab; messageId: string | null };

export function parseRoute(hash: string): Route {
  let parts: string[];
  try {
    parts = hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  } catch {
    // A malformed escape (`#/docks/%E0`, a link cut short): no page of ours, so the list.
    return { page: "docks" };
  }
  if (parts[0] === "help") return { page: "help" };
  if (parts[0] === "owners") return { page: "owners" };
  if (parts[0] === "new") return { page: "new" };
  // A Dock ID is letters and digits: anything else is no Dock (and never reaches a request path).
  if (parts[0] === "docks" && parts[1] && /^[A-Za-z0-9]{1,64}$/.test(parts[1])) {
    const tab = (DOCK_TABS as readonly string[]).includes(parts[2] ?? "") ? (parts[2] as DockTab) : "send";
    const messageId =
      tab === "messages" && /^[A-Za-z0-9_-]{1,64}$/.test(parts[3] ?? "") ? (parts[3] as string) : null;
    return { page: "dock", id: parts[1], tab, messageId };
  }
  return { page: "docks" };
}

/** The fragment of a route: what links' `href`s hold. */
export function hrefOf(route: Route): string {
  switch (route.page) {
    case "docks":
      return "#/";
    case "new":
      return "#/new";
    case "help":
      return "#/help";
    case "owners":
      return "#/owners";
    case "dock": {
      const base = `#/docks/${encodeURIComponent(route.id)}`;
      if (route.messageId !== null) return `${base}/messages/${encodeURIComponent(route.messageId)}`;
      return route.tab === "send" ? base : `${base}/${route.tab}`;
    }
  }
}

export const dockHref = (id: string, tab: DockTab = "send", messageId: string | null = null) =>
  hrefOf({ page: "dock", id, tab, messageId });
