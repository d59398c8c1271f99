import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { build } from "vite";

/**
 * Vitest global setup: builds the console (web/ → web/dist) and the compiled service (src/ → dist/)
 * before any test runs, so the tests always exercise the current sources, as `npm start` does with
 * its `prestart` build. The tests that start `bin/dock-notify.js` or `npm start` run the compiled
 * service; the rest import the sources.
 */
export default async function buildAll(): Promise<void> {
  const server = promisify(execFile)(process.execPath, [
    new URL("../scripts/build-server.ts", import.meta.url).pathname,
  ]);
  await Promise.all([server, buildConsole()]);
}

async function buildConsole(): Promise<void> {
  // Vitest sets NODE_ENV=test, which would make Vite bundle React's development build.
  const nodeEnv = process.env.NODE_ENV;
  process.env.NODE_ENV = "production";
  try {
    await build({ configFile: new URL("../web/vite.config.ts", import.meta.url).pathname, logLevel: "warn" });
  } finally {
    process.env.NODE_ENV = nodeEnv;
  }
}
