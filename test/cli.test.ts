import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
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

  it("migrate applies the schema once", () => {
    const fresh = mkdtempSync(join(tmpdir(), "dock-notify-migrate-"));
    const env = { ...process.env, DATA_DIR: fresh };
    const first = spawnSync(process.execPath, [BIN, "migrate"], { env, encoding: "utf8" });
    const second = spawnSync(process.execPath, [BIN, "migrate"], { env, encoding: "utf8" });
    rmSync(fresh, { recursive: true, force: true });
    expect(first.stdout).toMatch(/applied: 0001-initial/);
    expect(second.stdout).toMatch(/up to date/);
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
});
