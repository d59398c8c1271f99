import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Db, openDb } from "../../src/store/open.ts";
import { SANDBOX_BOT_TOKEN } from "../../src/telegram/sandbox-bot.ts";
import { People } from "../helpers/bot-harness.ts";
import {
  accessibilityProblems,
  chromiumPath,
  freePort,
  launchChromium,
  pageProblems,
} from "../helpers/browser.ts";
import { answerLink, signIn, signInThroughBot, withSession } from "../helpers/console-client.ts";
import {
  createTestDatabase,
  dialects,
  type RunningService,
  startServiceOver,
  type TestDatabase,
} from "../helpers/harness.ts";
import { type RunningSandbox, startSandbox } from "../helpers/sandbox-harness.ts";

/**
 * The real bot's token: not the sandbox's public one. A sandbox of its own plays the real Telegram
 * and answers only to it, as Telegram answers only to the bot's own token.
 */
const REAL_TOKEN = "8123456789:AAH-a-real-bots-token-in-Telegrams-shape";

/** The sandbox's first person: whom Docks made while trying belong to. */
const SANDBOX_PERSON = 100000001;

/** What the console API answers when a Dock is made. */
interface Made {
  id: string;
  secret_key: string;
}

/** A send through the public API: status and answer. */
async function ping(url: string, dock: Made, msg: string) {
  const response = await fetch(`${url}/ping`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ dock_id: dock.id, secret_key: dock.secret_key, msg }),
  });
  return { status: response.status, body: (await response.json()) as { subscribers?: number } };
}

