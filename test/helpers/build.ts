import { build } from "../../scripts/build.ts";

/**
 * Vitest global setup: builds the console (web/ → web/dist) and the compiled service (src/ → dist/)
 * before any test runs, unless the build on disk was made from the current sources (the stamp of
 * scripts/build.ts, as `npm start` does), so the tests always exercise the current sources. The
 * tests that start `bin/dock-notify.js` or `npm start` run the compiled service; the rest import
 * the sources.
 */
export default async function buildAll(): Promise<void> {
  await build({ ifStale: true });
}
