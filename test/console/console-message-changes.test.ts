import { mkdirSync } from "node:fs";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ChatMessage, People } from "../helpers/bot-harness.ts";
import {
  accessibilityProblems,
  chatLog,
  chromiumPath,
  launchChromium,
  pageProblems,
} from "../helpers/browser.ts";
import { type ConsoleClient, signIn, withSession } from "../helpers/console-client.ts";
import {
  asDock,
  dialects,
  type RunningService,
  startLinkedService,
  startService,
} from "../helpers/harness.ts";

const DIALECTS = await dialects();
const OWNER = 6301;

/** A Dock with two people of the sandbox subscribed, and a message of its application delivered to both. */
async function delivered(service: RunningService, owner: ConsoleClient, name: string, text: string) {
  const made = await owner.call("POST", "/docks", { name });
  expect(made.status).toBe(201);
  const dock = made.body.dock as { id: string; secret_key: string };
  const people = new People(`${service.url}/sandbox`);
  /** Someone who opened the bot (their chat with it exists from then on). */
  const opened = async (firstName: string) => {
    const id = await people.person(firstName);
    await people.botReply(id, await people.start(id), "the welcome");
    return id;
  };
  const chats = [await opened("Ann"), await opened("Ben")];
  for (const chat of chats) await service.subscriptions.subscribe(dock.id, chat, "private");
  const sent = await asDock(service.url, dock, "POST", "/webhook", { msg: text });
  expect(sent.status).toBe(202);
  /** The chat's copy of the message, once it is there as `expected` says. */
  const copy = (chat: number, expected: (message: ChatMessage | undefined) => boolean, what: string) =>
    people.waitFor(
      `${what} in chat ${chat}`,
      async () => {
        const copies = (await people.history(chat)).filter((m) => m.from.is_bot);
        // A copy starts with the Dock's name, in bold.
        const found = copies.find((m) => m.text?.startsWith(`${name}\n`));
        return expected(found) ? { found } : undefined;
      },
      () => people.history(chat),
    );
  for (const chat of chats) await copy(chat, (m) => m?.text === `${name}\n${text}`, "the message");
  return { dock, chats, messageId: sent.body.message_id as string, copy };
}

/**
 * A sent message edited or deleted from the console's message history (issue 37): every copy in
 * Telegram changes as the send API's PATCH and DELETE change it, and the audit log says who did
 * it, with the message's id and never its text.
 */
describe.each(DIALECTS)("a message edited and deleted from the console on %s", (dialect) => {
  let service: RunningService;
  let owner: ConsoleClient;

  beforeAll(async () => {
    service = await startService(dialect, { OWNERS: String(OWNER) }, { pace: "unpaced" });
    owner = await signIn(service, { id: OWNER, first_name: "Olga" });
  });
  afterAll(async () => {
    await service?.close();
  });

  const entries = async (dockId: string) =>
    service.db.kysely
      .selectFrom("dock_audit")
      .select(["action", "actor", "detail"])
      .where("dock_id", "=", dockId)
      .where("action", "in", ["message_edited", "message_deleted"])
      .orderBy("id")
      .execute();

  it("edits every copy in its chat, then deletes every copy; each once in the audit log, without the text", {
    timeout: 120_000,
  }, async () => {
    const { dock, chats, messageId, copy } = await delivered(service, owner, "Disks", "Disk 95% on db-1");
    const on = `/docks/${dock.id}/messages/${messageId}`;

    // Refused edits change nothing and record nothing: no text, another Dock's message, none.
    expect((await owner.call("PATCH", on, { text: "  " })).body.error.code).toBe("invalid_request");
    const other = (await owner.call("POST", "/docks", { name: "Other" })).body.dock;
    expect(
      (await owner.call("PATCH", `/docks/${other.id}/messages/${messageId}`, { text: "x" })).status,
    ).toBe(404);
    expect((await owner.call("DELETE", `/docks/${dock.id}/messages/msg_nothing`)).status).toBe(404);
    expect(await entries(dock.id)).toEqual([]);

    const edited = await owner.call("PATCH", on, { text: "Fixed: disk 60% on db-1" });
    expect(edited.status).toBe(202);
    expect(edited.body).toEqual({ ok: true, message_id: messageId, revision: 2, edits: 2, queued: 0 });
    for (const chat of chats) {
      const { found } = await copy(chat, (m) => m?.text === "Disks\nFixed: disk 60% on db-1", "the edit");
      expect(found?.edit_date).toBeDefined();
    }
    // As the send API reads it: the same message, revised.
    const status = await asDock(service.url, dock, "GET", `/messages/${messageId}`);
    expect(status.body.message).toMatchObject({ revision: 2, deleted_at: null });

    const deleted = await owner.call("DELETE", on);
    expect(deleted.status).toBe(202);
    expect(deleted.body).toEqual({
      ok: true,
      message_id: messageId,
      deleting: 2,
      cancelled: 0,
      already_deleted: false,
    });
    for (const chat of chats) await copy(chat, (m) => m === undefined, "the copy deleted");
    // Again: nothing more to do, and nothing more recorded; a deleted message is not edited.
    expect((await owner.call("DELETE", on)).body.already_deleted).toBe(true);
    expect((await owner.call("PATCH", on, { text: "Too late" })).body.error.code).toBe("message_deleted");

    const stored = await entries(dock.id);
    expect(stored.map((row) => [row.action, Number(row.actor), JSON.parse(row.detail as string)])).toEqual([
      ["message_edited", OWNER, { message_id: messageId, revision: 2 }],
      ["message_deleted", OWNER, { message_id: messageId }],
    ]);
    expect(JSON.stringify(stored)).not.toMatch(/disk/i);
  });
});

