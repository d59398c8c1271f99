import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allowedActions, type DockRole } from "../../src/domain/dock-roles.ts";
import { type ConsoleClient, payloadOf, signIn } from "../helpers/console-client.ts";
import { asDock, dialects, type RunningService, startService } from "../helpers/harness.ts";

const DIALECTS = await dialects();

/** Who calls: the Dock's own owner, a co-owner of each role, and an owner of the instance with no role on it. */
type Caller = "dock owner" | DockRole | "stranger";
const CALLERS: Caller[] = ["dock owner", "owner", "editor", "approver", "viewer", "stranger"];
const ID: Record<Caller, number> = {
  "dock owner": 7101,
  owner: 7102,
  editor: 7103,
  approver: 7104,
  viewer: 7105,
  stranger: 7106,
};
const CO_OWNERS: DockRole[] = ["owner", "editor", "approver", "viewer"];

/** What a call on a Dock needs made beforehand (a credential to revoke, a subscriber to remove…). */
interface Setup {
  dockId: string;
  /** Someone given `role` on the Dock, through an invitation they accept as the bot would. */
  coOwner(role: DockRole): Promise<number>;
}

interface Row {
  /** What is tried, as the table of docs/console.md names it. */
  action: string;
  method: string;
  /** The path under /console/api/docks/{id}, made for each call (it may need something made first). */
  path: (setup: Setup) => Promise<string> | string;
  /** The body of each call (a change must change something each time, to be recorded). */
  body?: () => unknown;
  /** The roles that may (the Dock's own owner always may). */
  allowed: DockRole[];
  status: number;
  /** A Dock of its own for each call: the call takes the Dock away. */
  fresh?: boolean;
  /** Whether an allowed call writes an entry in the Dock's audit log. */
  audited: boolean;
}

const EVERYONE: DockRole[] = ["owner", "editor", "approver", "viewer"];
const EDITORS: DockRole[] = ["owner", "editor"];

let chats = 0;
let people = 0;
let changes = 0;

/** A message the Dock's application sends through the send API; its id. */
async function sent(service: RunningService, dockId: string): Promise<string> {
  const dock = await service.app.docks.get(dockId);
  const answer = await asDock(
    service.url,
    { id: dockId, secret_key: dock?.secretKey as string },
    "POST",
    "/webhook",
    {
      msg: "Disk 91%",
    },
  );
  expect(answer.status).toBe(202);
  return answer.body.message_id;
}

