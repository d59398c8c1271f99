import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCli } from "../../src/cli.ts";

/** The command line run in this process: its exit code and what it wrote. */
async function cli(env: Record<string, string>, ...args: string[]) {
  let out = "";
  let err = "";
  const code = await runCli(args, {
    env,
    stdout: { write: (text: string) => (out += text) },
    stderr: { write: (text: string) => (err += text) },
    logs: { write: () => {} },
  });
  return { code, out, err };
}

/** Private Docks (issue 37) as an operator runs them: who can subscribe, invite links. */
describe("dock-notify CLI: private Docks", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "dock-notify-cli-private-"));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  const run = (...args: string[]) => cli({ DATA_DIR: dataDir, LOG_LEVEL: "silent" }, ...args);
  const runJson = async (...args: string[]) => {
    const result = await run(...args, "--json");
    expect(result.err).toBe("");
    expect(result.code).toBe(0);
    return JSON.parse(result.out);
  };

  it("creates a Dock open by default or private, changes who can subscribe, and shows it", async () => {
    const open = await runJson("docks", "create", "--owner", "4242", "--name", "Open");
    expect(open.visibility).toBe("open");
    const quiet = await runJson(
      "docks",
      "create",
      "--owner",
      "4242",
      "--name",
      "Quiet",
      "--visibility",
      "invite",
    );
    expect(quiet.visibility).toBe("invite");
    expect((await runJson("docks", "update", quiet.id, "--visibility", "approval")).visibility).toBe(
      "approval",
    );
    // Another field changed alone leaves it as it is.
    expect((await runJson("docks", "update", quiet.id, "--name", "Quieter")).visibility).toBe("approval");
    expect((await run("docks", "show", quiet.id)).out).toContain(
      "Who can subscribe: approval (the owner approves each request)",
    );
    const wrong = await run("docks", "update", quiet.id, "--visibility", "secret");
    expect(wrong.code).toBe(2);
    expect(wrong.err).toMatch(/--visibility.*secret.*open, invite, approval/);
  });

  it("makes an invite link (JSON field link), lists it with its uses, revokes it; refuses bad settings", async () => {
    const dock = await runJson(
      "docks",
      "create",
      "--owner",
      "4242",
      "--name",
      "Invited",
      "--visibility",
      "invite",
    );
    const made = await runJson(
      "docks",
      "invite",
      dock.id,
      "--name",
      "Ops team",
      "--uses",
      "5",
      "--expires",
      "7d",
      "--approval",
    );
    expect(made).toMatchObject({
      name: "Ops team",
      usage_limit: 5,
      uses: 0,
      approval: true,
      state: "active",
      creator_id: null,
    });
    expect(made.id).toMatch(/^dinv_/);
    expect(made.link).toMatch(/\/sandbox\?start=join_[A-Za-z0-9]{22}$/);
    expect(made.link).not.toContain(dock.id);
    const days = (Date.parse(made.expires_at) - Date.parse(made.created_at)) / 86_400_000;
    expect(days).toBeCloseTo(7, 3);

    const text = await run("docks", "invite", dock.id);
    expect(text.code).toBe(0);
    expect(text.out).toMatch(/^Invite link dinv_\S+ for "Invited":\n {2}http\S+start=join_[A-Za-z0-9]{22}\n/);

    const listed = await runJson("docks", "invites", dock.id);
    expect(listed.map((l: { id: string }) => l.id)).toContain(made.id);
    expect(listed.find((l: { id: string }) => l.id === made.id).link).toBe(made.link);
    expect((await run("docks", "invites", dock.id)).out).toContain("0/5  Ops team");

    expect(await runJson("docks", "revoke-invite", dock.id, made.id)).toEqual({ id: made.id, revoked: true });
    const again = await run("docks", "revoke-invite", dock.id, made.id);
    expect(again.code).toBe(1);
    expect(again.err).toContain(`has no invite link "${made.id}" that still works`);
    expect(
      (await runJson("docks", "invites", dock.id)).find((l: { id: string }) => l.id === made.id).state,
    ).toBe("revoked");

    const bad = await run("docks", "invite", dock.id, "--uses", "0", "--name", "x".repeat(40));
    expect(bad.code).toBe(2);
    expect(bad.err).toContain(
      "--name: must be at most 32 characters; --uses: must be a whole number from 1 to 99999",
    );
    const never = await run("docks", "invite", dock.id, "--expires", "soon");
    expect(never.code).toBe(2);
    expect(never.err).toContain('--expires must be a duration such as 30m, 12h, 7d or 2w, got "soon"');
    const missing = await run("docks", "invite", "NoSuchDock000000000000");
    expect(missing.code).toBe(1);
    expect((await run("docks", "invites", "NoSuchDock000000000000")).code).toBe(1);
  });

  it("records each audience change in the Dock's audit log as the operator's (no actor, via cli), and a refused one not at all", async () => {
    /** The newest entries of the Dock's log as `docks audit --json` prints them, newest first. */
    const latest = async (dockId: string, count: number) =>
      (await runJson("docks", "audit", dockId, "--limit", String(count))).entries.map(
        (entry: { action: string; actor: unknown; detail: Record<string, unknown> }) => [
          entry.action,
          entry.actor,
          entry.detail,
        ],
      );
    const dock = await runJson("docks", "create", "--owner", "4242", "--name", "Audited");
    expect(await latest(dock.id, 1)).toEqual([
      ["dock_created", null, { name: "Audited", visibility: "open", via: "cli" }],
    ]);

    await runJson("docks", "update", dock.id, "--visibility", "approval");
    expect(await latest(dock.id, 1)).toEqual([
      ["visibility_changed", null, { from: "open", to: "approval", via: "cli" }],
    ]);
    // The same visibility again changes nothing, and records nothing.
    await runJson("docks", "update", dock.id, "--visibility", "approval");
    expect((await latest(dock.id, 1))[0][0]).toBe("visibility_changed");
    expect((await runJson("docks", "audit", dock.id)).entries).toHaveLength(2);

    const link = await runJson("docks", "invite", dock.id, "--name", "Night crew", "--uses", "3");
    expect(await latest(dock.id, 1)).toEqual([
      [
        "invite_created",
        null,
        {
          invite_id: link.id,
          name: "Night crew",
          usage_limit: 3,
          expires_at: null,
          approval: false,
          via: "cli",
        },
      ],
    ]);
    await runJson("docks", "revoke-invite", dock.id, link.id);
    expect(await latest(dock.id, 1)).toEqual([
      ["invite_revoked", null, { invite_id: link.id, name: "Night crew", uses: 0, via: "cli" }],
    ]);
    // Revoked already: refused, and the log holds one revocation.
    expect((await run("docks", "revoke-invite", dock.id, link.id)).code).toBe(1);
    const log = (await runJson("docks", "audit", dock.id)).entries;
    expect(log.map((entry: { action: string }) => entry.action)).toEqual([
      "invite_revoked",
      "invite_created",
      "visibility_changed",
      "dock_created",
    ]);
    // Nothing of the link's token is kept: only its id and name.
    expect(JSON.stringify(log)).not.toContain(new URL(link.link).searchParams.get("start")?.slice(5));
  });
});
