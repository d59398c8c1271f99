import { type ChildProcess, execFile, spawn } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { promisify } from "node:util";
import { sql } from "kysely";
import { afterAll, describe, expect, it } from "vitest";
import { newDockId, newMessageId } from "../../src/domain/ids.ts";
import { encryptSecret, hashSecret, newSecretKey, newSigningSecret } from "../../src/domain/secrets.ts";
import { loadEncryptionKey } from "../../src/runtime/encryption-key.ts";
import { DockRepository } from "../../src/store/docks.ts";
import { migrate, openDb } from "../../src/store/open.ts";
import { SubscriptionRepository } from "../../src/store/subscriptions.ts";
import { startChildService } from "../helpers/child-service.ts";
import { sandboxOf } from "../helpers/delivery-harness.ts";
import {
  basic,
  createTestDatabase,
  dialects,
  hasPostgres,
  type RunningService,
  startServiceOver,
} from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

/** The command as installed (bin/dock-notify.js, running the compiled service the global setup built). */
const BIN = join(import.meta.dirname, "..", "..", "bin", "dock-notify.js");

/** `dock-notify …` in a process of its own: its exit status and what it wrote. */
function dockNotify(
  env: Record<string, string>,
  ...args: string[]
): Promise<{ status: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, LOG_LEVEL: "warn", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk));
    child.stderr.on("data", (chunk: Buffer) => (err += chunk));
    child.on("error", reject);
    child.on("close", (status) => resolve({ status, out, err }));
  });
}

function sqliteRows<T>(file: string, query: string): T[] {
  const database = new DatabaseSync(file, { readOnly: true });
  try {
    return database.prepare(query).all() as T[];
  } finally {
    database.close();
  }
}

