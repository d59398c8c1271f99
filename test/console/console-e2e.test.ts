import { execFile } from "node:child_process";
import { createHmac } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SANDBOX_BOT_USERNAME } from "../../src/telegram/sandbox-bot.ts";
import { People } from "../helpers/bot-harness.ts";
import {
  accessibilityProblems,
  chatLog,
  chromiumPath,
  freePort,
  launchChromium,
  pageProblems,
} from "../helpers/browser.ts";
import { signIn, withSession } from "../helpers/console-client.ts";
import { sandboxOf } from "../helpers/delivery-harness.ts";
import { basic, type RunningService, startService } from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON the service and sandbox answered.
type Json = any;

async function ping(
  url: string,
  dockId: string,
  secretKey: string,
  msg: string,
  options: Record<string, unknown> = {},
) {
  const response = await fetch(`${url}/ping`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ dock_id: dockId, secret_key: secretKey, msg, ...options }),
  });
  return { status: response.status, body: (await response.json()) as { subscribers?: number } };
}

const run = promisify(execFile);
const has = async (command: string) =>
  run("sh", ["-c", `command -v ${command}`]).then(
    () => true,
    () => false,
  );

/**
 * The languages whose copied code the test runs, as the Send section names them: all but
 * PowerShell (not packaged for Debian). Go when installed, and always in CI, which installs it.
 */
const RUNNABLE: [string, string][] = [
  ["curl", "curl"],
  ["shell", "Shell one-liner"],
  ["python", "Python"],
  ["javascript", "JavaScript"],
  ...(process.env.CI || (await has("go")) ? [["go", "Go"] as [string, string]] : []),
];

const goDir = mkdtempSync(join(tmpdir(), "dn-go-"));

/** Runs code as copied from the console, as its reader would: in a shell, Python, Node or Go. Its output. */
async function runCopied(language: string, code: string): Promise<string> {
  const options = { timeout: 120_000 };
  switch (language) {
    case "python":
      return (await run("python3", ["-c", code], options)).stdout;
    case "javascript":
      return (await run(process.execPath, ["--input-type=module", "-e", code], options)).stdout;
    case "go": {
      // One build cache for every run, removed with the test's other files.
      writeFileSync(join(goDir, "main.go"), code);
      const env = { ...process.env, GOCACHE: join(goDir, "cache"), GOPATH: join(goDir, "path") };
      return (await run("go", ["run", "main.go"], { ...options, cwd: goDir, env })).stdout;
    }
    default:
      return (await run("bash", ["-c", code], options)).stdout;
  }
}

/**
 * When the page's live stream last said something (an event or a keepalive), as the browser's
 * own network events tell it: watched from before the page opens, so the stream is seen from its
 * first byte.
 */
async function streamHeard(context: BrowserContext, page: Page): Promise<{ lastHeard: number }> {
  const heard = { lastHeard: 0 };
  const network = await context.newCDPSession(page);
  network.on("Network.eventSourceMessageReceived", () => {
    heard.lastHeard = Date.now();
  });
  await network.send("Network.enable");
  return heard;
}

/** The Telegram account the sign-in page names, as its lines read: name, username, Telegram ID. */
async function identityOf(page: Page): Promise<Record<string, string>> {
  const list = page.locator("dl.telegram-identity");
  const terms = await list.locator("dt").allTextContents();
  const details = await list.locator("dd").allTextContents();
  return Object.fromEntries(terms.map((term, i) => [term, details[i] ?? ""]));
}

