import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SANDBOX_BOT_USERNAME } from "../../src/telegram/sandbox-bot.ts";
import { type ChatMessage, People, subscriptionRows } from "../helpers/bot-harness.ts";
import { type ConsoleClient, signIn } from "../helpers/console-client.ts";
import { dialects, RecordedAudit, type RunningService, startService } from "../helpers/harness.ts";

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

  /** Sends a message to the Dock as an application would (its secret key in the body). */
  async function send(dock: Json, msg: string): Promise<void> {
    const response = await fetch(`${service.url}/ping`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ dock_id: dock.id, secret_key: dock.secret_key, msg }),
    });
    expect(response.status).toBe(202);
  }

  /** Waits until the bot has delivered `msg` to the chat (the Dock's name above it). */
  function delivered(chatId: number, msg: string): Promise<ChatMessage> {
    return people.waitFor(
      `"${msg}" delivered to chat ${chatId}`,
      async () => (await people.history(chatId)).find((m) => m.from.is_bot && m.text?.endsWith(msg)),
      async () => (await people.history(chatId)).slice(-3),
    );
  }

  /** A new invite link of the Dock, made in the console: `{invite, qr_svg}`. */
  async function newLink(dock: Json, settings: Record<string, unknown> = {}): Promise<Json> {
    const made = await owner.call("POST", `/docks/${dock.id}/invites`, settings);
    expect(made.status).toBe(201);
    return made.body;
  }

  /** The `start` payload of an invite link (`join_<token>`), as Telegram passes it to the bot. */
  const payloadOf = (link: string) => new URL(link).searchParams.get("start") as string;

  /** The chat's latest message (a marker: what the bot says next comes after it). */
  async function latest(chatId: number): Promise<ChatMessage> {
    return (await people.history(chatId)).at(-1) ?? ({ message_id: 0 } as ChatMessage);
  }

  /**
   * A person asks to join an approval Dock by its ID, as a link from its owner would have them:
   * the prompt, Yes, the answer; and the copy of the request the owner gets. `after`: the owner's
   * chat before they asked.
   */
  async function askByLink(who: number, dock: Json, payload: string = dock.id) {
    const before = await latest(ownerId);
    const prompt = await people.botReply(who, await people.start(who, payload), "the ask prompt");
    expect(prompt.text).toContain("Its owner approves who subscribes. Ask to join?");
    await people.press(who, prompt, "Yes");
    const answer = await people.edited(who, prompt, "the request to be sent");
    const copy = await people.botReply(ownerId, before, "the owner's copy of the request");
    return { answer, copy };
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
      expect(await audit.of(dock.id)).toEqual([
        ["visibility_changed", ownerId, { from: "open", to: "invite" }],
      ]);
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

  describe("invite links", () => {
    it("an invite Dock refuses its bare ID and accepts its link: the use is counted, the subscriber shows the link, the next message arrives", async () => {
      const dock = await newDock("Vault", "invite");
      const { invite, qr_svg } = await newLink(dock, { name: "Team" });
      expect(invite).toMatchObject({
        name: "Team",
        uses: 0,
        usage_limit: null,
        expires_at: null,
        approval: false,
      });
      expect(invite).toMatchObject({
        state: "active",
        revoked_at: null,
        creator: { id: ownerId, name: "Olga (@olga_ops)" },
      });
      expect(invite.id).toMatch(/^dinv_[A-Za-z0-9]{11}$/);
      expect(invite.link).toMatch(/\/sandbox\?start=join_[A-Za-z0-9]{22}$/);
      // Never the Dock ID: whoever has a link cannot use the ID it does not hold.
      expect(invite.link).not.toContain(dock.id);
      expect(qr_svg).toMatch(/^<svg/);

      const eve = await opened("Eve");
      expect((await people.botReply(eve, await people.start(eve, dock.id))).text).toBe(
        "This Dock is private: ask its owner for an invite link.",
      );
      const prompt = await people.botReply(
        eve,
        await people.start(eve, payloadOf(invite.link)),
        "the link's prompt",
      );
      expect(prompt.text).toContain("Vault");
      expect(prompt.text).toContain("Vault alerts");
      expect(prompt.text).toContain("Subscribe to this Dock?");
      await people.press(eve, prompt, "Yes");
      expect((await people.edited(eve, prompt)).text).toContain("You are now subscribed to Vault");
      expect(await subscriptionsOf(eve)).toEqual([[dock.id, "active"]]);

      const links = (await owner.call("GET", `/docks/${dock.id}/invites`)).body.invites;
      expect(links).toEqual([{ ...invite, uses: 1 }]);
      const subscribers = (await owner.call("GET", `/docks/${dock.id}/subscribers`)).body.subscribers;
      expect(subscribers).toEqual([
        expect.objectContaining({ chat_id: eve, name: "Eve", invite: { id: invite.id, name: "Team" } }),
      ]);
      await send(dock, "The vault is open");
      await delivered(eve, "The vault is open");

      // The link pasted into the chat works as well as the link opened.
      const fin = await opened("Fin");
      const pasted = await people.botReply(
        fin,
        await people.say(fin, invite.link),
        "the pasted link's prompt",
      );
      await people.press(fin, pasted, "Yes");
      expect((await people.edited(fin, pasted)).text).toContain("You are now subscribed to Vault");
      expect((await owner.call("GET", `/docks/${dock.id}/invites/${invite.id}`)).body.invite.uses).toBe(2);
      expect(await audit.of(dock.id)).toEqual([
        [
          "invite_created",
          ownerId,
          { invite_id: invite.id, name: "Team", usage_limit: null, expires_at: null, approval: false },
        ],
      ]);
      // Nothing the audit keeps holds the link's token, nor does the log: the link opened in the
      // sandbox's chat page is logged with its token masked.
      const token = payloadOf(invite.link).slice("join_".length);
      expect(JSON.stringify(await audit.of(dock.id))).not.toContain(token);
      expect((await fetch(`${service.url}/sandbox?start=${payloadOf(invite.link)}`)).status).toBe(200);
      await people.waitFor("the page's request in the log", async () =>
        service.logs.text.includes("/sandbox?start=join_<redacted>") ? true : undefined,
      );
      expect(service.logs.text).not.toContain(token);
    });

    it("a used-up, an expired and a revoked link are refused, each saying why; who joined stays", async () => {
      const dock = await newDock("Locker", "invite");
      const once = (await newLink(dock, { name: "Once", usage_limit: 1 })).invite;
      const gus = await opened("Gus");
      const first = await people.botReply(gus, await people.start(gus, payloadOf(once.link)));
      await people.press(gus, first, "Yes");
      await people.edited(gus, first);
      const hana = await opened("Hana");
      expect((await people.botReply(hana, await people.start(hana, payloadOf(once.link)))).text).toBe(
        "This invite link has been used as many times as it allows. Ask the Dock's owner for a new one.",
      );
      expect((await owner.call("GET", `/docks/${dock.id}/invites/${once.id}`)).body.invite).toMatchObject({
        uses: 1,
        state: "used_up",
      });

      // An expiry a moment ahead, then the link as it is once that moment has passed.
      const brief = (await newLink(dock, { expires_at: Date.now() + 1000 })).invite;
      await people.waitFor("the link to expire", async () => {
        const state = (await owner.call("GET", `/docks/${dock.id}/invites/${brief.id}`)).body.invite.state;
        return state === "expired" ? state : undefined;
      });
      expect((await people.botReply(hana, await people.start(hana, payloadOf(brief.link)))).text).toBe(
        "This invite link has expired. Ask the Dock's owner for a new one.",
      );

      // A prompt shown while the link worked, answered after it was revoked: refused all the same.
      const later = (await newLink(dock, { name: "Later" })).invite;
      const prompt = await people.botReply(hana, await people.start(hana, payloadOf(later.link)));
      expect((await owner.call("DELETE", `/docks/${dock.id}/invites/${later.id}`)).status).toBe(200);
      await people.press(hana, prompt, "Yes");
      expect((await people.edited(hana, prompt)).text).toBe(
        "This invite link was revoked. Ask the Dock's owner for a new one.",
      );
      expect((await people.botReply(hana, await people.start(hana, payloadOf(later.link)))).text).toBe(
        "This invite link was revoked. Ask the Dock's owner for a new one.",
      );
      expect(await subscriptionsOf(hana)).toEqual([]);
      const again = await owner.call("DELETE", `/docks/${dock.id}/invites/${later.id}`);
      expect(again.status).toBe(404);

      // Revoking the used-up link keeps the person who joined through it.
      expect((await owner.call("DELETE", `/docks/${dock.id}/invites/${once.id}`)).status).toBe(200);
      expect(await subscriptionsOf(gus)).toEqual([[dock.id, "active"]]);
      const listed = (await owner.call("GET", `/docks/${dock.id}/invites`)).body.invites as Json[];
      expect(listed.map((l) => [l.id, l.state])).toEqual([
        [later.id, "revoked"],
        [brief.id, "expired"],
        [once.id, "revoked"],
      ]);
      expect((await audit.of(dock.id)).filter(([action]) => action === "invite_revoked")).toEqual([
        ["invite_revoked", ownerId, { invite_id: later.id, name: "Later", uses: 0 }],
        ["invite_revoked", ownerId, { invite_id: once.id, name: "Once", uses: 1 }],
      ]);
      // An unknown token says so, like a link that never was.
      expect(
        (await people.botReply(hana, await people.start(hana, "join_AAAAAAAAAAAAAAAAAAAAAA"))).text,
      ).toBe("This invite link is not valid. Ask the Dock's owner for a new one.");
    });

    it("two chats pressing Yes at once on a link's last use: exactly one joins", async () => {
      const dock = await newDock("Seat", "invite");
      const last = (await newLink(dock, { usage_limit: 1 })).invite;
      const [ivy, jon] = [await opened("Ivy"), await opened("Jon")];
      const prompts = await Promise.all(
        [ivy, jon].map(async (who) => people.botReply(who, await people.start(who, payloadOf(last.link)))),
      );
      await Promise.all([
        people.press(ivy, prompts[0] as ChatMessage, "Yes"),
        people.press(jon, prompts[1] as ChatMessage, "Yes"),
      ]);
      const answers = await Promise.all([
        people.edited(ivy, prompts[0] as ChatMessage),
        people.edited(jon, prompts[1] as ChatMessage),
      ]);
      expect(answers.map((a) => a.text).sort()).toEqual([
        "This invite link has been used as many times as it allows. Ask the Dock's owner for a new one.",
        "You are now subscribed to Seat. Its messages will appear here.",
      ]);
      const rows = [...(await subscriptionsOf(ivy)), ...(await subscriptionsOf(jon))];
      expect(rows).toEqual([[dock.id, "active"]]);
      expect((await owner.call("GET", `/docks/${dock.id}/invites/${last.id}`)).body.invite.uses).toBe(1);
    });

    it("a link's settings are checked, each problem named; another owner's Dock has no links to show", async () => {
      const dock = await newDock("Checked", "invite");
      const refused = await owner.call("POST", `/docks/${dock.id}/invites`, {
        name: "x".repeat(33),
        usage_limit: 0,
        expires_at: Date.now() - 1000,
        approval: "yes",
      });
      expect(refused.status).toBe(400);
      expect(refused.body.error.fields).toEqual([
        { field: "name", message: "name must be at most 32 characters" },
        {
          field: "usage_limit",
          message: "usage_limit must be a whole number from 1 to 99999, or null for no limit",
        },
        { field: "expires_at", message: "expires_at must be in the future" },
        { field: "approval", message: "approval must be true or false" },
      ]);
      expect((await owner.call("GET", `/docks/${dock.id}/invites`)).body.invites).toEqual([]);
      const link = (await newLink(dock)).invite;
      const stranger = await signIn(service, { id: 990_001, first_name: "Stan" });
      for (const [method, path] of [
        ["GET", `/docks/${dock.id}/invites`],
        ["POST", `/docks/${dock.id}/invites`],
        ["GET", `/docks/${dock.id}/invites/${link.id}`],
        ["DELETE", `/docks/${dock.id}/invites/${link.id}`],
      ] as const) {
        const answer = await stranger.call(method, path, method === "POST" ? {} : undefined);
        expect(answer.status, `${method} ${path}`).toBe(404);
        expect(answer.body.error.code).toBe("not_found");
      }
      expect((await owner.call("GET", `/docks/${dock.id}/invites/dinv_nosuchlink0`)).status).toBe(404);
      // Whatever a path holds (a NUL, which PostgreSQL refuses in text), a missing link is a 404.
      for (const odd of ["%00", "dinv_%00xxxxxxxxxx", "jr_%00%00"]) {
        for (const [method, path] of [
          ["GET", `/docks/${dock.id}/invites/${odd}`],
          ["DELETE", `/docks/${dock.id}/invites/${odd}`],
          ["POST", `/docks/${dock.id}/requests/${odd}/approve`],
          ["DELETE", `/docks/${dock.id}/bans/${odd}`],
        ] as const) {
          const answer = await owner.call(method, path);
          expect(answer.status, `${method} ${path}: ${JSON.stringify(answer.body)}`).toBe(404);
        }
      }
      expect((await owner.call("GET", `/docks/${dock.id}/invites/${link.id}`)).body.invite.state).toBe(
        "active",
      );
    });

    it("the owner's own Dock is never private to them: Open in Telegram subscribes them", async () => {
      const dock = await newDock("Mine", "invite");
      const prompt = await people.botReply(
        ownerId,
        await people.start(ownerId, dock.id),
        "the owner's prompt",
      );
      await people.press(ownerId, prompt, "Yes");
      expect((await people.edited(ownerId, prompt)).text).toContain("You are now subscribed to Mine");
    });
  });

  describe("join requests", () => {
    it("an approval Dock's request, approved from the owner's bot message: the copy says so, the requester is told, the next message arrives", async () => {
      const dock = await newDock("Approvals", "approval");
      const kim = await opened("Kim");
      const { answer, copy } = await askByLink(kim, dock);
      expect(answer.text).toBe(
        "Your request to join Approvals is sent. Its owner decides; I will tell you here.",
      );
      expect(copy.text).toBe("Kim asks to join Approvals.");
      expect(copy.reply_markup?.inline_keyboard).toEqual([
        [expect.objectContaining({ text: "Approve" }), expect.objectContaining({ text: "Decline" })],
      ]);
      expect(await subscriptionsOf(kim)).toEqual([]);
      // The console's queue, and the Dock's badge.
      const queue = (await owner.call("GET", `/docks/${dock.id}/requests`)).body.requests as Json[];
      expect(queue).toEqual([
        expect.objectContaining({
          chat_id: kim,
          chat_type: "private",
          name: "Kim",
          requested_by: { id: kim, name: "Kim" },
          member_count: null,
          invite: null,
          state: "pending",
        }),
      ]);
      expect((await owner.call("GET", `/docks/${dock.id}`)).body.dock.pending_requests).toBe(1);
      // Asking again while it waits says so; My subscriptions shows it waiting.
      const again = await people.botReply(kim, await people.say(kim, `/subscribe ${dock.id}`));
      expect(again.text).toBe("You have asked to join Approvals already: its owner has not decided yet.");
      const list = await people.botReply(kim, await people.keyboard(kim, "My subscriptions"));
      expect(list.text).toContain("Waiting for an owner's approval:\n⏳ Approvals");

      const before = await latest(kim);
      const press = await people.press(ownerId, copy, "Approve");
      expect((await people.callbackAnswer(press)).text).toBe("Approved: they are subscribed, and told.");
      const decided = await people.edited(ownerId, copy, "the copy to show the approval");
      expect(decided.text).toBe("Kim asks to join Approvals.\n\n✔ Approved by Olga (@olga_ops).");
      expect(decided.reply_markup).toBeUndefined();
      expect((await people.botReply(kim, before, "the requester to be told")).text).toBe(
        "Your request to join Approvals was approved: its messages will appear here.",
      );
      expect(await subscriptionsOf(kim)).toEqual([[dock.id, "active"]]);
      expect((await owner.call("GET", `/docks/${dock.id}/requests`)).body.requests).toEqual([]);
      await send(dock, "Approved and delivered");
      await delivered(kim, "Approved and delivered");
      expect(await audit.of(dock.id)).toEqual([
        ["request_approved", ownerId, { request_id: queue[0].id, chat_id: kim, invite_id: null }],
      ]);
    });

    it("a declined request delivers nothing; the requester is told; declined and banned, they cannot ask again until unbanned", async () => {
      const dock = await newDock("Gated", "approval");
      // The owner receives the Dock too: a message reaching them and not the declined shows it went out.
      const mine = await people.botReply(ownerId, await people.start(ownerId, dock.id), "the owner's prompt");
      await people.press(ownerId, mine, "Yes");
      await people.edited(ownerId, mine);
      const lou = await opened("Lou");
      const { copy } = await askByLink(lou, dock);
      const before = await latest(lou);
      await people.press(ownerId, copy, "Decline");
      expect((await people.edited(ownerId, copy)).text).toBe(
        "Lou asks to join Gated.\n\n✖ Declined by Olga (@olga_ops).",
      );
      expect((await people.botReply(lou, before, "the requester to be told")).text).toBe(
        "Your request to join Gated was declined.",
      );
      await send(dock, "Not for Lou");
      await delivered(ownerId, "Not for Lou");
      expect((await people.history(lou)).some((m) => m.text?.includes("Not for Lou"))).toBe(false);
      expect(await subscriptionsOf(lou)).toEqual([]);

      // Declined without a ban, they may ask again; declined with one (in the console), they may not.
      const second = await askByLink(lou, dock);
      expect(second.answer.text).toContain("Your request to join Gated is sent.");
      const [waiting] = (await owner.call("GET", `/docks/${dock.id}/requests`)).body.requests as Json[];
      const declined = await owner.call("POST", `/docks/${dock.id}/requests/${waiting.id}/decline`, {
        ban: true,
      });
      expect(declined.status).toBe(200);
      expect(declined.body.request).toMatchObject({ state: "declined", decided_by: { id: ownerId } });
      expect((await people.edited(ownerId, second.copy)).text).toContain("✖ Declined by Olga");
      const refused = await people.botReply(lou, await people.say(lou, `/subscribe ${dock.id}`));
      expect(refused.text).toBe("The owner of Gated does not accept this chat.");
      expect((await audit.of(dock.id)).map(([action]) => action)).toEqual([
        "request_declined",
        "request_declined",
        "subscriber_banned",
      ]);
    });

    it("two presses of Approve at once, and the console's approval beside the bot's: one decision, every copy shows it", async () => {
      // Until co-owners exist the Dock has one decider, so one copy: two presses of that copy at
      // the same moment stand for two deciders, and the console beside the bot for two faces.
      const dock = await newDock("Race", "approval");
      const max = await opened("Max");
      const { copy } = await askByLink(max, dock);
      const before = await latest(max);
      const presses = await Promise.all([
        people.press(ownerId, copy, "Approve"),
        people.press(ownerId, copy, "Approve"),
      ]);
      const answers = (await Promise.all(presses.map((id) => people.callbackAnswer(id)))).map((a) => a.text);
      expect(answers.sort()).toEqual([
        "Already approved by Olga (@olga_ops).",
        "Approved: they are subscribed, and told.",
      ]);
      expect((await people.edited(ownerId, copy)).text).toContain("✔ Approved by Olga (@olga_ops).");
      await people.botReply(max, before, "the requester to be told");
      expect((await audit.of(dock.id)).filter(([action]) => action === "request_approved")).toHaveLength(1);

      const ned = await opened("Ned");
      const asked = await askByLink(ned, dock);
      const [pending] = (await owner.call("GET", `/docks/${dock.id}/requests`)).body.requests as Json[];
      const [pressed, console] = await Promise.all([
        people.press(ownerId, asked.copy, "Decline"),
        owner.call("POST", `/docks/${dock.id}/requests/${pending.id}/approve`),
      ]);
      const botAnswer = (await people.callbackAnswer(pressed)).text as string;
      const shown = (await people.edited(ownerId, asked.copy)).text as string;
      if (console.status === 200) {
        expect(botAnswer).toBe("Already approved by Olga (@olga_ops).");
        expect(shown).toContain("✔ Approved by Olga");
        expect(await subscriptionsOf(ned)).toEqual([[dock.id, "active"]]);
      } else {
        expect(console.status).toBe(409);
        expect(console.body.error).toEqual({
          code: "request_ended",
          message: "This join request was already declined by Olga (@olga_ops).",
        });
        expect(botAnswer).toBe("Declined: they are told.");
        expect(shown).toContain("✖ Declined by Olga");
        expect(await subscriptionsOf(ned)).toEqual([]);
      }
      const decisions = (await audit.of(dock.id)).filter(([action]) => action.startsWith("request_"));
      expect(decisions).toHaveLength(2);
      // The requester is told once, whatever raced.
      await people.waitFor(
        "the requester to be told",
        async () =>
          (await people.history(ned)).some((m) => m.text?.startsWith("Your request to join Race was")) ||
          undefined,
      );
      const told = (await people.history(ned)).filter((m) =>
        m.text?.startsWith("Your request to join Race was"),
      );
      expect(told).toHaveLength(1);
    });

    it("Telegram failing: a request's copy is tried again until it goes; an owner who blocked the bot still has the console", async () => {
      const dock = await newDock("Flaky", "approval");
      const wil = await opened("Wil");
      await people.control("POST", "/faults", {
        kind: "server_error",
        count: 2,
        status: 502,
        methods: ["sendMessage"],
        chat_id: ownerId,
      });
      const { copy } = await askByLink(wil, dock);
      expect(copy.text).toBe("Wil asks to join Flaky.");
      // Sent on the third try (two 502s), then recorded as sent.
      const sent = await people.waitFor("the copy to be recorded as sent", async () => {
        const row = await service.db.kysely
          .selectFrom("bot_notices")
          .select(["state", "attempts"])
          .where("chat_id", "=", ownerId)
          .where("kind", "=", "request_copy")
          .orderBy("id", "desc")
          .limit(1)
          .executeTakeFirstOrThrow();
        return row.state === "done" ? row : undefined;
      });
      expect(sent.attempts).toBe(3);

      // The owner blocks the bot: their copy is given up (not tried for ever); the console decides.
      await people.control("POST", `/users/${ownerId}/block`);
      try {
        const xia = await opened("Xia");
        const prompt = await people.botReply(xia, await people.start(xia, dock.id));
        await people.press(xia, prompt, "Yes");
        await people.edited(xia, prompt);
        const queue = (await owner.call("GET", `/docks/${dock.id}/requests`)).body.requests as Json[];
        const request = queue.find((r) => r.chat_id === xia);
        expect(request).toMatchObject({ name: "Xia", state: "pending" });
        const given = await people.waitFor("the copy to be given up", async () => {
          const row = await service.db.kysely
            .selectFrom("bot_notices")
            .select(["state", "last_error"])
            .where("request_id", "=", request.id)
            .executeTakeFirst();
          return row?.state === "failed" ? row : undefined;
        });
        expect(given.last_error).toContain("403");
        const told = await latest(xia);
        expect((await owner.call("POST", `/docks/${dock.id}/requests/${request.id}/approve`)).status).toBe(
          200,
        );
        expect((await people.botReply(xia, told, "Xia to be told")).text).toContain("was approved");
      } finally {
        await people.control("POST", `/users/${ownerId}/unblock`);
      }
    });

    it("a link that asks: the request names it; approving counts its use", async () => {
      const dock = await newDock("Linked", "invite");
      const { invite } = await newLink(dock, { name: "Partners", approval: true });
      const oz = await opened("Oz");
      const { answer, copy } = await askByLink(oz, dock, payloadOf(invite.link));
      expect(answer.text).toContain("Your request to join Linked is sent.");
      expect(copy.text).toBe("Oz asks to join Linked.\nThrough the invite link “Partners”.");
      await people.press(ownerId, copy, "Approve");
      await people.edited(ownerId, copy);
      const subscribers = (await owner.call("GET", `/docks/${dock.id}/subscribers`)).body.subscribers;
      expect(subscribers).toEqual([
        expect.objectContaining({ chat_id: oz, invite: { id: invite.id, name: "Partners" } }),
      ]);
      expect((await owner.call("GET", `/docks/${dock.id}/invites/${invite.id}`)).body.invite.uses).toBe(1);
    });

    it("the console refuses what is not there, or no longer waits", async () => {
      const dock = await newDock("Strict", "approval");
      const missing = await owner.call("POST", `/docks/${dock.id}/requests/jr_AAAAAAAAAAA/approve`);
      expect(missing.status).toBe(404);
      const pia = await opened("Pia");
      await askByLink(pia, dock);
      const [request] = (await owner.call("GET", `/docks/${dock.id}/requests`)).body.requests as Json[];
      const stranger = await signIn(service, { id: 990_002, first_name: "Sid" });
      const foreign = await stranger.call("POST", `/docks/${dock.id}/requests/${request.id}/approve`);
      expect(foreign.status).toBe(404);
      expect(
        (await owner.call("POST", `/docks/${dock.id}/requests/${request.id}/decline`, { ban: "yes" })).status,
      ).toBe(400);
      expect((await owner.call("POST", `/docks/${dock.id}/requests/${request.id}/approve`)).status).toBe(200);
      const twice = await owner.call("POST", `/docks/${dock.id}/requests/${request.id}/decline`);
      expect(twice.status).toBe(409);
      expect(twice.body.error.code).toBe("request_ended");
    });
  });

  describe("removal", () => {
    /** How many of the bot's messages in the chat say exactly this. */
    const countOf = async (chatId: number, text: string) =>
      (await people.history(chatId)).filter((m) => m.from.is_bot && m.text === text).length;

    it("a removed person is told once, gets no later message, can be banned (then cannot come back) and unbanned", async () => {
      const dock = await newDock("Pager");
      const mine = await people.botReply(ownerId, await people.start(ownerId, dock.id), "the owner's prompt");
      await people.press(ownerId, mine, "Yes");
      await people.edited(ownerId, mine);
      const sam = await opened("Sam");
      const prompt = await people.botReply(sam, await people.start(sam, dock.id));
      await people.press(sam, prompt, "Yes");
      await people.edited(sam, prompt);
      await send(dock, "Before the removal");
      await delivered(sam, "Before the removal");

      expect((await owner.call("DELETE", `/docks/${dock.id}/subscribers/${sam}`)).status).toBe(200);
      expect((await owner.call("DELETE", `/docks/${dock.id}/subscribers/${sam}`)).status).toBe(404);
      const removedText = "You were removed from Pager. Its messages will no longer arrive.";
      await people.waitFor("Sam to be told", async () =>
        (await countOf(sam, removedText)) > 0 ? true : undefined,
      );
      await send(dock, "After the removal");
      await delivered(ownerId, "After the removal");
      expect((await people.history(sam)).some((m) => m.text?.includes("After the removal"))).toBe(false);
      expect(await countOf(sam, removedText)).toBe(1);

      // An open Dock: removed, they could come back by its ID; banned, they cannot, by ID or link.
      expect((await owner.call("POST", `/docks/${dock.id}/bans`, { chat_id: sam })).status).toBe(201);
      expect((await owner.call("POST", `/docks/${dock.id}/bans`, { chat_id: sam })).status).toBe(200);
      const bans = (await owner.call("GET", `/docks/${dock.id}/bans`)).body.bans;
      expect(bans).toEqual([expect.objectContaining({ chat_id: sam, name: "Sam", banned_by: ownerId })]);
      const refused = await people.botReply(sam, await people.start(sam, dock.id));
      expect(refused.text).toBe("The owner of Pager does not accept this chat.");
      const { invite } = await newLink(dock);
      const byLink = await people.botReply(sam, await people.start(sam, payloadOf(invite.link)));
      expect(byLink.text).toBe("The owner of Pager does not accept this chat.");
      expect(await subscriptionsOf(sam)).toEqual([[dock.id, "removed"]]);

      expect((await owner.call("DELETE", `/docks/${dock.id}/bans/${sam}`)).status).toBe(200);
      expect((await owner.call("DELETE", `/docks/${dock.id}/bans/${sam}`)).status).toBe(404);
      const back = await people.botReply(sam, await people.start(sam, dock.id));
      await people.press(sam, back, "Yes");
      expect((await people.edited(sam, back)).text).toContain("You are now subscribed to Pager");
      expect((await audit.of(dock.id)).map(([action, actor, detail]) => [action, actor, detail])).toEqual([
        ["subscriber_removed", ownerId, { chat_id: sam }],
        ["subscriber_banned", ownerId, { chat_id: sam }],
        ["invite_created", ownerId, expect.any(Object)],
        ["subscriber_unbanned", ownerId, { chat_id: sam }],
      ]);
    });

    it("banning a subscriber removes them (told once) at the same time", async () => {
      const dock = await newDock("Console");
      const tia = await opened("Tia");
      await service.app.subscriptions.subscribe(dock.id, tia, "private");
      expect((await owner.call("POST", `/docks/${dock.id}/bans`, { chat_id: tia })).status).toBe(201);
      const removedText = "You were removed from Console. Its messages will no longer arrive.";
      await people.waitFor("Tia to be told", async () =>
        (await countOf(tia, removedText)) > 0 ? true : undefined,
      );
      expect(await subscriptionsOf(tia)).toEqual([[dock.id, "removed"]]);
      expect((await owner.call("GET", `/docks/${dock.id}/subscribers`)).body.subscribers).toEqual([]);
      expect((await audit.of(dock.id)).map(([action]) => action)).toEqual([
        "subscriber_removed",
        "subscriber_banned",
      ]);
      const bad = await owner.call("POST", `/docks/${dock.id}/bans`, { chat_id: "x" });
      expect(bad.status).toBe(400);
    });

    it("a Dock deleted: each active subscriber is told", async () => {
      const dock = await newDock("Doomed");
      const [uma, vic] = [await opened("Uma"), await opened("Vic")];
      for (const who of [uma, vic]) await service.app.subscriptions.subscribe(dock.id, who, "private");
      expect((await owner.call("DELETE", `/docks/${dock.id}`)).status).toBe(200);
      const deleted = "Doomed was deleted by its owner. Its messages will no longer arrive.";
      for (const who of [uma, vic]) {
        await people.waitFor(`${who} to be told`, async () =>
          (await countOf(who, deleted)) > 0 ? true : undefined,
        );
      }
      expect(await countOf(uma, deleted)).toBe(1);
    });
  });

  describe("groups", () => {
    /** A group with an admin and a plain member, the bot added by the admin; its hello read. */
    async function groupWithBot(title: string) {
      const admin = await people.person("Ada");
      const member = await people.person("Moe");
      const group = await people.control<{ id: number }>("POST", "/groups", {
        title,
        type: "supergroup",
        members: [admin, member],
        admins: [admin],
      });
      await people.control("POST", `/chats/${group.id}/bot`, { from: admin, status: "member" });
      await people.botReply(group.id, { message_id: 0 }, "the bot's hello in the group");
      return { admin, member, group: group.id };
    }

    const startIn = (group: number, payload: string, from: number) =>
      people.say(group, `/start@${SANDBOX_BOT_USERNAME} ${payload}`, { from });

    it("a member who is not an admin cannot subscribe the group through an invite link; made an admin, they can", async () => {
      const dock = await newDock("Crew", "invite");
      const { invite } = await newLink(dock, { name: "Crew link" });
      const { member, group } = await groupWithBot("Deck");
      const refused = await people.botReply(group, await startIn(group, payloadOf(invite.link), member));
      expect(refused.text).toBe("Only this group's admins can change its subscriptions.");
      // Nor by the Dock's ID, even as an admin: the Dock is private.
      const promoted = await people.control("PUT", `/chats/${group}/members/${member}`, {
        status: "administrator",
      });
      expect(promoted.admins).toContain(member);
      const byId = await people.botReply(group, await startIn(group, dock.id, member));
      expect(byId.text).toBe("This Dock is private: ask its owner for an invite link.");
      const prompt = await people.botReply(group, await startIn(group, payloadOf(invite.link), member));
      expect(prompt.text).toContain("Subscribe this group to this Dock?");
      await people.press(group, prompt, "Yes", member);
      expect((await people.edited(group, prompt)).text).toContain("This group is now subscribed to Crew");
      expect(await subscriptionsOf(group)).toEqual([[dock.id, "active"]]);
      // Demoted again, they can no longer unsubscribe it.
      await people.control("PUT", `/chats/${group}/members/${member}`, { status: "member" });
      const leave = await people.botReply(
        group,
        await people.say(group, `/unsubscribe ${dock.id}`, { from: member }),
      );
      expect(leave.text).toBe("Only this group's admins can change its subscriptions.");
    });

    it("a group's request names the group and how many members it has; approved, the group is told and subscribed", async () => {
      const dock = await newDock("Fleet", "approval");
      const { admin, group } = await groupWithBot("Harbour");
      const before = await latest(ownerId);
      const prompt = await people.botReply(group, await startIn(group, dock.id, admin), "the ask prompt");
      expect(prompt.text).toContain("Its owner approves who subscribes. Ask to subscribe this group?");
      await people.press(group, prompt, "Yes", admin);
      expect((await people.edited(group, prompt)).text).toBe(
        "This group's request to join Fleet is sent. Its owner decides; I will tell you here.",
      );
      const copy = await people.botReply(ownerId, before, "the owner's copy");
      // Two people and the bot.
      expect(copy.text).toBe("The group Harbour (3 members) asks to join Fleet. Asked by Ada.");
      const [request] = (await owner.call("GET", `/docks/${dock.id}/requests`)).body.requests as Json[];
      expect(request).toMatchObject({
        chat_id: group,
        chat_type: "supergroup",
        name: "Harbour",
        member_count: 3,
        requested_by: { id: admin, name: "Ada" },
      });
      const told = await latest(group);
      await people.press(ownerId, copy, "Approve");
      expect((await people.botReply(group, told, "the group to be told")).text).toBe(
        "This group's request to join Fleet was approved: its messages will appear here.",
      );
      expect(await subscriptionsOf(group)).toEqual([[dock.id, "active"]]);
    });

    it("the bot added back by a member who is not an admin: a private Dock's subscription stays paused until an admin's /start", async () => {
      const privateDock = await newDock("Hidden", "invite");
      const openDock = await newDock("Public");
      const { admin, member, group } = await groupWithBot("Galley");
      await service.app.subscriptions.subscribe(privateDock.id, group, "supergroup");
      await service.app.subscriptions.subscribe(openDock.id, group, "supergroup");
      await people.control("POST", `/chats/${group}/bot`, { from: admin, status: "left" });
      await people.waitFor("the subscriptions to pause", async () => {
        const rows = await subscriptionsOf(group);
        return rows.every(([, state]) => state === "blocked") ? rows : undefined;
      });
      const gone = await latest(group);
      await people.control("POST", `/chats/${group}/bot`, { from: member, status: "member" });
      const hello = await people.botReply(group, gone, "the hello when re-added");
      expect(hello.text).toContain("Its subscription is active again.");
      expect(hello.text).toContain(
        "Its subscription to a private Dock stays paused: an admin of this group resumes it with /start.",
      );
      expect((await subscriptionsOf(group)).sort()).toEqual(
        [
          [privateDock.id, "blocked"],
          [openDock.id, "active"],
        ].sort(),
      );
      const notAdmin = await people.botReply(
        group,
        await people.say(group, `/start@${SANDBOX_BOT_USERNAME}`, { from: member }),
      );
      expect(notAdmin.text).not.toContain("active again");
      const resumed = await people.botReply(
        group,
        await people.say(group, `/start@${SANDBOX_BOT_USERNAME}`, { from: admin }),
      );
      expect(resumed.text).toContain("This group's subscription is active again.");
      expect(await subscriptionsOf(group)).toEqual(
        expect.arrayContaining([
          [privateDock.id, "active"],
          [openDock.id, "active"],
        ]),
      );
    });
  });
});

