import { mkdirSync } from "node:fs";
import { Bot } from "grammy";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SANDBOX_BOT_TOKEN } from "../src/sandbox-bot.ts";
import { chromiumPath, launchChromium } from "./browser.ts";
import { type RunningSandbox, startSandbox } from "./sandbox-harness.ts";

describe.skipIf(!chromiumPath)("sandbox chat page in Chromium", () => {
  let sandbox: RunningSandbox;
  let bot: Bot;
  let browser: Browser;
  const pressed: { data: string; from: number }[] = [];
  let onPress: (() => void) | undefined;

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
    bot.on("callback_query:data", async (ctx) => {
      pressed.push({ data: ctx.callbackQuery.data, from: ctx.from.id });
      onPress?.();
      await ctx.answerCallbackQuery({ text: "Subscribed" });
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
});
