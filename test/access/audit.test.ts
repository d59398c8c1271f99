import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../src/cli.ts";
import { Retention } from "../../src/delivery/retention.ts";
import { ownerPolicy } from "../../src/domain/owners.ts";
import { EventOutbox } from "../../src/store/events.ts";
import { openDb } from "../../src/store/open.ts";
import { OwnerRepository } from "../../src/store/owners.ts";
import { type ChatMessage, People } from "../helpers/bot-harness.ts";
import { type ConsoleClient, payloadOf, signIn } from "../helpers/console-client.ts";
import { createTestDatabase, dialects, type RunningService, startService } from "../helpers/harness.ts";

const DIALECTS = await dialects();

/** The shape of every secret the service makes: none may be in an audit entry. */
const SECRET_SHAPE = /dn(sk|ss|sc|gh|hk)_[A-Za-z0-9]/;

const OWNER = 6101;
const EDITOR = 6102;
const LEAVER = 6103;

/** The command line run in this process: its exit code and what it wrote. */
async function cli(env: Record<string, string>, ...args: string[]) {
  let out = "";
  let err = "";
  const code = await runCli(args, {
    env: { LOG_LEVEL: "silent", ...env },
    stdout: { write: (text: string) => (out += text) },
    stderr: { write: (text: string) => (err += text) },
    logs: { write: () => {} },
  });
  return { code, out, err };
}

