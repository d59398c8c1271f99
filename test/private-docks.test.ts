import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { People, subscriptionRows } from "./bot-harness.ts";
import { type ConsoleClient, signIn } from "./console-client.ts";
import { dialects, RecordedAudit, type RunningService, startService } from "./harness.ts";

const DIALECTS = await dialects();

// biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON the console answered.
type Json = any;

/**
 * Private Docks (issue 37), the subscriber's side, end to end: the console API and the bot in the
 * sandbox, on each database.
 */
describe.each(DIALECTS)("private Docks on %s", (dialect) => {
  let service: RunningService;
  let people: People;
  const audit = new RecordedAudit();
  /** The Docks' owner: a sandbox person who opened the bot, signed in to the console. */
  let ownerId: number;
  let owner: ConsoleClient;

  beforeAll(async () => {
    service = await startService(dialect, {}, { pace: "unpaced", audit });
    people = new People(`${service.url}/sandbox`);
    ownerId = await people.person("Olga", "olga_ops");
    await people.botReply(ownerId, await people.start(ownerId), "the owner's welcome");
    owner = await signIn(service, { id: ownerId, first_name: "Olga", username: "olga_ops" });
  });
  afterAll(async () => service.close());

  /** A Dock made in the console; `visibility` as the New Dock form sends it. */
  async function newDock(name: string, visibility?: string): Promise<Json> {
    const made = await owner.call("POST", "/docks", {
      name,
      link: "",
      description: `${name} alerts`,
      callback_url: "",
      ...(visibility === undefined ? {} : { visibility }),
    });
    expect(made.status).toBe(201);
    return made.body.dock;
  }

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

  describe("who can subscribe", () => {
    it("a Dock is open unless its owner chooses otherwise; the Dock JSON and the list say which", async () => {
      const open = await newDock("Plain");
      expect(open.visibility).toBe("open");
      const invite = await newDock("Quiet", "invite");
      expect(invite.visibility).toBe("invite");
      expect((await owner.call("GET", `/docks/${invite.id}`)).body.dock.visibility).toBe("invite");
      const list = (await owner.call("GET", "/docks")).body.docks as Json[];
      expect(list.find((d) => d.id === invite.id)?.visibility).toBe("invite");
      expect(list.find((d) => d.id === open.id)?.visibility).toBe("open");
    });

    it("a visibility that is none of the three is 400 invalid_fields naming it, with the other fields' problems", async () => {
      const refused = await owner.call("POST", "/docks", { name: "", visibility: "secret" });
      expect(refused.status).toBe(400);
      expect(refused.body.error.code).toBe("invalid_fields");
      expect(refused.body.error.fields).toEqual([
        { field: "name", message: "name is required" },
        { field: "visibility", message: "visibility must be one of open, invite, approval" },
      ]);
      const dock = await newDock("Steady");
      const patched = await owner.call("PATCH", `/docks/${dock.id}`, { visibility: 3 });
      expect(patched.status).toBe(400);
      expect(patched.body.error.fields).toEqual([
        { field: "visibility", message: "visibility must be one of open, invite, approval" },
      ]);
      expect((await owner.call("GET", `/docks/${dock.id}`)).body.dock.visibility).toBe("open");
    });

    it("making a Dock private keeps its subscribers; the change is recorded once, by whom", async () => {
      const dock = await newDock("Nightly");
      const ann = await opened("Ann");
      await service.app.subscriptions.subscribe(dock.id, ann, "private");
      const patched = await owner.call("PATCH", `/docks/${dock.id}`, { visibility: "invite" });
      expect(patched.status).toBe(200);
      expect(patched.body.dock).toMatchObject({ visibility: "invite", subscribers: 1, name: "Nightly" });
      // The same again changes nothing, and records nothing.
      await owner.call("PATCH", `/docks/${dock.id}`, { visibility: "invite", name: "Nightly builds" });
      expect(await subscriptionsOf(ann)).toEqual([[dock.id, "active"]]);
      expect(audit.of(dock.id)).toEqual([["visibility_changed", ownerId, { from: "open", to: "invite" }]]);
    });

    it("an invite Dock refuses its bare ID in every way into the bot, and says why; a subscriber is told they are in", async () => {
      const dock = await newDock("Secrets", "invite");
      const bea = await opened("Bea");
      const linked = await people.botReply(bea, await people.start(bea, dock.id), "the answer to the link");
      expect(linked.text).toBe("This Dock is private: ask its owner for an invite link.");
      expect(linked.reply_markup?.inline_keyboard).toBeUndefined();
      const direct = await people.botReply(bea, await people.say(bea, `/subscribe ${dock.id}`));
      expect(direct.text).toBe("This Dock is private: ask its owner for an invite link.");
      const pasted = await people.botReply(bea, await people.say(bea, dock.id), "the answer to a pasted ID");
      expect(pasted.text).toBe("This Dock is private: ask its owner for an invite link.");
      const asked = await people.botReply(bea, await people.keyboard(bea, "Subscribe"), "the Dock ID prompt");
      const answered = await people.botReply(
        bea,
        await people.say(bea, dock.id, { replyTo: asked.message_id }),
      );
      expect(answered.text).toBe("This Dock is private: ask its owner for an invite link.");
      // The name stays private too: whoever only has the ID learns nothing of the Dock.
      for (const message of await people.history(bea)) expect(message.text).not.toContain("Secrets");
      expect(await subscriptionsOf(bea)).toEqual([]);

      const cal = await opened("Cal");
      await service.app.subscriptions.subscribe(dock.id, cal, "private");
      const again = await people.botReply(cal, await people.start(cal, dock.id));
      expect(again.text).toContain("already subscribed to Secrets");
    });

    it("a prompt answered after its Dock became private subscribes nobody", async () => {
      const dock = await newDock("Shifting");
      const dee = await opened("Dee");
      const prompt = await people.botReply(dee, await people.start(dee, dock.id), "the prompt");
      await owner.call("PATCH", `/docks/${dock.id}`, { visibility: "invite" });
      await people.press(dee, prompt, "Yes");
      expect((await people.edited(dee, prompt)).text).toBe(
        "This Dock is private: ask its owner for an invite link.",
      );
      expect(await subscriptionsOf(dee)).toEqual([]);
    });
  });
});