describe.each(DIALECTS)("join requests expire on %s", (dialect) => {
  let service: RunningService;
  let people: People;
  /** How far the service's clock is ahead of the machine's. */
  let ahead = 0;

  beforeAll(async () => {
    service = await startService(
      dialect,
      { JOIN_REQUEST_TTL_DAYS: "2" },
      { pace: "unpaced", now: () => Date.now() + ahead },
    );
    people = new People(`${service.url}/sandbox`);
  });
  afterAll(async () => service.close());

  it("unanswered for JOIN_REQUEST_TTL_DAYS, a request expires: the owner's copy says so, the requester is told and may ask again", async () => {
    const ownerId = await people.person("Quinn");
    await people.botReply(ownerId, await people.start(ownerId), "the owner's welcome");
    const dock = await service.app.docks.create(
      ownerId,
      { name: "Slow", link: null, description: null },
      undefined,
      "approval",
    );
    const rex = await people.person("Rex");
    await people.botReply(rex, await people.start(rex), "the welcome");
    const before = (await people.history(ownerId)).at(-1) as ChatMessage;
    const prompt = await people.botReply(rex, await people.start(rex, dock.id));
    await people.press(rex, prompt, "Yes");
    await people.edited(rex, prompt);
    const copy = await people.botReply(ownerId, before, "the owner's copy");
    const [request] = await service.app.audience.requests.pending(dock.id);
    expect(request?.expiresAt).toBe((request?.createdAt ?? 0) + 2 * 24 * 60 * 60 * 1000);

    const told = (await people.history(rex)).at(-1) as ChatMessage;
    ahead = 2 * 24 * 60 * 60 * 1000 + 1000;
    const expired = await people.edited(ownerId, copy, "the copy to say it expired");
    expect(expired.text).toBe("Rex asks to join Slow.\n\n⌛ Expired: nobody decided in time.");
    expect(expired.reply_markup).toBeUndefined();
    expect((await people.botReply(rex, told, "the requester to be told")).text).toBe(
      "Your request to join Slow expired before its owner decided. You may ask again.",
    );
    expect(await service.app.audience.requests.pending(dock.id)).toEqual([]);
    const again = await people.botReply(rex, await people.say(rex, `/subscribe ${dock.id}`));
    expect(again.text).toBe("Your request to join Slow is sent. Its owner decides; I will tell you here.");
  });
});
