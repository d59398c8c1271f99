import { mkdirSync } from "node:fs";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  accessibilityProblems,
  chromiumPath,
  freePort,
  launchChromium,
  pageProblems,
} from "../helpers/browser.ts";
import { signIn, withSession } from "../helpers/console-client.ts";
import { type RunningService, startService } from "../helpers/harness.ts";

/** A phone's screen, in CSS pixels (an iPhone 12 to 15). */
const PHONE = { width: 390, height: 844 };

describe.skipIf(!chromiumPath)("a Dock's page on a phone (Chromium, 390 × 844)", () => {
  let service: RunningService;
  let browser: Browser;

  beforeAll(async () => {
    // The sandbox on this computer's address: the page's sharing note (PUBLIC_URL) is there too.
    const port = await freePort();
    service = await startService(
      "sqlite",
      { PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}` },
      { pace: "unpaced" },
    );
    browser = await launchChromium();
    mkdirSync("test-results", { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await service?.close();
  });

  it("the header is compact: each section's heading starts on the first screen, the sharing note folded away until asked for", {
    timeout: 120_000,
  }, async () => {
    const owner = await signIn(service, { id: 4711, first_name: "Pia" });
    const made = await owner.call("POST", "/docks", {
      name: "Production deploys of the storefront",
      link: "https://ci.example.com/storefront/pipelines?branch=main",
      description:
        "Deploy results from CI for the storefront: one message per pipeline, with the commit, who started it and how long it took.",
    });
    expect(made.status).toBe(201);
    const id = made.body.dock.id as string;
    const context = await browser.newContext({ viewport: PHONE, isMobile: true, hasTouch: true });
    await withSession(context, owner);
    const page = await context.newPage();
    const problems = pageProblems(page);
    // One Dock is "1 Dock" (the list's count under its filter).
    await page.goto(`${service.url}/console/#/`);
    await page.getByText("1 Dock", { exact: true }).waitFor();
    for (const [tab, first] of [
      ["", page.getByRole("button", { name: "Send test message" })],
      ["/subscribers", page.getByRole("heading", { name: /^Subscribers: \d+$/ })],
      ["/settings", page.getByRole("heading", { name: "Settings", exact: true })],
    ] as const) {
      await page.goto(`${service.url}/console/#/docks/${id}${tab}`);
      await first.waitFor();
      const box = await first.boundingBox();
      // In the upper two thirds of the first screen: the section's first lines show below it.
      expect(box?.y).toBeLessThan((PHONE.height * 2) / 3);
    }
    // The note on sharing a link this computer alone reaches is one line until opened.
    const note = page.getByText("Sharing the link", { exact: false });
    await note.waitFor();
    const details = page.locator("details.dock-hint");
    expect(await details.getAttribute("open")).toBeNull();
    await note.click();
    await page.getByText("which only this computer reaches").waitFor();
    expect(await accessibilityProblems(page)).toEqual([]);
    await page.screenshot({ path: "test-results/dock-header-390x844.png" });
    expect(problems).toEqual([]);
    await context.close();

    // On a wide screen there is room: the note is open from the start.
    const wide = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await withSession(wide, owner);
    const desk = await wide.newPage();
    await desk.goto(`${service.url}/console/#/docks/${id}`);
    await desk.getByText("which only this computer reaches").waitFor();
    expect(await desk.locator("details.dock-hint").getAttribute("open")).not.toBeNull();
    await wide.close();
  });
});
