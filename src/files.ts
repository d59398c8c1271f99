import { extname } from "node:path";

/**
 * Where the service finds the files it reads as it runs (its threads' modules, the pages it serves).
 * This module's code sits directly in src/ when the sources run, and directly in dist/ when the
 * built service does: scripts/build-server.ts bundles the service into files directly in dist/,
 * puts the threads' modules and the assets below dist/ at the paths they have below src/, and
 * checks both. So one path below src/ names a file in either form.
 */
const CODE_ROOT = new URL(".", import.meta.url);
/** `.ts` for the sources, `.js` for the built service. */
const EXTENSION = extname(new URL(import.meta.url).pathname);

/** A file or folder of the service's own, by its path below src/ (`sandbox/page/`). */
export function ownFile(path: string): URL {
  return new URL(path, CODE_ROOT);
}

/** A module the service runs as a thread, by its path below src/ without extension. */
export function threadModule(
  path: "store/sqlite/worker" | "store/sqlite/checkpointer" | "http/payload-worker",
): URL {
  return new URL(`${path}${EXTENSION}`, CODE_ROOT);
}
