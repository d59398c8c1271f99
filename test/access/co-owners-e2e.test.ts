import { mkdirSync } from "node:fs";
import type { Browser, BrowserContext } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { People } from "../helpers/bot-harness.ts";
import {
  accessibilityProblems,
  chatLog,
  chromiumPath,
  launchChromium,
  pageProblems,
} from "../helpers/browser.ts";
import { signIn, withSession } from "../helpers/console-client.ts";
import { type RunningService, startLinkedService } from "../helpers/harness.ts";

/** The administrator OWNERS names: the instance is closed to everyone else. */
const ADMIN = 8201;

describe.skipIf(!chromiumPath)("co-owners in the console, in Chromium", () => {
  let service: RunningService;
  let browser: Browser;

  beforeAll(async () => {
    service = await startLinkedService({ OWNERS: String(ADMIN) });
    browser = await launchChromium();
    mkdirSync("test-results", { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await service?.close();
  });

  /** A browser whose sandbox chat page plays `person`'s Telegram. */
  const personContext = async (person: number): Promise<BrowserContext> => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.addInitScript(`localStorage.setItem("sandbox.person", "${person}")`);
    return context;
  };

  it("an owner invites an approver through the bot link; the approver signs in to a closed instance and sees that Dock with only what an approver may do", {
    timeout: 240_000,
  }, async () => {
    const admin = await signIn(service, { id: ADMIN, first_name: "Olga" });
    const made = await admin.call("POST", "/docks", { name: "Night builds" });
    const dockId = made.body.dock.id as string;
    const secretKey = made.body.dock.secret_key as string;
    const people = new People(`${service.url}/sandbox`);
    const bea = await people.person("Bea", "bea_ops");

    // The owner's console: the Co-owners section invites with a role.
    const ownerContext = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await withSession(ownerContext, admin);
    const owner = await ownerContext.newPage();
    const ownerProblems = pageProblems(owner);
    await owner.goto(`${service.url}/console/#/docks/${dockId}/co-owners`);
    await owner.getByRole("heading", { name: "Co-owners", level: 2 }).waitFor();
    await owner.getByTestId("co-owners").getByText("Owner (owns the Dock)").waitFor();
    await owner.getByLabel("Role for the new co-owner").selectOption("approver");
    await owner.getByRole("button", { name: "Invite a co-owner" }).click();
    const linkField = owner.getByLabel(/Invitation link as approver/);
    await linkField.waitFor();
    const link = await linkField.inputValue();
    expect(link).toMatch(new RegExp(`^${service.url}/sandbox\\?start=coown_[A-Za-z0-9]{22}$`));
    await owner.getByRole("heading", { name: "Open invitations" }).waitFor();
    expect(await accessibilityProblems(owner)).toEqual([]);
    await owner.screenshot({ path: "test-results/co-owners-1-invite.png", fullPage: true });

    // Bea opens the link in Telegram (the sandbox chat page plays her app) and says Yes.
    const beaContext = await personContext(bea);
    const chat = await beaContext.newPage();
    await chat.goto(link);
    await chatLog(chat).getByText("Olga invites you to co-own the Dock Night builds").waitFor();
    await chat.getByRole("button", { name: /^Yes/ }).click();
    await chatLog(chat).getByText("you are an approver of Night builds").waitFor();
    await chat.close();

    // The owner's page hears it from the live stream: no reload.
    await owner.getByTestId("co-owners").getByText("Bea @bea_ops · Approver").waitFor();
    await owner.getByRole("heading", { name: "Open invitations" }).waitFor({ state: "detached" });

    // Bea signs in: the instance is closed, but a Dock is shared with her.
    const console = await beaContext.newPage();
    const problems = pageProblems(console);
    await console.goto(`${service.url}/console/`);
    await console.getByRole("button", { name: "Sign in with Telegram" }).click();
    const confirm = console.getByRole("link", { name: "Open Telegram to confirm" });
    await confirm.waitFor();
    const [bot] = await Promise.all([beaContext.waitForEvent("page"), confirm.click()]);
    await bot.getByRole("button", { name: /^Yes/ }).click();
    await chatLog(bot).getByText("Confirmed.").waitFor();
    await bot.close();
    await console.getByRole("button", { name: "Continue", exact: true }).click();

    // Her list holds that Dock alone, marked; she makes no Docks of her own.
    await console.getByRole("heading", { name: "Your Docks" }).waitFor();
    const line = console.getByRole("list", { name: "Docks" }).getByRole("listitem");
    await line.getByText("shared with you as approver").waitFor();
    expect(await line.count()).toBe(1);
    expect(await console.getByRole("link", { name: "New Dock" }).count()).toBe(0);
    await console.getByText("These Docks are shared with you").waitFor();
    expect(await accessibilityProblems(console)).toEqual([]);
    await console.screenshot({ path: "test-results/co-owners-2-shared-list.png", fullPage: true });

    // The Dock opens on her first section; the sections of other roles are not there.
    await line.getByRole("link", { name: "Night builds" }).click();
    await console.getByRole("heading", { name: /^Subscribers:/ }).waitFor();
    const sections = console.getByRole("navigation", { name: "Dock sections" }).getByRole("link");
    await console.getByTestId("dock-role").getByText("approver").waitFor();
    expect(await sections.allTextContents()).toEqual([
      "Subscribers 0",
      "Messages",
      "Activity",
      "Co-owners",
      "Audit log",
    ]);
    expect(await console.content()).not.toContain(secretKey);
    expect(await accessibilityProblems(console)).toEqual([]);
    await console.screenshot({ path: "test-results/co-owners-3-approver-dock.png", fullPage: true });
    // An address of another role's section leads to her own.
    await console.goto(`${service.url}/console/#/docks/${dockId}/settings`);
    await console.getByRole("heading", { name: /^Subscribers:/ }).waitFor();

    // The team, without the owner's tools; she may leave.
    await sections.filter({ hasText: "Co-owners" }).click();
    await console.getByTestId("co-owners").getByText("Bea @bea_ops (you) · Approver").waitFor();
    await console.getByRole("button", { name: "Leave this Dock" }).waitFor();
    expect(await console.getByRole("button", { name: "Invite a co-owner" }).count()).toBe(0);
    expect(await accessibilityProblems(console)).toEqual([]);

    // The audit log says who did what.
    await sections.filter({ hasText: "Audit log" }).click();
    const audit = console.getByTestId("audit");
    await audit.getByText("joined as approver, invited by Olga").waitFor();
    await audit
      .getByRole("row")
      .filter({ hasText: "Olga" })
      .filter({ hasText: "invited a co-owner as approver" })
      .waitFor();
    await audit.getByRole("row").filter({ hasText: "created the Dock" }).waitFor();
    expect(await accessibilityProblems(console)).toEqual([]);
    await console.screenshot({ path: "test-results/co-owners-4-audit.png", fullPage: true });

    // The owner makes her a viewer: her page loses Subscribers at once, and the log says so.
    await owner.getByLabel("Role of Bea @bea_ops").selectOption("viewer");
    await sections.filter({ hasText: "Subscribers" }).waitFor({ state: "detached" });
    await audit.getByText("made Bea @bea_ops viewer (was approver)").waitFor();
    expect(await sections.allTextContents()).toEqual(["Messages", "Activity", "Co-owners", "Audit log"]);

    expect(problems).toEqual([]);
    expect(ownerProblems).toEqual([]);
    // The invitation's token was in URLs the service answered (the sandbox page): never in its log.
    expect(service.logs.text).toContain("start=coown_<redacted>");
    expect(service.logs.text).not.toContain((new URL(link).searchParams.get("start") as string).slice(6));
    await beaContext.close();
    await ownerContext.close();
  });
});