describe("dock-notify backup (SQLite)", () => {
  const work = mkdtempSync(join(tmpdir(), "dock-notify-backup-"));
  const children = new Set<ChildProcess>();
  afterAll(() => {
    for (const child of children) child.kill("SIGKILL");
    rmSync(work, { recursive: true, force: true });
  });

  it("made while the service runs and writes: a whole database with every message answered 202 before it began, which a service runs from", async () => {
    const dataDir = join(work, "live");
    const env = { DATA_DIR: dataDir, AUTH_FAILURES_PER_MINUTE: "0", DOCK_RATE_BURST: "0" };
    const db = await openDb(`sqlite:${join(dataDir, "dock-notify.db")}`);
    await migrate(db);
    const dock = await new DockRepository(db, loadEncryptionKey(null, dataDir).key).create(9, {
      name: "Backed up",
      link: null,
      description: null,
    });
    const service = await startChildService(env);
    children.add(service.child);
    // A person of the service's sandbox subscribes: the dispatcher's deliveries are written too.
    const reader = await sandboxOf({ url: service.url } as RunningService).person("Reader");
    await new SubscriptionRepository(db).subscribe(dock.id, reader, "private");
    await db.close();

    const acknowledged: string[] = [];
    let sending = true;
    const sender = async () => {
      for (let n = 0; sending; n++) {
        const response = await fetch(`${service.url}/ping`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ dock_id: dock.id, secret_key: dock.secretKey, msg: `message ${n}` }),
        });
        expect(response.status).toBe(202);
        acknowledged.push(((await response.json()) as { message_id: string }).message_id);
      }
    };
    const senders = Array.from({ length: 4 }, sender);
    await waitFor("200 messages accepted", () => acknowledged.length >= 200, 60_000, 10);

    const before = [...acknowledged];
    const file = join(work, "backup.db");
    const made = await dockNotify(env, "backup", file, "--json");
    const during = acknowledged.length - before.length;
    sending = false;
    await Promise.all(senders);
    expect(made.err).toBe("");
    expect(made.status).toBe(0);
    expect(JSON.parse(made.out)).toEqual({ file, pages: expect.any(Number), bytes: statSync(file).size });
    // The service went on accepting while the backup was made.
    expect(during).toBeGreaterThan(0);

    expect(sqliteRows(file, "pragma integrity_check")).toEqual([{ integrity_check: "ok" }]);
    expect(sqliteRows(file, "pragma foreign_key_check")).toEqual([]);
    // One file, readable by its owner only, like the database.
    expect(sqliteRows(file, "pragma journal_mode")).toEqual([{ journal_mode: "delete" }]);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const stored = new Set(sqliteRows<{ id: string }>(file, "select id from messages").map((row) => row.id));
    expect(before.filter((id) => !stored.has(id))).toEqual([]);
    expect(stored.size).toBeLessThanOrEqual(acknowledged.length);

    // Restored: the backup as the database of a new data folder, with the encryption key beside it.
    const restored = join(work, "restored");
    const restoredEnv = { ...env, DATA_DIR: restored };
    mkdirSync(restored, { mode: 0o700 });
    copyFileSync(file, join(restored, "dock-notify.db"));
    copyFileSync(join(dataDir, "encryption.key"), join(restored, "encryption.key"));
    const shown = await dockNotify(restoredEnv, "docks", "show", dock.id, "--json");
    expect(shown.status).toBe(0);
    expect(JSON.parse(shown.out)).toMatchObject({ id: dock.id, secret_key: dock.secretKey });
    const second = await startChildService(restoredEnv);
    children.add(second.child);
    const auth = { Authorization: basic(dock.id, dock.secretKey) };
    const old = await fetch(`${second.url}/messages/${before[0]}`, { headers: auth });
    expect(old.status).toBe(200);
    expect(((await old.json()) as { message: { id: string } }).message.id).toBe(before[0]);
    const ping = await fetch(`${second.url}/webhook`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ msg: "after the restore" }),
    });
    expect(ping.status).toBe(202);
  }, 180_000);

  it("never overwrites a file unless --force, never copies onto the database, never makes one", async () => {
    const dataDir = join(work, "refusals");
    const env = { DATA_DIR: dataDir };
    // No database yet: nothing to back up, and none is created by asking.
    const none = await dockNotify(env, "backup", join(work, "none.db"));
    expect(none.status).toBe(1);
    expect(none.err).toMatch(/^dock-notify: there is no database at .*dock-notify\.db/);
    expect(existsSync(join(dataDir, "dock-notify.db"))).toBe(false);
    expect(existsSync(join(work, "none.db"))).toBe(false);

    expect((await dockNotify(env, "docks", "create", "--owner", "5", "--name", "Kept")).status).toBe(0);
    const target = join(work, "taken.db");
    writeFileSync(target, "something the operator keeps");
    const refused = await dockNotify(env, "backup", target);
    expect(refused.status).toBe(2);
    expect(refused.err).toContain("exists: name another file, or add --force to replace it");
    expect(readFileSync(target, "utf8")).toBe("something the operator keeps");

    const forced = await dockNotify(env, "backup", target, "--force");
    expect(forced.status).toBe(0);
    expect(forced.out).toContain(`Keep the encryption key with it (${join(dataDir, "encryption.key")})`);
    expect(sqliteRows(target, "select name from docks")).toEqual([{ name: "Kept" }]);

    const nowhere = await dockNotify(env, "backup", join(work, "no-such-folder", "backup.db"));
    expect(nowhere.status).toBe(2);
    expect(nowhere.err).toContain(`there is no folder ${join(work, "no-such-folder")}`);

    const itself = await dockNotify(env, "backup", join(dataDir, "dock-notify.db"), "--force");
    expect(itself.status).toBe(2);
    expect(itself.err).toContain("is the database itself");
    expect(sqliteRows(join(dataDir, "dock-notify.db"), "select name from docks")).toEqual([{ name: "Kept" }]);
  }, 60_000);
});

describe("dock-notify backup (PostgreSQL)", () => {
  it("says to use pg_dump, with a command that works and no password in it", async (context) => {
    if (!(await hasPostgres())) context.skip();
    const database = await createTestDatabase("postgres", { migrated: true });
    const work = mkdtempSync(join(tmpdir(), "dock-notify-pg-dump-"));
    try {
      const url = new URL(database.url);
      // The local server trusts 127.0.0.1: any password gets in, and none may be printed.
      url.password = "hunter2-not-printed";
      const env = { DATABASE_URL: url.toString(), DATA_DIR: database.dataDir };
      expect(
        (await dockNotify(env, "docks", "create", "--owner", "5", "--name", "In PostgreSQL")).status,
      ).toBe(0);
      const file = join(work, "dock notify's.dump");
      const answer = await dockNotify(env, "backup", file);
      expect(answer.status).toBe(1);
      expect(answer.err).not.toContain("hunter2");
      const command = /e\.g\. (pg_dump .*) \(docs\/upgrading\.md\)$/m.exec(answer.err)?.[1];
      expect(command).toMatch(/^pg_dump --format=custom --file /);
      expect(existsSync(file)).toBe(false);
      await promisify(execFile)("sh", ["-c", command as string]);
      const listed = await promisify(execFile)("pg_restore", ["--list", file]);
      expect(listed.stdout).toMatch(/TABLE DATA public docks /);
    } finally {
      rmSync(work, { recursive: true, force: true });
      await database.drop();
    }
  }, 60_000);
});

