import { build } from "vite";

/**
 * Vitest global setup: builds the console (web/ → web/dist) before any test runs, so the tests
 * always exercise the current sources, as `npm start` does with its `prestart` build.
 */
export default async function buildConsole(): Promise<void> {
  // Vitest sets NODE_ENV=test, which would make Vite bundle React's development build.
  const nodeEnv = process.env.NODE_ENV;
  process.env.NODE_ENV = "production";
  try {
    await build({ configFile: new URL("../web/vite.config.ts", import.meta.url).pathname, logLevel: "warn" });
  } finally {
    process.env.NODE_ENV = nodeEnv;
  }
}
