import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumPath, launchChromium } from "../helpers/browser.ts";
import { type RunningService, startService } from "../helpers/harness.ts";

describe.skipIf(!chromiumPath)("the service's pages in Chromium", () => {
  let service: RunningService;
  let browser: Browser;

  beforeAll(async () => {
    service = await startService("sqlite");
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await service?.close();
  });

  it.each(["/console/", "/sandbox"])(
    "%s has its own icon: the browser never asks for /favicon.ico",
    async (path) => {
      const page = await browser.newPage();
      const before = service.logs.lines.length;
      try {
        await page.goto(`${service.url}${path}`, { waitUntil: "load" });
        // The icon is a picture the browser can draw.
        const width = await page.evaluate(`(async () => {
          const href = document.querySelector('link[rel="icon"]')?.href;
          if (href === undefined) return 0;
          const image = new Image();
          image.src = href;
          await image.decode();
          return image.naturalWidth;
        })()`);
        expect(width).toBeGreaterThan(0);
        // Without an icon of its own, Chromium asks for /favicon.ico right after the page loads
        // (a 404 and a log line for every visit).
        await page.waitForTimeout(1000);
        expect(service.logs.lines.slice(before).join("\n")).not.toContain("/favicon.ico");
      } finally {
        await page.close();
      }
    },
  );
});
