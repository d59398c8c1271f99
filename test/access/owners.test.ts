import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ownerPolicy } from "../../src/domain/owners.ts";
import { migrate } from "../../src/store/migrations/index.ts";
import { OwnerRepository } from "../../src/store/owners.ts";
import { SessionRepository } from "../../src/store/sessions.ts";
import { SANDBOX_BOT_TOKEN } from "../../src/telegram/sandbox-bot.ts";
import { People } from "../helpers/bot-harness.ts";
import { answerLink, ConsoleClient, payloadOf, signIn, signInThroughBot } from "../helpers/console-client.ts";
import { databaseAt, dialects, type RunningService, startService } from "../helpers/harness.ts";
import { type RunningSandbox, startSandbox } from "../helpers/sandbox-harness.ts";

const DIALECTS = await dialects();

describe.each(DIALECTS)("who may own Docks, with a real bot on %s", (dialect) => {
  let sandbox: RunningSandbox;
  let service: RunningService;
  let people: People;

  beforeAll(async () => {
    // A bot token makes the instance a production one (the sandbox on its own port plays Telegram,
    // as `dock-notify sandbox` does): closed until claimed.
    sandbox = await startSandbox();
    service = await startService(
      dialect,
      { TELEGRAM_BOT_TOKEN: SANDBOX_BOT_TOKEN, TELEGRAM_API_ROOT: sandbox.root },
      { pace: "unpaced" },
    );
    people = new People(sandbox.root);
  });
  afterAll(async () => {
    await service.close();
    await sandbox.close();
  });

  it("is closed until claimed: the claim link makes exactly one administrator, who invites and removes owners", async () => {
    const anonymous = new ConsoleClient(service.url);
    expect((await anonymous.call("GET", "/info")).body).toMatchObject({
      owners: "invited",
      awaits_claim: true,
    });

    // Before the claim nobody gets in, and the bot says why.
    const ann = await people.person("Ann", "ann_ops");
    const early = await signInThroughBot(service, people, ann);
    expect(early.said).toContain("This Dock Notify has no administrator yet, so nobody can sign in");
    expect(early.checked).toMatchObject({ state: "confirmed", may_sign_in: false });
    expect(early.finished.status).toBe(403);
    expect(early.finished.body.error.code).toBe("not_an_owner");

    // Ben opens a claim link; a restart (or another instance) prints a newer one, which retires it.
    const first = await service.app.claimLink();
    expect(first?.link).toMatch(/^https:\/\/t\.me\/DockNotifySandboxBot\?start=claim_[A-Za-z0-9]{22}$/);
    expect(first?.command).toMatch(/^\/start claim_[A-Za-z0-9]{22}$/);
    const ben = await people.person("Ben");
    const benPrompt = await people.botReply(ben, await people.start(ben, payloadOf(first?.link as string)));
    const second = await service.app.claimLink();
    expect(await answerLink(people, ann, first?.link as string, "Yes")).toContain(
      "A newer claim link replaced",
    );
    expect(await answerLink(people, ann, second?.link as string, "No")).toContain("Nothing changed");
    expect(await answerLink(people, ann, second?.link as string, "Yes")).toContain(
      "you are the administrator of this Dock Notify",
    );
    // Ben's Yes on his open prompt, and any claim link opened now, find the instance claimed.
    await people.press(ben, benPrompt, "Yes");
    expect((await people.edited(ben, benPrompt)).text).toContain("already has an administrator");
    expect(await answerLink(people, ben, second?.link as string, "Yes")).toContain(
      "already has an administrator",
    );
    expect(await service.app.claimLink()).toBeNull();
    expect((await anonymous.call("GET", "/info")).body.awaits_claim).toBe(false);

    const admin = await signInThroughBot(service, people, ann);
    expect(admin.said).toContain("Confirmed.");
    expect(admin.finished.body).toEqual({ ok: true, state: "signed_in" });
    const annClient = admin.client;
    expect((await annClient.call("GET", "/session")).body).toMatchObject({ role: "admin", max_docks: 100 });

    // Ben is told to ask for an invitation; Ann invites him through a single-use link.
    expect((await signInThroughBot(service, people, ben)).finished.body.error.code).toBe("not_an_owner");
    const invited = await annClient.call("POST", "/owners/invites");
    expect(invited.status).toBe(201);
    expect(invited.body.link).toMatch(/\?start=invite_[A-Za-z0-9]{22}$/);
    expect((await annClient.call("GET", "/owners")).body.invites).toEqual([invited.body.invite]);
    const benWords = await answerLink(people, ben, invited.body.link, "Yes");
    expect(benWords).toContain("you are an owner of this Dock Notify");
    const cy = await people.person("Cy");
    expect(await answerLink(people, cy, invited.body.link, "Yes")).toContain("already used");
    expect((await annClient.call("GET", "/owners")).body.invites).toEqual([]);

    const benIn = await signInThroughBot(service, people, ben);
    expect(benIn.finished.body).toEqual({ ok: true, state: "signed_in" });
    expect((await benIn.client.call("GET", "/session")).body.role).toBe("owner");
    expect((await benIn.client.call("POST", "/docks", { name: "Ben's builds" })).status).toBe(201);
    // Owners do not manage owners.
    for (const [method, path] of [
      ["GET", "/owners"],
      ["POST", "/owners/invites"],
      ["DELETE", `/owners/${ann}`],
    ] as const) {
      const refused = await benIn.client.call(method, path);
      expect(refused.status).toBe(403);
      expect(refused.body.error.code).toBe("admin_only");
    }

    // A withdrawn invitation lets nobody in.
    const withdrawn = await annClient.call("POST", "/owners/invites");
    expect((await annClient.call("DELETE", `/owners/invites/${withdrawn.body.invite.id}`)).status).toBe(200);
    expect((await annClient.call("DELETE", `/owners/invites/${withdrawn.body.invite.id}`)).status).toBe(404);
    expect(await answerLink(people, cy, withdrawn.body.link, "Yes")).toContain("withdrawn");
    expect((await signInThroughBot(service, people, cy)).finished.status).toBe(403);

    const listed = (await annClient.call("GET", "/owners")).body.owners;
    expect(listed).toEqual([
      expect.objectContaining({ id: ann, role: "admin", source: "store", first_name: "Ann", docks: 0 }),
      expect.objectContaining({ id: ben, role: "owner", source: "store", first_name: "Ben", docks: 1 }),
    ]);

    // Removing Ben ends his session at once; his Dock stays; he cannot sign in again.
    expect((await annClient.call("DELETE", `/owners/${ben}`)).body).toEqual({ ok: true });
    const after = await benIn.client.call("GET", "/docks");
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe("not_signed_in");
    expect((await service.app.docks.list(ben)).map((d) => d.name)).toEqual(["Ben's builds"]);
    expect((await signInThroughBot(service, people, ben)).finished.body.error.code).toBe("not_an_owner");
    expect((await annClient.call("DELETE", `/owners/${ben}`)).status).toBe(404);

    // The last administrator stays.
    const last = await annClient.call("DELETE", `/owners/${ann}`);
    expect(last.status).toBe(409);
    expect(last.body.error.code).toBe("last_administrator");
  });

  it("Yes on a prompt whose link was used or withdrawn meanwhile says so (and the bot goes on answering)", async () => {
    const fay = await people.person("Fay");
    await service.app.owners.add(fay, "admin");
    const client = (await signInThroughBot(service, people, fay)).client;
    const gil = await people.person("Gil");
    const hal = await people.person("Hal");
    // Both open the same invitation; Hal says Yes first, then Gil presses Yes on his open prompt.
    const invite = await client.call("POST", "/owners/invites");
    const payload = payloadOf(invite.body.link);
    const gilPrompt = await people.botReply(gil, await people.start(gil, payload));
    expect(await answerLink(people, hal, invite.body.link, "Yes")).toContain("you are an owner");
    await people.press(gil, gilPrompt, "Yes");
    expect((await people.edited(gil, gilPrompt)).text).toContain("already used");
    // Withdrawn while Gil's prompt is open; he presses Yes twice (a double tap).
    const second = await client.call("POST", "/owners/invites");
    const prompt = await people.botReply(gil, await people.start(gil, payloadOf(second.body.link)));
    await client.call("DELETE", `/owners/invites/${second.body.invite.id}`);
    await people.press(gil, prompt, "Yes");
    expect((await people.edited(gil, prompt)).text).toContain("withdrawn");
    // The bot (and its database) still answers.
    expect(await answerLink(people, gil, invite.body.link, "Yes")).toContain("already used");
    expect((await signInThroughBot(service, people, gil)).finished.body.error.code).toBe("not_an_owner");
  });

  it("an invitation opened by someone who is already an owner stays for its person", async () => {
    const dee = await people.person("Dee");
    await service.app.owners.add(dee, "admin");
    const client = (await signInThroughBot(service, people, dee)).client;
    const invite = await client.call("POST", "/owners/invites");
    expect(await answerLink(people, dee, invite.body.link, "Yes")).toContain(
      "You already are an administrator",
    );
    const eli = await people.person("Eli");
    expect(await answerLink(people, eli, invite.body.link, "Yes")).toContain("you are an owner");
  });
});