describe.skipIf(!chromiumPath)("from the sandbox to a real bot, keeping the Docks (Chromium)", () => {
  let database: TestDatabase;
  let telegram: RunningSandbox | undefined;
  let live: RunningService | undefined;
  let browser: Browser;
  const key = randomBytes(32);

  beforeAll(async () => {
    database = await createTestDatabase("sqlite", { migrated: true });
    browser = await launchChromium();
    mkdirSync("test-results", { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await live?.close();
    await telegram?.close();
    await database?.drop();
  });

  it("tried in the sandbox, restarted with a bot token: the first administrator claims, signs in and takes the sandbox's Docks over; their sandbox subscriptions are not carried over", {
    timeout: 300_000,
  }, async () => {
    // 1. Trying it: no token, the built-in sandbox plays Telegram. The person makes two Docks in
    //    the console and subscribes to one; a message is sent.
    const port = await freePort();
    const env = { PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}` };
    const trial = await startServiceOver(database, env, key, { pace: "unpaced" });
    let deploys: Made;
    let backups: Made;
    try {
      const people = new People(`${trial.url}/sandbox`);
      const alice = await people.person("Alice");
      expect(alice).toBe(SANDBOX_PERSON);
      const { client } = await signInThroughBot(trial, people, alice);
      const made = async (name: string) => {
        const answer = await client.call("POST", "/docks", {
          name,
          link: "https://ci.example.com/pipelines",
          description:
            "Deploy results from CI, one message per pipeline, with the commit and who started it.",
        });
        expect(answer.status).toBe(201);
        return answer.body.dock as Made;
      };
      deploys = await made("Deploys");
      backups = await made("Backups");
      const prompt = await people.botReply(alice, await people.start(alice, deploys.id));
      await people.press(alice, prompt, "Yes");
      // The bot edits its question once the subscription is stored.
      expect((await people.edited(alice, prompt)).text).toContain("You are now subscribed");
      const sent = await ping(trial.url, deploys, "tried in the sandbox");
      expect(sent.status).toBe(202);
      expect(sent.body.subscribers).toBe(1);
    } finally {
      await trial.close();
    }

    // 2. Going live: the same data, a bot token, and Telegram (a sandbox of its own, answering to
    //    that token only). Its first person has the sandbox person's id, as a real person may.
    telegram = await startSandbox({ token: REAL_TOKEN });
    expect((await telegram.raw("getMe")).body.ok).toBe(true);
    const refused = await fetch(`${telegram.root}/bot${SANDBOX_BOT_TOKEN}/getMe`);
    expect(refused.status).toBe(401);
    live = await startServiceOver(
      database,
      { ...env, TELEGRAM_BOT_TOKEN: REAL_TOKEN, TELEGRAM_API_ROOT: telegram.root },
      key,
      { pace: "unpaced" },
    );
    const real = new People(telegram.root);
    const lookalike = await real.person("Not Alice");
    expect(lookalike).toBe(SANDBOX_PERSON);
    const ada = await real.person("Ada");

    // Owning the sandbox's Docks lets nobody in on the real bot, whatever their id.
    expect((await signInThroughBot(live, real, lookalike)).finished.status).toBe(403);

    const claim = await live.app.claimLink();
    expect(claim?.link).toMatch(/^https:\/\/t\.me\/DockNotifySandboxBot\?start=claim_/);
    expect(await answerLink(real, ada, claim?.link as string, "Yes")).toContain("administrator");
    const admin = await signInThroughBot(live, real, ada);
    expect(admin.finished.status).toBe(200);

    // 3. The console offers the sandbox's Docks, says what is not carried over, and takes them over.
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await withSession(context, admin.client);
    const page = await context.newPage();
    const problems = pageProblems(page);
    await page.goto(`${live.url}/console/`);
    const offer = page.getByRole("region", { name: "Docks from the sandbox" });
    await offer.waitFor();
    await offer.getByText("Sandbox subscriptions are not carried over").waitFor();
    expect(await offer.getByRole("listitem").allTextContents()).toEqual([
      `Deploys · 1 sandbox subscription · ${deploys.id}`,
      `Backups · 0 sandbox subscriptions · ${backups.id}`,
    ]);
    expect(await accessibilityProblems(page)).toEqual([]);
    await page.screenshot({ path: "test-results/go-live-1-offer.png", fullPage: true });
    await offer.getByRole("button", { name: "Take all 2 over" }).click();
    await page.getByText("2 Docks from the sandbox are yours now").waitFor();
    const list = page.getByRole("list", { name: "Docks" });
    await list.getByText("Deploys").waitFor();
    await list.getByText("Backups").waitFor();
    expect(await accessibilityProblems(page)).toEqual([]);
    await page.screenshot({ path: "test-results/go-live-2-taken-over.png", fullPage: true });

    // Theirs now, audited; the secret key still sends, to nobody: the sandbox's chat is not here.
    const audit = await live.app.audit.page(deploys.id, { limit: 5 });
    expect(audit.entries[0]).toMatchObject({
      actor: { id: ada },
      action: "sandbox_taken_over",
      detail: { from: SANDBOX_PERSON, to: ada, subscriptions_dropped: 1, co_owners_removed: 0 },
    });
    const after = await ping(live.url, deploys, "live now");
    expect(after.status).toBe(202);
    expect(after.body.subscribers).toBe(0);
    expect(await real.history(SANDBOX_PERSON)).not.toContainEqual(
      expect.objectContaining({ text: expect.stringContaining("live now") }),
    );
    // The offer is gone for good, and the sandbox's person is still nobody here.
    expect((await admin.client.call("GET", "/sandbox-docks")).body).toEqual({ ok: true, docks: [] });
    await page.reload();
    await list.getByText("Deploys").waitFor();
    expect(await offer.count()).toBe(0);
    expect((await signInThroughBot(live, real, lookalike)).finished.status).toBe(403);
    expect(problems).toEqual([]);
    await context.close();
  });
});

describe.each(await dialects())(
  "the sandbox's Docks on a real bot, on %s: who is offered them, leaving them, taking them over",
  (dialect) => {
    let database: TestDatabase;
    let telegram: RunningSandbox;
    let service: RunningService;
    const key = randomBytes(32);
    const ADMIN = 8101;
    let dockId: string;

    beforeAll(async () => {
      database = await createTestDatabase(dialect, { migrated: true });
      // Made while the sandbox plays Telegram (the service's own Dock store marks its person).
      const trial = await startServiceOver(database, {}, key, { pace: "unpaced" });
      try {
        dockId = (
          await trial.app.docks.create(SANDBOX_PERSON, { name: "Tried", link: null, description: null })
        ).id;
        // Shared with the sandbox's second person, who took the invitation in the sandbox's bot.
        const invite = await trial.app.owners.createCoOwnerInvite(dockId, "editor", SANDBOX_PERSON);
        expect(
          await trial.app.owners.redeem("co_owner", invite.token, { id: SANDBOX_PERSON + 1 }),
        ).toMatchObject({
          result: "co_owner",
        });
        expect(await trial.app.owners.roleOf(SANDBOX_PERSON + 1)).toBe("owner");
      } finally {
        await trial.close();
      }
      telegram = await startSandbox({ token: REAL_TOKEN });
      service = await startServiceOver(
        database,
        { TELEGRAM_BOT_TOKEN: REAL_TOKEN, TELEGRAM_API_ROOT: telegram.root, OWNERS: String(ADMIN) },
        key,
        { pace: "unpaced" },
      );
    });
    afterAll(async () => {
      await service?.close();
      await telegram?.close();
      await database?.drop();
    });

    it("the sandbox's people keep no role on a real bot: its Docks' co-owners are removed at start, audited", async () => {
      expect(await service.app.owners.roleOf(SANDBOX_PERSON)).toBeNull();
      expect(await service.app.owners.roleOf(SANDBOX_PERSON + 1)).toBeNull();
      expect((await service.app.coOwners.team(dockId)).map((member) => member.id)).toEqual([SANDBOX_PERSON]);
      const entry = (await service.app.audit.page(dockId, { limit: 1 })).entries[0];
      expect(entry).toMatchObject({
        actor: null,
        action: "co_owner_removed",
        detail: { user: SANDBOX_PERSON + 1, role: "editor", reason: "sandbox" },
      });
    });

    it("only administrators see the offer; dismissing it (CSRF-checked) leaves the Docks where they are, for good", async () => {
      expect(await service.app.owners.add(8102, "owner")).toBe("added");
      const owner = await signIn(service, { id: 8102, first_name: "Olga" });
      const notAdmin = await owner.call("GET", "/sandbox-docks");
      expect(notAdmin.status).toBe(403);
      expect(notAdmin.body.error.code).toBe("admin_only");

      const admin = await signIn(service, { id: ADMIN, first_name: "Ada" });
      expect((await admin.call("GET", "/sandbox-docks")).body).toEqual({
        ok: true,
        docks: [{ id: dockId, name: "Tried", owner_id: SANDBOX_PERSON, subscribers: 0 }],
      });
      const forged = await admin.call("POST", "/sandbox-docks/dismiss", {}, { csrf: null });
      expect(forged.status).toBe(403);
      expect((await admin.call("GET", "/sandbox-docks")).body.docks).toHaveLength(1);

      expect((await admin.call("POST", "/sandbox-docks/dismiss", {})).body).toEqual({ ok: true });
      expect((await admin.call("GET", "/sandbox-docks")).body).toEqual({ ok: true, docks: [] });
      // Dismissed: the Dock stays the sandbox person's, seen by nobody in the console.
      expect((await service.app.docks.get(dockId))?.ownerId).toBe(SANDBOX_PERSON);
      expect((await admin.call("GET", "/docks")).body.docks).toEqual([]);

      // The API can still take them over (the operator's CLI too): one transaction, audited.
      const subscriptions = service.app.subscriptions;
      expect(await subscriptions.subscribe(dockId, SANDBOX_PERSON, "private")).toBe(true);
      const taken = await admin.call("POST", "/sandbox-docks/take-over", {});
      expect(taken.body).toEqual({
        ok: true,
        docks: [{ id: dockId, name: "Tried", owner_id: SANDBOX_PERSON, subscribers: 1 }],
      });
      expect((await service.app.docks.get(dockId))?.ownerId).toBe(ADMIN);
      expect(await subscriptions.state(dockId, SANDBOX_PERSON)).toBe("removed");
      expect((await service.app.audit.page(dockId, { limit: 1 })).entries[0]).toMatchObject({
        actor: { id: ADMIN },
        action: "sandbox_taken_over",
        detail: { from: SANDBOX_PERSON, to: ADMIN, subscriptions_dropped: 1, co_owners_removed: 0 },
      });
      expect((await admin.call("GET", "/docks")).body.docks.map((d: { id: string }) => d.id)).toEqual([
        dockId,
      ]);
      // Nothing is left to take; the sandbox's person, owning nothing now, is no owner record any more.
      expect((await admin.call("POST", "/sandbox-docks/take-over", {})).body).toEqual({
        ok: true,
        docks: [],
      });
      const left = await service.db.kysely
        .selectFrom("owners")
        .select("telegram_id")
        .where("sandbox", "=", 1)
        .execute();
      expect(left).toEqual([]);
    });
  },
);

describe.each(await dialects())(
  "going live on %s: nothing meant for the sandbox's chats reaches a real chat of the same id",
  (dialect) => {
    let database: TestDatabase;
    let telegram: RunningSandbox | undefined;
    let live: RunningService | undefined;
    let db: Db;
    const key = randomBytes(32);
    const ADMIN = 8101;

    beforeAll(async () => {
      database = await createTestDatabase(dialect, { migrated: true });
      db = await openDb(database.url);
    });
    afterAll(async () => {
      await live?.close();
      await db?.close();
      await telegram?.close();
      await database?.drop();
    });

    it("a copy queued, a copy sent and a notice queued in the sandbox are not sent, edited or deleted by the real bot", {
      timeout: 180_000,
    }, async () => {
      // 1. Trying it: Alice gets one message; then Telegram fails every send, so a second message
      //    and a notice to Bob (removed from the Dock) are still queued when the trial stops.
      const trial = await startServiceOver(database, {}, key, { pace: "unpaced" });
      let tried: Made;
      let first: string;
      let bob: number;
      let carol: number;
      let dan: number;
      try {
        const people = new People(`${trial.url}/sandbox`);
        const alice = await people.person("Alice");
        expect(alice).toBe(SANDBOX_PERSON);
        bob = await people.person("Bob");
        for (const person of [alice, bob]) await people.botReply(person, await people.start(person));
        const dock = await trial.app.docks.create(SANDBOX_PERSON, {
          name: "Tried",
          link: null,
          description: null,
        });
        tried = { id: dock.id, secret_key: dock.secretKey };
        expect(await trial.subscriptions.subscribe(tried.id, alice, "private")).toBe(true);
        expect(await trial.subscriptions.subscribe(tried.id, bob, "private")).toBe(true);
        const sent = await fetch(`${trial.url}/ping`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ dock_id: tried.id, secret_key: tried.secret_key, msg: "sandbox first" }),
        });
        expect(sent.status).toBe(202);
        first = ((await sent.json()) as { message_id: string }).message_id;
        for (const person of [alice, bob])
          await people.waitFor("the first message in the sandbox", async () =>
            (await people.history(person)).find((m) => m.text?.includes("sandbox first")),
          );
        await people.control("POST", "/faults", { kind: "server_error", rate: 1, methods: ["sendMessage"] });
        expect((await ping(trial.url, tried, "sandbox second")).body.subscribers).toBe(2);
        expect(await trial.app.audience.remove(tried.id, bob, null)).toBe(true);
        // Carol asks to join (a request waiting for its owner); Dan is banned from the Dock.
        carol = await people.person("Carol");
        const asked = await trial.app.audience.ask(
          { id: tried.id },
          { chatId: carol, chatType: "private", userId: carol, inviteId: null, memberCount: null },
        );
        expect(asked.kind).toBe("sent");
        dan = await people.person("Dan");
        expect(await trial.app.audience.ban(tried.id, dan, SANDBOX_PERSON)).toBe(true);
      } finally {
        await trial.close();
      }
      const queued = await db.kysely
        .selectFrom("deliveries")
        .select(["chat_id", "kind"])
        .where("dock_id", "=", tried.id)
        .where("state", "=", "queued")
        .where("chat_id", "=", SANDBOX_PERSON)
        .execute();
      // Alice's copy of the second message. (Bob's, if it was in flight when he went, is queued
      // again too, and would end at its claim: he is no subscriber.)
      expect(queued).toEqual([{ chat_id: SANDBOX_PERSON, kind: "send" }]);
      const notices = db.kysely.selectFrom("bot_notices").selectAll().where("chat_id", "=", bob);
      expect((await notices.execute()).map((n) => n.state)).toEqual(["queued"]);

      // 2. Live: the real Telegram's first people have Alice's and Bob's ids, and use the real bot.
      telegram = await startSandbox({ token: REAL_TOKEN });
      const real = new People(telegram.root);
      const lookalike = await real.person("Not Alice");
      expect(lookalike).toBe(SANDBOX_PERSON);
      const lookalikeBob = await real.person("Not Bob");
      expect(lookalikeBob).toBe(bob);
      live = await startServiceOver(
        database,
        { TELEGRAM_BOT_TOKEN: REAL_TOKEN, TELEGRAM_API_ROOT: telegram.root, OWNERS: String(ADMIN) },
        key,
        { pace: "unpaced" },
      );
      for (const person of [lookalike, lookalikeBob]) await real.botReply(person, await real.start(person));
      expect(live.logs.text).toContain("going live");

      // What the sandbox left is settled before any worker ran: nothing to send, edit or delete.
      const rows = await db.kysely
        .selectFrom("deliveries")
        .select(["chat_id", "state", "telegram_message_ids", "last_error"])
        .where("dock_id", "=", tried.id)
        .orderBy("id")
        .execute();
      // Alice's two copies, and Bob's first (and his second, if it was queued before he went).
      expect(rows.filter((r) => Number(r.chat_id) === SANDBOX_PERSON)).toHaveLength(2);
      expect(rows.length).toBeGreaterThanOrEqual(3);
      expect(rows.map((r) => [r.state, r.telegram_message_ids])).toEqual(rows.map(() => ["gone", null]));
      expect(rows.filter((r) => Number(r.chat_id) === SANDBOX_PERSON)[1]?.last_error).toBe(
        "meant for a chat of the sandbox; not sent by a real bot",
      );
      expect((await notices.execute()).map((n) => [n.state, n.message_id])).toEqual([["failed", null]]);
      const subscriptions = await db.kysely
        .selectFrom("subscriptions")
        .select(["chat_id", "state", "sandbox"])
        .where("dock_id", "=", tried.id)
        .orderBy("chat_id")
        .execute();
      expect(subscriptions.map((s) => [Number(s.chat_id), s.state, s.sandbox])).toEqual([
        [SANDBOX_PERSON, "removed", 2],
        [bob, "removed", 3],
      ]);
      // Carol's request ended without a word (nobody may approve it into a real chat); Dan's ban
      // would have kept out the real person with his id: gone.
      const requests = await db.kysely.selectFrom("join_requests").select(["chat_id", "state"]).execute();
      expect(requests.map((r) => [Number(r.chat_id), r.state])).toEqual([[carol, "expired"]]);
      expect(await db.kysely.selectFrom("dock_bans").selectAll().execute()).toEqual([]);
      // Nothing the bot was to tell the sandbox's chats goes: Bob's notice, the owner's copy of
      // Carol's request.
      const told = await db.kysely.selectFrom("bot_notices").select(["chat_id", "state"]).execute();
      expect(told.length).toBeGreaterThanOrEqual(2);
      expect(told.filter((n) => n.state !== "failed")).toEqual([]);

      // The sandbox's secret key still sends, to nobody; an edit of the sandbox's message edits nothing.
      expect((await ping(live.url, tried, "after going live")).body.subscribers).toBe(0);
      const edit = await fetch(`${live.url}/messages/${first}`, {
        method: "PATCH",
        headers: {
          "content-type": "application/json",
          authorization: `Basic ${Buffer.from(`${tried.id}:${tried.secret_key}`).toString("base64")}`,
        },
        body: JSON.stringify({ msg: "sandbox first, edited" }),
      });
      expect(edit.status).toBe(202);
      expect(await edit.json()).toMatchObject({ edits: 0, queued: 0 });

      // A real Dock's message reaches both real people, so the dispatcher has run for their chats
      // (the rows above say nothing of the sandbox's is left to send): none of the sandbox's went.
      const admin = await live.app.docks.create(ADMIN, { name: "Real", link: null, description: null });
      const realDock = { id: admin.id, secret_key: admin.secretKey };
      for (const person of [lookalike, lookalikeBob])
        expect(await live.subscriptions.subscribe(realDock.id, person, "private")).toBe(true);
      expect((await ping(live.url, realDock, "real one")).body.subscribers).toBe(2);
      for (const person of [lookalike, lookalikeBob]) {
        const seen = await real.waitFor("the real Dock's message", async () => {
          const history = await real.history(person);
          return history.some((m) => m.text?.includes("real one")) ? history : undefined;
        });
        const fromBot = seen.filter((m) => m.from.is_bot).map((m) => m.text ?? "");
        expect(
          fromBot.filter((text) => /sandbox (first|second)|Tried/.test(text)),
          JSON.stringify(fromBot),
        ).toEqual([]);
      }
    });

    it("a live instance run once on the sandbox and live again keeps what its real bot made before: its copies are still edited", {
      timeout: 180_000,
    }, async ({ onTestFinished }) => {
      const data = await createTestDatabase(dialect, { migrated: true });
      const stand = await startSandbox({ token: REAL_TOKEN });
      onTestFinished(async () => {
        await stand.close();
        await data.drop();
      });
      const env = { TELEGRAM_BOT_TOKEN: REAL_TOKEN, TELEGRAM_API_ROOT: stand.root, OWNERS: String(ADMIN) };
      const real = new People(stand.root);
      const ada = await real.person("Ada");

      // Live: Ada gets a message from a real Dock.
      const first = await startServiceOver(data, env, key, { pace: "unpaced" });
      let dock: Made;
      let sent: string;
      try {
        await real.botReply(ada, await real.start(ada));
        const made = await first.app.docks.create(ADMIN, { name: "Real", link: null, description: null });
        dock = { id: made.id, secret_key: made.secretKey };
        expect(await first.subscriptions.subscribe(dock.id, ada, "private")).toBe(true);
        const answer = await fetch(`${first.url}/ping`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ dock_id: dock.id, secret_key: dock.secret_key, msg: "deploy started" }),
        });
        sent = ((await answer.json()) as { message_id: string }).message_id;
        await real.waitFor("Ada's copy", async () =>
          (await real.history(ada)).find((m) => m.text === "Real\ndeploy started"),
        );
      } finally {
        await first.close();
      }
      // Started once without the token (the built-in sandbox plays Telegram), then live again.
      await (await startServiceOver(data, {}, key, { pace: "unpaced" })).close();
      const again = await startServiceOver(data, env, key, { pace: "unpaced" });
      onTestFinished(() => again.close());
      expect(again.logs.text).toContain("going live");
      const edit = await fetch(`${again.url}/messages/${sent}`, {
        method: "PATCH",
        headers: {
          "content-type": "application/json",
          authorization: `Basic ${Buffer.from(`${dock.id}:${dock.secret_key}`).toString("base64")}`,
        },
        body: JSON.stringify({ msg: "deploy finished" }),
      });
      expect(await edit.json()).toMatchObject({ edits: 1 });
      await real.waitFor("Ada's copy edited", async () =>
        (await real.history(ada)).find(
          (m) => m.text === "Real\ndeploy finished" && m.edit_date !== undefined,
        ),
      );
      expect((await real.history(ada)).filter((m) => m.text?.startsWith("Real\n"))).toHaveLength(1);
    });
  },
);