/** Every route of the console on a Dock, and who may call it. */
function table(service: () => RunningService): Row[] {
  return [
    {
      action: "read the Dock",
      method: "GET",
      path: () => "",
      allowed: EVERYONE,
      status: 200,
      audited: false,
    },
    {
      action: "read its activity",
      method: "GET",
      path: () => "/activity",
      allowed: EVERYONE,
      status: 200,
      audited: false,
    },
    {
      action: "read its history",
      method: "GET",
      path: () => "/messages",
      allowed: EVERYONE,
      status: 200,
      audited: false,
    },
    {
      action: "read its co-owners",
      method: "GET",
      path: () => "/co-owners",
      allowed: EVERYONE,
      status: 200,
      audited: false,
    },
    {
      action: "read its refused requests",
      method: "GET",
      path: () => "/refused",
      allowed: EVERYONE,
      status: 200,
      audited: false,
    },
    {
      action: "read its audit log",
      method: "GET",
      path: () => "/audit",
      allowed: EVERYONE,
      status: 200,
      audited: false,
    },
    {
      action: "change its fields",
      method: "PATCH",
      path: () => "",
      body: () => ({ description: `changed ${++changes}` }),
      allowed: EDITORS,
      status: 200,
      audited: true,
    },
    {
      action: "change its integrations",
      method: "PUT",
      path: () => "/integrations",
      body: () => ({ template: { text: `{{ payload.n }} ${++changes}` } }),
      allowed: EDITORS,
      status: 200,
      audited: true,
    },
    {
      action: "preview a sample",
      method: "POST",
      path: () => "/integrations/preview",
      body: () => ({ format: "slack", sample: '{"text":"hi"}' }),
      allowed: EDITORS,
      status: 200,
      audited: false,
    },
    {
      action: "list its credentials",
      method: "GET",
      path: () => "/credentials",
      allowed: EDITORS,
      status: 200,
      audited: false,
    },
    {
      action: "make a credential",
      method: "POST",
      path: () => "/credentials",
      body: () => ({ name: "ci", scope: "send" }),
      allowed: EDITORS,
      status: 201,
      audited: true,
    },
    {
      action: "revoke a credential",
      method: "DELETE",
      path: async ({ dockId }) =>
        `/credentials/${(await service().app.docks.credentials.create(dockId, "old", "send")).credential.id}`,
      allowed: EDITORS,
      status: 200,
      audited: true,
    },
    {
      action: "rotate the secret key",
      method: "POST",
      path: () => "/rotate-secret",
      allowed: EDITORS,
      status: 200,
      audited: true,
    },
    {
      action: "rotate the signing secret",
      method: "POST",
      path: () => "/rotate-signing-secret",
      allowed: EDITORS,
      status: 200,
      audited: true,
    },
    {
      action: "make a hook URL",
      method: "POST",
      path: () => "/hook-token",
      allowed: EDITORS,
      status: 200,
      audited: true,
    },
    {
      action: "remove the hook URL",
      method: "DELETE",
      path: async ({ dockId }) => {
        await service().app.docks.rotateHookToken(dockId);
        return "/hook-token";
      },
      allowed: EDITORS,
      status: 200,
      audited: true,
    },
    {
      action: "send a test message",
      method: "POST",
      path: () => "/test-message",
      allowed: EDITORS,
      status: 202,
      audited: true,
    },
    {
      action: "edit a message's text",
      method: "PATCH",
      path: async ({ dockId }) => `/messages/${await sent(service(), dockId)}`,
      body: () => ({ text: `Edited ${++changes}` }),
      allowed: EDITORS,
      status: 202,
      audited: true,
    },
    {
      action: "delete a message from every chat",
      method: "DELETE",
      path: async ({ dockId }) => `/messages/${await sent(service(), dockId)}`,
      allowed: EDITORS,
      status: 202,
      audited: true,
    },
    {
      action: "list its subscribers",
      method: "GET",
      path: () => "/subscribers",
      allowed: ["owner", "approver"],
      status: 200,
      audited: false,
    },
    {
      action: "remove a subscriber",
      method: "DELETE",
      path: async ({ dockId }) => {
        const chat = 880_000 + ++chats;
        await service().subscriptions.subscribe(dockId, chat, "private");
        return `/subscribers/${chat}`;
      },
      allowed: ["owner", "approver"],
      status: 200,
      audited: true,
    },
    {
      action: "invite a co-owner",
      method: "POST",
      path: () => "/co-owners/invites",
      body: () => ({ role: "viewer" }),
      allowed: ["owner"],
      status: 201,
      audited: true,
    },
    {
      action: "withdraw an invitation",
      method: "DELETE",
      path: async ({ dockId }) =>
        `/co-owners/invites/${(await service().app.owners.createCoOwnerInvite(dockId, "viewer", ID["dock owner"])).invite.id}`,
      allowed: ["owner"],
      status: 200,
      audited: true,
    },
    {
      action: "change a co-owner's role",
      method: "PUT",
      path: async (setup) => `/co-owners/${await setup.coOwner("viewer")}/role`,
      body: () => ({ role: "approver" }),
      allowed: ["owner"],
      status: 200,
      audited: true,
    },
    {
      action: "remove a co-owner",
      method: "DELETE",
      path: async (setup) => `/co-owners/${await setup.coOwner("viewer")}`,
      allowed: ["owner"],
      status: 200,
      audited: true,
    },
    {
      action: "delete the Dock",
      method: "DELETE",
      path: () => "",
      allowed: ["owner"],
      status: 200,
      fresh: true,
      audited: false,
    },
  ];
}