describe.each(DIALECTS)("OWNERS names the administrators on %s", (dialect) => {
  it("lets only them (and their owners) in, and the console cannot remove them", async () => {
    const sandbox = await startSandbox();
    const people = new People(sandbox.root);
    const boss = await people.person("Boss");
    const service = await startService(
      dialect,
      { TELEGRAM_BOT_TOKEN: SANDBOX_BOT_TOKEN, TELEGRAM_API_ROOT: sandbox.root, OWNERS: `${boss}, 1` },
      { pace: "unpaced" },
    );
    try {
      expect((await new ConsoleClient(service.url).call("GET", "/info")).body).toMatchObject({
        owners: "invited",
        awaits_claim: false,
      });
      expect(await service.app.claimLink()).toBeNull();
      const bossIn = await signInThroughBot(service, people, boss);
      expect((await bossIn.client.call("GET", "/session")).body.role).toBe("admin");
      const owners = (await bossIn.client.call("GET", "/owners")).body.owners;
      expect(owners.map((o: { id: number; source: string }) => [o.id, o.source])).toEqual([
        [boss, "config"],
        [1, "config"],
      ]);
      const kept = await bossIn.client.call("DELETE", `/owners/${boss}`);
      expect(kept.status).toBe(409);
      expect(kept.body.error.code).toBe("owner_configured");
      const other = await people.person("Other");
      expect((await signInThroughBot(service, people, other)).finished.body.error.code).toBe("not_an_owner");
    } finally {
      await service.close();
      await sandbox.close();
    }
  });
});

