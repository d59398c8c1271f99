import { spawn } from "node:child_process";
import { createHmac } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import pkg from "../../package.json" with { type: "json" };
import { createApp } from "../../src/app.ts";
import { runCli } from "../../src/cli.ts";
import { loadConfig } from "../../src/runtime/config.ts";
import { loadEncryptionKey } from "../../src/runtime/encryption-key.ts";
import { migrate, openDb } from "../../src/store/open.ts";
import { startChildService } from "../helpers/child-service.ts";
import { waitFor } from "../helpers/wait.ts";

const BIN = join(import.meta.dirname, "..", "..", "bin", "dock-notify.js");
const CLI = join(import.meta.dirname, "..", "..", "src", "cli.ts");

type Env = Record<string, string>;

/** How many of each kind of handle keep this process alive (servers, sockets, timers…). */
function openResources(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const kind of process.getActiveResourcesInfo()) counts.set(kind, (counts.get(kind) ?? 0) + 1);
  return counts;
}

/**
 * The command line run in this process, as the binary runs it (the tests of the binary itself are
 * below): its exit code and what it wrote. It resolves once everything the command opened is
 * closed again, and fails if something stays open (a database or a server that would keep the
 * binary running after it is done).
 */
async function cli(env: Env, ...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const before = openResources();
  let out = "";
  let err = "";
  const code = await runCli(args, {
    env,
    stdout: { write: (text: string) => (out += text) },
    stderr: { write: (text: string) => (err += text) },
    logs: { write: () => {} },
  });
  await waitFor(
    `dock-notify ${args.join(" ")} to close what it opened`,
    () => {
      const left = [...openResources()].filter(([kind, count]) => count > (before.get(kind) ?? 0));
      if (left.length > 0) throw new Error(`still open: ${left.map(([kind]) => kind).join(", ")}`);
      return true;
    },
    30_000,
  );
  return { code, out, err };
}

/** bin/dock-notify.js in a process of its own: its exit status and what it wrote. */
function spawnBin(env: Env, ...args: string[]): Promise<{ status: number | null; out: string; err: string }> {
  return spawnNode(env, BIN, ...args);
}

function spawnNode(
  env: Env,
  ...args: string[]
): Promise<{ status: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, timeout: 50_000 });
  let out = "";
  let err = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (status) => resolve({ status, out, err }));
  });
}

