import { useEffect, useState } from "react";
import { parseRoute, type Route } from "./route.ts";

/** Goes to a route's address (`#/…`, route.ts), as a link would (a new history entry). */
export function navigate(href: string): void {
  window.location.hash = href;
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
