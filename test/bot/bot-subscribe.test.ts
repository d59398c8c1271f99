import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DockWithSecret } from "../../src/store/docks.ts";
import { People, subscriptionRows } from "../helpers/bot-harness.ts";
import { dialects, type RunningService, startService } from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

const DIALECTS = await dialects();

describe.each(DIALECTS)("subscribing in the bot on %s", (dialect) => {
  let service: RunningService;
  let people: People;
  let dock: DockWithSecret;
  let other: DockWithSecret;

  beforeAll(async () => {
    service = await startService(dialect, {}, { pace: "unpaced" });
    people = new People(`${service.url}/sandbox`);
    dock = await service.app.docks.create(1, {
      name: "Deploys <prod>",
      link: "https://ci.example/deploys",
      description: "CI deploy results",
    });
    other = await service.app.docks.create(1, { name: "Backups", link: null, description: null });
  });
  afterAll(async () => service.close());

  /** The subscriptions of one chat, as `[dock_id, state]`. */
  async function subscriptionsOf(chatId: number) {
    return (await subscriptionRows(service.db))
      .filter((row) => row[1] === chatId)
      .map((row) => [row[0], row[3]]);
  }

  /** A new person who opened the bot and got its welcome (and so the menu). */
  async function opened(name: string) {
    const id = await people.person(name);
    await people.botReply(id, await people.start(id), "the welcome");
    return id;
  }

  /** Presses Subscribe in the menu and answers the force_reply prompt with `text`. */
  async function subscribeByHand(chatId: number, text: string) {
    const pressed = await people.keyboard(chatId, "Subscribe");
    const prompt = await people.botReply(chatId, pressed, "the Dock ID prompt");
    expect(prompt.reply_markup).toMatchObject({ force_reply: true });
    const answer = await people.say(chatId, text, { replyTo: prompt.message_id });
    return people.botReply(chatId, answer, "the answer to the pasted Dock ID");
  }

  it("/start alone greets a new person and puts up the menu", async () => {
    const alice = await people.person("Alice");
    const start = await people.start(alice);
    const welcome = await people.botReply(alice, start, "the welcome");
    expect(welcome.text).toContain("Dock");
    expect(welcome.reply_markup).toMatchObject({
      keyboard: [[{ text: "Subscribe" }, { text: "My subscriptions" }], [{ text: "Help" }]],
      is_persistent: true,
    });
    const chat = await people.control("GET", `/chats/${alice}`);
    expect(chat.reply_keyboard).not.toBeNull();
    expect(await subscriptionsOf(alice)).toEqual([]);
  });

  it("a deep link names the Dock and Yes subscribes, editing the prompt into a confirmation", async () => {
    const bob = await people.person("Bob");
    // A fresh chat: the first thing the person does is follow the console's link.
    const start = await people.start(bob, dock.id);
    const prompt = await people.botReply(bob, start, "the subscription prompt");
    expect(prompt.text).toContain("Deploys <prod>");
    expect(prompt.text).toContain("CI deploy results");
    expect(prompt.text).toContain("https://ci.example/deploys");
    expect(await subscriptionsOf(bob)).toEqual([]);

    const press = await people.press(bob, prompt, "Yes");
    const confirmed = await people.edited(bob, prompt);
    expect(confirmed.text).toContain("now subscribed to Deploys <prod>");
    expect(confirmed.reply_markup).toBeUndefined();
    // The deep link never showed the menu: it comes with the subscription, so /list is not needed.
    const menu = await people.botReply(bob, prompt, "the menu after Yes");
    expect(menu.text).toContain("My subscriptions");
    expect(menu.reply_markup).toMatchObject({
      keyboard: [[{ text: "Subscribe" }, { text: "My subscriptions" }], [{ text: "Help" }]],
    });
    expect((await people.control("GET", `/chats/${bob}`)).reply_keyboard).not.toBeNull();
    expect(await people.callbackAnswer(press)).toBeDefined();
    expect(await subscriptionRows(service.db)).toContainEqual([dock.id, bob, "private", "active"]);
    expect(await subscriptionsOf(bob)).toEqual([[dock.id, "active"]]);

    // The menu stays up: a second Dock's link and Yes do not say it again.
    const again = await people.botReply(bob, await people.start(bob, other.id), "the second prompt");
    await people.press(bob, again, "Yes");
    await people.edited(bob, again);
    const said = (await people.history(bob)).filter((m: { text?: string }) => m.text === menu.text);
    expect(said).toHaveLength(1);
    expect((await subscriptionsOf(bob)).sort()).toEqual(
      [
        [dock.id, "active"],
        [other.id, "active"],
      ].sort(),
    );
  });

  it("the Dock's owner sees a subscriber by the name the bot saw", async () => {
    const named = async (chatId: number) =>
      (await service.app.subscriptions.list(dock.id)).find((s) => s.chatId === chatId);
    const cleo = await people.person("Cleo", "cleo_ops");
    const prompt = await people.botReply(cleo, await people.start(cleo, dock.id), "the prompt");
    await people.press(cleo, prompt, "Yes");
    await people.edited(cleo, prompt);
    expect(await named(cleo)).toMatchObject({ firstName: "Cleo", username: "cleo_ops" });
  });

  it("No dismisses the prompt and subscribes nobody", async () => {
    const carol = await people.person("Carol");
    const prompt = await people.botReply(carol, await people.start(carol, dock.id));
    await people.press(carol, prompt, "No");
    const dismissed = await people.edited(carol, prompt);
    expect(dismissed.text).toContain("not subscribed");
    expect(dismissed.reply_markup).toBeUndefined();
    expect(await subscriptionsOf(carol)).toEqual([]);
  });

  it("an unknown Dock ID in a link says so", async () => {
    const dan = await people.person("Dan");
    const reply = await people.botReply(dan, await people.start(dan, "NoSuchDock0000000000000"));
    expect(reply.text).toContain("There is no Dock with the ID NoSuchDock0000000000000");
    expect(await subscriptionsOf(dan)).toEqual([]);
  });

  it("following the link again when already subscribed says so instead of asking", async () => {
    const erin = await people.person("Erin");
    await service.app.subscriptions.subscribe(dock.id, erin, "private");
    const reply = await people.botReply(erin, await people.start(erin, dock.id));
    expect(reply.text).toContain("already subscribed to Deploys <prod>");
    expect(reply.reply_markup?.inline_keyboard).toBeUndefined();
    expect(await subscriptionsOf(erin)).toEqual([[dock.id, "active"]]);
  });

  it("a Yes pressed after the Dock was deleted says the Dock is gone and subscribes nobody", async () => {
    const doomed = await service.app.docks.create(1, { name: "Doomed", link: null, description: null });
    const fay = await people.person("Fay");
    const prompt = await people.botReply(fay, await people.start(fay, doomed.id));
    await service.app.docks.delete(doomed.id);
    const press = await people.press(fay, prompt, "Yes");
    expect((await people.callbackAnswer(press)).text).toBe("This Dock no longer exists.");
    expect((await people.edited(fay, prompt)).text).toBe("This Dock no longer exists.");
    expect(await subscriptionsOf(fay)).toEqual([]);
  });

  it("Subscribe, then a pasted Dock ID with spaces around it, subscribes at once", async () => {
    const gil = await opened("Gil");
    const done = await subscribeByHand(gil, `  ${dock.id} \n`);
    expect(done.text).toContain("now subscribed to Deploys <prod>");
    expect(done.reply_markup).toMatchObject({ keyboard: expect.any(Array) });
    expect(await subscriptionsOf(gil)).toEqual([[dock.id, "active"]]);
  });

  it("a wrong ID is refused and asked again; the right one then subscribes", async () => {
    const hal = await opened("Hal");
    const refused = await subscribeByHand(hal, "hello there");
    expect(refused.text).toContain("That is not a Dock ID");
    expect(refused.reply_markup).toMatchObject({ force_reply: true });
    const unknown = await people.say(hal, "AAAAAAAAAAAAAAAAAAAAAA", { replyTo: refused.message_id });
    const again = await people.botReply(hal, unknown);
    expect(again.text).toContain("There is no Dock with the ID AAAAAAAAAAAAAAAAAAAAAA");
    expect(again.reply_markup).toMatchObject({ force_reply: true });
    expect(await subscriptionsOf(hal)).toEqual([]);
    const right = await people.say(hal, other.id, { replyTo: again.message_id });
    expect((await people.botReply(hal, right)).text).toContain("now subscribed to Backups");
    expect(await subscriptionsOf(hal)).toEqual([[other.id, "active"]]);
  });

  it("a pasted t.me link or sandbox link is as good as the ID", async () => {
    const ida = await opened("Ida");
    const viaTelegram = await subscribeByHand(ida, `https://t.me/DockNotifySandboxBot?start=${dock.id}`);
    expect(viaTelegram.text).toContain("now subscribed to Deploys <prod>");
    const viaSandbox = await subscribeByHand(ida, `${service.config.publicUrl}/sandbox?start=${other.id}`);
    expect(viaSandbox.text).toContain("now subscribed to Backups");
    expect((await subscriptionsOf(ida)).sort()).toEqual(
      [
        [dock.id, "active"],
        [other.id, "active"],
      ].sort(),
    );
  });

  it("/cancel leaves the prompt: the ID sent afterwards is not taken as an answer", async () => {
    const jon = await opened("Jon");
    const prompt = await people.botReply(jon, await people.keyboard(jon, "Subscribe"));
    const cancel = await people.say(jon, "/cancel");
    expect((await people.botReply(jon, cancel)).text).toBe("Cancelled.");
    // Pasted afterwards, the ID gets the Yes/No prompt rather than an instant subscription.
    const late = await people.say(jon, dock.id, { replyTo: prompt.message_id });
    const offered = await people.botReply(jon, late);
    expect(offered.text).toContain("Subscribe to this Dock?");
    expect(await subscriptionsOf(jon)).toEqual([]);
    const nothing = await people.say(jon, "/cancel");
    expect((await people.botReply(jon, nothing)).text).toBe("There is nothing to cancel.");
  });

  it("/subscribe <id> subscribes directly", async () => {
    const kim = await opened("Kim");
    const sent = await people.say(kim, `/subscribe ${other.id}`);
    expect((await people.botReply(kim, sent)).text).toContain("now subscribed to Backups");
    expect(await subscriptionsOf(kim)).toEqual([[other.id, "active"]]);
  });

  it("My subscriptions lists each Dock with an Unsubscribe button that removes it", async () => {
    const lea = await opened("Lea");
    await service.app.subscriptions.subscribe(dock.id, lea, "private");
    await service.app.subscriptions.subscribe(other.id, lea, "private");
    const list = await people.botReply(lea, await people.keyboard(lea, "My subscriptions"));
    expect(list.text).toContain("subscribed to 2 Docks");
    expect(list.text).toContain("Deploys <prod>");
    expect(list.text).toContain("Backups");

    const press = await people.press(lea, list, "Unsubscribe from Deploys <prod>");
    expect((await people.callbackAnswer(press)).text).toBe("Unsubscribed from Deploys <prod>.");
    const after = await people.edited(lea, list);
    expect(after.text).toContain("subscribed to 1 Dock");
    expect(after.reply_markup.inline_keyboard).toEqual([
      [{ text: "Unsubscribe from Backups", callback_data: expect.any(String) }],
    ]);
    expect((await subscriptionsOf(lea)).sort()).toEqual(
      [
        [dock.id, "removed"],
        [other.id, "active"],
      ].sort(),
    );

    // The delivery path queues only for active subscriptions: the removed one gets nothing.
    const message = await service.app.messages.accept({ dockId: dock.id, text: "after unsubscribing" });
    if (message.kind !== "accepted") throw new Error(`the message was not accepted: ${message.kind}`);
    const deliveriesOf = () =>
      service.db.kysely
        .selectFrom("deliveries")
        .select("chat_id")
        .where("message_id", "=", message.messageId)
        .execute();
    // The dispatcher fans the message out into deliveries.
    await waitFor("the message fanned out", async () => (await deliveriesOf()).length > 0);
    const deliveries = await deliveriesOf();
    expect(deliveries).toHaveLength(message.subscribers);
    expect(deliveries.map((d) => Number(d.chat_id))).not.toContain(lea);
  });

  it("/list with no subscriptions says so; /unsubscribe <id> leaves one", async () => {
    const max = await opened("Max");
    const empty = await people.say(max, "/list");
    expect((await people.botReply(max, empty)).text).toContain("You have no subscriptions");
    await service.app.subscriptions.subscribe(other.id, max, "private");
    const leave = await people.say(max, `/unsubscribe ${other.id}`);
    expect((await people.botReply(max, leave)).text).toContain("Unsubscribed from Backups");
    expect(await subscriptionsOf(max)).toEqual([[other.id, "removed"]]);
    const again = await people.say(max, `/unsubscribe ${other.id}`);
    expect((await people.botReply(max, again)).text).toBe("Not subscribed to that Dock any more.");
  });

  it("Help explains the three ways and the commands; unknown text points to the menu", async () => {
    const ned = await opened("Ned");
    const help = await people.botReply(ned, await people.keyboard(ned, "Help"));
    expect(help.text).toContain("/subscribe");
    expect(help.text).toContain("/list");
    const babble = await people.say(ned, "what is this?");
    expect((await people.botReply(ned, babble)).text).toContain("I did not understand that");
  });
});
