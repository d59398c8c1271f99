import { mkdirSync } from "node:fs";
import { Bot } from "grammy";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { SANDBOX_BOT_TOKEN } from "../../src/telegram/sandbox-bot.ts";
import { accessibilityProblems, chromiumPath, launchChromium } from "../helpers/browser.ts";
import { type RunningSandbox, startSandbox } from "../helpers/sandbox-harness.ts";

describe.skipIf(!chromiumPath)("sandbox chat page in Chromium", () => {
  let sandbox: RunningSandbox;
  let bot: Bot;
  let browser: Browser;
  const pressed: { data: string; from: number }[] = [];
  let onPress: (() => void) | undefined;
  const answers: { text: string; replyTo: string | undefined }[] = [];

  beforeAll(async () => {
    sandbox = await startSandbox();
    bot = new Bot(SANDBOX_BOT_TOKEN, { client: { apiRoot: sandbox.root } });
    bot.command("start", (ctx) =>
      ctx.reply(`<b>Subscribe</b> to <code>${ctx.match}</code>?`, {
        parse_mode: "HTML",
        reply_markup: {
          inline_keyboard: [
            [
              { text: "Yes", callback_data: `yes:${ctx.match}` },
              { text: "No", callback_data: "no" },
            ],
          ],
        },
      }),
    );
    bot.command("alert", (ctx) =>
      ctx.reply("Press for an alert", {
        reply_markup: { inline_keyboard: [[{ text: "Alert me", callback_data: "alert" }]] },
      }),
    );
    bot.command("ask", (ctx) =>
      ctx.reply("Send me the Dock ID", {
        reply_markup: { force_reply: true, input_field_placeholder: "Dock ID" },
      }),
    );
    bot.on("message:text", (ctx) => {
      answers.push({ text: ctx.message.text, replyTo: ctx.message.reply_to_message?.text });
    });
    bot.on("callback_query:data", async (ctx) => {
      pressed.push({ data: ctx.callbackQuery.data, from: ctx.from.id });
      onPress?.();
      await ctx.answerCallbackQuery(
        ctx.callbackQuery.data === "alert"
          ? { text: "Only admins can do that.", show_alert: true }
          : { text: "Subscribed" },
      );
    });
    await bot.init();
    void bot.start({ timeout: 30 });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await bot?.stop();
    await sandbox?.close();
  });

  it("a start link opens the bot; its inline buttons show and pressing one reaches the bot", async () => {
    const page = await browser.newPage();
    await page.goto(`${sandbox.root}?start=abc`);

    const messages = page.getByRole("log", { name: "Messages" });
    const question = messages.locator("li", { hasText: "Subscribe to abc?" });
    await question.waitFor();
    expect(await question.locator("strong").textContent()).toBe("Subscribe");
    expect(await question.locator("code").textContent()).toBe("abc");
    // The start link was sent once, as /start abc from the page's person, and left the address.
    expect(await messages.locator("li", { hasText: "/start abc" }).count()).toBe(1);
    expect(new URL(page.url()).search).toBe("");

    const reached = new Promise<void>((resolve) => {
      onPress = resolve;
    });
    await page.getByRole("button", { name: "Yes", exact: true }).click();
    await reached;
    const people = (await sandbox.control("GET", "/users")).body as { id: number }[];
    expect(pressed).toEqual([{ data: "yes:abc", from: people[0]?.id }]);
    await page.getByRole("status").filter({ hasText: "Subscribed" }).waitFor();
    // A chat with messages, buttons and a notice: nothing serious for a screen reader or in contrast.
    expect(await accessibilityProblems(page)).toEqual([]);

    mkdirSync("test-results", { recursive: true });
    await page.screenshot({ path: "test-results/sandbox-chat-page.png", fullPage: true });
  });

  it("typing a message sends it to the bot, and the block toggle blocks it", async () => {
    const page = await browser.newPage();
    await page.goto(sandbox.root);
    await page.getByRole("textbox", { name: "Message" }).fill("hello from the page");
    await page.getByRole("button", { name: "Send" }).click();
    await page
      .getByRole("log", { name: "Messages" })
      .locator("li", { hasText: "hello from the page" })
      .waitFor();

    await page.getByRole("checkbox", { name: "Block bot" }).check();
    const me = ((await sandbox.control("GET", "/users")).body as { id: number }[])[0]?.id;
    await expect
      .poll(async () => (await sandbox.control("GET", `/chats/${me}`)).body.blocked, { timeout: 20_000 })
      .toBe(true);
    await page.getByRole("button", { name: "Restart bot" }).waitFor();
  });

  it("a question that asks for a reply is answered by the next message, even when it came before the send's answer", async () => {
    // A person of its own (the test before blocked the bot), in the bot's chat.
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(sandbox.root);
    await page.getByRole("button", { name: "New person" }).click();
    await page.getByRole("textbox", { name: "First name of the new person" }).fill("Quinn");
    await page.keyboard.press("Enter");
    await expect
      .poll(() => page.getByRole("combobox", { name: "You are" }).locator("option:checked").textContent())
      .toBe("Quinn");
    await page.getByRole("button", { name: bot.botInfo.first_name }).click();
    await page.getByRole("button", { name: "Start" }).click();
    const messages = page.getByRole("log", { name: "Messages" });
    await messages.locator("li", { hasText: "/start" }).waitFor();
    const question = messages.locator("li", { hasText: "Send me the Dock ID" });
    // The bot's question reaches the page before the answer to the send that asked it (as when the
    // bot takes its updates by webhook, and answers within the sandbox's own request).
    await page.route(/\/api\/chats\/-?\d+\/messages$/, async (route) => {
      if (route.request().method() !== "POST") return route.continue();
      const response = await route.fetch();
      await question.waitFor();
      await route.fulfill({ response });
    });
    const text = page.getByRole("textbox", { name: "Message" });
    await text.fill("/ask");
    await page.getByRole("button", { name: "Send" }).click();
    await question.waitFor();
    await page.unrouteAll({ behavior: "wait" });
    await page.locator("#reply-text").filter({ hasText: "Send me the Dock ID" }).waitFor();
    expect(await text.getAttribute("placeholder")).toBe("Dock ID");
    await text.fill("abc123");
    await page.getByRole("button", { name: "Send" }).click();
    await expect
      .poll(() => answers.find((a) => a.text === "abc123"), { timeout: 20_000 })
      .toEqual({
        text: "abc123",
        replyTo: "Send me the Dock ID",
      });
    // Sent: the reply bar is gone.
    await page.locator("#reply-bar").waitFor({ state: "hidden" });
    await context.close();
  });

  it("a message the bot sends while the page fetches the chat's history is shown, not lost", async () => {
    const person = await sandbox.startedPerson("Rowan");
    const context = await browser.newContext();
    onTestFinished(() => context.close());
    const page = await context.newPage();
    await page.addInitScript((id) => {
      localStorage.setItem("sandbox.person", String(id));
      localStorage.setItem("sandbox.chat", String(id));
    }, person);
    const network = await context.newCDPSession(page);
    await network.send("Network.enable");
    const streamed = new Promise<void>((resolve) => {
      network.on("Network.eventSourceMessageReceived", (event) => {
        if (event.data.includes("sent while the chat opened")) resolve();
      });
    });
    let sent: Promise<unknown> | undefined;
    // The history is read as it is, then the bot's message goes out (the page hears of it on its
    // live stream) before the history reaches the page: the history does not hold the message.
    await page.route(/\/api\/chats\/-?\d+\/messages\?limit=200$/, async (route) => {
      const history = await route.fetch();
      if (sent === undefined) {
        sent = bot.api.sendMessage(person, "sent while the chat opened");
        await sent;
        // The page's live stream has brought the message before its history arrives.
        await streamed;
      }
      await route.fulfill({ response: history });
    });
    await page.goto(sandbox.root);
    const messages = page.getByRole("log", { name: "Messages" });
    // The history is on the page (the bot's answer to /start, sent before the page opened)...
    await messages.locator("li", { hasText: "Subscribe to ?" }).waitFor();
    expect(sent).toBeDefined();
    // ...and the message sent meanwhile is still there, after it.
    expect(await messages.locator("li").allTextContents()).toEqual([
      expect.stringContaining("/start"),
      expect.stringContaining("Subscribe to ?"),
      expect.stringContaining("sent while the chat opened"),
    ]);
  });

  it("new people and groups are made with forms in the page: keyboard, inline errors, cancel; never a browser pop-up", async () => {
    const page = await browser.newPage();
    const popUps: string[] = [];
    page.on("dialog", (dialog) => {
      popUps.push(`${dialog.type()}: ${dialog.message()}`);
      void dialog.dismiss();
    });
    await page.goto(sandbox.root);
    const you = page.getByRole("combobox", { name: "You are" });
    await expect.poll(async () => (await you.locator("option").count()) > 0).toBe(true);
    const users = async () =>
      ((await sandbox.control("GET", "/users")).body as { first_name: string }[]).length;
    const before = await users();

    const newPerson = page.getByRole("button", { name: "New person" });
    await newPerson.click();
    expect(await newPerson.getAttribute("aria-expanded")).toBe("true");
    const name = page.getByRole("textbox", { name: "First name of the new person" });
    await expect.poll(() => name.evaluate((input) => input === input.ownerDocument.activeElement)).toBe(true);
    // Nothing typed: the form says so under the field, and nobody is made.
    await name.press("Enter");
    const personError = page.locator("#new-person-error");
    await personError.filter({ hasText: "Enter a first name." }).waitFor();
    expect(await personError.getAttribute("role")).toBe("alert");
    expect(await name.getAttribute("aria-invalid")).toBe("true");
    await page.screenshot({ path: "test-results/sandbox-new-person-form.png" });
    // What the sandbox refuses is shown there too (the field's own limit taken off to get it sent).
    await name.evaluate((input) => input.removeAttribute("maxlength"));
    await name.fill("B".repeat(65));
    await name.press("Enter");
    await personError.filter({ hasText: "64" }).waitFor();
    expect(await users()).toBe(before);
    // Escape closes the form and gives the focus back to its button.
    await name.press("Escape");
    await name.waitFor({ state: "hidden" });
    expect(await newPerson.getAttribute("aria-expanded")).toBe("false");
    expect(await newPerson.evaluate((button) => button === button.ownerDocument.activeElement)).toBe(true);

    // Opened again, it starts clean; a name and Enter make the person, who becomes "You are".
    await page.keyboard.press("Enter");
    await name.waitFor();
    expect(await personError.isHidden()).toBe(true);
    expect(await name.inputValue()).toBe("");
    await name.fill("Bea");
    await name.press("Enter");
    await name.waitFor({ state: "hidden" });
    await expect.poll(async () => you.locator("option:checked").textContent()).toBe("Bea");
    expect(await users()).toBe(before + 1);

    // Cancel closes the group form without making a group.
    const newGroup = page.getByRole("button", { name: "New group" });
    await newGroup.click();
    const title = page.getByRole("textbox", { name: "Title of the new group" });
    await title.fill("Never made");
    await page.getByRole("button", { name: "Cancel", exact: true }).click();
    await title.waitFor({ state: "hidden" });
    const chats = async () =>
      (
        (await sandbox.control("GET", "/chats")).body as { type: string; title?: string; id: number }[]
      ).filter((chat) => chat.type !== "private");
    expect((await chats()).map((chat) => chat.title)).not.toContain("Never made");

    await newGroup.click();
    await title.fill("Ops room");
    await page.getByRole("button", { name: "Create group" }).click();
    await page.getByRole("heading", { name: "Ops room" }).waitFor();
    const group = (await chats()).find((chat) => chat.title === "Ops room");
    expect(group).toBeDefined();
    // A new group: its own initial, its members, and the bot not (yet) in it.
    expect(await page.locator("#chat-avatar").textContent()).toBe("O");
    expect(await page.locator("#chat-subtitle").textContent()).toMatch(
      /^\d+ members? · bot not in the group$/,
    );

    // Renamed from outside (the control API), the page follows: header, chat list, service message.
    const bea = ((await sandbox.control("GET", "/users")).body as { id: number; first_name: string }[]).find(
      (user) => user.first_name === "Bea",
    );
    await sandbox.control("POST", `/chats/${group?.id}/title`, { from: bea?.id, title: "Night shift" });
    await page.getByRole("heading", { name: "Night shift" }).waitFor();
    await page.getByRole("button", { name: "Night shift" }).waitFor();
    await page
      .getByRole("log", { name: "Messages" })
      .locator("li", { hasText: "Bea changed the group name to “Night shift”" })
      .waitFor();
    await page.screenshot({ path: "test-results/sandbox-chat-page-forms.png", fullPage: true });

    // A button's alert (show_alert) is a dialog in the page, closed with OK.
    await page.getByRole("button", { name: bot.botInfo.first_name }).click();
    await page.getByRole("button", { name: "Start" }).click();
    await page.getByRole("textbox", { name: "Message" }).fill("/alert");
    await page.getByRole("button", { name: "Send" }).click();
    await page.getByRole("button", { name: "Alert me" }).click();
    const alert = page.getByRole("dialog");
    await alert.filter({ hasText: "Only admins can do that." }).waitFor();
    await alert.getByRole("button", { name: "OK" }).click();
    await alert.waitFor({ state: "hidden" });

    expect(popUps).toEqual([]);
  });
  it("a group's members and administrators are shown and changed on the page; the bot reads what was set", async () => {
    const person = async (first_name: string) =>
      ((await sandbox.control("POST", "/users", { first_name })).body as { id: number }).id;
    const [cleo, dan, eve] = [await person("Cleo"), await person("Dan"), await person("Eve")];
    const made = await sandbox.control("POST", "/groups", {
      title: "Release crew",
      members: [cleo, dan],
      creator_id: cleo,
    });
    const groupId = (made.body as { id: number }).id;
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await context.addInitScript(`localStorage.setItem("sandbox.person", "${cleo}")`);
    const page = await context.newPage();
    await page.goto(sandbox.root);
    await page.getByRole("button", { name: "Release crew" }).click();
    await page.getByRole("heading", { name: "Release crew" }).waitFor();

    // Closed at first; opened, each person with where they stand, the creator as such.
    const summary = page.getByText("Members (2) and administrators");
    await summary.click();
    const list = page.getByRole("list", { name: "Members (2) and administrators" });
    await list.getByRole("listitem").filter({ hasText: "Cleo" }).getByText("creator").waitFor();
    const status = (name: string) => page.getByRole("combobox", { name: `Status of ${name}` });
    expect(await status("Cleo").count()).toBe(0);
    expect(await status("Dan").inputValue()).toBe("member");
    expect(await status("Eve").inputValue()).toBe("left");
    expect(await accessibilityProblems(page)).toEqual([]);

    // Dan made an administrator, Eve added: the emulator holds it, and the bot reads it.
    await status("Dan").selectOption("administrator");
    await status("Eve").selectOption({ label: "member" });
    await page.getByText("Members (3) and administrators").waitFor();
    await expect
      .poll(async () => {
        const chat = (await sandbox.control("GET", `/chats/${groupId}`)).body as {
          members: number[];
          admins: number[];
        };
        return { members: chat.members.toSorted(), admins: chat.admins };
      })
      .toEqual({ members: [cleo, dan, eve].toSorted(), admins: [dan] });
    expect((await bot.api.getChatMember(groupId, dan)).status).toBe("administrator");
    expect((await bot.api.getChatMember(groupId, eve)).status).toBe("member");
    expect((await bot.api.getChatMember(groupId, cleo)).status).toBe("creator");
    expect(await bot.api.getChatMemberCount(groupId)).toBe(3);
    await page.screenshot({ path: "test-results/sandbox-group-members.png", fullPage: true });

    // Changed from outside (the control API), the page follows; Dan taken out of the group.
    await sandbox.control("PUT", `/chats/${groupId}/members/${dan}`, { status: "left" });
    await expect.poll(() => status("Dan").inputValue()).toBe("left");
    await page.getByText("Members (2) and administrators").waitFor();
    expect((await bot.api.getChatMember(groupId, dan)).status).toBe("left");
    expect(await accessibilityProblems(page)).toEqual([]);
    await context.close();
  });
});
