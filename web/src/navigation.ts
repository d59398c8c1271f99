import { useEffect, useState } from "react";
import { hrefOf, parseRoute, type Route } from "./route.ts";

/** Goes to a route, as a link would (a new history entry). */
export function navigate(route: Route | string): void {
  window.location.hash = typeof route === "string" ? route : hrefOf(route);
}

/** The current route, following the fragment. */
export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(window.location.hash));
  useEffect(() => {
    const onHash = () => setRoute(parseRoute(window.location.hash));
    window.addEventListener("hashchange", onHash);
    return () => window.removeEventListener("hashchange", onHash);
  }, []);
  return route;
}
