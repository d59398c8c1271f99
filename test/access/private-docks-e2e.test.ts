import { mkdirSync } from "node:fs";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { People } from "../helpers/bot-harness.ts";
import { accessibilityProblems, chromiumPath, launchChromium, pageProblems } from "../helpers/browser.ts";
import { signIn, withSession } from "../helpers/console-client.ts";
import { RecordedAudit, type RunningService, startLinkedService } from "../helpers/harness.ts";

/**
 * Private Docks (issue 37) in the console, in Chromium, with the bot in the sandbox: a Dock made
 * to approve who joins, an invite link made, copied and shown as a QR code, a request coming in
 * live and approved, a subscriber removed and banned, then let back; every state axe-clean.
 */
describe.skipIf(!chromiumPath)("private Docks in the console, in Chromium (sandbox mode)", () => {
  let service: RunningService;
  let browser: Browser;
  let people: People;
  const audit = new RecordedAudit();

  beforeAll(async () => {
    service = await startLinkedService({}, { audit });
    people = new People(`${service.url}/sandbox`);
    browser = await launchChromium();
    mkdirSync("test-results", { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await service?.close();
  });

  /** Signs a person in as the console does (the bot confirms, Continue) and gives the browser the session. */
  const signInto = async (context: BrowserContext, person: { id: number; first_name: string }) => {
    const owner = await signIn(service, person);
    await withSession(context, owner);
  };

  /** The page has no serious accessibility problem now; its screenshot is kept under `name`. */
  const clean = async (page: Page, name: string) => {
    expect(await accessibilityProblems(page)).toEqual([]);
    await page.screenshot({ path: `test-results/private-docks-${name}.png`, fullPage: true });
  };

  it("a Dock that approves who joins: an invite link made and copied, a request heard live and approved, a subscriber removed, banned and let back", {
    timeout: 240_000,
  }, async () => {
    const ownerId = await people.person("Olga", "olga_ops");
    await people.botReply(ownerId, await people.start(ownerId), "the owner's welcome");
    const context = await browser.newContext({
      permissions: ["clipboard-read", "clipboard-write"],
      viewport: { width: 1100, height: 900 },
    });
    const page = await context.newPage();
    const problems = pageProblems(page);
    // Remove, ban, revoke: each asks first.
    page.on("dialog", (dialog) => void dialog.accept());
    await signInto(context, { id: ownerId, first_name: "Olga" });

    // New Dock: "Who can subscribe?", open unless chosen otherwise.
    await page.goto(`${service.url}/console/#/new`);
    await page.getByRole("heading", { name: "Create a new Dock" }).waitFor();
    const who = page.getByRole("group", { name: "Who can subscribe?" });
    expect(await who.getByRole("radio", { name: /Anyone with the Dock ID/ }).isChecked()).toBe(true);
    await page.getByLabel("Name").fill("Night shift");
    await who.getByRole("radio", { name: /Anyone may ask; I approve/ }).check();
    await clean(page, "1-new");
    await page.getByRole("button", { name: "Create" }).click();
    const card = page.getByRole("article", { name: "Night shift" });
    await card.getByText("Private: you approve who joins.").waitFor();
    const [dock] = await service.app.docks.list(ownerId);
    if (dock === undefined) throw new Error("no Dock made");
    expect(dock.visibility).toBe("approval");
    const tab = (name: string | RegExp) =>
      card.getByRole("navigation", { name: "Dock sections" }).getByRole("link", { name });

    // An invite link: made with a name and a limit, shown with its QR code, copied.
    await tab(/^Subscribers/).click();
    await card.getByRole("heading", { name: /^Join requests/ }).waitFor();
    const form = card.getByRole("form", { name: "New invite link" });
    await form.getByLabel(/Link name/).fill("Ops team");
    await form.getByLabel(/Uses/).fill("5");
    await form.getByLabel("Expires after").selectOption({ label: "7 days" });
    // An approval Dock asks whatever the link: the box says so, and cannot be cleared.
    const asks = form.getByRole("checkbox", { name: "I approve each join" });
    expect(await asks.isChecked()).toBe(true);
    expect(await asks.isDisabled()).toBe(true);
    await form.getByRole("button", { name: "Create invite link" }).click();
    const made = card.getByTestId("new-invite-link");
    await made.waitFor();
    const link = (await made.textContent()) as string;
    expect(link).toMatch(new RegExp(`^${service.url}/sandbox\\?start=join_[A-Za-z0-9]{22}$`));
    await card.getByRole("img", { name: /QR code of the invite link “Ops team”/ }).waitFor();
    await card.getByRole("button", { name: "Copy invite link" }).click();
    await page.getByRole("status").filter({ hasText: "Invite link copied." }).waitFor();
    expect(await page.evaluate("navigator.clipboard.readText()")).toBe(link);
    const links = card.getByTestId("invite-links");
    await links.getByRole("listitem").filter({ hasText: "Ops team" }).getByText("0 of 5 joined").waitFor();
    await clean(page, "2-invite-link");

    // Someone opens the link in Telegram and asks: the page hears it, badge and queue.
    const wes = await people.person("Wes");
    await people.botReply(wes, await people.start(wes), "the welcome");
    const prompt = await people.botReply(
      wes,
      await people.start(wes, new URL(link).searchParams.get("start") as string),
    );
    await people.press(wes, prompt, "Yes");
    await people.edited(wes, prompt);
    await tab(/^Subscribers/)
      .getByTestId("requests-badge")
      .filter({ hasText: /^1/ })
      .waitFor();
    const queue = card.getByTestId("join-requests");
    const request = queue.getByRole("listitem").filter({ hasText: "Wes" });
    await request.getByText("through “Ops team”").waitFor();
    // The badge beside the count keeps the eight sections on one line.
    const tops = await card
      .getByRole("navigation", { name: "Dock sections" })
      .getByRole("link")
      .evaluateAll((all) => all.map((link) => Math.round(link.getBoundingClientRect().top)));
    expect(tops).toHaveLength(8);
    expect(new Set(tops).size).toBe(1);
    await clean(page, "3-request");

    // Approved here: off the queue, on the list with its link; the badge goes, the link counts it.
    const told = (await people.history(wes)).at(-1) as { message_id: number };
    await request.getByRole("button", { name: "Approve Wes" }).click();
    await page.getByRole("status").filter({ hasText: "Wes approved: subscribed." }).waitFor();
    const subscribers = card.getByRole("region", { name: /^Subscribers/ });
    await subscribers
      .getByRole("listitem")
      .filter({ hasText: "Wes" })
      .getByText("joined through “Ops team”")
      .waitFor();
    await tab(/^Subscribers/)
      .getByTestId("requests-badge")
      .waitFor({ state: "detached" });
    await links.getByRole("listitem").filter({ hasText: "Ops team" }).getByText("1 of 5 joined").waitFor();
    expect((await people.botReply(wes, told, "Wes to be told")).text).toBe(
      "Your request to join Night shift was approved: its messages will appear here.",
    );

    // Removed and banned: told once, listed as banned, then let back.
    const removedAt = (await people.history(wes)).at(-1) as { message_id: number };
    await subscribers.getByRole("button", { name: "Remove and ban Wes" }).click();
    await page.getByRole("status").filter({ hasText: "Wes removed and banned." }).waitFor();
    expect((await people.botReply(wes, removedAt, "Wes to be told")).text).toBe(
      "You were removed from Night shift. Its messages will no longer arrive.",
    );
    const banned = card.getByTestId("bans");
    await banned.getByRole("listitem").filter({ hasText: "Wes" }).waitFor();
    await clean(page, "4-banned");
    await banned.getByRole("button", { name: "Unban Wes" }).click();
    await page.getByRole("status").filter({ hasText: "Wes unbanned" }).waitFor();
    await banned.waitFor({ state: "detached" });

    // The link's QR code from the list (shown since it was made): hidden, asked for again, then the
    // link revoked: it says so, and no longer offers a copy.
    const item = links.getByRole("listitem").filter({ hasText: "Ops team" });
    const qrButton = item.getByRole("button", { name: "QR code of Ops team" });
    const qr = item.getByRole("img", { name: /QR code of the invite link “Ops team”/ });
    expect(await qrButton.getAttribute("aria-expanded")).toBe("true");
    await qrButton.click();
    await qr.waitFor({ state: "detached" });
    await qrButton.click();
    await qr.waitFor();
    await item.getByRole("button", { name: "Revoke Ops team" }).click();
    await item.getByText("revoked").waitFor();
    expect(await item.getByRole("button", { name: "Copy Ops team" }).count()).toBe(0);

    // Settings: who can subscribe, changed; the page says what it means now.
    await tab("Settings").click();
    await card
      .getByRole("group", { name: "Who can subscribe?" })
      .getByRole("radio", { name: "Invite only" })
      .check();
    await card.getByRole("button", { name: "Save" }).click();
    await page.getByRole("status").filter({ hasText: "Changes saved." }).waitFor();
    await card.getByText("Private: invite links only.").waitFor();
    await clean(page, "5-settings");

    expect((await audit.of(dock.id)).map(([action]) => action)).toEqual([
      "invite_created",
      "request_approved",
      "subscriber_removed",
      "subscriber_banned",
      "subscriber_unbanned",
      "invite_revoked",
      "visibility_changed",
    ]);
    expect(problems).toEqual([]);
    await context.close();
  });
});