describe.skipIf(!chromiumPath)("console end to end in Chromium (sandbox mode)", () => {
  let service: RunningService;
  let browser: Browser;

  beforeAll(async () => {
    const port = await freePort();
    service = await startService(
      "sqlite",
      {
        PORT: String(port),
        PUBLIC_URL: `http://127.0.0.1:${port}`,
        // The Callback URL test's receiver listens on this machine.
        CALLBACK_ALLOWED_NETWORKS: "127.0.0.1/32",
        // Not about the pace: the snippets' messages do not queue at a chat's one a second.
      },
      { pace: "unpaced" },
    );
    browser = await launchChromium();
    mkdirSync("test-results", { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await service?.close();
    rmSync(goDir, { recursive: true, force: true });
  });

  /** Signs a person in as the console does (the bot confirms, Continue) and gives the browser the session. */
  const signInto = async (context: BrowserContext, person: { id: number; first_name: string }) => {
    const owner = await signIn(service, person);
    await withSession(context, owner);
  };

  it("sign in → create a Dock → subscribe → copied code sends → history, detail, activity → rotate the secret", {
    timeout: 300_000,
  }, async () => {
    const context = await browser.newContext({
      permissions: ["clipboard-read", "clipboard-write"],
      viewport: { width: 1100, height: 900 },
    });
    const page = await context.newPage();
    const problems = pageProblems(page);
    const stream = await streamHeard(context, page);

    // The start page sends a newcomer to the page, which asks them to sign in.
    await page.goto(`${service.url}/`);
    expect(new URL(page.url()).pathname).toBe("/console/");
    await page.getByRole("heading", { name: "Sign in to Dock Notify" }).waitFor();
    expect(await accessibilityProblems(page)).toEqual([]);
    await page.screenshot({ path: "test-results/console-1-sign-in.png", fullPage: true });

    await page.getByRole("button", { name: "Sign in with Telegram" }).click();
    const confirmLink = page.getByRole("link", { name: "Open Telegram to confirm" });
    await confirmLink.waitFor();
    await page.getByRole("img", { name: /QR code of the sign-in link/ }).waitFor();
    // PUBLIC_URL is 127.0.0.1 here: the page says a phone cannot scan its way there, and what to set.
    await page.getByRole("figure").getByText("which only this computer reaches").waitFor();
    await page.screenshot({ path: "test-results/console-2-sign-in-pending.png", fullPage: true });
    const loginLink = (await confirmLink.getAttribute("href")) as string;
    expect(loginLink).toMatch(new RegExp(`^${service.url}/sandbox\\?start=login_[A-Za-z0-9]{22}$`));

    // The link opens the sandbox chat page, which starts the bot with the login payload.
    const [signInChat] = await Promise.all([context.waitForEvent("page"), confirmLink.click()]);
    const payload = new URL(loginLink).searchParams.get("start") as string;
    await chatLog(signInChat)
      .locator("li", { hasText: `/start ${payload}` })
      .waitFor();
    const person = ((await (await fetch(`${service.url}/sandbox/api/users`)).json()) as { id: number }[])[0];
    if (!person) throw new Error("the chat page made no person");
    await signInChat.getByRole("button", { name: /^Yes/ }).click();
    await signInChat.close();

    // The page noticed by itself and names who confirmed — name, username and Telegram ID apart —
    // and the focus waits on Continue.
    await page.getByRole("status").filter({ hasText: "Continue as this Telegram account?" }).waitFor();
    expect(await identityOf(page)).toEqual({
      Name: "Alice",
      Username: "@alice_sandbox",
      "Telegram ID": String(person.id),
    });
    const continueButton = page.getByRole("button", { name: "Continue", exact: true });
    expect(await continueButton.evaluate((button) => button === button.ownerDocument.activeElement)).toBe(
      true,
    );
    expect(await accessibilityProblems(page)).toEqual([]);
    await page.screenshot({ path: "test-results/console-2b-sign-in-confirmed.png", fullPage: true });
    await continueButton.click();

    // Signed in: an empty list says what a Dock is and offers to make one.
    await page.getByRole("heading", { name: "Your Docks" }).waitFor();
    await page.getByRole("button", { name: "Sign out" }).waitFor();
    await page.getByRole("link", { name: "Create your first Dock" }).click();
    await page.getByRole("heading", { name: "Create a new Dock" }).waitFor();

    // The server's validation shows next to the field.
    await page.getByRole("button", { name: "Create" }).click();
    const name = page.getByLabel("Name");
    await page.getByText("name is required").waitFor();
    expect(await name.getAttribute("aria-invalid")).toBe("true");

    await name.fill("Deploys");
    // A bare host is taken as https:// (issue 25's trap: it used to be refused).
    await page.getByLabel("Link").fill("ci.example.com");
    await page.getByLabel("Description").fill("CI deploy results");
    await page.getByRole("button", { name: "Create" }).click();
    // The new Dock's own page, on its Send section.
    const card = page.getByRole("article", { name: "Deploys" });
    await card.waitFor();
    await card.getByText("CI deploy results").waitFor();
    expect(await card.getByRole("link", { name: "https://ci.example.com" }).getAttribute("href")).toBe(
      "https://ci.example.com",
    );
    const tab = (name: string) =>
      card.getByRole("navigation", { name: "Dock sections" }).getByRole("link", { name });

    // Copy Dock ID puts exactly the shown ID on the clipboard.
    const dockId = (await card.getByTestId("dock-id").textContent()) as string;
    expect(dockId).toMatch(/^[A-Za-z0-9]{22}$/);
    expect(new URL(page.url()).hash).toBe(`#/docks/${dockId}`);
    await card.getByRole("button", { name: "Copy Dock ID" }).click();
    const copied = page.getByRole("status").filter({ hasText: "Dock ID copied." });
    await copied.waitFor();
    // A confirmation leaves the screen by itself after a few seconds (and never takes clicks).
    await copied.waitFor({ state: "detached", timeout: 10_000 });
    const clipboard = () => page.evaluate("navigator.clipboard.readText()") as Promise<string>;
    expect(await clipboard()).toBe(dockId);
    const stored = await service.app.docks.list(person.id);
    expect(stored.map((d) => d.id)).toEqual([dockId]);
    // "Copy subscribe link": the link that opens the bot on this Dock.
    await card.getByRole("button", { name: "Copy subscribe link" }).click();
    await page.getByRole("status").filter({ hasText: "Subscribe link copied." }).waitFor();
    expect(await clipboard()).toBe(
      await card.getByRole("link", { name: "Open in Telegram" }).getAttribute("href"),
    );

    // The secret key is masked until revealed.
    const secretShown = card.getByTestId("secret-key");
    expect(await secretShown.textContent()).toMatch(/^dnsk_•+$/);
    await card.getByRole("button", { name: "Reveal secret key" }).click();
    const secretKey = (await secretShown.textContent()) as string;
    expect(secretKey).toBe(stored[0]?.secretKey);
    await card.getByRole("button", { name: "Copy secret key" }).click();
    await page.getByRole("status").filter({ hasText: "Secret key copied." }).waitFor();
    expect(await clipboard()).toBe(secretKey);
    await card.getByRole("button", { name: "Hide secret key" }).click();

    // Open in Telegram → the bot is started with the Dock ID; Yes subscribes, and the private
    // chat's menu is there (issue 25's trap: a deep link never showed it).
    const [subscribeChat] = await Promise.all([
      context.waitForEvent("page"),
      card.getByRole("link", { name: "Open in Telegram" }).click(),
    ]);
    await chatLog(subscribeChat)
      .locator("li", { hasText: `/start ${dockId}` })
      .waitFor();
    await subscribeChat.getByRole("button", { name: /^Yes/ }).last().click();
    await subscribeChat
      .locator("#keyboard")
      .getByRole("button", { name: /My subscriptions/ })
      .waitFor();
    await page.bringToFront();
    // The stream tells the page: the count in the section's tab follows, with no reload.
    await tab("Subscribers 1").waitFor();
    await tab("Subscribers 1").click();
    await card.getByTestId("subscriber-count").filter({ hasText: /^1$/ }).waitFor();
    await card.getByRole("button", { name: "Remove Alice" }).waitFor();
    await tab("Send").click();

    // While the key is hidden the code says <SECRET_KEY>, never a masked key that looks real;
    // "Copy with key" copies code that works as it is: run in a shell, it sends.
    const pingCode = card.getByTestId("snippet-ping");
    expect(await pingCode.textContent()).toContain(`"dock_id":"${dockId}","secret_key":"<SECRET_KEY>"`);
    expect(await card.textContent()).not.toContain(secretKey);
    await card.getByRole("button", { name: "Copy with key curl /ping code" }).click();
    await page.getByRole("status").filter({ hasText: "curl /ping code copied." }).waitFor();
    const pingCommand = await clipboard();
    expect(pingCommand).toContain(`"dock_id":"${dockId}","secret_key":"${secretKey}"`);
    expect(await runCopied("curl", pingCommand)).toMatch(/^\{"ok":true,"message_id"/);
    // Copied by selection instead, with the placeholder still in, it fails saying why.
    const selected = (await pingCode.textContent()) as string;
    expect(await runCopied("curl", selected)).toContain("<SECRET_KEY> is a placeholder");
    // Every language's code, both endpoints, copied and run as it is (where this machine has the
    // language: curl, the shell, Python, Node; Go when installed).
    const language = card.getByLabel("Language");
    for (const [lang, label] of RUNNABLE) {
      await language.selectOption(lang);
      for (const endpoint of ["/ping", "/webhook"]) {
        await card.getByRole("button", { name: `Copy with key ${label} ${endpoint} code` }).click();
        await page
          .getByRole("status")
          .filter({ hasText: `${label} ${endpoint} code copied.` })
          .waitFor();
        const output = await runCopied(lang, await clipboard());
        // What each prints: the status first, or the service's JSON answer itself.
        expect(output, `${label} ${endpoint}`).toMatch(/^(202\b.*\bok"?:\s*true|\{"ok":true,"message_id")/m);
      }
    }
    await language.selectOption("curl");
    // The choice of language is remembered for every Dock.
    expect(await page.evaluate(() => localStorage.getItem("dn-language"))).toBe("curl");

    const sent = await ping(service.url, dockId, secretKey, "Deploy finished ✅\nbuild 1234");
    expect(sent).toEqual({ status: 202, body: expect.objectContaining({ ok: true, subscribers: 1 }) });
    await chatLog(subscribeChat).locator("li", { hasText: "Deploy finished ✅" }).waitFor();
    await subscribeChat.screenshot({ path: "test-results/console-5-delivered-in-sandbox.png" });
    // Back to the console's tab, as its user would: Chromium slows a tab in the background.
    await page.bringToFront();

    // Messages: the history, updated by the stream, each message with its delivery detail.
    await tab("Messages").click();
    const history = card.getByRole("list", { name: "Messages of Deploys" });
    const message = history.locator(":scope > li", { hasText: "Deploy finished ✅" });
    await message.getByText("sent: 1").waitFor();
    await page.screenshot({ path: "test-results/console-3-dock-messages.png", fullPage: true });
    await message.getByRole("link", { name: /Delivery details/ }).click();
    const copies = card.getByRole("table", { name: /Every copy of message/ });
    const aliceRow = copies.getByRole("row", { name: /Alice/ });
    await aliceRow.getByText("sent", { exact: true }).waitFor();
    expect(await aliceRow.locator("td").nth(1).textContent()).toBe("1");
    await page.screenshot({ path: "test-results/console-3b-message-detail.png", fullPage: true });
    await card.getByRole("link", { name: "← All messages" }).click();

    // Activity: today's bar counts what was just sent (13 messages: the snippets' and this one).
    await tab("Activity").click();
    const accepted = 1 + 1 + RUNNABLE.length * 2;
    await card
      .getByTestId("activity-accepted")
      .filter({ hasText: new RegExp(`^${accepted}$`) })
      .waitFor();
    await card
      .getByTestId("activity-sent")
      .filter({ hasText: new RegExp(`^${accepted}$`) })
      .waitFor();
    expect(await card.getByRole("img", { name: /Last 7 days: \d+ messages accepted/ }).count()).toBe(1);
    await page.screenshot({ path: "test-results/console-3c-activity.png", fullPage: true });

    // Nothing polled: while the stream says nothing, the page asks nothing at all (the old cards
    // asked every 2 s). What the stream says is read off the browser's own network events, so a
    // window in which the service did tell of a change (a copy settling late on a busy machine)
    // is not mistaken for a poll: such a window is waited out, and the next one judged.
    await tab("Messages").click();
    await history.waitFor();
    await history.locator(":scope > li").first().waitFor();
    const asked: string[] = [];
    const listen = (request: { url(): string }) => {
      if (request.url().includes("/console/api/") && !request.url().endsWith("/console/api/stream")) {
        asked.push(request.url());
      }
    };
    page.on("request", listen);
    const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    let quiet = false;
    for (let window = 0; window < 10 && !quiet; window += 1) {
      // A window opens 3 s after the stream last spoke, once the reads it caused are out.
      while (Date.now() - stream.lastHeard < 3000) await pause(250);
      const start = Date.now();
      asked.length = 0;
      await pause(6000);
      quiet = stream.lastHeard < start;
    }
    page.off("request", listen);
    expect(quiet, "the stream never fell silent for 6 s").toBe(true);
    expect(asked).toEqual([]);
    // …and a send from outside still shows up by itself (which the watch above heard too). The
    // stream says the Dock's messages moved, so the history reads again; the Dock itself (its
    // settings, its subscribers) is not read again for a message.
    const before = stream.lastHeard;
    page.on("request", listen);
    expect((await ping(service.url, dockId, secretKey, "Pushed by the stream")).status).toBe(202);
    await history.locator(":scope > li", { hasText: "Pushed by the stream" }).getByText("sent: 1").waitFor();
    page.off("request", listen);
    expect(stream.lastHeard).toBeGreaterThan(before);
    const paths = asked.map((url) => new URL(url).pathname);
    expect(paths).toContain(`/console/api/docks/${dockId}/messages`);
    expect(paths).not.toContain(`/console/api/docks/${dockId}`);

    // Rotate the secret (Settings): confirmed in a dialog; the new key is shown once, with its
    // copy button; the old key is refused at once.
    await tab("Settings").click();
    page.once("dialog", (dialog) => void dialog.accept());
    await card.getByRole("button", { name: "Rotate secret" }).click();
    await page.getByRole("status").filter({ hasText: "The old one no longer works." }).waitFor();
    const rotated = (await card.getByTestId("new-secret-key").textContent()) as string;
    expect(rotated).toMatch(/^dnsk_[A-Za-z0-9]{33}$/);
    expect(rotated).not.toBe(secretKey);
    const focused = (locator: Locator) =>
      locator.evaluate((el) => el.contains(el.ownerDocument.activeElement));
    expect(await focused(card.locator(".new-key"))).toBe(true);
    await card.getByRole("button", { name: "Copy new key" }).click();
    await page.getByRole("status").filter({ hasText: "New secret key copied." }).waitFor();
    expect(await clipboard()).toBe(rotated);
    expect((await ping(service.url, dockId, secretKey, "old key")).status).toBe(401);
    expect((await ping(service.url, dockId, rotated, "new key")).status).toBe(202);

    // A credential for one application (Settings): its secret shown once, sending where the key
    // goes; listed by its first characters; revoked, it is refused at once.
    await card.getByLabel("Credential name").fill("deploy script");
    await card.getByLabel("Credential scope").selectOption("send");
    await card.getByRole("button", { name: "Create credential" }).click();
    await page.getByRole("status").filter({ hasText: "it is not shown again" }).waitFor();
    const credential = (await card.getByTestId("new-credential-secret").textContent()) as string;
    expect(credential).toMatch(/^dnsc_[A-Za-z0-9]{33}$/);
    expect((await ping(service.url, dockId, credential, "by a credential")).status).toBe(202);
    const listed = card.getByTestId("credentials").locator("li", { hasText: "deploy script" });
    await listed.getByText(`${credential.slice(0, 9)}…`).waitFor();
    page.once("dialog", (dialog) => void dialog.accept());
    await listed.getByRole("button", { name: "Revoke deploy script" }).click();
    await page.getByRole("status").filter({ hasText: "revoked" }).waitFor();
    expect((await ping(service.url, dockId, credential, "revoked")).status).toBe(401);
    // A GitHub credential: the webhook's Secret, shown once with where it goes; it signs deliveries.
    await card.getByLabel("Credential name").fill("octo org");
    await card.getByLabel("Credential scope").selectOption("github");
    await card.getByRole("button", { name: "Create credential" }).click();
    await card.getByText("Paste it as the Secret of the GitHub webhook").waitFor();
    const githubSecret = (await card.getByTestId("new-credential-secret").textContent()) as string;
    expect(githubSecret).toMatch(/^dngh_[A-Za-z0-9]{33}$/);
    const star = JSON.stringify({
      action: "created",
      repository: { full_name: "octo/app" },
      sender: { login: "o" },
    });
    const signed = await fetch(`${service.url}/webhook/github/${dockId}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-github-event": "star",
        "x-hub-signature-256": `sha256=${createHmac("sha256", githubSecret).update(star).digest("hex")}`,
      },
      body: star,
    });
    expect(signed.status).toBe(202);
    await card
      .getByTestId("credentials")
      .locator("li", { hasText: "octo org" })
      .getByText(`${githubSecret.slice(0, 9)}…`)
      .waitFor();

    // The signing secret of the events sits beside the callback URL, masked, and rotates alone.
    expect(await card.getByTestId("signing-secret").textContent()).toMatch(/^dnss_•+$/);
    page.once("dialog", (dialog) => void dialog.accept());
    await card.getByRole("button", { name: "Rotate signing secret" }).click();
    await page.getByRole("status").filter({ hasText: "New signing secret made." }).waitFor();
    expect(await card.getByTestId("signing-secret").textContent()).toMatch(/^dnss_[A-Za-z0-9]{33}$/);
    expect((await ping(service.url, dockId, rotated, "key kept")).status).toBe(202);

    // Settings saves the Dock's fields.
    await card.getByLabel("Description").fill("CI deploy results, all branches");
    await card.getByRole("button", { name: "Save" }).click();
    await page.getByRole("status").filter({ hasText: "Changes saved." }).waitFor();
    await card.locator(".description", { hasText: "all branches" }).waitFor();

    // A long message shows its first lines; the whole text on request.
    await tab("Messages").click();
    const long = Array.from({ length: 40 }, (_, i) => `step ${i + 1} of the build log`).join("\n");
    expect((await ping(service.url, dockId, rotated, long)).status).toBe(202);
    const longItem = history.locator(":scope > li", { hasText: "step 1 of the build log" });
    await longItem.waitFor();
    const shown = longItem.locator(".message-text");
    expect(await shown.textContent()).not.toContain("step 40 of");
    const showAll = longItem.getByRole("button", { name: "Show all" });
    expect(await showAll.getAttribute("aria-controls")).toBe(await shown.getAttribute("id"));
    // From the keyboard, as anyone may use it.
    await showAll.focus();
    await page.keyboard.press("Enter");
    expect(await shown.textContent()).toBe(long);
    // The same button now says what it does next.
    const showLess = longItem.getByRole("button", { name: "Show less" });
    expect(await showLess.evaluate((button) => button === button.ownerDocument.activeElement)).toBe(true);
    await page.keyboard.press("Enter");
    expect(await shown.textContent()).not.toContain("step 40 of");
    await showAll.waitFor();
    // The fold never cuts a character in two: not an emoji (two UTF-16 units), nor a flag (two
    // emoji that make one), nor a letter and its accent.
    const flags = `x${"🇩🇪".repeat(400)}`;
    expect((await ping(service.url, dockId, rotated, flags)).status).toBe(202);
    const flagItem = history.locator(":scope > li", { hasText: "x🇩🇪🇩🇪" });
    await flagItem.getByRole("button", { name: "Show all" }).waitFor();
    const folded = (await flagItem.locator(".message-text").textContent()) as string;
    expect(folded.isWellFormed()).toBe(true);
    expect(folded).toBe(`x${"🇩🇪".repeat(299)}…`);
    // A message the fold would hide only a few words of is shown whole.
    const almost = `${"a".repeat(320)} the end`;
    expect((await ping(service.url, dockId, rotated, almost)).status).toBe(202);
    const almostItem = history.locator(":scope > li", { hasText: "the end" });
    await almostItem.waitFor();
    expect(await almostItem.locator(".message-text").textContent()).toBe(almost);
    expect(await almostItem.getByRole("button", { name: "Show all" }).count()).toBe(0);

    // A rich message is shown rendered, as Telegram shows it: title, formatting, tags, and what
    // its options changed (priority, sound, buttons).
    const rich = await ping(
      service.url,
      dockId,
      rotated,
      "**Build 42** failed on `main`\n[logs](https://ci.example/42)",
      {
        format: "markdown",
        title: "CI",
        priority: "low",
        tags: ["warning", "nightly"],
        buttons: [{ text: "Retry", url: "https://ci.example/42/retry" }],
      },
    );
    expect(rich.status).toBe(202);
    const richItem = history.locator(":scope > li", { hasText: "Build 42 failed on main" });
    await richItem.waitFor();
    const richText = richItem.locator(".message-text");
    expect(await richText.textContent()).toBe("⚠️ CI\nBuild 42 failed on main\nlogs\n\n#nightly");
    expect(await richText.locator("strong").allTextContents()).toEqual(["⚠️ CI", "Build 42"]);
    expect(await richText.locator("code").textContent()).toBe("main");
    expect(await richText.getByRole("link", { name: "logs" }).getAttribute("href")).toBe(
      "https://ci.example/42",
    );
    expect(await richItem.locator(".message-options").textContent()).toContain("🔕 silent");
    expect(await richItem.getByRole("link", { name: /Retry/ }).getAttribute("href")).toBe(
      "https://ci.example/42/retry",
    );
    await richItem.screenshot({ path: "test-results/console-rich-message.png" });

    // Search: by text, case aside; the rich message is not among the build logs.
    await card.getByLabel("Text or key").fill("BUILD LOG");
    await card.getByRole("button", { name: "Search" }).click();
    await history.locator(":scope > li").first().filter({ hasText: "step 1 of the build log" }).waitFor();
    expect(await history.locator(":scope > li").count()).toBe(1);
    // A search is not run again at every change of the Dock: the page says something came, and
    // Search again shows it.
    expect((await ping(service.url, dockId, rotated, "another build log")).status).toBe(202);
    const stale = card.getByRole("status").filter({ hasText: "Messages came or changed since this search." });
    await stale.waitFor();
    expect(await history.locator(":scope > li").count()).toBe(1);
    await stale.getByRole("button", { name: "Search again" }).click();
    await history.locator(":scope > li", { hasText: "another build log" }).waitFor();
    await stale.waitFor({ state: "detached" });
    await card.getByLabel("Text or key").fill("");
    await card.getByRole("button", { name: "Search" }).click();

    // The API & bot page links the reference and the bot; the reference itself renders.
    await page.getByRole("link", { name: "API & bot" }).click();
    await page.getByRole("heading", { name: "API & bot" }).waitFor();
    expect(await page.getByRole("link", { name: "@DockNotifySandboxBot" }).getAttribute("href")).toBe(
      `${service.url}/sandbox`,
    );
    await page.screenshot({ path: "test-results/console-4-api-and-bot.png", fullPage: true });
    // No policy violation or script error on the console's pages. (Swagger UI, next, has its own.)
    expect(problems).toEqual([]);
    await page.getByRole("link", { name: "Open the API reference" }).click();
    await page.locator(".swagger-ui .info .title").filter({ hasText: "Dock Notify" }).waitFor();

    // At phone width the pages still fit the screen, even a Dock with a long link and a
    // description without spaces; the description keeps its line breaks.
    const wide = await service.app.docks.create(person.id, {
      name: "Wide",
      link: `https://ci.example.com/${"very-long-path-segment/".repeat(6)}?query=parameter&other=value`,
      description: `${"x".repeat(100)}\nsecond line`,
    });
    await page.goto(`${service.url}/console/`);
    await page.setViewportSize({ width: 390, height: 844 });
    const list = page.getByRole("list", { name: "Docks" });
    await list.getByRole("link", { name: "Wide" }).click();
    const wideCard = page.getByRole("article", { name: "Wide" });
    await wideCard.waitFor();
    expect(await page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
    expect((await wideCard.locator(".description").innerText()).split("\n").at(-1)).toBe("second line");
    await page.screenshot({ path: "test-results/console-6-phone.png", fullPage: true });

    // A Dock deleted elsewhere (the CLI, another tab) leaves the screen by itself, saying why.
    await service.app.docks.delete(wide.id);
    await page
      .getByRole("status")
      .filter({ hasText: "Dock “Wide” no longer exists: it was deleted elsewhere." })
      .waitFor();
    await wideCard.waitFor({ state: "detached" });
    await page.getByRole("heading", { name: "Your Docks" }).waitFor();

    // Deleting a Dock on its page leads back to the list, its heading focused.
    const temporary = await service.app.docks.create(person.id, {
      name: "Temporary",
      link: null,
      description: null,
    });
    await page.goto(`${service.url}/console/#/docks/${temporary.id}/settings`);
    page.once("dialog", (dialog) => void dialog.accept());
    await page.getByRole("article", { name: "Temporary" }).getByRole("button", { name: "Delete" }).click();
    await page.getByRole("heading", { name: "Your Docks" }).waitFor();
    expect(await focused(page.getByRole("heading", { name: "Your Docks" }))).toBe(true);
    await list.getByRole("link", { name: "Deploys" }).waitFor();
    expect(await list.getByRole("link", { name: "Temporary" }).count()).toBe(0);

    // Sign out returns to the sign-in page, and the session is over on the server too.
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Sign in to Dock Notify" }).waitFor();
    const after = await page.evaluate(async () => (await fetch("/console/api/docks")).status);
    expect(after).toBe(401);

    await context.close();
  });

  it("someone else's Yes on my sign-in link shows their name, and That's not me signs nobody in", {
    timeout: 60_000,
  }, async () => {
    const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${service.url}/console/`);
    await page.getByRole("button", { name: "Sign in with Telegram" }).click();
    const loginLink = (await page
      .getByRole("link", { name: "Open Telegram to confirm" })
      .getAttribute("href")) as string;
    const payload = new URL(loginLink).searchParams.get("start") as string;

    // An onlooker scans the QR code and presses Yes first, in their own Telegram, under a first
    // name made to look like Alice's name and username.
    const people = new People(`${service.url}/sandbox`);
    const onlooker = await people.person("Alice (@alice_sandbox)");
    const prompt = await people.botReply(
      onlooker,
      await people.start(onlooker, payload),
      "the sign-in prompt",
    );
    await people.press(onlooker, prompt, "Yes");
    await people.edited(onlooker, prompt);

    // The page names the onlooker instead of signing in to their account unseen: the name they
    // chose stands alone, and the username and Telegram ID tell them apart from Alice.
    await page.getByRole("status").filter({ hasText: "Continue as this Telegram account?" }).waitFor();
    expect(await identityOf(page)).toEqual({
      Name: "Alice (@alice_sandbox)",
      Username: "none",
      "Telegram ID": String(onlooker),
    });
    await page.getByRole("button", { name: "That's not me" }).click();
    await page.getByRole("alert").filter({ hasText: "Sign-in cancelled: nobody was signed in." }).waitFor();
    await page
      .getByRole("alert")
      .filter({ hasText: "Someone else may have confirmed your sign-in link" })
      .waitFor();
    const startButton = page.getByRole("button", { name: "Sign in with Telegram" });
    expect(await startButton.evaluate((button) => button === button.ownerDocument.activeElement)).toBe(true);
    await page.screenshot({ path: "test-results/console-2c-sign-in-cancelled.png", fullPage: true });

    // Not signed in, now or later: the sign-in is declined, and the browser holds no session.
    const status = await page.evaluate(async () => (await fetch("/console/api/session")).status);
    expect(status).toBe(401);
    expect(await service.app.loginTokens.state(payload.slice("login_".length))).toBe("declined");
    expect((await context.cookies()).map((c) => c.name)).not.toContain("dn_session");
    await page.reload();
    await page.getByRole("heading", { name: "Sign in to Dock Notify" }).waitFor();
    await context.close();
  });

  it("a message edited, acknowledged and deleted says so on the card; the Callback URL saves; the change commands show", {
    timeout: 120_000,
  }, async () => {
    // The Dock's callback URL: a receiver that takes every event.
    const events: string[] = [];
    const hook = createServer((request, response) => {
      let body = "";
      request.on("data", (chunk) => {
        body += chunk;
      });
      request.on("end", () => {
        events.push(body);
        response.end();
      });
    });
    await new Promise<void>((resolve) => hook.listen(0, "127.0.0.1", resolve));
    const hookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/events`;
    const context = await browser.newContext({
      permissions: ["clipboard-read", "clipboard-write"],
      viewport: { width: 1100, height: 900 },
    });
    try {
      // Signed in as the first test signs in (the bot confirms, Continue), without the chat page.
      await signInto(context, { id: 7001, first_name: "Olive" });
      const page = await context.newPage();
      const problems = pageProblems(page);
      await page.goto(`${service.url}/console/`);
      await page.getByRole("link", { name: "New Dock" }).click();
      await page.getByRole("heading", { name: "Create a new Dock" }).waitFor();

      // The Callback URL field: the server's verdict next to it, like the other fields.
      const focused = (locator: Locator) => locator.evaluate((el) => el === el.ownerDocument.activeElement);
      await page.getByLabel("Name").fill("Releases");
      const callbackField = page.getByLabel("Callback URL");
      expect(await callbackField.getAttribute("type")).toBe("url");
      await callbackField.fill("ftp://hooks.example.com/events");
      await page.getByRole("button", { name: "Create" }).click();
      await page.getByText("Callback URL must be an absolute http:// or https:// URL").waitFor();
      expect(await callbackField.getAttribute("aria-invalid")).toBe("true");
      expect(await focused(callbackField)).toBe(true);
      // An address outside the allowed networks is refused by the server, next to the field.
      await callbackField.fill("http://10.0.0.5:8080/events");
      await page.getByRole("button", { name: "Create" }).click();
      await page.getByText("must not point to 10.0.0.5 (private network)").waitFor();
      expect(await callbackField.getAttribute("aria-invalid")).toBe("true");
      await callbackField.fill(hookUrl);
      await page.getByRole("button", { name: "Create" }).click();
      const card = page.getByRole("article", { name: "Releases" });
      await card.waitFor();
      expect(await card.getByTestId("callback-url").textContent()).toBe(hookUrl);
      const [stored] = await service.app.docks.list(7001);
      if (!stored) throw new Error("the Dock was not created");
      expect(stored.callback_url).toBe(hookUrl);
      // Settings shows it; emptied, it is cleared; set again, it is saved.
      const tab = (name: string) =>
        card.getByRole("navigation", { name: "Dock sections" }).getByRole("link", { name });
      const saveCallbackUrl = async (value: string) => {
        await card.getByLabel("Callback URL").fill(value);
        await card.getByRole("button", { name: "Save" }).click();
        await page.getByRole("status").filter({ hasText: "Changes saved." }).waitFor();
      };
      await tab("Settings").click();
      expect(await card.getByLabel("Callback URL").inputValue()).toBe(hookUrl);
      await saveCallbackUrl("");
      await card.getByTestId("callback-url").waitFor({ state: "detached" });
      expect((await service.app.docks.get(stored.id))?.callback_url).toBeNull();
      await saveCallbackUrl(hookUrl);
      expect(await card.getByTestId("callback-url").textContent()).toBe(hookUrl);
      expect((await service.app.docks.get(stored.id))?.callback_url).toBe(hookUrl);

      // The commands that change messages, with the real secret key: a plain placeholder on screen
      // until revealed, the key itself on the clipboard.
      await tab("Send").click();
      await card.getByText("Replace, edit, delete and acknowledge messages").click();
      const editCommand = card.locator("pre", { hasText: "-X PATCH" });
      expect(await editCommand.textContent()).not.toContain(stored.secretKey);
      expect(await editCommand.textContent()).toContain(`-u '${stored.id}:<SECRET_KEY>'`);
      await card.getByRole("button", { name: "Copy edit command" }).click();
      await page.getByRole("status").filter({ hasText: "Command copied." }).waitFor();
      const copiedEdit = (await page.evaluate("navigator.clipboard.readText()")) as string;
      expect(copiedEdit).toContain(`curl -X PATCH '${service.url}/messages/<MESSAGE_ID>'`);
      expect(copiedEdit).toContain(`-u '${stored.id}:${stored.secretKey}'`);
      expect(copiedEdit).toContain(`-d '{"msg":"Deploy finished"}'`);
      await card.getByRole("button", { name: "Reveal secret key" }).click();
      for (const command of ['"key":"deploy"', "-X PATCH", "-X DELETE", '"ack":true']) {
        expect(await card.locator("pre", { hasText: command }).textContent()).toContain(
          `-u '${stored.id}:${stored.secretKey}'`,
        );
      }
      await card.getByRole("button", { name: "Hide secret key" }).click();

      // Ada subscribes; the application sends with a key and an Acknowledge button.
      const sandbox = sandboxOf(service);
      const ada = await sandbox.person("Ada");
      await service.subscriptions.subscribe(stored.id, ada, "private");
      const api = async (method: string, path: string, body?: unknown): Promise<Json> => {
        const response = await fetch(`${service.url}${path}`, {
          method,
          headers: {
            Authorization: basic(stored.id, stored.secretKey),
            ...(body === undefined ? {} : { "content-type": "application/json" }),
          },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        expect(response.status).toBe(202);
        return response.json();
      };
      const { message_id: id } = await api("POST", "/webhook", {
        msg: "Deploy started",
        key: "deploy",
        ack: true,
      });
      await tab("Messages").click();
      const list = card.getByRole("list", { name: "Messages of Releases" });
      const item = list.locator(":scope > li", { hasText: "Deploy" });
      await item.getByText("sent: 1").waitFor();
      await item.locator(".message-changes", { hasText: "key deploy" }).waitFor();

      // Edited: the card says so, and where the copy's edit stands.
      await api("PATCH", `/messages/${id}`, { msg: "Deploy finished" });
      await item.locator(".message-text", { hasText: "Deploy finished" }).waitFor();
      const changes = item.locator(".message-changes");
      await changes.filter({ hasText: "edits: 1 edited" }).waitFor();
      expect(await changes.textContent()).toMatch(/edited \(revision 2\) at \S/);
      await item
        .getByRole("list", { name: "Copies" })
        .getByText(/: sent; edit: edited$/)
        .waitFor();

      // Ada presses Acknowledge: the card names her, and when.
      const copy = await waitFor("the edited copy with its button", async () =>
        (await sandbox.botMessages(ada)).find(
          (m: Json) => m.text.endsWith("Deploy finished") && m.reply_markup !== undefined,
        ),
      );
      await sandbox.control("POST", `/chats/${ada}/messages/${copy.message_id}/press`, {
        callback_data: `ack:${id}`,
      });
      const acknowledged = item.locator(".change-acknowledged");
      await acknowledged.filter({ hasText: "✔ Acknowledged by Ada at" }).waitFor();
      expect(await acknowledged.locator("time").getAttribute("datetime")).toMatch(/^\d{4}-\d{2}-\d{2}T/);
      // The acknowledgement's own edit of the copy is not the sender's: still "edited", now revision 3.
      await changes.filter({ hasText: "edited (revision 3)" }).waitFor();
      await waitFor("message.acknowledged posted to the callback URL", () =>
        events.some((body) => JSON.parse(body).type === "message.acknowledged"),
      );

      // Another message, deleted: struck through, and "deleted" in words.
      const { message_id: wrong } = await api("POST", "/webhook", { msg: "Wrong channel, sorry" });
      const wrongItem = list.locator(":scope > li", { hasText: "Wrong channel" });
      await wrongItem.getByText("sent: 1").waitFor();
      await api("DELETE", `/messages/${wrong}`);
      await wrongItem.locator(".message-changes", { hasText: "deletes: 1 deleted" }).waitFor();
      expect(await wrongItem.locator(".message-changes").textContent()).toMatch(/deleted at \S/);
      expect(
        await wrongItem
          .locator(".message-text")
          .evaluate((el) => el.ownerDocument.defaultView?.getComputedStyle(el).textDecorationLine),
      ).toBe("line-through");
      expect(await wrongItem.getByText(/: sent; delete: deleted$/).count()).toBe(1);

      await page.bringToFront();
      await list.screenshot({ path: "test-results/console-living-message.png" });
      // The new lines fit a phone's width too.
      await page.setViewportSize({ width: 390, height: 844 });
      expect(await page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
      expect(problems).toEqual([]);
    } finally {
      await context.close();
      await new Promise((resolve) => hook.close(resolve));
    }
  });

  it("integrations: a hook URL, a tool's settings, a template with a live preview, the default format; the hook delivers", {
    timeout: 120_000,
  }, async () => {
    const context = await browser.newContext({
      permissions: ["clipboard-read", "clipboard-write"],
      viewport: { width: 1100, height: 900 },
    });
    try {
      await signInto(context, { id: 7101, first_name: "Ivy" });
      const dock = await service.app.docks.create(7101, { name: "Disks", link: null, description: null });
      const sandbox = sandboxOf(service);
      const ada = await sandbox.person("Ada");
      await service.subscriptions.subscribe(dock.id, ada, "private");
      const page = await context.newPage();
      const problems = pageProblems(page);
      await page.goto(`${service.url}/console/`);
      await page.getByRole("list", { name: "Docks" }).getByRole("link", { name: "Disks" }).click();
      const card = page.getByRole("article", { name: "Disks" });
      await card.waitFor();
      const clipboard = () => page.evaluate("navigator.clipboard.readText()") as Promise<string>;

      // The Dock's Integrations section, reached from the keyboard.
      const integrationsTab = card
        .getByRole("navigation", { name: "Dock sections" })
        .getByRole("link", { name: "Integrations" });
      await integrationsTab.focus();
      await page.keyboard.press("Enter");
      const section = card.getByRole("region", { name: "Integrations" });
      const hookPart = section.getByRole("region", { name: "Hook URL" });
      await hookPart.getByText("Uptime Kuma, Slack-style webhooks, Home Assistant").waitFor();

      // A hook URL: masked on screen, the real one on the clipboard.
      await hookPart.getByRole("button", { name: "Create hook URL" }).click();
      await page.getByRole("status").filter({ hasText: "Hook URL created." }).waitFor();
      const token = (await service.app.docks.get(dock.id))?.hookToken as string;
      expect(token).toMatch(/^dnhk_/);
      const hookShown = hookPart.getByTestId("hook-url");
      await hookShown.filter({ hasText: /\/hook\/dnhk_•+$/ }).waitFor();
      expect(await hookShown.textContent()).toBe(`${service.url}/hook/dnhk_${"•".repeat(16)}`);
      expect(await card.textContent()).not.toContain(token);
      await hookPart.getByRole("button", { name: "Copy hook URL" }).click();
      await page.getByRole("status").filter({ hasText: "Hook URL copied." }).waitFor();
      const hookUrl = await clipboard();
      expect(hookUrl).toBe(`${service.url}/hook/${token}`);

      // A tool's settings: where they go in the tool's own words, the secret masked on screen.
      const tools = section.getByRole("region", { name: "Settings for your tools" });
      await tools.getByLabel("Tool").selectOption({ label: "Grafana" });
      await tools.getByTestId("snippet-where").filter({ hasText: "Contact points" }).waitFor();
      await tools.getByLabel("Tool").selectOption({ label: "Prometheus Alertmanager" });
      expect(await tools.getByTestId("snippet-where").textContent()).toBe(
        "Where: alertmanager.yml: a receiver, and the route that uses it",
      );
      const yaml = (await tools.getByTestId("snippet-text").textContent()) as string;
      expect(yaml).toContain(`username: "${dock.id}"`);
      expect(yaml).toContain('password: "<SECRET_KEY>"');
      expect(yaml).not.toContain(dock.secretKey);
      await tools.getByRole("button", { name: "Copy settings for Prometheus Alertmanager" }).click();
      await page
        .getByRole("status")
        .filter({ hasText: "Prometheus Alertmanager settings copied." })
        .waitFor();
      expect(await clipboard()).toContain(`password: "${dock.secretKey}"`);

      // The template: the preview follows the typing.
      const editor = section.getByRole("form", { name: "Template: your own payload" });
      const text = editor.getByLabel("Text", { exact: true });
      await text.fill("{{ payload.name | upcase }} is {{ status }}");
      await editor.getByLabel("Key").fill("{{ name }}");
      await editor
        .getByLabel("Sample payload")
        .fill(JSON.stringify({ status: "firing", name: "disk", value: 97 }, null, 2));
      const preview = editor.getByRole("region", { name: "Preview" });
      await preview
        .getByTestId("preview-text")
        .filter({ hasText: /^DISK is firing$/ })
        .waitFor();
      await preview.locator(".preview-facts code", { hasText: "disk" }).waitFor();
      await text.fill("{{ payload.name | upcase }} is {{ status }}\n{% if value > 90 %}critical");
      // A Liquid error: under the field, with its line, tied to the field for assistive technology.
      const textError = page.locator(`[id="${(await text.getAttribute("id")) as string}-error"]`);
      await textError
        .filter({ hasText: /^line 2, column 1: tag \{% if value > 90 %\} not closed\.$/ })
        .waitFor();
      expect(await textError.getAttribute("aria-live")).toBe("polite");
      expect((await text.getAttribute("aria-describedby"))?.split(" ")).toContain(
        await textError.getAttribute("id"),
      );
      expect(await text.getAttribute("aria-invalid")).toBe("true");
      await text.fill("{{ payload.name | upcase }} is {{ status }}{% if value > 90 %} (critical){% endif %}");
      await preview
        .getByTestId("preview-text")
        .filter({ hasText: /^DISK is firing \(critical\)$/ })
        .waitFor();
      expect(await textError.textContent()).toBe("");
      expect(await text.getAttribute("aria-invalid")).toBeNull();
      await editor.getByRole("button", { name: "Save template" }).click();
      await page.getByRole("status").filter({ hasText: "Template saved." }).waitFor();
      expect((await service.app.docks.integrationSettings(dock.id))?.template).toEqual({
        text: "{{ payload.name | upcase }} is {{ status }}{% if value > 90 %} (critical){% endif %}",
        key: "{{ name }}",
      });

      // Bodies without msg are read with the template from now on.
      const readAs = section.getByLabel("Bodies without msg are read as");
      await readAs.selectOption("template");
      await section.getByRole("button", { name: "Save default format" }).click();
      await page.getByRole("status").filter({ hasText: "Default format saved." }).waitFor();

      // A built-in format tried on a sample: GitHub's ping makes no message, and says why.
      const trying = section.getByRole("region", { name: "Try a sample" });
      await trying.getByLabel("Format", { exact: true }).selectOption("github");
      await trying.getByLabel("X-GitHub-Event header").fill("ping");
      await trying.getByLabel("Payload").fill(JSON.stringify({ zen: "Design for failure.", hook_id: 1 }));
      await trying.getByText("No message: GitHub's ping: the hook works.").waitFor();
      // Each format brings a sample of its own (served by /info): Alertmanager's makes its alert.
      await trying.getByLabel("Format", { exact: true }).selectOption("alertmanager");
      await trying.getByRole("button", { name: "Use a sample Prometheus Alertmanager payload" }).click();
      await trying.getByText("p99 latency above 500 ms on api-1.example.com:9100").first().waitFor();

      // The confirmations have left the screen (they would cover part of the section).
      const quiet = () => page.locator(".toast:not(:empty)").waitFor({ state: "detached", timeout: 10_000 });
      await page.bringToFront();
      await quiet();
      await section.screenshot({ path: "test-results/console-integrations.png" });

      // A tool posts its own JSON to the hook URL: the template makes the message, and Ada gets it.
      const posted = await fetch(hookUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ status: "resolved", name: "disk", value: 42 }),
      });
      expect(posted.status).toBe(202);
      const delivered = await waitFor("the hook's message in Ada's chat", async () =>
        (await sandbox.botTexts(ada)).find((t) => t.endsWith("DISK is resolved")),
      );
      expect(delivered).toContain("Disks");
      await card
        .getByRole("navigation", { name: "Dock sections" })
        .getByRole("link", { name: "Messages" })
        .click();
      await card
        .getByRole("list", { name: "Messages of Disks" })
        .locator("li", { hasText: "DISK is resolved" })
        .getByText("sent: 1")
        .waitFor();

      // At a phone's width nothing pushes the page sideways: the settings scroll inside their box.
      await integrationsTab.click();
      await page.setViewportSize({ width: 390, height: 844 });
      await tools.getByLabel("Tool").selectOption({ label: "Apprise" });
      expect(await page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
      const snippetBox = tools.getByTestId("snippet-text");
      expect(await snippetBox.evaluate((pre) => pre.scrollWidth > pre.clientWidth)).toBe(true);
      await quiet();
      await section.screenshot({ path: "test-results/console-integrations-phone.png" });
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("60 Docks list and filter on a phone; every page at both widths passes axe-core and is photographed", {
    timeout: 300_000,
  }, async () => {
    const owner = 7201;
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      await signInto(context, { id: owner, first_name: "Sam" });
      const made = [];
      for (let i = 1; i <= 60; i++) {
        made.push(
          await service.app.docks.create(owner, {
            name: `Service ${String(i).padStart(2, "0")}`,
            link: null,
            description: i % 10 === 0 ? `Nightly batch ${i}` : null,
          }),
        );
      }
      const first = made[0] as (typeof made)[number];
      const sandbox = sandboxOf(service);
      const bo = await sandbox.person("Bo");
      await service.subscriptions.subscribe(first.id, bo, "private");
      // A group subscribes as people do, in the bot: the console names it by its title.
      const people = new People(`${service.url}/sandbox`);
      const admin = await people.person("Ada");
      const group = await people.control<{ id: number }>("POST", "/groups", {
        title: "Ops room",
        type: "group",
        members: [admin],
        admins: [admin],
      });
      await people.control("POST", `/chats/${group.id}/bot`, { from: admin, status: "member" });
      await people.botReply(group.id, { message_id: 0 }, "the bot's hello in the group");
      const command = await people.say(group.id, `/start@${SANDBOX_BOT_USERNAME} ${first.id}`, {
        from: admin,
      });
      const prompt = await people.botReply(group.id, command, "the group subscription prompt");
      await people.press(group.id, prompt, "Yes", admin);
      await people.edited(group.id, prompt);
      const sent = await ping(service.url, first.id, first.secretKey, "Nightly backup finished");
      expect(sent.status).toBe(202);
      const [message] = (await service.app.outboxViews.history(first.id, { limit: 1 })).messages;
      await waitFor("the message sent", async () =>
        (await service.app.outboxViews.history(first.id, { limit: 1 })).messages[0]?.states.sent === 2
          ? true
          : undefined,
      );

      const page = await context.newPage();
      const problems = pageProblems(page);
      const pages: [string, string, (p: Page) => Promise<unknown>][] = [
        [
          "list",
          "#/",
          (p) => p.getByRole("list", { name: "Docks" }).getByRole("link", { name: "Service 60" }).waitFor(),
        ],
        ["new", "#/new", (p) => p.getByRole("heading", { name: "Create a new Dock" }).waitFor()],
        ...(
          [
            ["send", (p: Page) => p.getByTestId("snippet-ping").waitFor()],
            ["subscribers", (p: Page) => p.getByRole("listitem").filter({ hasText: "Ops room" }).waitFor()],
            [
              "messages",
              (p: Page) =>
                p.getByRole("list", { name: "Messages of Service 01" }).getByText("sent: 2").waitFor(),
            ],
            ["activity", (p: Page) => p.getByTestId("activity-sent").filter({ hasText: /^2$/ }).waitFor()],
            ["integrations", (p: Page) => p.getByRole("region", { name: "Hook URL" }).waitFor()],
            ["settings", (p: Page) => p.getByRole("button", { name: "Rotate secret" }).waitFor()],
            ["co-owners", (p: Page) => p.getByRole("button", { name: "Invite a co-owner" }).waitFor()],
            ["audit", (p: Page) => p.getByText("Nothing yet.").waitFor()],
          ] as const
        ).map(([t, ready]): [string, string, (p: Page) => Promise<unknown>] => [
          `dock-${t}`,
          `#/docks/${first.id}${t === "send" ? "" : `/${t}`}`,
          ready,
        ]),
        [
          "message",
          `#/docks/${first.id}/messages/${message?.id}`,
          (p) => p.getByRole("row", { name: /Ops room/ }).waitFor(),
        ],
        ["help", "#/help", (p) => p.getByRole("heading", { name: "API & bot" }).waitFor()],
      ];
      for (const [width, height] of [
        [1280, 900],
        [390, 844],
      ] as const) {
        await page.setViewportSize({ width, height });
        for (const [name, hash, ready] of pages) {
          await page.goto(`${service.url}/console/${hash}`);
          await ready(page);
          expect(await accessibilityProblems(page), `${name} at ${width} px`).toEqual([]);
          expect(
            await page.evaluate("document.documentElement.scrollWidth"),
            `${name} at ${width} px`,
          ).toBeLessThanOrEqual(width);
          if (name.startsWith("dock-")) {
            // Every section in sight at either width: none behind a sideways scroll.
            const rights = await page
              .getByRole("navigation", { name: "Dock sections" })
              .getByRole("link")
              .evaluateAll((links) => links.map((link) => link.getBoundingClientRect().right));
            expect(rights, `${name} at ${width} px`).toHaveLength(8);
            for (const right of rights) expect(right, `${name} at ${width} px`).toBeLessThanOrEqual(width);
            if (width === 1280) {
              // On a laptop's screen they are one line, not a row and a straggler.
              const tops = await page
                .getByRole("navigation", { name: "Dock sections" })
                .getByRole("link")
                .evaluateAll((links) => links.map((link) => Math.round(link.getBoundingClientRect().top)));
              expect(new Set(tops).size, `${name} at ${width} px: ${tops}`).toBe(1);
            }
          }
          if (name === "dock-activity") {
            // The chart's labels keep a readable size on a phone, and its axis counts whole messages.
            const labels = await page.locator(".chart-axis").evaluateAll((texts) =>
              texts.map((text) => ({
                text: text.textContent,
                height: text.getBoundingClientRect().height,
              })),
            );
            expect(labels.length).toBeGreaterThan(3);
            for (const label of labels) {
              expect(label.height, `“${label.text}” at ${width} px`).toBeGreaterThanOrEqual(10);
              expect(label.text).not.toMatch(/\./);
            }
          }
          await page.screenshot({ path: `test-results/console-page-${name}-${width}.png`, fullPage: true });
        }
      }

      // The list at a phone's width: 60 lines, filtered as one types.
      await page.goto(`${service.url}/console/`);
      const list = page.getByRole("list", { name: "Docks" });
      await list.getByRole("link", { name: "Service 60" }).waitFor();
      expect(await list.getByRole("listitem").count()).toBe(60);
      // The headline numbers count every Dock's.
      const headline = page.getByRole("definition").filter({ hasText: /^\d+$/ });
      expect(await headline.allTextContents()).toEqual(["60", "2", "1", "0"]);
      const filter = page.getByLabel("Filter Docks");
      await filter.fill("nightly");
      await page.getByText("6 of 60 Docks").waitFor();
      expect((await list.getByRole("link").allTextContents()).sort()).toEqual([
        "Service 10",
        "Service 20",
        "Service 30",
        "Service 40",
        "Service 50",
        "Service 60",
      ]);
      await filter.fill("service 01");
      await page.getByText("1 of 60 Docks").waitFor();
      const line = list.getByRole("listitem");
      await line.getByText("Nightly backup finished").waitFor();
      await line.getByText("delivered").waitFor();
      expect(await line.textContent()).toContain("2 subscribers");
      // The group by its title, not "group chat -400…".
      await page.goto(`${service.url}/console/#/docks/${first.id}/subscribers`);
      await page
        .getByRole("article", { name: "Service 01" })
        .getByRole("listitem")
        .filter({ hasText: "Ops room" })
        .waitFor();
      await page.goto(`${service.url}/console/`);
      await filter.fill("service 01");
      await page.getByText("1 of 60 Docks").waitFor();
      await page.screenshot({ path: "test-results/console-list-filtered-390.png", fullPage: true });
      // A pasted Dock ID finds its Dock; so does a part of it, typed in any case.
      for (const typed of [first.id, first.id.slice(3, 11).toLowerCase()]) {
        await filter.fill(typed);
        await page.getByText("1 of 60 Docks").waitFor();
        await list.getByRole("link", { name: "Service 01" }).waitFor();
      }
      await filter.fill("service 01");
      // From the keyboard: the filter's first match opens with Tab and Enter.
      await filter.focus();
      await page.keyboard.press("Tab");
      await page.keyboard.press("Enter");
      await page.getByRole("article", { name: "Service 01" }).waitFor();
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
