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
import { RecordedAudit, type RunningService, startLinkedService } from "../helpers/harness.ts";

/**
 * Issue 37's "Done when", start to end, as people do it: the owner in the console (Chromium), the
 * people in Telegram (the sandbox's chat page, in Chromium, for those who press the bot's buttons;
 * its control API for those who only ask). An owner makes a private Dock and shares an invite link;
 * someone follows it and the owner approves the request from the bot's message; the owner adds a
 * co-owner as approver through a single-use link into the bot, who approves the next request from
 * their own copy; the owner removes someone; and the console's audit log shows each of it with
 * who did it.
 */
describe.skipIf(!chromiumPath)("private Docks, the walk-through (sandbox and console in Chromium)", () => {
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

  /** A browser whose sandbox chat page plays `person`'s Telegram. */
  const telegramOf = async (person: number): Promise<BrowserContext> => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.addInitScript(`localStorage.setItem("sandbox.person", "${person}")`);
    return context;
  };

  /** Someone opens an invite link in Telegram and says Yes: their request is sent. */
  const asks = async (person: number, link: string) => {
    const prompt = await people.botReply(
      person,
      await people.start(person, new URL(link).searchParams.get("start") as string),
      "the invite link's prompt",
    );
    await people.press(person, prompt, "Yes");
    const sent = await people.edited(person, prompt, "the prompt to say the request is sent");
    expect(sent.text).toContain("request to join On call is sent");
    return sent;
  };

  it("an owner makes a private Dock, approves a request in Telegram, adds an approver who approves the next, removes someone, and reads it all in the audit log", {
    timeout: 300_000,
  }, async () => {
    const olga = await people.person("Olga", "olga_ops");
    const wes = await people.person("Wes");
    const zed = await people.person("Zed");
    const bea = await people.person("Bea", "bea_ops");
    for (const person of [olga, wes, zed, bea]) await people.botReply(person, await people.start(person));

    // The owner's console.
    const consoleContext = await browser.newContext({
      viewport: { width: 1280, height: 900 },
      permissions: ["clipboard-read", "clipboard-write"],
    });
    const owner = await signIn(service, { id: olga, first_name: "Olga", username: "olga_ops" });
    await withSession(consoleContext, owner);
    const page = await consoleContext.newPage();
    const problems = pageProblems(page);
    page.on("dialog", (dialog) => void dialog.accept());

    // 1. A private Dock: anyone may ask, the owner approves.
    await page.goto(`${service.url}/console/#/new`);
    await page.getByLabel("Name").fill("On call");
    await page
      .getByRole("group", { name: "Who can subscribe?" })
      .getByRole("radio", { name: /Anyone may ask; I approve/ })
      .check();
    await page.getByRole("button", { name: "Create" }).click();
    const card = page.getByRole("article", { name: "On call" });
    await card.getByText("Private: you approve who joins.").waitFor();
    const [dock] = await service.app.docks.list(olga);
    if (dock === undefined) throw new Error("no Dock made");
    const tab = (name: string | RegExp) =>
      card.getByRole("navigation", { name: "Dock sections" }).getByRole("link", { name });

    // 2. An invite link, copied to be shared.
    await tab(/^Subscribers/).click();
    const form = card.getByRole("form", { name: "New invite link" });
    await form.getByLabel(/Link name/).fill("Team");
    await form.getByRole("button", { name: "Create invite link" }).click();
    await card.getByTestId("new-invite-link").waitFor();
    await card.getByRole("button", { name: "Copy invite link" }).click();
    await page.getByRole("status").filter({ hasText: "Invite link copied." }).waitFor();
    const link = (await page.evaluate("navigator.clipboard.readText()")) as string;
    expect(link).toMatch(/\/sandbox\?start=join_[A-Za-z0-9]{22}$/);
    expect(link).not.toContain(dock.id);

    // 3. Wes follows it and asks; the owner approves from the bot's message in her Telegram.
    const wesAsked = await asks(wes, link);
    const olgaTelegram = await telegramOf(olga);
    const olgaChat = await olgaTelegram.newPage();
    await olgaChat.goto(`${service.url}/sandbox`);
    const wesCopy = chatLog(olgaChat).locator("li", { hasText: "Wes asks to join On call." });
    await wesCopy.getByText("Through the invite link “Team”.").waitFor();
    await wesCopy.getByRole("button", { name: "Approve" }).click();
    await wesCopy.getByText("✔ Approved by Olga").waitFor();
    expect(await wesCopy.getByRole("button", { name: "Approve" }).count()).toBe(0);
    expect((await people.botReply(wes, wesAsked, "Wes to be told")).text).toBe(
      "Your request to join On call was approved: its messages will appear here.",
    );
    // The console hears it: Wes is a subscriber, through the link.
    const subscribers = card.getByRole("region", { name: /^Subscribers/ });
    await subscribers
      .getByRole("listitem")
      .filter({ hasText: "Wes" })
      .getByText("joined through “Team”")
      .waitFor();

    // 4. The owner adds Bea as an approver: a single-use link into the bot, opened and accepted.
    await tab("Co-owners").click();
    await card.getByLabel("Role for the new co-owner").selectOption("approver");
    await card.getByRole("button", { name: "Invite a co-owner" }).click();
    const invitation = await card.getByLabel(/Invitation link as approver/).inputValue();
    expect(invitation).toMatch(/\/sandbox\?start=coown_[A-Za-z0-9]{22}$/);
    const beaTelegram = await telegramOf(bea);
    const beaChat = await beaTelegram.newPage();
    await beaChat.goto(invitation);
    await chatLog(beaChat).getByText("Olga @olga_ops invites you to co-own the Dock On call").waitFor();
    await chatLog(beaChat).getByRole("button", { name: /^Yes/ }).click();
    await chatLog(beaChat).getByText("you are an approver of On call").waitFor();
    await card.getByTestId("co-owners").getByText("Bea @bea_ops · Approver").waitFor();
    // Single use: the link a second time makes nobody a co-owner.
    const again = await people.botReply(
      zed,
      await people.start(zed, new URL(invitation).searchParams.get("start") as string),
      "the bot's answer to a used invitation",
    );
    expect(again.text).toBe("This link was already used. Ask the Dock's owner for a new invitation.");
    expect(await service.app.coOwners.roleOnDock(dock.id, zed)).toBeNull();

    // 5. Zed asks through the same link; Bea approves from her own copy, and Olga's copy says so.
    const zedAsked = await asks(zed, link);
    const zedCopy = chatLog(beaChat).locator("li", { hasText: "Zed asks to join On call." });
    await zedCopy.getByRole("button", { name: "Approve" }).click();
    await zedCopy.getByText("✔ Approved by Bea").waitFor();
    await chatLog(olgaChat)
      .locator("li", { hasText: "Zed asks to join On call." })
      .getByText("✔ Approved by Bea")
      .waitFor();
    expect((await people.botReply(zed, zedAsked, "Zed to be told")).text).toBe(
      "Your request to join On call was approved: its messages will appear here.",
    );

    // 6. The owner removes Wes: he is told once, and gets no later message; Zed does.
    await tab(/^Subscribers/).click();
    await subscribers.getByRole("listitem").filter({ hasText: "Zed" }).waitFor();
    const wesLast = (await people.history(wes)).at(-1) as { message_id: number };
    await subscribers.getByRole("button", { name: "Remove Wes", exact: true }).click();
    await page.getByRole("status").filter({ hasText: "Wes removed." }).waitFor();
    const told = await people.botReply(wes, wesLast, "Wes to be told of his removal");
    expect(told.text).toBe("You were removed from On call. Its messages will no longer arrive.");
    const zedLast = (await people.history(zed)).at(-1) as { message_id: number };
    await tab("Send").click();
    await card.getByRole("button", { name: "Send test message" }).click();
    expect((await people.botReply(zed, zedLast, "the test message")).text).toContain("On call");
    expect(
      (await people.history(wes)).filter((m) => m.from.is_bot && m.message_id > told.message_id),
    ).toEqual([]);

    // 7. The audit log, in the console: each step, with who did it.
    await tab("Audit log").click();
    const log = card.getByTestId("audit");
    const row = (who: string, what: string) =>
      log.getByRole("row").filter({ hasText: who }).filter({ hasText: what });
    const steps: [string, string][] = [
      ["Olga @olga_ops", "created the Dock (who can subscribe: anyone may ask, each approved)"],
      ["Olga @olga_ops", "made the invite link “Team”"],
      ["Olga @olga_ops", "approved the request of Wes"],
      ["Olga @olga_ops", "invited a co-owner as approver"],
      ["Bea @bea_ops", "joined as approver, invited by Olga @olga_ops"],
      ["Bea @bea_ops", "approved the request of Zed"],
      ["Olga @olga_ops", "removed Wes"],
    ];
    for (const [who, what] of steps) await row(who, what).waitFor();
    // Newest first, in the order they were done (the test message in between).
    const texts = (await log.locator("tbody tr").allTextContents()).toReversed();
    const order = steps.map(([, what]) => texts.findIndex((text) => text.includes(what)));
    expect(order).toEqual(order.toSorted((a, b) => a - b));
    expect(await accessibilityProblems(page)).toEqual([]);
    await page.screenshot({ path: "test-results/private-docks-walkthrough-audit.png", fullPage: true });

    // The store holds the same, each with its actor.
    expect(await audit.of(dock.id)).toEqual([
      ["invite_created", olga, expect.objectContaining({ name: "Team" })],
      ["request_approved", olga, expect.objectContaining({ chat_id: wes })],
      ["request_approved", bea, expect.objectContaining({ chat_id: zed })],
      ["subscriber_removed", olga, { chat_id: wes }],
    ]);
    expect(problems).toEqual([]);
    // Neither link's token is in the service's log.
    for (const secret of [link, invitation])
      expect(service.logs.text).not.toContain((new URL(secret).searchParams.get("start") as string).slice(6));
    await olgaTelegram.close();
    await beaTelegram.close();
    await consoleContext.close();
  });
});
