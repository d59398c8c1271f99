import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createApp } from "../src/app.ts";
import { loadConfig } from "../src/config.ts";
import { loadEncryptionKey } from "../src/encryption-key.ts";
import { migrate, openDb } from "../src/store/db.ts";

const BIN = join(import.meta.dirname, "..", "bin", "dock-notify.js");

describe("dock-notify CLI", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "dock-notify-cli-"));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  const run = (...args: string[]) => {
    const result = spawnSync(process.execPath, [BIN, ...args], {
      env: { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: "silent" },
      encoding: "utf8",
    });
    return { code: result.status, out: result.stdout, err: result.stderr };
  };
  const runJson = (...args: string[]) => {
    const result = run(...args, "--json");
    expect(result.err).toBe("");
    expect(result.code).toBe(0);
    return JSON.parse(result.out);
  };

  /** Sends through the real send API, over the same database the CLI wrote. */
  const sendWith = async (dockId: string, secretKey: string) => {
    const config = loadConfig({ DATA_DIR: dataDir, PORT: "0", LOG_LEVEL: "silent" });
    const db = openDb(config.databaseUrl);
    await migrate(db);
    const { server } = await createApp({ config, db, encryptionKey: loadEncryptionKey(null, dataDir).key });
    try {
      const response = await server.inject({
        method: "POST",
        url: "/ping",
        payload: { dock_id: dockId, secret_key: secretKey, msg: "from the CLI test" },
      });
      return response.statusCode;
    } finally {
      await server.close();
      await db.close();
    }
  };

  it("creates, lists, shows, rotates and deletes Docks; the old secret stops working", async () => {
    const created = runJson(
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

    const list = runJson("docks", "list");
    expect(list.map((d: { id: string }) => d.id)).toContain(created.id);
    expect(list[0]).not.toHaveProperty("secret_key");
    expect(runJson("docks", "list", "--owner", "1")).toEqual([]);

    const shown = runJson("docks", "show", created.id);
    expect(shown.secret_key).toBe(created.secret_key);
    expect(run("docks", "show", created.id).out).toContain(`"dock_id":"${created.id}"`);

    expect(await sendWith(created.id, created.secret_key)).toBe(202);
    const rotated = runJson("docks", "rotate-secret", created.id);
    expect(rotated.secret_key).not.toBe(created.secret_key);
    expect(await sendWith(created.id, created.secret_key)).toBe(401);
    expect(await sendWith(created.id, rotated.secret_key)).toBe(202);
    expect(runJson("docks", "show", created.id).secret_key).toBe(rotated.secret_key);

    expect(runJson("docks", "delete", created.id)).toEqual({ id: created.id, deleted: true });
    expect(await sendWith(created.id, rotated.secret_key)).toBe(401);
    const missing = run("docks", "show", created.id);
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/no Dock with ID/);
  }, 60_000);

  it("refuses invalid input with one clear line", () => {
    const cases: [string[], RegExp][] = [
      [["docks", "create", "--owner", "abc", "--name", "x"], /--owner must be a Telegram user id/],
      [["docks", "create", "--owner", "1", "--name", "   "], /name is required/],
      [["docks", "create", "--owner", "1", "--name", "x".repeat(65)], /at most 64 characters/],
      [["docks", "create", "--owner", "1", "--name", "x", "--link", "ftp://example.com"], /absolute http/],
      [["docks", "create", "--owner", "1", "--name", "x", "--description", "d".repeat(513)], /at most 512/],
      [["docks", "rotate-secret", "nope"], /no Dock with ID/],
      [["docks", "delete", "nope"], /no Dock with ID/],
    ];
    for (const [args, message] of cases) {
      const result = run(...args);
      expect(result.code).not.toBe(0);
      expect(result.err.trim().split("\n")).toHaveLength(1);
      expect(result.err).toMatch(message);
    }
  }, 60_000);

  it("exits 2 for a usage error (as the README says), 1 for a Dock that does not exist, 0 for help", () => {
    const usage: [string[], RegExp][] = [
      [["docks", "create", "--owner", "1"], /required option '--name <name>'/],
      [["docks", "frob"], /unknown command 'frob'/],
      [["docks", "show"], /missing required argument 'id'/],
      [["docks", "list", "--colour"], /unknown option '--colour'/],
      [["docks", "create", "--owner", "abc", "--name", "x"], /--owner must be a Telegram user id/],
    ];
    for (const [args, message] of usage) {
      const result = run(...args);
      expect(result.err).toMatch(message);
      expect({ args, code: result.code }).toEqual({ args, code: 2 });
    }
    expect(run("docks", "show", "nope").code).toBe(1);
    expect(run("docks", "--help").code).toBe(0);
    expect(run("--version").code).toBe(0);
  }, 60_000);

  it("with --json, an error is one JSON line on stderr with a stable code, and the same exit code", () => {
    const cases: [string[], Record<string, string>, number, string, RegExp][] = [
      [["docks", "show", "nope"], {}, 1, "not_found", /no Dock with ID "nope"/],
      [["docks", "create", "--owner", "abc", "--name", "x"], {}, 2, "invalid_input", /--owner must be/],
      [["docks", "list", "--colour"], {}, 2, "invalid_input", /unknown option '--colour'/],
      [["docks", "create", "--owner", "1"], {}, 2, "invalid_input", /required option '--name <name>'/],
      [["docks", "list"], { PORT: "http" }, 2, "invalid_configuration", /PORT must be a whole number/],
      // Commander's suggestion joins the message's one line.
      [["docks", "lst"], {}, 2, "invalid_input", /unknown command 'lst' \(Did you mean list\?\)/],
    ];
    for (const [args, env, code, errorCode, message] of cases) {
      const result = spawnSync(process.execPath, [BIN, ...args, "--json"], {
        env: { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: "silent", ...env },
        encoding: "utf8",
      });
      expect({ args, code: result.status }).toEqual({ args, code });
      expect(result.stdout).toBe("");
      const lines = result.stderr.trim().split("\n");
      expect(lines).toHaveLength(1);
      const body = JSON.parse(lines[0] as string) as {
        ok: boolean;
        error: { code: string; message: string };
      };
      expect(body).toMatchObject({ ok: false, error: { code: errorCode } });
      expect(body.error.message).toMatch(message);
    }
  }, 60_000);

  it("reads --json after -- as an argument, not as a request for JSON", () => {
    const result = run("docks", "show", "--", "--json");
    expect(result.code).toBe(1);
    expect(result.err.trim()).toBe('dock-notify: no Dock with ID "--json"');
  });

  it("says whose Docks it looked for when an owner has none", () => {
    const result = run("docks", "list", "--owner", "777");
    expect(result.code).toBe(0);
    expect(result.out).toMatch(
      /^owner 777 has no Docks; create one with: dock-notify docks create --owner 777 --name <name>/,
    );
  });

  it("refuses an encryption key that does not open the database's Dock secrets (exit 2), the service too", () => {
    const first = mkdtempSync(join(tmpdir(), "dock-notify-cli-key-"));
    const second = mkdtempSync(join(tmpdir(), "dock-notify-cli-key-"));
    try {
      const database = `sqlite:${join(first, "shared.db")}`;
      const withEnv = (env: Record<string, string>, ...args: string[]) =>
        spawnSync(process.execPath, [BIN, ...args], {
          env: { ...process.env, DATABASE_URL: database, LOG_LEVEL: "silent", ...env },
          encoding: "utf8",
        });
      // The first instance creates a Dock, sealing its secret with the key it generated.
      expect(withEnv({ DATA_DIR: first }, "docks", "create", "--owner", "5", "--name", "Sealed").status).toBe(
        0,
      );

      const otherKey = Buffer.alloc(32, 9).toString("base64");
      const listed = withEnv({ DATA_DIR: first, ENCRYPTION_KEY: otherKey }, "docks", "list");
      expect(listed.status).toBe(2);
      expect(listed.stderr.trim().split("\n")).toHaveLength(1);
      expect(listed.stderr).toMatch(/ENCRYPTION_KEY does not open the Dock secret keys in this database/);
      expect(listed.stderr).not.toContain(otherKey);

      // A second instance on the same database without ENCRYPTION_KEY would generate a key of its
      // own: it refuses to start instead, and leaves no such key behind.
      const served = withEnv({ DATA_DIR: second, PORT: "0" }, "serve");
      expect(served.status).toBe(2);
      expect(served.stderr).toMatch(/ENCRYPTION_KEY is not set and there was no .*encryption\.key/);
      expect(existsSync(join(second, "encryption.key"))).toBe(false);
      // With the first instance's key it works.
      const key = readFileSync(join(first, "encryption.key"), "utf8").trim();
      expect(withEnv({ DATA_DIR: second, ENCRYPTION_KEY: key }, "docks", "list").status).toBe(0);
    } finally {
      rmSync(first, { recursive: true, force: true });
      rmSync(second, { recursive: true, force: true });
    }
  }, 60_000);

  it("migrate applies the schema once", () => {
    const fresh = mkdtempSync(join(tmpdir(), "dock-notify-migrate-"));
    const env = { ...process.env, DATA_DIR: fresh };
    const first = spawnSync(process.execPath, [BIN, "migrate"], { env, encoding: "utf8" });
    const second = spawnSync(process.execPath, [BIN, "migrate"], { env, encoding: "utf8" });
    const third = spawnSync(process.execPath, [BIN, "migrate", "--json"], { env, encoding: "utf8" });
    rmSync(fresh, { recursive: true, force: true });
    expect(first.stdout).toMatch(/applied: 0001-initial/);
    expect(second.stdout).toMatch(/up to date/);
    expect(third.status).toBe(0);
    expect(JSON.parse(third.stdout)).toEqual({ applied: [] });
  }, 30_000);

  it("names the bad variable when the configuration is invalid", () => {
    const cases: [Record<string, string>, RegExp][] = [
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
      const result = spawnSync(process.execPath, [BIN, "serve"], {
        env: { ...process.env, DATA_DIR: dataDir, ...env },
        encoding: "utf8",
      });
      expect(result.status).toBe(2);
      expect(result.stderr.trim().split("\n")).toHaveLength(1);
      expect(result.stderr).toMatch(message);
      expect(result.stderr).not.toContain("not-a-token-secret");
    }
  }, 30_000);

  it("names the setting to look at when start-up meets the machine: a path, a port, the database", async () => {
    const serve = (env: Record<string, string>) =>
      spawnSync(process.execPath, [BIN, "serve"], {
        env: { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: "silent", ...env },
        encoding: "utf8",
        timeout: 20_000,
      });
    // DATA_DIR is a file.
    const file = join(dataDir, "a-file");
    writeFileSync(file, "");
    const notDir = serve({ DATA_DIR: join(file, "sub") });
    expect(notDir.status).toBe(2);
    expect(notDir.stderr.trim().split("\n")).toHaveLength(1);
    expect(notDir.stderr).toMatch(
      /cannot use the data directory or database file \(check DATA_DIR and DATABASE_URL\).*ENOTDIR/,
    );
    // The port is taken.
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as AddressInfo).port;
    const inUse = spawnSync(process.execPath, [BIN, "serve"], {
      env: { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: "silent", PORT: String(port) },
      encoding: "utf8",
      timeout: 20_000,
    });
    taken.close();
    expect(inUse.status).toBe(2);
    expect(inUse.stderr).toMatch(new RegExp(`cannot listen on HOST 127.0.0.1 PORT ${port}: .*EADDRINUSE`));
    // No database server there: not a configuration error as such (exit 1), but it says where.
    const unreachable = serve({ DATABASE_URL: "postgres://dock:s3cret-pw@127.0.0.1:1/none" });
    expect(unreachable.status).toBe(1);
    expect(unreachable.stderr.trim().split("\n")).toHaveLength(1);
    expect(unreachable.stderr).toMatch(
      /the database cannot be reached \(DATABASE_URL postgres:\/\/dock:\*\*\*@127\.0\.0\.1:1\/none\): .*ECONNREFUSED/,
    );
    expect(unreachable.stderr).not.toContain("s3cret-pw");
    const migrated = spawnSync(process.execPath, [BIN, "migrate"], {
      env: { ...process.env, DATA_DIR: dataDir, DATABASE_URL: "postgres://dock:s3cret-pw@127.0.0.1:1/none" },
      encoding: "utf8",
    });
    expect(migrated.status).toBe(1);
    expect(migrated.stderr).toMatch(
      /the database cannot be reached \(DATABASE_URL postgres:\/\/dock:\*\*\*@/,
    );
  }, 90_000);
});