describe.each(DIALECTS)("a Dock's audit log on %s", (dialect) => {
  let service: RunningService;
  let owner: ConsoleClient;

  beforeAll(async () => {
    service = await startService(dialect, { OWNERS: String(OWNER) }, { pace: "unpaced" });
    owner = await signIn(service, { id: OWNER, first_name: "Olga", username: "olga_ops" });
  });
  afterAll(async () => {
    await service?.close();
  });

  /** Someone accepts an invitation with `role` on the Dock as the bot does on Yes; the link's token. */
  const joins = async (dockId: string, role: string, person: number, firstName: string) => {
    const made = await owner.call("POST", `/docks/${dockId}/co-owners/invites`, { role });
    expect(made.status).toBe(201);
    const token = payloadOf(made.body.link).slice("coown_".length);
    const joined = await service.app.owners.redeem("co_owner", token, { id: person, first_name: firstName });
    expect(joined).toMatchObject({ result: "co_owner" });
    return token;
  };

  /** Every row of the Dock's log, as stored. */
  const rows = (dockId: string) =>
    service.db.kysely
      .selectFrom("dock_audit")
      .selectAll()
      .where("dock_id", "=", dockId)
      .orderBy("id")
      .execute();

  it("records every change made in the console, once, with who made it, and never a secret", async () => {
    const secrets: string[] = [owner.session as string, owner.csrf as string];
    const created = await owner.call("POST", "/docks", { name: "Payments", description: "card events" });
    const dock = created.body.dock;
    secrets.push(dock.secret_key, dock.signing_secret);
    const on = (path: string) => `/docks/${dock.id}${path}`;
    const ok = async (method: string, path: string, body?: unknown) => {
      const answer = await owner.call(method, on(path), body);
      expect(answer.status, `${method} ${path}: ${JSON.stringify(answer.body)}`).toBeLessThan(300);
      return answer.body;
    };

    await ok("PATCH", "", { name: "Payments EU", description: "card events, EU", link: dock.link });
    // Saving what is already there changes nothing, and records nothing.
    await ok("PATCH", "", { name: "Payments EU" });
    await ok("PUT", "/integrations", {
      inbound_format: "template",
      template: { text: "{{ payload.event }}" },
    });
    secrets.push((await ok("POST", "/rotate-secret")).dock.secret_key);
    secrets.push((await ok("POST", "/rotate-signing-secret")).dock.signing_secret);
    secrets.push((await ok("POST", "/hook-token")).dock.hook_token);
    await ok("DELETE", "/hook-token");
    // Removing a hook URL the Dock does not have: nothing happened.
    await ok("DELETE", "/hook-token");
    const ci = await ok("POST", "/credentials", { name: "ci", scope: "send" });
    const github = await ok("POST", "/credentials", { name: "GitHub org", scope: "github" });
    secrets.push(ci.secret, github.secret);
    await ok("DELETE", `/credentials/${ci.credential.id}`);
    const test = await ok("POST", "/test-message");
    const chat = 990_001;
    await service.subscriptions.subscribe(dock.id, chat, "private");
    await ok("DELETE", `/subscribers/${chat}`);
    const withdrawn = await ok("POST", "/co-owners/invites", { role: "editor" });
    secrets.push(payloadOf(withdrawn.link).slice("coown_".length));
    await ok("DELETE", `/co-owners/invites/${withdrawn.invite.id}`);
    secrets.push(await joins(dock.id, "viewer", EDITOR, "Ed"));
    await ok("PUT", `/co-owners/${EDITOR}/role`, { role: "approver" });
    await ok("DELETE", `/co-owners/${EDITOR}`);
    secrets.push(await joins(dock.id, "viewer", LEAVER, "Lea"));
    const leaver = await signIn(service, { id: LEAVER, first_name: "Lea" });
    secrets.push(leaver.session as string);
    expect((await leaver.call("DELETE", on(`/co-owners/${LEAVER}`))).status).toBe(200);

    const stored = await rows(dock.id);
    expect(stored.map((row) => [row.action, row.actor === null ? null : Number(row.actor)])).toEqual([
      ["dock_created", OWNER],
      ["settings_changed", OWNER],
      ["settings_changed", OWNER],
      ["secret_key_rotated", OWNER],
      ["signing_secret_rotated", OWNER],
      ["hook_token_rotated", OWNER],
      ["hook_token_revoked", OWNER],
      ["credential_created", OWNER],
      ["credential_created", OWNER],
      ["credential_revoked", OWNER],
      ["test_message_sent", OWNER],
      ["subscriber_removed", OWNER],
      ["co_owner_invited", OWNER],
      ["co_owner_invite_withdrawn", OWNER],
      ["co_owner_invited", OWNER],
      ["co_owner_added", EDITOR],
      ["co_owner_role_changed", OWNER],
      ["co_owner_removed", OWNER],
      ["co_owner_invited", OWNER],
      ["co_owner_added", LEAVER],
      ["co_owner_removed", LEAVER],
    ]);
    const details = stored.map((row) => (row.detail === null ? {} : JSON.parse(row.detail)));
    expect(details.slice(0, 3)).toEqual([
      { name: "Payments", visibility: "open" },
      { fields: "name,description" },
      { fields: "inbound_format,template" },
    ]);
    expect(details[7]).toEqual({ credential: ci.credential.id, name: "ci", scope: "send" });
    expect(details[8]).toEqual({ credential: github.credential.id, name: "GitHub org", scope: "github" });
    expect(details[9]).toEqual({ credential: ci.credential.id, name: "ci", scope: "send" });
    expect(details[10]).toEqual({ message: test.message_id });
    expect(details[11]).toEqual({ chat_id: chat });
    expect(details[12]).toEqual({ invite: withdrawn.invite.id, role: "editor" });
    expect(details[15]).toMatchObject({ user: EDITOR, role: "viewer", invited_by: OWNER });
    expect(details[16]).toEqual({ user: EDITOR, from: "viewer", to: "approver" });
    expect(details[17]).toEqual({ user: EDITOR, role: "approver" });

    // Not one secret, token or link that holds one, whatever its spelling.
    const everything = JSON.stringify(stored);
    for (const secret of secrets) expect(everything).not.toContain(secret);
    expect(everything).not.toMatch(SECRET_SHAPE);
    expect(everything).not.toContain("coown_");

    // The console reads it newest first, with names, a page at a time.
    const first = await owner.call("GET", on("/audit?limit=5"));
    expect(first.body.entries.map((e: { action: string }) => e.action)).toEqual([
      "co_owner_removed",
      "co_owner_added",
      "co_owner_invited",
      "co_owner_removed",
      "co_owner_role_changed",
    ]);
    expect(first.body.entries[0].actor).toEqual({ id: LEAVER, first_name: "Lea", username: null });
    expect(first.body.people[String(EDITOR)]).toEqual({ first_name: "Ed", username: null });
    const second = await owner.call("GET", on(`/audit?limit=5&before=${first.body.next_before}`));
    expect(second.body.entries[0].action).toBe("co_owner_added");
    expect(second.body.entries[0].id).toBeLessThan(first.body.entries[4].id);
    const last = await owner.call("GET", on(`/audit?limit=200&before=${second.body.next_before}`));
    expect(last.body.next_before).toBeNull();
    expect(first.body.entries.length + second.body.entries.length + last.body.entries.length).toBe(
      stored.length,
    );
    for (const query of ["limit=0", "limit=201", "limit=x", "before=abc", "before=-1"]) {
      const refused = await owner.call("GET", on(`/audit?${query}`));
      expect(refused.status, query).toBe(400);
      expect(refused.body.error.code, query).toBe("invalid_request");
    }
    // Lea left the one Dock shared with her on a closed instance: she is signed out, and a stranger
    // is told there is no such Dock.
    expect((await leaver.call("GET", on("/audit"))).body.error.code).toBe("not_signed_in");
    await service.app.owners.add(EDITOR, "owner");
    const stranger = await signIn(service, { id: EDITOR, first_name: "Ed" });
    expect((await stranger.call("GET", on("/audit"))).status).toBe(404);
  });

  it("records every change to the audience — by the owner in the console, by an approver in the bot — with who made it, and never a link's token", {
    timeout: 120_000,
  }, async () => {
    const people = new People(`${service.url}/sandbox`);
    const opened = async (name: string) => {
      const id = await people.person(name);
      await people.botReply(id, await people.start(id), "the welcome");
      return id;
    };
    const [ada, rex, sue] = [await opened("Ada"), await opened("Rex"), await opened("Sue")];
    /** `who` follows the invite link and asks to join; the copy of the request Ada gets. */
    const asks = async (who: number, link: string): Promise<ChatMessage> => {
      const before = (await people.history(ada)).at(-1) as ChatMessage;
      const prompt = await people.botReply(who, await people.start(who, payloadOf(link)), "the ask prompt");
      await people.press(who, prompt, "Yes");
      await people.edited(who, prompt, "the request to be sent");
      return people.botReply(ada, before, "the approver's copy of the request");
    };

    const created = await owner.call("POST", "/docks", { name: "Pager", visibility: "invite" });
    const dock = created.body.dock;
    const on = (path: string) => `/docks/${dock.id}${path}`;
    const ok = async (method: string, path: string, body?: unknown) => {
      const answer = await owner.call(method, on(path), body);
      expect(answer.status, `${method} ${path}: ${JSON.stringify(answer.body)}`).toBeLessThan(300);
      return answer.body;
    };
    await ok("PATCH", "", { visibility: "approval" });
    const crew = (await ok("POST", "/invites", { name: "Crew" })).invite;
    const token = payloadOf(crew.link).slice("join_".length);
    const adaToken = await joins(dock.id, "approver", ada, "Ada");

    // Ada, an approver, approves Rex from her copy in the bot; the owner declines Sue in the console.
    const rexCopy = await asks(rex, crew.link);
    await people.press(ada, rexCopy, "Approve");
    expect((await people.edited(ada, rexCopy)).text).toContain("✔ Approved by Ada");
    const sueCopy = await asks(sue, crew.link);
    // Made a viewer, Ada's copy no longer decides: refused, and nothing recorded.
    await ok("PUT", `/co-owners/${ada}/role`, { role: "viewer" });
    const refused = await people.callbackAnswer(await people.press(ada, sueCopy, "Approve"));
    expect(refused).toEqual({
      text: "Only the Dock's owners and approvers can decide this request.",
      show_alert: true,
    });
    const [waiting] = (await ok("GET", "/requests")).requests;
    expect(waiting).toMatchObject({ chat_id: sue, state: "pending" });
    await ok("POST", `/requests/${waiting.id}/decline`);
    await ok("DELETE", `/subscribers/${rex}`);
    await ok("POST", "/bans", { chat_id: sue });
    await ok("DELETE", `/bans/${sue}`);
    // A group, banned: the bot knows its title from the moment it was added.
    const group = await people.control<{ id: number }>("POST", "/groups", {
      title: "Night ops",
      type: "group",
      members: [ada],
      admins: [ada],
    });
    await people.control("POST", `/chats/${group.id}/bot`, { from: ada, status: "member" });
    await people.waitFor("the bot to learn the group's title", async () => {
      const row = await service.db.kysely
        .selectFrom("chats")
        .select("title")
        .where("chat_id", "=", group.id)
        .executeTakeFirst();
      return row?.title;
    });
    await ok("POST", "/bans", { chat_id: group.id });
    await ok("DELETE", `/invites/${crew.id}`);

    const stored = await rows(dock.id);
    expect(stored.map((row) => [row.action, row.actor === null ? null : Number(row.actor)])).toEqual([
      ["dock_created", OWNER],
      ["visibility_changed", OWNER],
      ["invite_created", OWNER],
      ["co_owner_invited", OWNER],
      ["co_owner_added", ada],
      ["request_approved", ada],
      ["co_owner_role_changed", OWNER],
      ["request_declined", OWNER],
      ["subscriber_removed", OWNER],
      ["subscriber_banned", OWNER],
      ["subscriber_unbanned", OWNER],
      ["subscriber_banned", OWNER],
      ["invite_revoked", OWNER],
    ]);
    const details = stored.map((row) => (row.detail === null ? {} : JSON.parse(row.detail)));
    expect(details[0]).toEqual({ name: "Pager", visibility: "invite" });
    expect(details[1]).toEqual({ from: "invite", to: "approval" });
    expect(details[2]).toEqual({
      invite_id: crew.id,
      name: "Crew",
      usage_limit: null,
      expires_at: null,
      approval: false,
    });
    expect(details[5]).toMatchObject({ chat_id: rex, invite_id: crew.id });
    expect(details[7]).toMatchObject({ request_id: waiting.id, chat_id: sue, invite_id: crew.id });
    expect(details.slice(8, 11)).toEqual([{ chat_id: rex }, { chat_id: sue }, { chat_id: sue }]);
    // Uses count who joined through it: Rex (Sue was declined).
    expect(details[11]).toEqual({ chat_id: group.id });
    expect(details[12]).toEqual({ invite_id: crew.id, name: "Crew", uses: 1 });
    const everything = JSON.stringify(stored);
    for (const secret of [token, adaToken, dock.secret_key]) expect(everything).not.toContain(secret);
    expect(everything).not.toMatch(SECRET_SHAPE);

    // The console's page names the approver who acted and the people each entry is about.
    const page = (await owner.call("GET", on("/audit"))).body;
    const approved = page.entries.find((entry: { action: string }) => entry.action === "request_approved");
    expect(approved.actor).toEqual({ id: ada, first_name: "Ada", username: null });
    expect(page.people[String(rex)]).toEqual({ first_name: "Rex", username: null });
    expect(page.people[String(sue)]).toEqual({ first_name: "Sue", username: null });
    expect(page.groups).toEqual({ [String(group.id)]: "Night ops" });
  });

  it("an entry whose detail holds something shaped like a secret keeps it out", async () => {
    const dock = (await owner.call("POST", "/docks", { name: "Careless" })).body.dock;
    await service.app.audit.record({
      dockId: dock.id,
      actor: OWNER,
      action: "settings_changed",
      detail: { fields: "name", note: `key ${dock.secret_key}`, count: 2 },
    });
    const stored = await rows(dock.id);
    expect(JSON.parse(stored.at(-1)?.detail as string)).toEqual({
      fields: "name",
      note: "<redacted>",
      count: 2,
    });
  });

  it("is kept as long as the messages (RETENTION_DAYS) and goes with its Dock", async () => {
    const kept = (await owner.call("POST", "/docks", { name: "Kept" })).body.dock;
    const gone = (await owner.call("POST", "/docks", { name: "Gone" })).body.dock;
    await service.db.kysely
      .updateTable("dock_audit")
      .set({ at: Date.now() - 40 * 86_400_000 })
      .where("dock_id", "=", kept.id)
      .execute();
    await owner.call("POST", `/docks/${kept.id}/rotate-secret`);
    const retention = new Retention({
      outbox: service.app.outbox,
      events: new EventOutbox(service.db),
      loginTokens: service.app.loginTokens,
      activity: service.app.activity,
      audit: service.app.audit,
      retentionMs: 30 * 86_400_000,
      log: service.app.server.log,
    });
    await retention.prune();
    expect((await rows(kept.id)).map((row) => row.action)).toEqual(["secret_key_rotated"]);
    expect((await owner.call("DELETE", `/docks/${gone.id}`)).status).toBe(200);
    expect(await rows(gone.id)).toEqual([]);
  });
});