/** The last migration of the previous wave: a database made then is what an upgrade starts from. */
const PREVIOUS = "0015-dock-credentials";

describe.each(await dialects())("an upgrade from the schema of %s", (dialect) => {
  it(`dock-notify migrate brings a database made at ${PREVIOUS}, with data in it, up to date; the data survives and the service works with it`, async () => {
    const database = await createTestDatabase(dialect);
    const key = loadEncryptionKey(null, database.dataDir).key;
    const env = { DATABASE_URL: database.url, DATA_DIR: database.dataDir };
    let service: RunningService | undefined;
    try {
      // What a service of that time kept: an administrator and an owner, two Docks, a private
      // chat, a group and a person who blocked the bot subscribed, messages and their deliveries.
      const now = Date.now();
      const old = await openDb(database.url);
      const deploys = { id: newDockId(), secret: newSecretKey() };
      const backups = { id: newDockId(), secret: newSecretKey() };
      const sent = newMessageId(now - 60_000);
      const keyed = newMessageId(now - 30_000);
      try {
        await migrate(old, { to: PREVIOUS });
        const k = old.kysely;
        await sql`insert into users (telegram_id, first_name, username, created_at) values
          (777, 'Olga', 'olga', ${now}), (778, 'Piet', null, ${now})`.execute(k);
        await sql`insert into owners (telegram_id, role, added_by, added_at) values
          (777, 'admin', null, ${now}), (778, 'owner', 777, ${now})`.execute(k);
        await sql`update instance set claimed_at = ${now}, claimed_by = 777`.execute(k);
        for (const [dock, owner, name] of [
          [deploys, 777, "Deploys"],
          [backups, 778, "Backups"],
        ] as const) {
          await sql`insert into docks (id, owner_id, name, link, description, secret_hash, secret_sealed,
              signing_sealed, callback_url, created_at, updated_at)
            values (${dock.id}, ${owner}, ${name}, 'https://ci.example', ${`${name} of the old days`},
              ${hashSecret(dock.secret).toString("hex")}, ${encryptSecret(dock.secret, key)},
              ${encryptSecret(newSigningSecret(), key)}, null, ${now}, ${now})`.execute(k);
        }
        await sql`insert into chats (chat_id, title, updated_at) values (-100123, 'Ops', ${now})`.execute(k);
        await sql`insert into subscriptions (dock_id, chat_id, chat_type, state, created_at, updated_at, active_since)
          values (${deploys.id}, 501, 'private', 'active', ${now - 90_000}, ${now - 90_000}, ${now - 90_000}),
                 (${deploys.id}, -100123, 'supergroup', 'active', ${now - 90_000}, ${now - 90_000}, ${now - 90_000}),
                 (${deploys.id}, 502, 'private', 'blocked', ${now - 90_000}, ${now - 80_000}, ${now - 90_000}),
                 (${backups.id}, 501, 'private', 'active', ${now - 90_000}, ${now - 90_000}, ${now - 90_000})`.execute(
          k,
        );
        await sql`insert into messages (id, dock_id, text, subscribers, created_at, key, revision)
          values (${sent}, ${deploys.id}, 'v1.2 deployed', 2, ${now - 60_000}, null, 1),
                 (${keyed}, ${deploys.id}, 'disk 95% on db-1', 2, ${now - 30_000}, 'disk-db-1', 1)`.execute(
          k,
        );
        await sql`insert into deliveries (message_id, dock_id, chat_id, state, attempts, next_attempt_at,
            telegram_message_ids, created_at, updated_at, kind)
          values (${sent}, ${deploys.id}, 501, 'sent', 1, ${now - 60_000}, '41', ${now - 60_000}, ${now - 59_000}, 'send'),
                 (${sent}, ${deploys.id}, -100123, 'sent', 2, ${now - 60_000}, '42,43', ${now - 60_000}, ${now - 58_000}, 'send'),
                 (${keyed}, ${deploys.id}, 501, 'sent', 1, ${now - 30_000}, '44', ${now - 30_000}, ${now - 29_000}, 'send'),
                 (${keyed}, ${deploys.id}, -100123, 'failed', 1, ${now - 30_000}, null, ${now - 30_000}, ${now - 29_000}, 'send')`.execute(
          k,
        );
      } finally {
        await old.close();
      }

      const migrated = await dockNotify(env, "migrate", "--json");
      expect(migrated.err).toBe("");
      expect(migrated.status).toBe(0);
      const applied = (JSON.parse(migrated.out) as { applied: string[] }).applied;
      expect(applied[0]).toBe("0016-github-credentials");
      const check = await openDb(database.url);
      try {
        const all = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(
          check.kysely,
        );
        expect(applied).toEqual(all.rows.map((row) => row.name).filter((name) => name > PREVIOUS));
        const texts = await sql<{
          id: string;
          text: string;
        }>`select id, text from messages order by id`.execute(check.kysely);
        expect(texts.rows).toEqual([
          { id: sent, text: "v1.2 deployed" },
          { id: keyed, text: "disk 95% on db-1" },
        ]);
      } finally {
        await check.close();
      }
      // A second run has nothing to do.
      expect((await dockNotify(env, "migrate")).out).toBe("the database is up to date\n");

      // The data, as the command line reads it (the key opens the Docks' secrets).
      writeFileSync(join(database.dataDir, "encryption.key"), `${key.toString("base64")}\n`);
      const owners = JSON.parse((await dockNotify(env, "owners", "list", "--json")).out) as {
        owners: { id: number; role: string }[];
      };
      expect(owners.owners.map((o) => [o.id, o.role]).sort()).toEqual([
        [777, "admin"],
        [778, "owner"],
      ]);
      const shown = await dockNotify(env, "docks", "show", deploys.id, "--json");
      expect(shown.status).toBe(0);
      expect(JSON.parse(shown.out)).toMatchObject({
        id: deploys.id,
        name: "Deploys",
        owner_id: 777,
        secret_key: deploys.secret,
        visibility: "open",
        active_subscribers: 2,
        link: "https://ci.example",
        description: "Deploys of the old days",
      });
      const listed = JSON.parse((await dockNotify(env, "docks", "list", "--owner", "778", "--json")).out) as {
        id: string;
      }[];
      expect(listed.map((dock) => dock.id)).toEqual([backups.id]);

      // The service runs on it: the old messages' states, a new send delivered.
      service = await startServiceOver(database, {}, key, { pace: "unpaced" });
      const auth = { Authorization: basic(deploys.id, deploys.secret) };
      const status = async (id: string) => {
        const response = await fetch(`${service?.url}/messages/${id}`, { headers: auth });
        expect(response.status).toBe(200);
        // biome-ignore lint/suspicious/noExplicitAny: the API's JSON, checked field by field.
        return ((await response.json()) as any).message;
      };
      const copy = (chat_id: number, state: string, telegram_message_ids: number[]) =>
        expect.objectContaining({ chat_id, state, telegram_message_ids });
      expect(await status(sent)).toMatchObject({
        id: sent,
        state: "delivered",
        counts: { queued: 0, sent: 2, failed: 0, gone: 0 },
        deliveries: expect.arrayContaining([copy(501, "sent", [41]), copy(-100123, "sent", [42, 43])]),
      });
      expect(await status(keyed)).toMatchObject({
        key: "disk-db-1",
        state: "partially_delivered",
        counts: { sent: 1, failed: 1 },
        deliveries: expect.arrayContaining([copy(501, "sent", [44]), copy(-100123, "failed", [])]),
      });
      const sandbox = sandboxOf(service);
      const newcomer = await sandbox.person("After the upgrade");
      await service.subscriptions.subscribe(deploys.id, newcomer, "private");
      const ping = await fetch(`${service.url}/ping`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ dock_id: deploys.id, secret_key: deploys.secret, msg: "v1.3 deployed" }),
      });
      expect(ping.status).toBe(202);
      await waitFor("the new message in the newcomer's chat", async () =>
        (await sandbox.botTexts(newcomer)).some((text) => text.includes("v1.3 deployed")),
      );
    } finally {
      await service?.close();
      await database.drop();
    }
  }, 180_000);
});
