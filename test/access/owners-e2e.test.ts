import { mkdirSync } from "node:fs";
import type { Browser, BrowserContext } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  accessibilityProblems,
  chatLog,
  chromiumPath,
  launchChromium,
  pageProblems,
} from "../helpers/browser.ts";
import { signIn, withSession } from "../helpers/console-client.ts";
import { type RunningService, startLinkedService } from "../helpers/harness.ts";

/** The administrator OWNERS names. */
const ADMIN = 8101;

describe.skipIf(!chromiumPath)("owners in the console, in Chromium", () => {
  let service: RunningService;
  let browser: Browser;

  beforeAll(async () => {
    // OWNERS closes even the sandbox: only its administrators, and whom they invite, get in.
    service = await startLinkedService({ OWNERS: String(ADMIN) });
    browser = await launchChromium();
    mkdirSync("test-results", { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await service?.close();
  });

  /** A browser context signed in as the administrator. */
  const adminContext = async (width: number): Promise<BrowserContext> => {
    const context = await browser.newContext({ viewport: { width, height: 900 } });
    const admin = await signIn(service, { id: ADMIN, first_name: "Ada" });
    await withSession(context, admin);
    return context;
  };

  it("the administrator invites an owner through a link into the bot and removes them; a stranger is told to ask", {
    timeout: 180_000,
  }, async () => {
    const context = await adminContext(1280);
    const page = await context.newPage();
    const problems = pageProblems(page);
    await page.goto(`${service.url}/console/#/owners`);
    await page.getByRole("heading", { name: "Owners" }).waitFor();
    const rows = page.getByRole("table").getByRole("row");
    await rows.filter({ hasText: "Ada" }).getByText("named by OWNERS").waitFor();
    expect(await accessibilityProblems(page)).toEqual([]);

    await page.getByRole("button", { name: "Invite an owner" }).click();
    const linkField = page.getByLabel(/Invitation link/);
    await linkField.waitFor();
    const link = await linkField.inputValue();
    expect(link).toMatch(new RegExp(`^${service.url}/sandbox\\?start=invite_[A-Za-z0-9]{22}$`));
    await page
      .getByRole("list")
      .getByRole("button", { name: /^Withdraw/ })
      .waitFor();
    expect(await accessibilityProblems(page)).toEqual([]);
    await page.screenshot({ path: "test-results/owners-1-invite.png", fullPage: true });

    // The invited person opens the link: the sandbox's chat page plays their Telegram.
    const chat = await context.newPage();
    await chat.goto(link);
    await chatLog(chat)
      .locator("li", { hasText: `/start ${new URL(link).searchParams.get("start")}` })
      .waitFor();
    await chat.getByRole("button", { name: /^Yes/ }).click();
    await chatLog(chat).getByText("you are an owner of this Dock Notify").waitFor();
    await chat.close();

    // No reload: the page hears from the live stream that who may sign in changed.
    await page.getByRole("heading", { name: "Open invitations" }).waitFor({ state: "detached" });
    const invited = rows.filter({ hasText: "Alice" });
    const roleOfAlice = invited.getByRole("cell").nth(2);
    await invited.waitFor();
    expect(await page.getByRole("button", { name: /^Withdraw/ }).count()).toBe(0);
    // The same page on a phone: a block per owner.
    await page.setViewportSize({ width: 390, height: 900 });
    await invited.getByRole("button", { name: /^Remove/ }).waitFor();
    expect(await accessibilityProblems(page)).toEqual([]);
    await page.screenshot({ path: "test-results/owners-2-list-390.png", fullPage: true });
    await page.setViewportSize({ width: 1280, height: 900 });

    // Made an administrator, then an owner again, then removed.
    expect(await roleOfAlice.textContent()).toBe("Owner");
    await invited.getByRole("button", { name: /^Make administrator/ }).click();
    await invited.getByRole("button", { name: /^Make owner/ }).waitFor();
    expect(await roleOfAlice.textContent()).toBe("Administrator");
    await invited.getByRole("button", { name: /^Make owner/ }).click();
    await invited.getByRole("button", { name: /^Make administrator/ }).waitFor();
    expect(await roleOfAlice.textContent()).toBe("Owner");
    page.once("dialog", (dialog) => void dialog.accept());
    await invited.getByRole("button", { name: /^Remove/ }).click();
    await invited.waitFor({ state: "detached" });
    // The invitation's token was in a URL the service answered (the sandbox page): never in its log.
    const token = (new URL(link).searchParams.get("start") as string).slice("invite_".length);
    expect(service.logs.text).toContain("start=invite_<redacted>");
    expect(service.logs.text).not.toContain(token);
    expect(problems).toEqual([]);
    await context.close();

    // Someone who is not an owner (the person just removed) signs in: the page says why not.
    const stranger = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const signInPage = await stranger.newPage();
    await signInPage.goto(`${service.url}/console/`);
    await signInPage.getByText("ask this Dock Notify's administrator for an invitation").waitFor();
    await signInPage.getByRole("button", { name: "Sign in with Telegram" }).click();
    const confirm = signInPage.getByRole("link", { name: "Open Telegram to confirm" });
    await confirm.waitFor();
    const [bot] = await Promise.all([stranger.waitForEvent("page"), confirm.click()]);
    await bot.getByRole("button", { name: /^Yes/ }).click();
    await chatLog(bot).getByText("You are not an owner of this Dock Notify").waitFor();
    await signInPage
      .getByRole("alert")
      .filter({ hasText: "This Telegram account is not an owner of this Dock Notify" })
      .waitFor();
    expect(await signInPage.getByRole("button", { name: "Continue", exact: true }).count()).toBe(0);
    expect(await accessibilityProblems(signInPage)).toEqual([]);
    await signInPage.screenshot({ path: "test-results/owners-3-not-an-owner.png", fullPage: true });
    await signInPage.getByRole("button", { name: "Start again" }).click();
    await signInPage.getByRole("button", { name: "Sign in with Telegram" }).waitFor();
    await stranger.close();
  });
});