describe.each(DIALECTS)("the sandbox and the Dock cap on %s", (dialect) => {
  let service: RunningService;
  beforeAll(async () => {
    service = await startService(dialect, { MAX_DOCKS_PER_OWNER: "2" }, { pace: "unpaced" });
  });
  afterAll(async () => service.close());

  it("the sandbox is open to anyone, and an owner creates at most MAX_DOCKS_PER_OWNER Docks", async () => {
    expect((await new ConsoleClient(service.url).call("GET", "/info")).body).toMatchObject({
      owners: "anyone",
      awaits_claim: false,
    });
    expect(await service.app.claimLink()).toBeNull();
    const zed = await signIn(service, { id: 3001, first_name: "Zed" });
    expect((await zed.call("GET", "/session")).body).toMatchObject({ role: "owner", max_docks: 2 });
    for (const name of ["One", "Two"]) expect((await zed.call("POST", "/docks", { name })).status).toBe(201);
    const third = await zed.call("POST", "/docks", { name: "Three" });
    expect(third.status).toBe(403);
    expect(third.body.error.code).toBe("too_many_docks");
    expect((await zed.call("GET", "/docks")).body.docks).toHaveLength(2);
    // Another owner's count is their own.
    const yan = await signIn(service, { id: 3002, first_name: "Yan" });
    expect((await yan.call("POST", "/docks", { name: "Mine" })).status).toBe(201);
    // In the sandbox there is no administrator unless the operator names one.
    expect((await zed.call("GET", "/owners")).body.error.code).toBe("admin_only");
  });
});

