import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { People } from "../helpers/bot-harness.ts";
import {
  answerLink,
  type ConsoleClient,
  payloadOf,
  signIn,
  signInThroughBot,
} from "../helpers/console-client.ts";
import { dialects, type RunningService, startService } from "../helpers/harness.ts";

const DIALECTS = await dialects();

/** The administrator OWNERS names: the instance is closed to everyone else. */
const ADMIN = 7001;

describe.each(DIALECTS)("co-owners of a Dock, invited through the bot, on %s", (dialect) => {
  let service: RunningService;
  let people: People;
  let admin: ConsoleClient;

  beforeAll(async () => {
    // OWNERS closes even the sandbox: only its administrator, whom they invite, and co-owners get in.
    service = await startService(dialect, { OWNERS: String(ADMIN) }, { pace: "unpaced" });
    people = new People(`${service.url}/sandbox`);
    admin = await signIn(service, { id: ADMIN, first_name: "Olga" });
  });
  afterAll(async () => {
    await service?.close();
  });

  const newDock = async (owner: ConsoleClient, name: string) => {
    const made = await owner.call("POST", "/docks", { name });
    expect(made.status).toBe(201);
    return made.body.dock as { id: string; name: string; secret_key: string };
  };

  const invite = async (owner: ConsoleClient, dockId: string, role: string) => {
    const made = await owner.call("POST", `/docks/${dockId}/co-owners/invites`, { role });
    expect(made.status).toBe(201);
    return made.body as { invite: { id: string; role: string }; link: string };
  };

  it("an approver joins through a single-use link, signs in to a closed instance and sees that Dock alone, as an approver", async () => {
    const dock = await newDock(admin, "Builds");
    await newDock(admin, "Payroll");
    const made = await invite(admin, dock.id, "approver");
    expect(made.link).toMatch(/\?start=coown_[A-Za-z0-9]{22}$/);
    expect(made.invite).toMatchObject({ role: "approver", created_by: ADMIN });
    expect((await admin.call("GET", `/docks/${dock.id}/co-owners`)).body.invites).toEqual([made.invite]);

    // Before the invitation nobody but the administrator may sign in.
    const ada = await people.person("Ada", "ada_ops");
    expect((await signInThroughBot(service, people, ada)).finished.body.error.code).toBe("not_an_owner");

    // No first: nothing changes, and the link still works; then Yes.
    const prompt = await people.botReply(ada, await people.start(ada, payloadOf(made.link)));
    expect(prompt.text).toContain("Olga invites you to co-own the Dock Builds");
    expect(prompt.text).toContain("as an approver, for its subscribers.");
    await people.press(ada, prompt, "No");
    expect((await people.edited(ada, prompt)).text).toContain("Invitation declined");
    expect(await answerLink(people, ada, made.link, "Yes")).toContain("you are an approver of Builds");
    // Single use.
    const cy = await people.person("Cy");
    expect(await answerLink(people, cy, made.link, "Yes")).toContain("already used. Ask the Dock's owner");
    expect((await admin.call("GET", `/docks/${dock.id}/co-owners`)).body).toEqual({
      ok: true,
      co_owners: [
        expect.objectContaining({ id: ADMIN, role: "owner", owns_dock: true, added_at: null }),
        expect.objectContaining({
          id: ada,
          first_name: "Ada",
          username: "ada_ops",
          role: "approver",
          owns_dock: false,
        }),
      ],
      invites: [],
    });

    // The administrator sees who is let in, and why.
    expect((await admin.call("GET", "/owners")).body.owners).toContainEqual(
      expect.objectContaining({ id: ada, role: "co_owner", source: "co_owner", docks: 1, first_name: "Ada" }),
    );

    // In for this Dock only: a co-owner, not an owner of the instance.
    const signedIn = await signInThroughBot(service, people, ada);
    expect(signedIn.finished.body).toEqual({ ok: true, state: "signed_in" });
    const client = signedIn.client;
    expect((await client.call("GET", "/session")).body.role).toBe("co_owner");
    const list = await client.call("GET", "/docks");
    expect(list.body.docks.map((d: { name: string; role: string }) => [d.name, d.role])).toEqual([
      ["Builds", "approver"],
    ]);
    const page = (await client.call("GET", `/docks/${dock.id}`)).body.dock;
    expect(page).toMatchObject({
      role: "approver",
      may: ["read", "manage_subscribers"],
      secret_key: null,
      signing_secret: null,
      hook_token: null,
      hook_url: null,
      callback_url: null,
      examples: null,
      integrations: [],
    });
    expect(JSON.stringify(page)).not.toContain(dock.secret_key);
    const created = await client.call("POST", "/docks", { name: "Mine" });
    expect(created.status).toBe(403);
    expect(created.body.error.code).toBe("not_an_owner");
    expect((await client.call("GET", "/owners")).body.error.code).toBe("admin_only");
    const other = (await admin.call("GET", "/docks")).body.docks.find(
      (d: { name: string }) => d.name === "Payroll",
    );
    expect((await client.call("GET", `/docks/${other.id}`)).status).toBe(404);

    // A second invitation opened by someone who already has a role stays for its person.
    const second = await invite(admin, dock.id, "viewer");
    const stays = await answerLink(people, ada, second.link, "Yes");
    expect(stays).toContain("You already are an approver of Builds");
    expect(stays).toContain("The invitation stays unused");
    const ida = await people.person("Ida");
    expect(await answerLink(people, ida, second.link, "Yes")).toContain("you are a viewer of Builds");

    // Removed from the Dock shared with her, and let in for nothing else: signed out.
    expect((await admin.call("DELETE", `/docks/${dock.id}/co-owners/${ada}`)).body).toEqual({ ok: true });
    const after = await client.call("GET", "/docks");
    expect(after.status).toBe(401);
    expect((await admin.call("GET", "/owners")).body.owners.map((o: { id: number }) => o.id)).not.toContain(
      ada,
    );
    expect((await signInThroughBot(service, people, ada)).finished.body.error.code).toBe("not_an_owner");

    // The links' tokens were in URLs and answers: never in the log.
    for (const link of [made.link, second.link]) {
      expect(service.logs.text).not.toContain(payloadOf(link).slice("coown_".length));
    }
  });

  it("a withdrawn, expired or deleted Dock's invitation makes nobody a co-owner, and the bot says why", async () => {
    const dock = await newDock(admin, "Alerts");
    const eve = await people.person("Eve");

    const withdrawn = await invite(admin, dock.id, "editor");
    const prompt = await people.botReply(eve, await people.start(eve, payloadOf(withdrawn.link)));
    expect(
      (await admin.call("DELETE", `/docks/${dock.id}/co-owners/invites/${withdrawn.invite.id}`)).status,
    ).toBe(200);
    expect(
      (await admin.call("DELETE", `/docks/${dock.id}/co-owners/invites/${withdrawn.invite.id}`)).status,
    ).toBe(404);
    await people.press(eve, prompt, "Yes");
    expect((await people.edited(eve, prompt)).text).toContain("This invitation was withdrawn");

    const expired = await invite(admin, dock.id, "editor");
    await service.db.kysely
      .updateTable("owner_invites")
      .set({ expires_at: Date.now() - 1 })
      .where("id", "=", expired.invite.id)
      .execute();
    expect(await answerLink(people, eve, expired.link, "Yes")).toContain("This link has expired");
    expect((await admin.call("GET", `/docks/${dock.id}/co-owners`)).body.invites).toEqual([]);

    const orphaned = await invite(admin, dock.id, "viewer");
    expect((await admin.call("DELETE", `/docks/${dock.id}`)).body).toEqual({ ok: true });
    expect(await answerLink(people, eve, orphaned.link, "Yes")).toContain("or its Dock was deleted");
    const rows = await service.db.kysely
      .selectFrom("co_owners")
      .select("telegram_id")
      .where("telegram_id", "=", eve)
      .execute();
    expect(rows).toEqual([]);
    expect(
      await answerLink(people, eve, "https://t.me/x?start=coown_0000000000000000000000", "Yes"),
    ).toContain("This link is not valid");
  });

  it("an owner's invitation makes a co-owner an owner of the instance; the Dock's own owner keeps the role owner", async () => {
    const dock = await newDock(admin, "Deploys");
    const finn = await people.person("Finn");
    expect(await answerLink(people, finn, (await invite(admin, dock.id, "owner")).link, "Yes")).toContain(
      "you are an owner of Deploys",
    );
    const finnIn = (await signInThroughBot(service, people, finn)).client;
    expect((await finnIn.call("GET", "/session")).body.role).toBe("co_owner");
    // A co-owner with the role owner manages the team, but cannot take the Dock from its owner.
    const demote = await finnIn.call("PUT", `/docks/${dock.id}/co-owners/${ADMIN}/role`, { role: "viewer" });
    expect(demote.status).toBe(409);
    expect(demote.body.error.code).toBe("dock_owner_fixed");
    expect((await finnIn.call("DELETE", `/docks/${dock.id}/co-owners/${ADMIN}`)).body.error.code).toBe(
      "dock_owner_fixed",
    );
    const bad = await finnIn.call("POST", `/docks/${dock.id}/co-owners/invites`, { role: "admin" });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: "invalid_fields", fields: [{ field: "role" }] });

    // The administrator invites Finn to own Docks: he is an instance owner from then on.
    const ownerInvite = await admin.call("POST", "/owners/invites");
    expect(await answerLink(people, finn, ownerInvite.body.link, "Yes")).toContain(
      "you are an owner of this Dock Notify",
    );
    expect((await finnIn.call("GET", "/session")).body.role).toBe("owner");
    expect((await finnIn.call("POST", "/docks", { name: "Finn's own" })).status).toBe(201);

    // An invitation opened by the Dock's own owner: they already are its owner.
    const olga = await people.person("Olga");
    expect(await service.app.docks.transfer(dock.id, olga)).toBe(true);
    expect(await answerLink(people, olga, (await invite(finnIn, dock.id, "viewer")).link, "Yes")).toContain(
      "You already are an owner of Deploys",
    );
  });

  it("a co-owner who is demoted from owner loses the invitations they made; anyone may leave a Dock", async () => {
    const dock = await newDock(admin, "Backups");
    const gus = await people.person("Gus");
    await answerLink(people, gus, (await invite(admin, dock.id, "owner")).link, "Yes");
    const gusIn = (await signInThroughBot(service, people, gus)).client;
    const his = await invite(gusIn, dock.id, "viewer");
    expect(
      (await admin.call("PUT", `/docks/${dock.id}/co-owners/${gus}/role`, { role: "editor" })).body,
    ).toEqual({
      ok: true,
    });
    const hal = await people.person("Hal");
    expect(await answerLink(people, hal, his.link, "Yes")).toContain("This invitation was withdrawn");
    // Gus leaves: any role may remove itself; he then has nothing here.
    expect((await gusIn.call("DELETE", `/docks/${dock.id}/co-owners/${gus}`)).body).toEqual({ ok: true });
    expect((await gusIn.call("GET", "/docks")).status).toBe(401);
    expect(
      (await admin.call("GET", `/docks/${dock.id}/co-owners`)).body.co_owners.map(
        (m: { id: number }) => m.id,
      ),
    ).toEqual([ADMIN]);
  });
});