describe.each(DIALECTS)("what each role on a Dock may do through the console API, on %s", (dialect) => {
  let service: RunningService;
  const clients = new Map<Caller, ConsoleClient>();
  const owner = () => clients.get("dock owner") as ConsoleClient;

  /** Someone given `role` on the Dock through an invitation, accepted as the bot does on Yes. */
  const giveRole = async (dockId: string, role: DockRole, person: number) => {
    const made = await owner().call("POST", `/docks/${dockId}/co-owners/invites`, { role });
    expect(made.status).toBe(201);
    const token = payloadOf(made.body.link).slice("coown_".length);
    expect(await service.app.owners.redeem("co_owner", token, { id: person })).toMatchObject({
      result: "co_owner",
      role,
    });
  };

  /** A Dock of the Dock owner's with a co-owner of each role. */
  const teamDock = async (name: string): Promise<Setup> => {
    const made = await owner().call("POST", "/docks", { name });
    expect(made.status).toBe(201);
    const dockId = made.body.dock.id as string;
    for (const role of CO_OWNERS) await giveRole(dockId, role, ID[role]);
    return {
      dockId,
      coOwner: async (role) => {
        const person = 7200 + ++people;
        await giveRole(dockId, role, person);
        return person;
      },
    };
  };

  const auditCount = async (dockId: string) =>
    Number(
      (
        await service.db.kysely
          .selectFrom("dock_audit")
          .select((eb) => eb.fn.countAll<number>().as("n"))
          .where("dock_id", "=", dockId)
          .executeTakeFirstOrThrow()
      ).n,
    );

  beforeAll(async () => {
    // A closed instance: its administrator owns the Docks; the co-owners get in for theirs alone.
    service = await startService(dialect, { OWNERS: String(ID["dock owner"]) }, { pace: "unpaced" });
    clients.set("dock owner", await signIn(service, { id: ID["dock owner"], first_name: "Dora" }));
    await teamDock("Seed");
    await service.app.owners.add(ID.stranger, "owner");
    for (const caller of CALLERS.filter((c) => c !== "dock owner")) {
      clients.set(caller, await signIn(service, { id: ID[caller], first_name: caller }));
    }
  });
  afterAll(async () => {
    await service?.close();
  });

  it("each role's Dock shows what it may do, and only a role that manages the credentials gets the secrets", async () => {
    const { dockId } = await teamDock("Shown");
    for (const caller of CALLERS) {
      const answer = await (clients.get(caller) as ConsoleClient).call("GET", `/docks/${dockId}`);
      if (caller === "stranger") {
        expect(answer.status, caller).toBe(404);
        continue;
      }
      const role: DockRole = caller === "dock owner" ? "owner" : caller;
      const dock = answer.body.dock;
      expect(dock.role, caller).toBe(role);
      expect(dock.may, caller).toEqual(allowedActions(role));
      const secrets = role === "owner" || role === "editor";
      expect(dock.secret_key === null, caller).toBe(!secrets);
      expect(dock.signing_secret === null, caller).toBe(!secrets);
      expect(dock.examples === null, caller).toBe(!secrets);
      expect(dock.integrations.length === 0, caller).toBe(!secrets);
      const listed = (await (clients.get(caller) as ConsoleClient).call("GET", "/docks")).body.docks;
      expect(listed.find((d: { id: string }) => d.id === dockId)?.role, caller).toBe(role);
    }
  });

  for (const row of table(() => service)) {
    it(`${row.action} (${row.method}): the Dock's owner and ${row.allowed.join(", ")} may, others get 403, strangers 404`, async () => {
      let shared: Setup | null = null;
      for (const caller of CALLERS) {
        const setup: Setup =
          row.fresh || shared === null ? await teamDock(`${row.action} (${caller})`) : shared;
        if (!row.fresh) shared = setup;
        const path = `/docks/${setup.dockId}${await row.path(setup)}`;
        const before = await auditCount(setup.dockId);
        const answer = await (clients.get(caller) as ConsoleClient).call(row.method, path, row.body?.());
        const what = `${caller}: ${row.method} ${path}`;
        if (caller === "stranger") {
          expect(answer.status, what).toBe(404);
          expect(answer.body.error.code, what).toBe("not_found");
        } else if (caller === "dock owner" || row.allowed.includes(caller)) {
          expect(answer.status, `${what}: ${JSON.stringify(answer.body)}`).toBe(row.status);
          if (!row.fresh) expect(await auditCount(setup.dockId), what).toBe(before + (row.audited ? 1 : 0));
        } else {
          expect(answer.status, what).toBe(403);
          expect(answer.body.error.code, what).toBe("insufficient_role");
        }
        // A refusal changed nothing: not a line in the audit log.
        if (answer.status >= 400) expect(await auditCount(setup.dockId), what).toBe(before);
      }
    });
  }

  it("any co-owner may leave a Dock; its own owner cannot", async () => {
    const { dockId } = await teamDock("Left");
    for (const role of CO_OWNERS) {
      const left = await (clients.get(role) as ConsoleClient).call(
        "DELETE",
        `/docks/${dockId}/co-owners/${ID[role]}`,
      );
      expect(left.body, role).toEqual({ ok: true });
      expect((await (clients.get(role) as ConsoleClient).call("GET", `/docks/${dockId}`)).status, role).toBe(
        404,
      );
    }
    const stays = await owner().call("DELETE", `/docks/${dockId}/co-owners/${ID["dock owner"]}`);
    expect(stays.status).toBe(409);
    expect(stays.body.error.code).toBe("dock_owner_fixed");
  });
});