describe.each(DIALECTS)("owners in the store on %s", (dialect) => {
  it("an upgrade keeps everyone who owns a Dock in, and counts the instance as claimed", async () => {
    const old = await databaseAt(dialect, "0012-chat-titles");
    try {
      await migrate(old.db);
      const closed = new OwnerRepository(old.db, ownerPolicy(null, false));
      expect(await closed.roleOf(1)).toBe("owner");
      expect(await closed.roleOf(2)).toBeNull();
      expect(await closed.awaitsClaim()).toBe(false);
    } finally {
      await old.close();
    }
  });

  it("an upgraded instance with no administrator says so; a claim link made before OWNERS was set makes nobody one", async () => {
    const old = await databaseAt(dialect, "0012-chat-titles");
    try {
      await migrate(old.db);
      expect(await new OwnerRepository(old.db, ownerPolicy(null, false)).lacksAdministrator()).toBe(true);
      await sql`update instance set claimed_at = null`.execute(old.db.kysely);
      const unset = new OwnerRepository(old.db, ownerPolicy(null, false));
      const claim = await unset.createClaim();
      // The operator sets OWNERS and restarts: the old link is worth nothing.
      const named = new OwnerRepository(old.db, ownerPolicy([999], false));
      expect(await named.redeem("claim", claim.token, { id: 42 })).toEqual({ result: "already_claimed" });
      expect(await named.roleOf(42)).toBeNull();
      expect(await named.lacksAdministrator()).toBe(false);
      // Under OWNERS=* too.
      const open = new OwnerRepository(old.db, ownerPolicy("anyone", false));
      expect(await open.redeem("claim", claim.token, { id: 43 })).toEqual({ result: "already_claimed" });
      expect((await unset.list()).filter((o) => o.role === "admin")).toEqual([]);
      // A new claim link retires the one before.
      const newer = await unset.createClaim();
      expect((await unset.linkState("claim", claim.token)).state).toBe("revoked");
      expect(await unset.redeem("claim", newer.token, { id: 44 })).toEqual({ result: "admin" });
    } finally {
      await old.close();
    }
  });

  it("one administrator always stays: two removing each other at once, or one made an owner", async () => {
    const db = await databaseAt(dialect, "0012-chat-titles");
    try {
      await migrate(db.db);
      const owners = new OwnerRepository(db.db, ownerPolicy(null, false));
      await owners.add(10, "admin");
      await owners.add(11, "admin");
      const outcomes = await Promise.all([owners.remove(10), owners.remove(11)]);
      expect(outcomes.sort()).toEqual(["last_admin", "removed"]);
      const [last] = (await owners.list()).filter((o) => o.role === "admin");
      expect(last).toBeDefined();
      expect(await owners.add(last?.id as number, "owner")).toBe("last_admin");
      expect(await owners.setRole(last?.id as number, "owner")).toBe("last_admin");
      expect(await owners.roleOf(last?.id as number)).toBe("admin");
    } finally {
      await db.close();
    }
  });

  it("a removed administrator's open invitations are withdrawn; invitations expire and are pruned", async () => {
    const db = await databaseAt(dialect, "0012-chat-titles");
    try {
      await migrate(db.db);
      let clock = Date.now();
      const owners = new OwnerRepository(db.db, ownerPolicy(null, false), () => clock);
      await owners.add(20, "admin");
      await owners.add(21, "admin");
      const fromLeaver = await owners.createInvite(21);
      const lasting = await owners.createInvite(20);
      expect(await owners.remove(21)).toBe("removed");
      expect((await owners.linkState("invite", fromLeaver.token)).state).toBe("revoked");
      expect(await owners.redeem("invite", fromLeaver.token, { id: 30 })).toEqual({ result: "revoked" });
      expect((await owners.pendingInvites()).map((i) => i.id)).toEqual([lasting.invite.id]);

      clock += 7 * 24 * 60 * 60 * 1000 + 1;
      expect(await owners.pendingInvites()).toEqual([]);
      expect(await owners.redeem("invite", lasting.token, { id: 31 })).toEqual({ result: "expired" });
      expect(await owners.roleOf(31)).toBeNull();
      clock += 24 * 60 * 60 * 1000;
      expect(await owners.prune()).toBe(2);
      expect((await owners.linkState("invite", lasting.token)).state).toBe("unknown");
    } finally {
      await db.close();
    }
  });

  it("a session of someone no longer allowed in ends for good", async () => {
    const db = await databaseAt(dialect, "0012-chat-titles");
    try {
      await migrate(db.db);
      const open = new SessionRepository(db.db, ownerPolicy("anyone", false));
      const { token } = await open.create({ id: 77 }, 60_000);
      expect((await open.get(token))?.user.role).toBe("owner");
      // The operator closes the instance: 77 owns no Dock and was never invited.
      const closed = new SessionRepository(db.db, ownerPolicy(null, false));
      expect(await closed.get(token)).toBeNull();
      // Let in again later, the old session stays ended.
      await new OwnerRepository(db.db, ownerPolicy(null, false)).add(77, "owner");
      expect(await closed.get(token)).toBeNull();
    } finally {
      await db.close();
    }
  });

  it("of two claims confirmed at once exactly one makes an administrator", async () => {
    const fresh = await databaseAt(dialect, "0012-chat-titles");
    try {
      // A fresh instance: no Docks before the migration.
      await sql`delete from docks`.execute(fresh.db.kysely);
      await migrate(fresh.db);
      const owners = new OwnerRepository(fresh.db, ownerPolicy(null, false));
      expect(await owners.awaitsClaim()).toBe(true);
      // Six instances' links, each made before the next retired it: redeemed as if still valid
      // (rows made directly), six people pressing Yes at the same moment.
      const links = await Promise.all(Array.from({ length: 6 }, () => owners.createClaim()));
      await sql`update owner_invites set revoked_at = null`.execute(fresh.db.kysely);
      const outcomes = await Promise.all(
        links.map((link, i) => owners.redeem("claim", link.token, { id: 500 + i, first_name: `P${i}` })),
      );
      expect(outcomes.filter((o) => o.result === "admin")).toHaveLength(1);
      expect(outcomes.filter((o) => o.result !== "admin").map((o) => o.result)).toEqual(
        Array(5).fill("already_claimed"),
      );
      const admins = (await owners.list()).filter((o) => o.role === "admin");
      expect(admins).toHaveLength(1);
      expect(await owners.awaitsClaim()).toBe(false);
    } finally {
      await fresh.close();
    }
  });
});