describe.each(DIALECTS)("the operator's command line and the audit log on %s", (dialect) => {
  it("records the operator's changes (via cli) and `docks audit` prints the log, as text and --json", async () => {
    const database = await createTestDatabase(dialect, { migrated: true });
    const env = { DATABASE_URL: database.url, DATA_DIR: database.dataDir };
    try {
      const json = async (...args: string[]) => {
        const result = await cli(env, ...args, "--json");
        expect(result.err, args.join(" ")).toBe("");
        expect(result.code, args.join(" ")).toBe(0);
        return JSON.parse(result.out);
      };
      const dock = await json("docks", "create", "--owner", String(OWNER), "--name", "Backups");
      await json("docks", "update", dock.id, "--description", "nightly");
      await json("docks", "rotate-secret", dock.id);
      const credential = await json("docks", "credentials", "create", dock.id, "--name", "cron");
      await json("docks", "credentials", "revoke", dock.id, credential.id);
      const invite = await json("docks", "co-owners", "invite", dock.id, "--role", "editor");
      expect(invite).toMatchObject({
        role: "editor",
        command: expect.stringMatching(/^\/start coown_[A-Za-z0-9]{22}$/),
      });
      expect(invite.link).toMatch(/\/sandbox\?start=coown_[A-Za-z0-9]{22}$/);

      // Someone says Yes to it in the bot (the same store call the bot makes).
      const db = await openDb(database.url);
      try {
        const owners = new OwnerRepository(db, ownerPolicy(null, true));
        const token = payloadOf(invite.link).slice("coown_".length);
        expect(await owners.redeem("co_owner", token, { id: EDITOR, first_name: "Ed" })).toMatchObject({
          result: "co_owner",
          role: "editor",
        });
      } finally {
        await db.close();
      }
      const team = await json("docks", "co-owners", "list", dock.id);
      expect(team.co_owners.map((m: { id: number; role: string }) => [m.id, m.role])).toEqual([
        [OWNER, "owner"],
        [EDITOR, "editor"],
      ]);
      await json("docks", "co-owners", "role", dock.id, String(EDITOR), "viewer");
      const withdrawn = await json("docks", "co-owners", "invite", dock.id, "--role", "viewer");
      await json("docks", "co-owners", "withdraw", dock.id, withdrawn.id);
      await json("docks", "co-owners", "remove", dock.id, String(EDITOR));
      await json("docks", "update", dock.id, "--visibility", "invite");
      const link = await json("docks", "invite", dock.id, "--name", "Ops");
      await json("docks", "revoke-invite", dock.id, link.id);
      const refused = await cli(env, "docks", "co-owners", "remove", dock.id, String(OWNER));
      expect(refused.code).toBe(2);
      expect(refused.err).toContain("keeps the role owner");
      expect((await cli(env, "docks", "co-owners", "role", dock.id, String(EDITOR), "boss")).code).toBe(2);

      const log = await json("docks", "audit", dock.id);
      expect(log.entries.map((e: { action: string; actor: unknown }) => [e.action, e.actor])).toEqual([
        ["invite_revoked", null],
        ["invite_created", null],
        ["visibility_changed", null],
        ["co_owner_removed", null],
        ["co_owner_invite_withdrawn", null],
        ["co_owner_invited", null],
        ["co_owner_role_changed", null],
        ["co_owner_added", { id: EDITOR, first_name: "Ed", username: null }],
        ["co_owner_invited", null],
        ["credential_revoked", null],
        ["credential_created", null],
        ["secret_key_rotated", null],
        ["settings_changed", null],
        ["dock_created", null],
      ]);
      for (const entry of log.entries.filter((e: { actor: unknown }) => e.actor === null)) {
        expect(entry.detail.via, entry.action).toBe("cli");
      }
      expect(JSON.stringify(log)).not.toMatch(SECRET_SHAPE);
      expect(JSON.stringify(log)).not.toContain(payloadOf(invite.link).slice("coown_".length));

      const text = await cli(env, "docks", "audit", dock.id, "--limit", "3");
      expect(text.code).toBe(0);
      const lines = text.out.trim().split("\n");
      expect(lines[0]).toMatch(/^ID\s+WHEN\s+WHO\s+WHAT$/);
      expect(lines[1]).toMatch(
        new RegExp(`command line\\s+invite_revoked invite_id=${link.id} name=Ops uses=0$`),
      );
      expect(lines[2]).toContain("invite_created invite_id=");
      expect(lines.at(-1)).toMatch(
        new RegExp(`^older entries: dock-notify docks audit ${dock.id} --before \\d+$`),
      );
      const older = lines.at(-1)?.split(" ").at(-1) as string;
      const rest = await cli(env, "docks", "audit", dock.id, "--before", older);
      expect(rest.out).toContain(`Ed (${EDITOR})`);
      expect(rest.out).toMatch(new RegExp(`command line\\s+co_owner_removed user=${EDITOR} role=viewer\n`));
      expect(rest.out).toContain("dock_created name=Backups");
      expect((await cli(env, "docks", "audit", "NoSuchDock")).code).toBe(1);
      expect((await cli(env, "docks", "audit", dock.id, "--limit", "0")).code).toBe(2);
    } finally {
      await database.drop();
    }
  });
});
