import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { type Browser, chromium, type Page } from "playwright-core";

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

/** The sandbox chat page's message list. */
export const chatLog = (page: Page) => page.getByRole("log", { name: "Messages" });

/** A port nobody listens on right now, so a URL (PUBLIC_URL, a webhook) can name it before the server starts. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (typeof address !== "object" || address === null) throw new Error("no port");
  return address.port;
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/**
 * axe-core's serious and critical violations on the page as it is now, one line each (rule, where).
 * Injected through the debugging protocol, as a person's extension would be: the page's Content
 * Security Policy stays as it is.
 */
export async function accessibilityProblems(page: Page): Promise<string[]> {
  if (!(await page.evaluate("typeof window.axe === 'object'"))) await page.evaluate(axeSource);
  const violations = (await page.evaluate(
    "window.axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.join(' ')) })))",
  )) as { id: string; impact: string; help: string; targets: string[] }[];
  return violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.impact} ${v.id} (${v.help}): ${v.targets.slice(0, 5).join(", ")}`);
}

/** What a page must never show: Content Security Policy violations and uncaught errors. */
export function pageProblems(page: Page): string[] {
  const problems: string[] = [];
  page.on("console", (message) => {
    if (/Content Security Policy/i.test(message.text())) problems.push(message.text());
  });
  page.on("pageerror", (error) => problems.push(error.message));
  return problems;
}