describe.skipIf(!chromiumPath)("a message edited and deleted in the console, in Chromium", () => {
  let service: RunningService;
  let browser: Browser;

  beforeAll(async () => {
    service = await startLinkedService({ OWNERS: String(OWNER) });
    browser = await launchChromium();
    mkdirSync("test-results", { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await service?.close();
  });

  it("the message's page edits its text and deletes it from every chat; the sandbox's chats show it; the audit tab says it", {
    timeout: 240_000,
  }, async () => {
    const owner = await signIn(service, { id: OWNER, first_name: "Olga" });
    const { dock, chats, messageId, copy } = await delivered(service, owner, "Disks", "Disk 95% on db-1");
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await withSession(context, owner);
    const page = await context.newPage();
    const problems = pageProblems(page);
    await page.goto(`${service.url}/console/#/docks/${dock.id}/messages`);
    const message = page.locator("li", { hasText: "Disk 95% on db-1" }).first();
    await message.getByRole("link", { name: /Delivery details/ }).click();
    await page.getByTestId("message-id").filter({ hasText: messageId }).waitFor();

    await page.getByRole("button", { name: "Edit text" }).click();
    await page.getByLabel("New text").fill("Fixed: disk 60% on db-1");
    expect(await accessibilityProblems(page)).toEqual([]);
    await page.getByRole("button", { name: "Save the edit" }).click();
    await page
      .getByRole("status")
      .filter({ hasText: "Message edited: 2 copies to edit in Telegram." })
      .waitFor();
    for (const chat of chats)
      await copy(chat, (m) => m?.text === "Disks\nFixed: disk 60% on db-1", "the edit");
    // Ann's Telegram (the sandbox's chat page) shows the copy edited.
    const ann = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await ann.addInitScript(`localStorage.setItem("sandbox.person", "${chats[0]}")`);
    const annPage = await ann.newPage();
    await annPage.goto(`${service.url}/sandbox`);
    await chatLog(annPage).getByText("Fixed: disk 60% on db-1").waitFor();
    await page.bringToFront();
    await page.screenshot({ path: "test-results/console-message-edited.png", fullPage: true });

    // Delete asks first: dismissed, nothing happens; accepted, every copy goes.
    page.once("dialog", (dialog) => void dialog.dismiss());
    await page.getByRole("button", { name: "Delete from every chat" }).click();
    await page.getByRole("button", { name: "Delete from every chat" }).waitFor();
    expect(
      (await asDock(service.url, dock, "GET", `/messages/${messageId}`)).body.message.deleted_at,
    ).toBeNull();
    let asked = "";
    page.once("dialog", (dialog) => {
      asked = dialog.message();
      void dialog.accept();
    });
    await page.getByRole("button", { name: "Delete from every chat" }).click();
    await page
      .getByRole("status")
      .filter({ hasText: "Message deleted: 2 copies to delete in Telegram." })
      .waitFor();
    expect(asked).toContain("Delete this message from every chat it reached?");
    for (const chat of chats) await copy(chat, (m) => m === undefined, "the copy deleted");
    await annPage.bringToFront();
    await chatLog(annPage).getByText("Fixed: disk 60% on db-1").waitFor({ state: "detached" });
    // Deleted, the message offers neither any more.
    await page.bringToFront();
    await page.getByRole("button", { name: "Edit text" }).waitFor({ state: "detached" });

    await page.goto(`${service.url}/console/#/docks/${dock.id}/audit`);
    await page.getByText(`deleted message ${messageId} from every chat`).waitFor();
    await page.getByText(`edited the text of message ${messageId} in every chat (revision 2)`).waitFor();
    expect(problems).toEqual([]);
    await ann.close();
    await context.close();
  });
});
