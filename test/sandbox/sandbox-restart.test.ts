import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DockWithSecret } from "../../src/store/docks.ts";
import { type ChatMessage, People } from "../helpers/bot-harness.ts";
import {
  createTestDatabase,
  type RunningService,
  startServiceOver,
  type TestDatabase,
} from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

/** A `/ping` answered 202: how many subscribers it was queued for. */
async function ping(service: RunningService, dock: DockWithSecret, msg: string): Promise<number> {
  const response = await fetch(`${service.url}/ping`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ dock_id: dock.id, secret_key: dock.secretKey, msg }),
  });
  const body = (await response.json()) as { subscribers: number };
  expect(response.status, JSON.stringify(body)).toBe(202);
  return body.subscribers;
}

describe("the built-in sandbox across a restart of the service", () => {
  let database: TestDatabase;
  let service: RunningService | undefined;
  let people: People;
  // Every start must open the Docks sealed by the first.
  const encryptionKey = randomBytes(32);

  const start = async () => {
    service = await startServiceOver(database, {}, encryptionKey);
    people = new People(`${service.url}/sandbox`);
    return service;
  };
  /** close() then start again over the same database and DATA_DIR: a graceful restart. */
  const restart = async () => {
    await service?.close();
    service = undefined;
    return start();
  };

  beforeEach(async () => {
    database = await createTestDatabase("sqlite", { migrated: true });
  });
  afterEach(async () => {
    await service?.close();
    service = undefined;
    await database.drop();
  });

  /** A message in the chat (of any side) whose text contains `text`, once it arrived. */
  const arrived = (chatId: number, text: string) =>
    waitFor(`"${text}" in chat ${chatId}`, async () =>
      (await people.history(chatId)).find((m) => m.from.is_bot && m.text?.includes(text)),
    );

  it("a subscribed person is still there: a /ping reaches them, their history and unread updates too", async () => {
    const first = await start();
    const dock = await first.app.docks.create(1, { name: "Deploys", link: null, description: null });
    const alice = await people.person("Alice");
    const prompt = await people.botReply(
      alice,
      await people.start(alice, dock.id),
      "the subscription prompt",
    );
    await people.press(alice, prompt, "Yes");
    await people.edited(alice, prompt, "the confirmation");
    // Written while the bot is down: Telegram keeps the update until a bot takes it.
    await first.app.stop();
    const unread = await people.start(alice);
    const before = await people.history(alice);

    const second = await restart();
    expect((await people.history(alice)).slice(0, before.length)).toEqual(before);
    const welcome = await people.botReply(
      alice,
      unread,
      "the answer to the /start sent while the bot was down",
    );
    expect(welcome.text).toContain("Dock");

    expect(await ping(second, dock, "after the restart")).toBe(1);
    const delivered: ChatMessage = await arrived(alice, "after the restart");
    expect(delivered.text).toContain("Deploys");
    // The delivery succeeded, so the subscription stays active.
    expect(await ping(second, dock, "and again")).toBe(1);
    await arrived(alice, "and again");
  });

  it("a group keeps its id, title, members, admins and the bot's place in it", async () => {
    await start();
    const ada = await people.person("Ada");
    const moe = await people.person("Moe");
    const group = await people.control<{ id: number }>("POST", "/groups", {
      title: "Ops",
      members: [ada, moe],
      admins: [ada],
    });
    await people.control("POST", `/chats/${group.id}/bot`, { from: ada, status: "administrator" });
    await people.botReply(group.id, { message_id: 0 }, "the bot's hello in the group");
    const before = await people.control("GET", `/chats/${group.id}`);
    expect(before).toMatchObject({
      title: "Ops",
      members: [ada, moe],
      admins: [ada],
      bot_status: "administrator",
    });

    await restart();
    expect(await people.control("GET", `/chats/${group.id}`)).toEqual(before);
    // New ids go on from where they were.
    const next = await people.control<{ id: number }>("POST", "/groups", { title: "Dev", members: [moe] });
    expect(next.id).toBeLessThan(group.id);
    expect(
      (await people.control<{ id: number }>("POST", "/users", { first_name: "Zoe" })).id,
    ).toBeGreaterThan(moe);
  });

  it("a reset is kept too, and a stop writes the last change at once", async () => {
    await start();
    await people.person("Forgotten");
    await people.control("POST", "/reset");
    const kept = await people.person("Kept");
    const users = [{ id: kept, is_bot: false, first_name: "Kept" }];

    await service?.close();
    service = undefined;
    // The last change came a moment before the stop: the stop itself wrote it.
    const file = JSON.parse(readFileSync(join(database.dataDir, "sandbox.json"), "utf8"));
    expect(file).toMatchObject({ version: 1, users });

    await start();
    expect(await people.control("GET", "/users")).toEqual(users);
  });

  it.each([
    ["not JSON", '{"version": 1, "users": [{"id": 1'],
    ["from another version", JSON.stringify({ version: 99, people: [] })],
    ["of the wrong shape", JSON.stringify({ version: 1, users: "everyone" })],
  ])("a state file %s is moved aside with a warning, and the sandbox starts empty", async (_kind, text) => {
    const file = join(database.dataDir, "sandbox.json");
    writeFileSync(file, text);

    const running = await start();
    const warning = running.logs.lines
      .map((line) => JSON.parse(line) as { level: number; msg: string })
      .find((line) => line.level === 40 && line.msg.includes(file));
    expect(warning?.msg).toContain("moved it to");
    const aside = readdirSync(database.dataDir).filter((name) => name.startsWith("sandbox.json.corrupt-"));
    expect(aside).toHaveLength(1);
    expect(readFileSync(join(database.dataDir, aside[0] as string), "utf8")).toBe(text);
    expect(await people.control("GET", "/users")).toEqual([]);
    expect(await people.control("GET", "/chats")).toEqual([]);

    // The sandbox works, and is kept from now on.
    const bea = await people.person("Bea");
    await people.botReply(bea, await people.start(bea), "the welcome");
    await waitFor("a new state file with Bea", () => {
      if (!existsSync(file)) return undefined;
      return (JSON.parse(readFileSync(file, "utf8")) as { users: { first_name: string }[] }).users.some(
        (user) => user.first_name === "Bea",
      );
    });
  });
});
