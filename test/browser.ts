import { spawnSync } from "node:child_process";
import { createServer } from "node:net";
import { type Browser, chromium } from "playwright-core";

/**
 * Debian's Chromium (never a downloaded browser; `.ci/run` installs it with apt-get). Missing in
 * CI is an error; on a developer's machine without it the browser tests are skipped, with a warning.
 */
export const chromiumPath =
  spawnSync("sh", ["-c", "command -v chromium || command -v chromium-browser"], {
    encoding: "utf8",
  }).stdout.trim() || undefined;
if (!chromiumPath) {
  if (process.env.CI) throw new Error("Chromium is required in CI (apt-get install chromium)");
  console.warn("browser tests skipped: no chromium here (apt-get install chromium)");
}

/** Headless Chromium with the flags this machine needs (no sandbox as root, no background network). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath as string,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
  });
}

/** A port nobody listens on right now, so a URL (PUBLIC_URL, a webhook) can name it before the server starts. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (typeof address !== "object" || address === null) throw new Error("no port");
  return address.port;
}