describe("dock-notify CLI", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "dock-notify-cli-"));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  const run = (...args: string[]) => cli({ DATA_DIR: dataDir, LOG_LEVEL: "silent" }, ...args);
  const runJson = async (...args: string[]) => {
    const result = await run(...args, "--json");
    expect(result.err).toBe("");
    expect(result.code).toBe(0);
    return JSON.parse(result.out);
  };

  /** The status a send gets from the real send API, over the same database the CLI wrote. */
  const statusOf = async (request: { url: string; headers?: Record<string, string>; payload: unknown }) => {
    const config = loadConfig({ DATA_DIR: dataDir, PORT: "0", LOG_LEVEL: "silent" });
    const db = await openDb(config.databaseUrl);
    await migrate(db);
    const { server } = await createApp({ config, db, encryptionKey: loadEncryptionKey(null, dataDir).key });
    try {
      const response = await server.inject({
        method: "POST",
        url: request.url,
        headers: request.headers ?? {},
        payload: request.payload as string | object,
      });
      return response.statusCode;
    } finally {
      await server.close();
      await db.close();
    }
  };
  const sendWith = (dockId: string, secretKey: string) =>
    statusOf({ url: "/ping", payload: { dock_id: dockId, secret_key: secretKey, msg: "from the CLI test" } });
  const hookWith = (token: string) =>
    statusOf({
      url: `/hook/${token}`,
      headers: { "content-type": "text/plain" },
      payload: "from the CLI test",
    });

  // Eleven commands and six services built over the same file: 9 s on a quiet machine, and past 30 s
  // (then the default test timeout) beside a loaded run of the suite (other files' browsers, benches).
  it("creates, lists, shows, rotates and deletes Docks; the old secret stops working", {
    timeout: 90_000,
  }, async () => {
    const created = await runJson(
      "docks",
      "create",
      "--owner",
      "4242",
      "--name",
      "  Backups  ",
      "--link",
      "https://example.com/app",
      "--description",
      "Nightly backups",
    );
    expect(created).toMatchObject({
      name: "Backups",
      link: "https://example.com/app",
      description: "Nightly backups",
      owner_id: 4242,
      active_subscribers: 0,
    });
    expect(created.id).toMatch(/^[A-Za-z0-9]{22}$/);
    expect(created.secret_key).toMatch(/^dnsk_[A-Za-z0-9]{33}$/);

    const list = await runJson("docks", "list");
    expect(list.map((d: { id: string }) => d.id)).toContain(created.id);
    expect(list[0]).not.toHaveProperty("secret_key");
    expect(await runJson("docks", "list", "--owner", "1")).toEqual([]);

    const shown = await runJson("docks", "show", created.id);
    expect(shown.secret_key).toBe(created.secret_key);
    expect((await run("docks", "show", created.id)).out).toContain(`"dock_id":"${created.id}"`);

    expect(await sendWith(created.id, created.secret_key)).toBe(202);
    const rotated = await runJson("docks", "rotate-secret", created.id);
    expect(rotated.secret_key).not.toBe(created.secret_key);
    expect(await sendWith(created.id, created.secret_key)).toBe(401);
    expect(await sendWith(created.id, rotated.secret_key)).toBe(202);
    expect((await runJson("docks", "show", created.id)).secret_key).toBe(rotated.secret_key);

    // The signing secret of the events: its own, kept by a new secret key, replaced on its own.
    expect(shown.signing_secret).toMatch(/^dnss_[A-Za-z0-9]{33}$/);
    expect((await run("docks", "show", created.id)).out).toContain(`Signing secret: ${shown.signing_secret}`);
    const signing = await runJson("docks", "rotate-signing-secret", created.id);
    expect(signing.signing_secret).toMatch(/^dnss_/);
    expect(signing.signing_secret).not.toBe(shown.signing_secret);
    expect((await runJson("docks", "show", created.id)).signing_secret).toBe(signing.signing_secret);

    // A hook URL: made, shown, replaced, revoked; it sends as long as it is the Dock's.
    const hooked = await runJson("docks", "hook-token", created.id);
    expect(hooked.hook_token).toMatch(/^dnhk_/);
    expect(hooked.hook_url).toMatch(new RegExp(`/hook/${hooked.hook_token}$`));
    expect((await run("docks", "show", created.id)).out).toContain(`/hook/${hooked.hook_token}`);
    expect(await hookWith(hooked.hook_token)).toBe(202);
    const rehooked = await runJson("docks", "hook-token", created.id);
    expect(await hookWith(hooked.hook_token)).toBe(401);
    expect(await hookWith(rehooked.hook_token)).toBe(202);
    expect(await runJson("docks", "hook-token", created.id, "--revoke")).toEqual({
      id: created.id,
      hook_token: null,
    });
    expect(await hookWith(rehooked.hook_token)).toBe(401);

    expect(await runJson("docks", "delete", created.id)).toEqual({ id: created.id, deleted: true });
    expect(await sendWith(created.id, rotated.secret_key)).toBe(401);
    const missing = await run("docks", "show", created.id);
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/no Dock with ID/);
  });

  it("a callback URL to an address the operator did not allow is refused on create and update; an allowed one is taken", async () => {
    const refused =
      /^dock-notify: --callback-url must not point to 10\.0\.0\.5 \(private network\): .*CALLBACK_ALLOWED_NETWORKS$/;
    const create = await run(
      "docks",
      "create",
      "--owner",
      "7",
      "--name",
      "Hooked",
      "--callback-url",
      "http://10.0.0.5/events",
    );
    expect(create.code).toBe(2);
    expect(create.err.trim()).toMatch(refused);
    const dock = await runJson("docks", "create", "--owner", "7", "--name", "Hooked");
    const update = await run("docks", "update", dock.id, "--callback-url", "http://2130706433/events");
    expect(update.code).toBe(2);
    expect(update.err.trim()).toMatch(
      /^dock-notify: --callback-url must not point to 127\.0\.0\.1 \(loopback\)/,
    );
    const allowed = await cli(
      { DATA_DIR: dataDir, LOG_LEVEL: "silent", CALLBACK_ALLOWED_NETWORKS: "10.0.0.0/8" },
      "docks",
      "update",
      dock.id,
      "--callback-url",
      "http://10.0.0.5/events",
      "--json",
    );
    expect(allowed.code).toBe(0);
    expect(JSON.parse(allowed.out).callback_url).toBe("http://10.0.0.5/events");
    // Kept while another field changes, though this configuration would not take it now.
    expect((await runJson("docks", "update", dock.id, "--name", "Renamed")).callback_url).toBe(
      "http://10.0.0.5/events",
    );
    const bad = await cli({ DATA_DIR: dataDir, CALLBACK_ALLOWED_NETWORKS: "10.0.0.0/33" }, "docks", "list");
    expect(bad.code).not.toBe(0);
    expect(bad.err).toMatch(
      /CALLBACK_ALLOWED_NETWORKS must be IP networks in CIDR notation .*"10\.0\.0\.0\/33" is not one/,
    );
  });

  it("makes, lists and revokes a Dock's credentials; the secret is printed once", async () => {
    const dock = await runJson("docks", "create", "--owner", "4242", "--name", "Scoped");
    expect(await runJson("docks", "credentials", "list", dock.id)).toEqual([]);
    const made = await runJson("docks", "credentials", "create", dock.id, "--name", "ci");
    expect(made).toMatchObject({ name: "ci", scope: "send", last_used_at: null });
    expect(made.secret).toMatch(/^dnsc_[A-Za-z0-9]{33}$/);
    const listed = await runJson("docks", "credentials", "list", dock.id);
    const { secret: _secret, ...shown } = made;
    expect(listed).toEqual([shown]);
    expect((await run("docks", "credentials", "list", dock.id)).out).not.toContain(made.secret);
    expect(await sendWith(dock.id, made.secret)).toBe(202);
    expect(await runJson("docks", "credentials", "revoke", dock.id, made.id)).toEqual({
      id: made.id,
      revoked: true,
    });
    expect(await sendWith(dock.id, made.secret)).toBe(401);
    const again = await run("docks", "credentials", "revoke", dock.id, made.id);
    expect(again.code).toBe(1);
    const wrongScope = await run("docks", "credentials", "create", dock.id, "--name", "x", "--scope", "all");
    expect(wrongScope.code).not.toBe(0);
  });

  it("makes a GitHub credential, whose secret signs GitHub's deliveries; at most three a Dock", async () => {
    const dock = await runJson("docks", "create", "--owner", "4242", "--name", "Repos");
    const made = await runJson(
      "docks",
      "credentials",
      "create",
      dock.id,
      "--name",
      "octo",
      "--scope",
      "github",
    );
    expect(made).toMatchObject({ name: "octo", scope: "github", last_used_at: null });
    expect(made.secret).toMatch(/^dngh_[A-Za-z0-9]{33}$/);
    const body = JSON.stringify({
      action: "created",
      repository: { full_name: "octo/app" },
      sender: { login: "o" },
    });
    const signed = (secret: string) =>
      statusOf({
        url: `/webhook/github/${dock.id}`,
        headers: {
          "content-type": "application/json",
          "x-github-event": "star",
          "x-hub-signature-256": `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`,
        },
        payload: body,
      });
    expect(await signed(made.secret)).toBe(202);
    // Only a signing key: not where the secret key goes.
    expect(await sendWith(dock.id, made.secret)).toBe(401);
    const text = await run(
      "docks",
      "credentials",
      "create",
      dock.id,
      "--name",
      "rotated",
      "--scope",
      "github",
    );
    expect(text.out).toMatch(/^Credential "rotated" \(github\) for \S+: dngh_/);
    expect(text.out).toContain(`Secret of the GitHub webhook whose Payload URL is `);
    expect(text.out).toContain(`/webhook/github/${dock.id}`);
    await runJson("docks", "credentials", "create", dock.id, "--name", "third", "--scope", "github");
    const fourth = await run(
      "docks",
      "credentials",
      "create",
      dock.id,
      "--name",
      "fourth",
      "--scope",
      "github",
      "--json",
    );
    expect(fourth.code).toBe(1);
    expect(JSON.parse(fourth.err)).toEqual({
      ok: false,
      error: { code: "failed", message: "A Dock has at most 3 GitHub credentials: revoke one first." },
    });
    const listed = await runJson("docks", "credentials", "list", dock.id);
    expect(listed.map((c: { scope: string }) => c.scope)).toEqual(["github", "github", "github"]);
    expect(await runJson("docks", "credentials", "revoke", dock.id, made.id)).toEqual({
      id: made.id,
      revoked: true,
    });
    expect(await signed(made.secret)).toBe(401);
  });

  it("refuses invalid input with one clear line", async () => {
    const cases: [string[], RegExp][] = [
      [["docks", "create", "--owner", "abc", "--name", "x"], /--owner must be a Telegram user id/],
      [["docks", "create", "--owner", "1", "--name", "   "], /name is required/],
      [["docks", "create", "--owner", "1", "--name", "x".repeat(65)], /at most 64 characters/],
      [["docks", "create", "--owner", "1", "--name", "x", "--link", "ftp://example.com"], /absolute http/],
      [["docks", "create", "--owner", "1", "--name", "x", "--description", "d".repeat(513)], /at most 512/],
      [["docks", "rotate-secret", "nope"], /no Dock with ID/],
      [["docks", "rotate-signing-secret", "nope"], /no Dock with ID/],
      [["docks", "delete", "nope"], /no Dock with ID/],
    ];
    for (const [args, message] of cases) {
      const result = await run(...args);
      expect(result.code).not.toBe(0);
      expect(result.err.trim().split("\n")).toHaveLength(1);
      expect(result.err).toMatch(message);
    }
  });

  it("exits 2 for a usage error (as the README says), 1 for a Dock that does not exist, 0 for help", async () => {
    const usage: [string[], RegExp][] = [
      [["docks", "create", "--owner", "1"], /required option '--name <name>'/],
      [["docks", "frob"], /unknown command 'frob'/],
      [["docks", "show"], /missing required argument 'id'/],
      [["docks", "list", "--colour"], /unknown option '--colour'/],
      [["docks", "create", "--owner", "abc", "--name", "x"], /--owner must be a Telegram user id/],
    ];
    for (const [args, message] of usage) {
      const result = await run(...args);
      expect(result.err).toMatch(message);
      expect({ args, code: result.code }).toEqual({ args, code: 2 });
    }
    expect((await run("docks", "show", "nope")).code).toBe(1);
    expect((await run("docks", "--help")).code).toBe(0);
    expect((await run("--version")).code).toBe(0);
  });

  it("with --json, an error is one JSON line on stderr with a stable code, and the same exit code", async () => {
    const cases: [string[], Env, number, string, RegExp][] = [
      [["docks", "show", "nope"], {}, 1, "not_found", /no Dock with ID "nope"/],
      [["docks", "create", "--owner", "abc", "--name", "x"], {}, 2, "invalid_input", /--owner must be/],
      [["docks", "list", "--colour"], {}, 2, "invalid_input", /unknown option '--colour'/],
      [["docks", "create", "--owner", "1"], {}, 2, "invalid_input", /required option '--name <name>'/],
      [["docks", "list"], { PORT: "http" }, 2, "invalid_configuration", /PORT must be a whole number/],
      // Commander's suggestion joins the message's one line.
      [["docks", "lst"], {}, 2, "invalid_input", /unknown command 'lst' \(Did you mean list\?\)/],
    ];
    for (const [args, env, code, errorCode, message] of cases) {
      const result = await cli({ DATA_DIR: dataDir, LOG_LEVEL: "silent", ...env }, ...args, "--json");
      expect({ args, code: result.code }).toEqual({ args, code });
      expect(result.out).toBe("");
      const lines = result.err.trim().split("\n");
      expect(lines).toHaveLength(1);
      const body = JSON.parse(lines[0] as string) as {
        ok: boolean;
        error: { code: string; message: string };
      };
      expect(body).toMatchObject({ ok: false, error: { code: errorCode } });
      expect(body.error.message).toMatch(message);
    }
  });

  it("reads --json after -- as an argument, not as a request for JSON", async () => {
    const result = await run("docks", "show", "--", "--json");
    expect(result.code).toBe(1);
    expect(result.err.trim()).toBe('dock-notify: no Dock with ID "--json"');
  });

  it("says whose Docks it looked for when an owner has none", async () => {
    const result = await run("docks", "list", "--owner", "777");
    expect(result.code).toBe(0);
    expect(result.out).toMatch(
      /^owner 777 has no Docks; create one with: dock-notify docks create --owner 777 --name <name>/,
    );
  });

  it("refuses an encryption key that does not open the database's Dock secrets (exit 2), the service too", async () => {
    const first = mkdtempSync(join(tmpdir(), "dock-notify-cli-key-"));
    const second = mkdtempSync(join(tmpdir(), "dock-notify-cli-key-"));
    try {
      const database = `sqlite:${join(first, "shared.db")}`;
      const withEnv = (env: Env, ...args: string[]) =>
        cli({ DATABASE_URL: database, LOG_LEVEL: "silent", ...env }, ...args);
      // The first instance creates a Dock, sealing its secret with the key it generated.
      expect(
        (await withEnv({ DATA_DIR: first }, "docks", "create", "--owner", "5", "--name", "Sealed")).code,
      ).toBe(0);

      const otherKey = Buffer.alloc(32, 9).toString("base64");
      const listed = await withEnv({ DATA_DIR: first, ENCRYPTION_KEY: otherKey }, "docks", "list");
      expect(listed.code).toBe(2);
      expect(listed.err.trim().split("\n")).toHaveLength(1);
      expect(listed.err).toMatch(/ENCRYPTION_KEY does not open the Dock secret keys in this database/);
      expect(listed.err).not.toContain(otherKey);

      // A second instance on the same database without ENCRYPTION_KEY would generate a key of its
      // own: it refuses to start instead, and leaves no such key behind.
      const served = await withEnv({ DATA_DIR: second, PORT: "0" }, "serve");
      expect(served.code).toBe(2);
      expect(served.err).toMatch(/ENCRYPTION_KEY is not set and there was no .*encryption\.key/);
      expect(existsSync(join(second, "encryption.key"))).toBe(false);
      // With the first instance's key it works.
      const key = readFileSync(join(first, "encryption.key"), "utf8").trim();
      expect((await withEnv({ DATA_DIR: second, ENCRYPTION_KEY: key }, "docks", "list")).code).toBe(0);
    } finally {
      rmSync(first, { recursive: true, force: true });
      rmSync(second, { recursive: true, force: true });
    }
  });

  it("lists, adds and removes owners; names an administrator of a closed instance", async () => {
    const closedDir = mkdtempSync(join(tmpdir(), "dock-notify-cli-owners-"));
    // A real bot token closes the instance (the commands never call Telegram).
    const env = {
      DATA_DIR: closedDir,
      LOG_LEVEL: "silent",
      TELEGRAM_BOT_TOKEN: "123456:AAE-cli-test-token-not-used-anywhere1",
    };
    try {
      const empty = await cli(env, "owners", "list");
      expect(empty).toMatchObject({ code: 0, err: "" });
      expect(empty.out).toContain("Nobody has claimed this Dock Notify yet");
      expect(empty.out).toContain("dock-notify owners add <telegram_user_id> --admin");

      expect(JSON.parse((await cli(env, "owners", "list", "--json")).out)).toMatchObject({
        anyone: false,
        awaits_claim: true,
        lacks_administrator: false,
      });
      expect((await cli(env, "owners", "add", "5001", "--admin")).out).toContain("5001 is an administrator");
      expect((await cli(env, "owners", "add", "5002")).out).toContain("5002 is an owner");
      // Added again without a role, an administrator stays one; --role owner takes it back.
      expect((await cli(env, "owners", "add", "5002", "--admin")).code).toBe(0);
      expect((await cli(env, "owners", "add", "5002")).out).toContain("5002 is an administrator");
      expect((await cli(env, "owners", "add", "5002", "--role", "owner")).out).toContain("5002 is an owner");
      // A Dock made for someone new lets them in too.
      expect((await cli(env, "docks", "create", "--owner", "5003", "--name", "Ops")).code).toBe(0);
      const listed = JSON.parse((await cli(env, "owners", "list", "--json")).out);
      expect(listed.anyone).toBe(false);
      expect(
        listed.owners.map((o: { id: number; role: string; docks: number }) => [o.id, o.role, o.docks]),
      ).toEqual([
        [5001, "admin", 0],
        [5002, "owner", 0],
        [5003, "owner", 1],
      ]);
      const text = (await cli(env, "owners", "list")).out;
      expect(text).not.toContain("Nobody has claimed");
      expect(text).toMatch(/5001\s+admin\s+0\s+added/);

      // A Dock given to someone else lets them in.
      const ops = JSON.parse((await cli(env, "docks", "list", "--owner", "5003", "--json")).out)[0];
      const given = JSON.parse((await cli(env, "docks", "update", ops.id, "--owner", "5004", "--json")).out);
      expect(given.owner_id).toBe(5004);
      const afterGift = JSON.parse((await cli(env, "owners", "list", "--json")).out).owners;
      expect(afterGift.find((o: { id: number }) => o.id === 5004)).toMatchObject({ role: "owner", docks: 1 });
      expect((await cli(env, "owners", "add", "5001", "--role", "owner")).err).toContain(
        "5001 is the last administrator",
      );

      expect((await cli(env, "owners", "remove", "5002")).out).toContain("5002 can no longer sign in");
      const gone = await cli(env, "owners", "remove", "5002");
      expect(gone).toMatchObject({ code: 1, err: "dock-notify: 5002 is not an owner\n" });
      const last = await cli(env, "owners", "remove", "5001");
      expect(last.code).toBe(2);
      expect(last.err).toContain("5001 is the last administrator");
      const bad = await cli(env, "owners", "add", "me");
      expect(bad.code).toBe(2);
      expect(bad.err).toContain(
        'telegram_user_id must be a Telegram user id (a positive whole number), got "me"',
      );
      // OWNERS' administrators are listed, and only the setting removes them.
      const configured = { ...env, OWNERS: "7007" };
      const withConfig = JSON.parse((await cli(configured, "owners", "list", "--json")).out);
      expect(withConfig.owners[0]).toMatchObject({ id: 7007, role: "admin", source: "config" });
      expect((await cli(configured, "owners", "remove", "7007")).err).toContain("named by OWNERS");
    } finally {
      rmSync(closedDir, { recursive: true, force: true });
    }
  });

  it("migrate applies the schema once", async () => {
    const fresh = mkdtempSync(join(tmpdir(), "dock-notify-migrate-"));
    const env = { DATA_DIR: fresh };
    const first = await cli(env, "migrate");
    const second = await cli(env, "migrate");
    const third = await cli(env, "migrate", "--json");
    rmSync(fresh, { recursive: true, force: true });
    expect(first.out).toMatch(/applied: 0001-initial/);
    expect(second.out).toMatch(/up to date/);
    expect(third.code).toBe(0);
    expect(JSON.parse(third.out)).toEqual({ applied: [] });
  });

  it("prints commands for the port the service runs on, without PORT repeated; PUBLIC_URL or PORT given wins", async () => {
    const shared = mkdtempSync(join(tmpdir(), "dock-notify-cli-url-"));
    // `PORT=0`: the port is the one the service is given, which only the running service knows.
    const service = await startChildService({ DATA_DIR: shared });
    try {
      const port = new URL(service.url).port;
      const env = { DATA_DIR: shared, LOG_LEVEL: "silent" };
      const created = await cli(env, "docks", "create", "--owner", "5", "--name", "Ports");
      expect(created.code).toBe(0);
      const id = /Dock ID: +(\S+)/.exec(created.out)?.[1] as string;
      expect(created.out).toContain(`' http://127.0.0.1:${port}/ping`);
      const hooked = await cli(env, "docks", "hook-token", id, "--json");
      expect(JSON.parse(hooked.out).hook_url).toMatch(
        new RegExp(`^http://127\\.0\\.0\\.1:${port}/hook/dnhk_`),
      );
      // The command it printed works as printed.
      const secret = /Secret key: +(\S+)/.exec(created.out)?.[1] as string;
      const sent = await fetch(`http://127.0.0.1:${port}/ping`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ dock_id: id, secret_key: secret, msg: "from the printed command" }),
      });
      expect(sent.status).toBe(202);

      const named = await cli({ ...env, PUBLIC_URL: "https://notify.example.com/" }, "docks", "show", id);
      expect(named.out).toContain("' https://notify.example.com/ping");
      const ported = await cli({ ...env, PORT: "3000" }, "docks", "show", id);
      expect(ported.out).toContain("' http://127.0.0.1:3000/ping");
    } finally {
      service.child.kill("SIGTERM");
      await new Promise((resolve) => service.child.once("exit", resolve));
      rmSync(shared, { recursive: true, force: true });
    }
    // With no service ever run from a data directory, the default is PORT's default.
    const fresh = mkdtempSync(join(tmpdir(), "dock-notify-cli-url-"));
    try {
      const created = await cli(
        { DATA_DIR: fresh, LOG_LEVEL: "silent" },
        "docks",
        "create",
        "--owner",
        "5",
        "--name",
        "x",
      );
      expect(created.out).toContain("' http://127.0.0.1:8080/ping");
    } finally {
      rmSync(fresh, { recursive: true, force: true });
    }
  });

  it("names the bad variable when the configuration is invalid", async () => {
    const cases: [Env, RegExp][] = [
      [{ PORT: "http" }, /PORT must be a whole number/],
      [{ DATABASE_URL: "mysql://x" }, /DATABASE_URL must start with/],
      [{ LOG_LEVEL: "loud" }, /LOG_LEVEL must be one of/],
      [{ PUBLIC_URL: "example.com" }, /PUBLIC_URL must be an absolute/],
      [{ TELEGRAM_BOT_TOKEN: "not-a-token-secret" }, /TELEGRAM_BOT_TOKEN does not look like/],
      [{ ENCRYPTION_KEY: "short" }, /ENCRYPTION_KEY must be 32 bytes/],
      [{ HOST: "0.0.0.0" }, /HOST is 0.0.0.0 but TELEGRAM_BOT_TOKEN is not set/],
      [{ SANDBOX_ALLOW_REMOTE: "maybe" }, /SANDBOX_ALLOW_REMOTE must be true or false/],
    ];
    for (const [env, message] of cases) {
      const result = await cli({ DATA_DIR: dataDir, ...env }, "serve");
      expect(result.code).toBe(2);
      expect(result.err.trim().split("\n")).toHaveLength(1);
      expect(result.err).toMatch(message);
      expect(result.err).not.toContain("not-a-token-secret");
    }
  });

  it("names the setting to look at when start-up meets the machine: a path, a port, the database", async () => {
    const serve = (env: Env) => cli({ DATA_DIR: dataDir, LOG_LEVEL: "silent", ...env }, "serve");
    // DATA_DIR is a file.
    const file = join(dataDir, "a-file");
    writeFileSync(file, "");
    const notDir = await serve({ DATA_DIR: join(file, "sub") });
    expect(notDir.code).toBe(2);
    expect(notDir.err.trim().split("\n")).toHaveLength(1);
    expect(notDir.err).toMatch(
      /cannot use the data directory or database file \(check DATA_DIR and DATABASE_URL\).*ENOTDIR/,
    );
    // The port is taken.
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      // A new DATA_DIR: the port is held before anything is written, so it is not even created.
      const fresh = join(dataDir, "never-started");
      const inUse = await serve({ PORT: String(port), DATA_DIR: fresh });
      expect(inUse.code).toBe(2);
      expect(inUse.err).toMatch(new RegExp(`cannot listen on HOST 127.0.0.1 PORT ${port}: .*EADDRINUSE`));
      expect(existsSync(fresh)).toBe(false);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
    // No database server there: not a configuration error as such (exit 1), but it says where.
    const unreachable = await serve({ DATABASE_URL: "postgres://dock:s3cret-pw@127.0.0.1:1/none" });
    expect(unreachable.code).toBe(1);
    expect(unreachable.err.trim().split("\n")).toHaveLength(1);
    expect(unreachable.err).toMatch(
      /the database cannot be reached \(DATABASE_URL postgres:\/\/dock:\*\*\*@127\.0\.0\.1:1\/none\): .*ECONNREFUSED/,
    );
    expect(unreachable.err).not.toContain("s3cret-pw");
    // libpq takes credentials in the query too: hidden the same way.
    const inQuery = await serve({
      DATABASE_URL: "postgres://dock@127.0.0.1:1/none?password=q-s3cret&sslmode=disable",
    });
    expect(inQuery.code).toBe(1);
    expect(inQuery.err).toContain("/none?password=<redacted>&sslmode=disable");
    expect(inQuery.err).not.toContain("q-s3cret");
    const migrated = await cli(
      { DATA_DIR: dataDir, DATABASE_URL: "postgres://dock:s3cret-pw@127.0.0.1:1/none" },
      "migrate",
    );
    expect(migrated.code).toBe(1);
    expect(migrated.err).toMatch(/the database cannot be reached \(DATABASE_URL postgres:\/\/dock:\*\*\*@/);
  });
});

