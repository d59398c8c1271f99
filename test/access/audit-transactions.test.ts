import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConsoleClient, signIn } from "../helpers/console-client.ts";
import { dialects, type RunningService, startService } from "../helpers/harness.ts";

const DIALECTS = await dialects();

const OWNER = 6201;
const RULES = { name: "Crew", usageLimit: null, expiresAt: null, approval: false };

/**
 * An audience's change and its audit entry are one transaction (issue 37): an entry exists exactly
 * when its change does. A change that does not happen writes nothing; an entry that cannot be
 * written (a trigger on `dock_audit` in this test's own database refuses it) undoes its change.
 */
describe.each(DIALECTS)("the audience's audit entries, in their change's transaction, on %s", (dialect) => {
  let service: RunningService;
  let owner: ConsoleClient;

  beforeAll(async () => {
    service = await startService(dialect, { OWNERS: String(OWNER) }, { pace: "unpaced" });
    owner = await signIn(service, { id: OWNER, first_name: "Olga" });
  });
  afterAll(async () => {
    await service?.close();
  });

  const newDock = async (name: string) => {
    const created = await owner.call("POST", "/docks", { name, visibility: "approval" });
    expect(created.status).toBe(201);
    return created.body.dock as { id: string };
  };
  /** The Dock's audit log as stored: its actions, oldest first. */
  const actions = async (dockId: string) =>
    (
      await service.db.kysely
        .selectFrom("dock_audit")
        .select("action")
        .where("dock_id", "=", dockId)
        .orderBy("id")
        .execute()
    ).map((row) => row.action);
  /** A chat asks to join the Dock; the request's id. */
  const asks = async (dockId: string, chatId: number) => {
    const outcome = await service.app.audience.requests.ask(
      { dockId, chatId, chatType: "private", userId: chatId, inviteId: null, memberCount: null },
      [OWNER],
    );
    expect(outcome.kind).toBe("sent");
    return (outcome as { request: { id: string } }).request.id;
  };
  const state = async (dockId: string, chatId: number) => service.subscriptions.state(dockId, chatId);
  const requestState = async (requestId: string) =>
    (await service.app.audience.requests.get(requestId))?.state;
  const banned = (dockId: string, chatId: number) => service.app.audience.banned(dockId, chatId);
  /** The notices queued for a chat (a decision or a removal tells it). */
  const noticesFor = async (chatId: number) =>
    (
      await service.db.kysely.selectFrom("bot_notices").select("kind").where("chat_id", "=", chatId).execute()
    ).map((row) => row.kind);

  it("a change that does not happen writes no entry", async () => {
    const audience = service.app.audience;
    const dock = await newDock("Nothing happens");
    const link = await audience.createInvite(dock.id, RULES, OWNER);
    const asked = await asks(dock.id, 7001);
    await audience.decide(dock.id, asked, "declined", OWNER);
    await service.subscriptions.subscribe(dock.id, 7002, "private");
    await audience.remove(dock.id, 7002, OWNER);
    await audience.ban(dock.id, 7003, OWNER);
    await audience.unban(dock.id, 7003, OWNER);
    await audience.revokeInvite(dock.id, link.id, OWNER);
    const before = await actions(dock.id);
    expect(before).toEqual([
      "dock_created",
      "invite_created",
      "request_declined",
      "subscriber_removed",
      "subscriber_banned",
      "subscriber_unbanned",
      "invite_revoked",
    ]);

    // Each again: the visibility it has, a request already decided, a link revoked already, a chat
    // no longer subscribed, not banned; and a ban of a chat banned already.
    expect(await audience.setVisibility(dock.id, "approval", OWNER)).toBe(false);
    expect((await audience.decide(dock.id, asked, "approved", OWNER)).kind).toBe("ended");
    expect(await audience.revokeInvite(dock.id, link.id, OWNER)).toBeUndefined();
    expect(await audience.remove(dock.id, 7002, OWNER)).toBe(false);
    expect(await audience.unban(dock.id, 7003, OWNER)).toBe(false);
    await audience.ban(dock.id, 7004, OWNER);
    expect(await audience.ban(dock.id, 7004, OWNER)).toBe(false);
    // A constraint refuses it: a link for a Dock that is not there.
    await expect(audience.createInvite("dck_missing000000", RULES, OWNER)).rejects.toThrow();
    expect(await actions("dck_missing000000")).toEqual([]);

    expect(await actions(dock.id)).toEqual([...before, "subscriber_banned"]);
    expect(await state(dock.id, 7001)).toBeUndefined();
  });

  it("banning declines the chat's request waiting, and the three entries commit with it", async () => {
    const dock = await newDock("Ban at once");
    await service.subscriptions.subscribe(dock.id, 7101, "private");
    // A chat subscribed and asking at once cannot happen in the bot; a removed one can ask again.
    await service.app.audience.remove(dock.id, 7101, OWNER);
    const asked = await asks(dock.id, 7101);
    expect(await service.app.audience.ban(dock.id, 7101, OWNER)).toBe(true);
    expect(await requestState(asked)).toBe("declined");
    expect(await actions(dock.id)).toEqual([
      "dock_created",
      "subscriber_removed",
      "request_declined",
      "subscriber_banned",
    ]);
  });

  it("an entry that cannot be written undoes its change", { timeout: 120_000 }, async () => {
    const audience = service.app.audience;
    const dock = await newDock("Refused log");
    const link = await audience.createInvite(dock.id, RULES, OWNER);
    const [approve, decline, banAsking] = [
      await asks(dock.id, 7201),
      await asks(dock.id, 7202),
      await asks(dock.id, 7203),
    ];
    await service.subscriptions.subscribe(dock.id, 7204, "private");
    await service.subscriptions.subscribe(dock.id, 7205, "private");
    await audience.ban(dock.id, 7206, OWNER);
    const before = await actions(dock.id);
    const invites = async () => (await audience.invites.list(dock.id)).map((one) => [one.id, one.state]);
    const invitesBefore = await invites();
    const noticesBefore = await Promise.all([7201, 7202, 7203, 7204, 7205].map(noticesFor));

    await refuseEntries(service, dock.id);
    try {
      const refused = /audit refused/;
      await expect(audience.setVisibility(dock.id, "invite", OWNER)).rejects.toThrow(refused);
      await expect(audience.createInvite(dock.id, RULES, OWNER)).rejects.toThrow(refused);
      await expect(audience.revokeInvite(dock.id, link.id, OWNER)).rejects.toThrow(refused);
      await expect(audience.decide(dock.id, approve, "approved", OWNER)).rejects.toThrow(refused);
      await expect(audience.decide(dock.id, decline, "declined", OWNER, { ban: true })).rejects.toThrow(
        refused,
      );
      await expect(audience.remove(dock.id, 7204, OWNER)).rejects.toThrow(refused);
      await expect(audience.ban(dock.id, 7205, OWNER)).rejects.toThrow(refused);
      await expect(audience.ban(dock.id, 7203, OWNER)).rejects.toThrow(refused);
      await expect(audience.unban(dock.id, 7206, OWNER)).rejects.toThrow(refused);

      // Nothing of any of them is left: not the change, not the entry, not what it told.
      expect((await service.app.docks.get(dock.id))?.visibility).toBe("approval");
      expect(await invites()).toEqual(invitesBefore);
      expect(await requestState(approve)).toBe("pending");
      expect(await requestState(decline)).toBe("pending");
      expect(await requestState(banAsking)).toBe("pending");
      expect(await state(dock.id, 7201)).toBeUndefined();
      expect(await state(dock.id, 7204)).toBe("active");
      expect(await state(dock.id, 7205)).toBe("active");
      expect([await banned(dock.id, 7202), await banned(dock.id, 7203), await banned(dock.id, 7205)]).toEqual(
        [false, false, false],
      );
      expect(await banned(dock.id, 7206)).toBe(true);
      expect(await Promise.all([7201, 7202, 7203, 7204, 7205].map(noticesFor))).toEqual(noticesBefore);
      expect(await actions(dock.id)).toEqual(before);
    } finally {
      await allowEntries(service);
    }

    // Written again, each change happens with its entry.
    expect(await audience.setVisibility(dock.id, "invite", OWNER)).toBe(true);
    expect((await audience.decide(dock.id, approve, "approved", OWNER)).kind).toBe("decided");
    expect(await state(dock.id, 7201)).toBe("active");
    expect(await audience.remove(dock.id, 7204, OWNER)).toBe(true);
    expect(await audience.unban(dock.id, 7206, OWNER)).toBe(true);
    expect(await audience.revokeInvite(dock.id, link.id, OWNER)).toBeDefined();
    expect((await actions(dock.id)).slice(before.length)).toEqual([
      "visibility_changed",
      "request_approved",
      "subscriber_removed",
      "subscriber_unbanned",
      "invite_revoked",
    ]);
  });
});

/** A trigger in the test's database that refuses every audit entry of the Dock. */
async function refuseEntries(service: RunningService, dockId: string): Promise<void> {
  const db = service.db.kysely;
  if (service.db.shared) {
    await sql`create function refuse_audit() returns trigger language plpgsql as $$
      begin raise exception 'audit refused'; end $$`.execute(db);
    await sql`create trigger refuse_audit before insert on dock_audit for each row
      when (new.dock_id = ${sql.lit(dockId)}) execute function refuse_audit()`.execute(db);
  } else {
    await sql`create trigger refuse_audit before insert on dock_audit
      when new.dock_id = ${sql.lit(dockId)}
      begin select raise(abort, 'audit refused'); end`.execute(db);
  }
}

async function allowEntries(service: RunningService): Promise<void> {
  const db = service.db.kysely;
  await sql`drop trigger refuse_audit${service.db.shared ? sql` on dock_audit` : sql``}`.execute(db);
  if (service.db.shared) await sql`drop function refuse_audit()`.execute(db);
}
