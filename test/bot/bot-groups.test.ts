import { Api } from "grammy";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DockStamps } from "../../src/store/dock-stamps.ts";
import type { DockWithSecret } from "../../src/store/docks.ts";
import { SANDBOX_BOT_TOKEN, SANDBOX_BOT_USERNAME } from "../../src/telegram/sandbox-bot.ts";
import { People, subscriptionRows } from "../helpers/bot-harness.ts";
import { type ConsoleClient, signIn } from "../helpers/console-client.ts";
import { ping } from "../helpers/delivery-harness.ts";
import { dialects, type RunningService, startService } from "../helpers/harness.ts";

const DIALECTS = await dialects();

describe.each(DIALECTS)("groups, blocking and leaving on %s", (dialect) => {
  let service: RunningService;
  let people: People;
  let dock: DockWithSecret;
  let other: DockWithSecret;

  beforeAll(async () => {
    service = await startService(dialect, {}, { pace: "unpaced" });
    people = new People(`${service.url}/sandbox`);
    dock = await service.app.docks.create(1, { name: "Alerts", link: null, description: "Pager alerts" });
    other = await service.app.docks.create(1, { name: "Builds", link: null, description: null });
  });
  afterAll(async () => service.close());

  async function subscriptionsOf(chatId: number) {
    return (await subscriptionRows(service.db))
      .filter((row) => row[1] === chatId)
      .map((row) => [row[0], row[2], row[3]])
      .sort();
  }

  /** Waits until the chat's subscriptions are as expected (the bot acts on updates in its own time). */
  function subscriptionsBecome(chatId: number, expected: unknown[]) {
    return people.waitFor(
      `the subscriptions of chat ${chatId} to become ${JSON.stringify(expected)}`,
      async () => {
        const rows = await subscriptionsOf(chatId);
        return JSON.stringify(rows) === JSON.stringify(expected) ? rows : undefined;
      },
      () => subscriptionsOf(chatId),
    );
  }

  /** A group with an admin and a plain member, with the bot added by the admin. */
  async function groupWithBot(type: "group" | "supergroup", title = "Ops") {
    const admin = await people.person("Ada");
    const member = await people.person("Moe");
    const group = await people.control<{ id: number }>("POST", "/groups", {
      title,
      type,
      members: [admin, member],
      admins: [admin],
    });
    const before = { message_id: 0 };
    await people.control("POST", `/chats/${group.id}/bot`, { from: admin, status: "member" });
    const hello = await people.botReply(group.id, before, "the bot's hello in the group");
    expect(hello.text).toContain("A group admin can subscribe the group");
    return { admin, member, group: group.id };
  }

  it("an admin subscribes the group with /start@bot <dock_id> and Yes", async () => {
    const { admin, group } = await groupWithBot("group");
    const command = await people.say(group, `/start@${SANDBOX_BOT_USERNAME} ${dock.id}`, { from: admin });
    const prompt = await people.botReply(group, command, "the group subscription prompt");
    expect(prompt.text).toContain("Subscribe this group to this Dock?");
    await people.press(group, prompt, "Yes", admin);
    expect((await people.edited(group, prompt)).text).toContain("This group is now subscribed to Alerts");
    expect(await subscriptionsOf(group)).toEqual([[dock.id, "group", "active"]]);
  });

  it("a member who is not an admin can neither subscribe the group nor press the admin's Yes", async () => {
    const { admin, member, group } = await groupWithBot("group");
    const command = await people.say(group, `/start@${SANDBOX_BOT_USERNAME} ${dock.id}`, { from: member });
    expect((await people.botReply(group, command)).text).toBe(
      "Only this group's admins can change its subscriptions.",
    );

    const asked = await people.say(group, `/start@${SANDBOX_BOT_USERNAME} ${dock.id}`, { from: admin });
    const prompt = await people.botReply(group, asked);
    const press = await people.press(group, prompt, "Yes", member);
    expect(await people.callbackAnswer(press)).toEqual({
      text: "Only this group's admins can change its subscriptions.",
      show_alert: true,
    });
    const manual = await people.say(group, `/subscribe@${SANDBOX_BOT_USERNAME}`, { from: member });
    expect((await people.botReply(group, manual)).text).toBe(
      "Only this group's admins can change its subscriptions.",
    );
    const prompted = (await people.history(group)).find((m) => m.message_id === prompt.message_id);
    expect(prompted?.edit_date).toBeUndefined();
    expect(await subscriptionsOf(group)).toEqual([]);
  });

  it("an admin subscribes a supergroup by /subscribe and replying with the Dock ID; only admins unsubscribe", async () => {
    const { admin, member, group } = await groupWithBot("supergroup");
    const command = await people.say(group, "/subscribe", { from: admin });
    const prompt = await people.botReply(group, command, "the Dock ID prompt");
    expect(prompt.reply_markup).toMatchObject({ force_reply: true, selective: true });
    expect(prompt.reply_to_message?.message_id).toBe(command.message_id);
    const answer = await people.say(group, other.id, { from: admin, replyTo: prompt.message_id });
    expect((await people.botReply(group, answer)).text).toContain("This group is now subscribed to Builds");
    expect(await subscriptionsOf(group)).toEqual([[other.id, "supergroup", "active"]]);

    const refused = await people.say(group, `/unsubscribe ${other.id}`, { from: member });
    expect((await people.botReply(group, refused)).text).toBe(
      "Only this group's admins can change its subscriptions.",
    );
    const list = await people.botReply(group, await people.say(group, "/list", { from: member }));
    const press = await people.press(group, list, "Unsubscribe from Builds", member);
    expect((await people.callbackAnswer(press)).show_alert).toBe(true);
    expect(await subscriptionsOf(group)).toEqual([[other.id, "supergroup", "active"]]);

    await people.press(group, list, "Unsubscribe from Builds", admin);
    expect((await people.edited(group, list)).text).toContain("This group has no subscriptions");
    expect(await subscriptionsOf(group)).toEqual([[other.id, "supergroup", "removed"]]);
  });

  it("removing the bot from a group pauses its subscriptions; adding it back resumes them", async () => {
    const { admin, group } = await groupWithBot("group");
    await service.app.subscriptions.subscribe(dock.id, group, "group");
    await service.app.subscriptions.subscribe(other.id, group, "group");
    await service.app.subscriptions.transition(group, "active", "removed", other.id);

    await people.control("POST", `/chats/${group}/bot`, { from: admin, status: "left" });
    await subscriptionsBecome(
      group,
      [
        [dock.id, "group", "blocked"],
        [other.id, "group", "removed"],
      ].sort(),
    );

    const before = (await people.history(group)).at(-1) ?? { message_id: 0 };
    await people.control("POST", `/chats/${group}/bot`, { from: admin, status: "member" });
    const hello = await people.botReply(group, before, "the bot's hello when re-added");
    expect(hello.text).toContain("Its subscription is active again");
    expect(await subscriptionsOf(group)).toEqual(
      [
        [dock.id, "group", "active"],
        [other.id, "group", "removed"],
      ].sort(),
    );
  });

  describe("the console names a group by its title", () => {
    const owner = { id: 7001, first_name: "Olive" };
    let client: ConsoleClient;
    let owned: DockWithSecret;

    beforeAll(async () => {
      client = await signIn(service, owner);
      owned = await service.app.docks.create(owner.id, { name: "Pager", link: null, description: null });
    });

    /** The Dock's subscribers as the console's API answers them: `[chat_id, title]`. */
    async function titles(): Promise<[number, string | null][]> {
      const answer = await client.call("GET", `/docks/${owned.id}/subscribers`);
      expect(answer.status).toBe(200);
      return answer.body.subscribers.map((s: { chat_id: number; title: string | null }) => [
        s.chat_id,
        s.title,
      ]);
    }

    function titlesBecome(expected: [number, string | null][]) {
      return people.waitFor(
        `the console's subscribers to be ${JSON.stringify(expected)}`,
        async () => {
          const now = await titles();
          return JSON.stringify(now) === JSON.stringify(expected) ? now : undefined;
        },
        titles,
      );
    }

    it("subscribed in the bot, then renamed and upgraded: the console shows the title as it is now", async () => {
      const { admin, member, group } = await groupWithBot("group", "Ops room");
      const command = await people.say(group, `/start@${SANDBOX_BOT_USERNAME} ${owned.id}`, { from: admin });
      const prompt = await people.botReply(group, command, "the group subscription prompt");
      await people.press(group, prompt, "Yes", admin);
      await people.edited(group, prompt);
      expect(await titles()).toEqual([[group, "Ops room"]]);

      // Any member may rename a group; the bot hears it as a service message (privacy mode or not).
      // The console's live stream sees it as a change of the Dock (its stamp moves).
      const stamp = async () =>
        (await new DockStamps(service.db).of([owner.id])).find((d) => d.id === owned.id)?.stamp;
      const before = await stamp();
      await people.control("POST", `/chats/${group}/title`, { from: member, title: "Ops & on-call" });
      await titlesBecome([[group, "Ops & on-call"]]);
      expect(await stamp()).not.toBe(before);

      // A supergroup is a new chat: the title comes along with the subscription.
      const supergroup = await people.control<{ id: number }>("POST", `/chats/${group}/upgrade`, {
        from: admin,
      });
      await titlesBecome([[supergroup.id, "Ops & on-call"]]);
      const [listed] = (await client.call("GET", `/docks/${owned.id}/subscribers`)).body.subscribers;
      expect(listed).toMatchObject({
        chat_id: supergroup.id,
        chat_type: "supergroup",
        title: "Ops & on-call",
      });
      await service.app.subscriptions.remove(owned.id, supergroup.id);
    });

    it("the title is learnt when the bot is added, and a private chat has none", async () => {
      const { group } = await groupWithBot("supergroup", "Night shift");
      // Subscribed without the bot hearing the title again (as by a subscription made before this
      // version): the title it learnt on being added names the group.
      await service.app.subscriptions.subscribe(owned.id, group, "supergroup");
      const pat = await people.person("Pat");
      await service.app.subscriptions.subscribe(owned.id, pat, "private", { firstName: "Pat" });
      expect(await titles()).toEqual([
        [group, "Night shift"],
        [pat, null],
      ]);
    });
  });

  /** A subscribed group, upgraded to a supergroup by its admin: the new chat's id. */
  async function upgradedGroup(group: number, admin: number): Promise<number> {
    await service.app.subscriptions.subscribe(dock.id, group, "group");
    const supergroup = await people.control<{ id: number; type: string }>("POST", `/chats/${group}/upgrade`, {
      from: admin,
    });
    expect(supergroup.type).toBe("supergroup");
    return supergroup.id;
  }

  /** The notifications the bot sent to a chat: its messages that carry the Dock's name. */
  async function notifications(chatId: number): Promise<string[]> {
    return (await people.history(chatId))
      .filter((m) => m.from.is_bot && (m.text ?? "").startsWith("Alerts"))
      .map((m) => m.text as string);
  }

  it("a group upgraded to a supergroup keeps its subscriptions under the new chat id (the bot is told)", async () => {
    const { admin, group } = await groupWithBot("group");
    const supergroup = await upgradedGroup(group, admin);
    await subscriptionsBecome(supergroup, [[dock.id, "supergroup", "active"]]);
    expect(await subscriptionsOf(group)).toEqual([]);

    await ping(service.url, dock, "after the upgrade");
    await people.waitFor("the notification in the supergroup", async () =>
      (await notifications(supergroup)).length > 0 ? true : undefined,
    );
    expect((await notifications(supergroup))[0]).toContain("after the upgrade");
    expect(await notifications(group)).toEqual([]);
  });

  it("a message queued for a group upgraded while the bot was away follows it to the supergroup", async () => {
    const { admin, group } = await groupWithBot("group");
    // The service is down while the group is upgraded and a message comes in, and the update that
    // said so is gone when it comes back: only the refused send tells the new chat id.
    await service.app.stop();
    let restarted = false;
    try {
      const supergroup = await upgradedGroup(group, admin);
      const messageId = await ping(service.url, dock, "sent while the group was upgraded");
      await new Api(SANDBOX_BOT_TOKEN, { apiRoot: `${service.url}/sandbox` }).deleteWebhook({
        drop_pending_updates: true,
      });
      await service.app.start();
      restarted = true;

      await people.waitFor("the notification in the supergroup", async () =>
        (await notifications(supergroup)).length > 0 ? true : undefined,
      );
      expect((await notifications(supergroup))[0]).toContain("sent while the group was upgraded");
      expect(await notifications(group)).toEqual([]);
      expect(await subscriptionsOf(supergroup)).toEqual([[dock.id, "supergroup", "active"]]);
      expect(await subscriptionsOf(group)).toEqual([]);
      // Delivered on its first counted attempt: the refused send to the old id was not the message's fault.
      // The chat shows the message as Telegram answers; the outcome is written just after: wait for it.
      const ours = async () => {
        const status = await service.app.outboxViews.status(messageId, dock.id);
        return status?.deliveries.filter((d) => d.chatId === supergroup || d.chatId === group) ?? [];
      };
      await people.waitFor("the delivery's outcome on record", async () =>
        (await ours()).some((d) => d.state !== "sending" && d.state !== "queued") ? true : undefined,
      );
      expect(await ours()).toMatchObject([{ chatId: supergroup, state: "sent", attempts: 1 }]);
      expect(service.logs.text).toContain("group became a supergroup; its subscriptions moved");
    } finally {
      if (!restarted) await service.app.start();
    }
  });

  it("a person who blocks the bot stops receiving; /start again resumes what they had", async () => {
    const own = await service.app.docks.create(1, { name: "Pat's", link: null, description: null });
    const pat = await people.person("Pat");
    await people.botReply(pat, await people.start(pat), "the welcome");
    await service.app.subscriptions.subscribe(own.id, pat, "private");
    await service.app.subscriptions.subscribe(other.id, pat, "private");
    await people.press(
      pat,
      await people.botReply(pat, await people.say(pat, "/list")),
      "Unsubscribe from Builds",
    );
    await subscriptionsBecome(
      pat,
      [
        [own.id, "private", "active"],
        [other.id, "private", "removed"],
      ].sort(),
    );

    await people.control("POST", `/users/${pat}/block`);
    await subscriptionsBecome(
      pat,
      [
        [own.id, "private", "blocked"],
        [other.id, "private", "removed"],
      ].sort(),
    );
    // Nothing is queued for a blocked chat.
    const message = await service.app.messages.accept({ dockId: own.id, text: "while blocked" });
    expect(message).toMatchObject({ kind: "accepted", subscribers: 0 });

    const restart = await people.start(pat);
    expect((await people.botReply(pat, restart, "the welcome after restarting")).text).toContain("Dock");
    expect(await subscriptionsOf(pat)).toEqual(
      [
        [own.id, "private", "active"],
        [other.id, "private", "removed"],
      ].sort(),
    );
  });
});