/** What only a process of its own shows: its exit status, its standard streams, what it loads. */
describe("bin/dock-notify.js", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "dock-notify-bin-"));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
  const env = { DATA_DIR: dataDir, LOG_LEVEL: "silent" };

  it("exits with the command's code and writes results to stdout, errors to stderr", async () => {
    const version = await spawnBin(env, "--version");
    expect(version).toEqual({ status: 0, out: `${pkg.version}\n`, err: "" });

    const missing = await spawnBin(env, "docks", "show", "nope", "--json");
    expect(missing.status).toBe(1);
    expect(missing.out).toBe("");
    expect(JSON.parse(missing.err)).toEqual({
      ok: false,
      error: { code: "not_found", message: 'no Dock with ID "nope"' },
    });

    const usage = await spawnBin(env, "docks", "frob");
    expect(usage.status).toBe(2);
    expect(usage.out).toBe("");
    expect(usage.err).toMatch(/unknown command 'frob'[\s\S]*Usage: dock-notify docks/);
  });

  it("exits when serve cannot start: nothing it opened (database threads, the app) keeps it running", async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      // Killed after 20 s (status null) if something stayed open.
      const served = await spawnBin({ ...env, PORT: String(port) }, "serve");
      expect(served.status).toBe(2);
      expect(served.err).toMatch(new RegExp(`cannot listen on HOST 127.0.0.1 PORT ${port}: .*EADDRINUSE`));
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  it("answers --help without loading the service, the sandbox or the database", async () => {
    // Records every module the process loads, then runs --help as the binary does.
    const script = `
      import { registerHooks } from "node:module";
      const loaded = [];
      registerHooks({ load: (url, context, next) => (loaded.push(url), next(url, context)) });
      const { runCli } = await import(${JSON.stringify(pathToFileURL(CLI).href)});
      const code = await runCli(["--help"], { env: {}, stdout: { write() {} }, stderr: { write() {} } });
      console.log(JSON.stringify({ code, loaded }));
    `;
    const result = await spawnNode(env, "--input-type=module", "--eval", script);
    expect(result.err).toBe("");
    const { code, loaded } = JSON.parse(result.out) as { code: number; loaded: string[] };
    expect(code).toBe(0);
    expect(loaded).toContain(pathToFileURL(CLI).href);
    const heavy = loaded.filter((url) =>
      /\/src\/(main|app)\.ts$|\/src\/(store|http|bot|delivery)\/|\/src\/sandbox\/(?!identity\.ts$)|\/node_modules\/(fastify|kysely|pg|grammy|pino)\//.test(
        url,
      ),
    );
    expect(heavy).toEqual([]);
  });
});
