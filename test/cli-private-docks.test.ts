import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCli } from "../src/cli.ts";

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
});
