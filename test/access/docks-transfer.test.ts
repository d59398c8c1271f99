import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.ts";
import { runCli } from "../../src/cli.ts";
import { loadConfig } from "../../src/runtime/config.ts";
import { loadEncryptionKey } from "../../src/runtime/encryption-key.ts";
import { openDb } from "../../src/store/open.ts";
import { SubscriptionRepository } from "../../src/store/subscriptions.ts";
import { SANDBOX_BOT_TOKEN } from "../../src/telegram/sandbox-bot.ts";
import { createTestDatabase, dialects, type TestDatabase } from "../helpers/harness.ts";

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

/** The sandbox's first and second person (src/sandbox/emulator.ts). */
const ALICE = 100000001;
const BOB = 100000002;
/** The real person the Docks go to. */
const REAL = 424242;

describe.each(await dialects())("dock-notify docks transfer on %s", (dialect) => {
  let database: TestDatabase;
  /** The sandbox plays Telegram (no token), as while trying Dock Notify. */
  let sandboxEnv: Record<string, string>;
  /** A real bot (never called by these commands). */
  let realEnv: Record<string, string>;

  beforeAll(async () => {
    database = await createTestDatabase(dialect, { migrated: true });
    sandboxEnv = { DATABASE_URL: database.url, DATA_DIR: database.dataDir, LOG_LEVEL: "silent" };
    realEnv = {
      ...sandboxEnv,
      TELEGRAM_BOT_TOKEN: SANDBOX_BOT_TOKEN,
      TELEGRAM_API_ROOT: "http://127.0.0.1:9/unused",
    };
  });
  afterAll(async () => {
    await database?.drop();
  });

  const json = async (env: Record<string, string>, ...args: string[]) => {
    const result = await cli(env, ...args, "--json");
    expect(result.err).toBe("");
    expect(result.code).toBe(0);
    return JSON.parse(result.out);
  };

  /** A send through the real send API over the same database: its status and answer. */
  const send = async (dockId: string, secret: string, msg: string) => {
    const config = loadConfig({ ...sandboxEnv, PORT: "0" });
    const db = await openDb(config.databaseUrl);
    const { server } = await createApp({
      config,
      db,
      encryptionKey: loadEncryptionKey(null, database.dataDir).key,
    });
    try {
      const response = await server.inject({
        method: "POST",
        url: "/ping",
        payload: { dock_id: dockId, secret_key: secret, msg },
      });
      return { status: response.statusCode, body: response.json() };
    } finally {
      await server.close();
      await db.close();
    }
  };

  it("hands one Dock, then all of an owner's, to another person: subscribers, credentials and history stay; each Dock's audit log says so", {
    timeout: 120_000,
  }, async () => {
    const first = await json(sandboxEnv, "docks", "create", "--owner", String(ALICE), "--name", "Deploys");
    const second = await json(sandboxEnv, "docks", "create", "--owner", String(ALICE), "--name", "Backups");
    const bobs = await json(sandboxEnv, "docks", "create", "--owner", String(BOB), "--name", "Bob's");
    const credential = await json(sandboxEnv, "docks", "credentials", "create", first.id, "--name", "ci");
    const db = await openDb(database.url);
    try {
      expect(await new SubscriptionRepository(db).subscribe(first.id, 5551, "private")).toBe(true);
    } finally {
      await db.close();
    }
    const sent = await send(first.id, first.secret_key, "before the hand-over");
    expect(sent.status).toBe(202);
    expect(sent.body.subscribers).toBe(1);

    const one = await json(
      sandboxEnv,
      "docks",
      "transfer",
      first.id,
      "--from",
      String(ALICE),
      "--to",
      String(REAL),
    );
    expect(one).toEqual({
      from: ALICE,
      to: REAL,
      docks: [{ id: first.id, name: "Deploys", active_subscribers: 1 }],
    });
    const shown = await json(sandboxEnv, "docks", "show", first.id);
    expect(shown).toMatchObject({ owner_id: REAL, active_subscribers: 1, secret_key: first.secret_key });
    // The secret key and the credential still send, to the same subscriber; the history is kept.
    expect((await send(first.id, first.secret_key, "after")).body.subscribers).toBe(1);
    expect((await send(first.id, credential.secret, "with the credential")).status).toBe(202);
    const check = await openDb(database.url);
    try {
      const rows = await check.kysely
        .selectFrom("messages")
        .select("text")
        .where("dock_id", "=", first.id)
        .orderBy("created_at")
        .execute();
      expect(rows.map((row) => row.text)).toEqual(["before the hand-over", "after", "with the credential"]);
    } finally {
      await check.close();
    }
    const audit = await json(sandboxEnv, "docks", "audit", first.id);
    expect(audit.entries[0]).toMatchObject({
      actor: null,
      action: "owner_changed",
      detail: { from: ALICE, to: REAL, via: "cli" },
    });

    // --all: whatever ALICE still owns (not Bob's), in text this time.
    const all = await cli(
      sandboxEnv,
      "docks",
      "transfer",
      "--all",
      "--from",
      String(ALICE),
      "--to",
      String(REAL),
    );
    expect(all.err).toBe("");
    expect(all.code).toBe(0);
    expect(all.out).toContain(`Gave 1 Dock of ${ALICE} to ${REAL}:`);
    expect(all.out).toContain(`${second.id}  Backups (0 subscribers)`);
    expect(
      (await json(sandboxEnv, "docks", "list", "--owner", String(REAL)))
        .map((d: { id: string }) => d.id)
        .sort(),
    ).toEqual([first.id, second.id].sort());
    expect((await json(sandboxEnv, "docks", "show", bobs.id)).owner_id).toBe(BOB);
    expect((await json(sandboxEnv, "docks", "audit", second.id)).entries[0]).toMatchObject({
      action: "owner_changed",
      detail: { from: ALICE, to: REAL, via: "cli" },
    });

    // On the real bot REAL may sign in (an owner record was made for them); the sandbox's Bob,
    // whose row was made while the sandbox played Telegram, is nobody there.
    const owners = await json(realEnv, "owners", "list");
    expect(owners.owners.map((o: { id: number; docks: number }) => [o.id, o.docks])).toEqual([[REAL, 2]]);
    const sandboxOwners = await json(sandboxEnv, "owners", "list");
    expect(sandboxOwners.owners.map((o: { id: number }) => o.id).sort()).toEqual([ALICE, BOB, REAL].sort());
  });

  it("refuses an unknown Dock, a Dock of someone else, nothing to hand over and contradictory options, in the CLI's error style", async () => {
    const dock = await json(sandboxEnv, "docks", "create", "--owner", "777", "--name", "Someone's");
    const unknown = await cli(sandboxEnv, "docks", "transfer", "NoSuchDock", "--from", "777", "--to", "778");
    expect(unknown).toEqual({ code: 1, out: "", err: 'dock-notify: no Dock with ID "NoSuchDock"\n' });
    const unknownJson = await cli(
      sandboxEnv,
      "docks",
      "transfer",
      "NoSuchDock",
      "--from",
      "777",
      "--to",
      "778",
      "--json",
    );
    expect(unknownJson.code).toBe(1);
    expect(JSON.parse(unknownJson.err)).toEqual({
      ok: false,
      error: { code: "not_found", message: 'no Dock with ID "NoSuchDock"' },
    });

    const notTheirs = await cli(sandboxEnv, "docks", "transfer", dock.id, "--from", "779", "--to", "778");
    expect(notTheirs.code).toBe(2);
    expect(notTheirs.err).toBe(`dock-notify: Dock ${dock.id} is owned by 777, not 779 (--from)\n`);

    const nothing = await cli(
      sandboxEnv,
      "docks",
      "transfer",
      "--all",
      "--from",
      "780",
      "--to",
      "778",
      "--json",
    );
    expect(nothing.code).toBe(1);
    expect(JSON.parse(nothing.err).error).toEqual({ code: "not_found", message: "owner 780 has no Docks" });

    for (const [args, message] of [
      [["--from", "777", "--to", "778"], "name a Dock ID, or give --all for every Dock of --from"],
      [[dock.id, "--all", "--from", "777", "--to", "778"], "a Dock ID and --all contradict each other"],
      [[dock.id, "--from", "777", "--to", "777"], "--from and --to are both 777: nothing to hand over"],
      [
        [dock.id, "--from", "777", "--to", "someone"],
        '--to must be a Telegram user id (a positive whole number), got "someone"',
      ],
    ] as const) {
      const refused = await cli(sandboxEnv, "docks", "transfer", ...args, "--json");
      expect(refused.code).toBe(2);
      expect(JSON.parse(refused.err).error).toEqual({ code: "invalid_input", message });
    }
    const missing = await cli(sandboxEnv, "docks", "transfer", dock.id, "--from", "777");
    expect(missing.code).toBe(2);
    expect(missing.err).toContain("required option '--to <telegram_user_id>' not specified");
    // Nothing moved.
    expect((await json(sandboxEnv, "docks", "show", dock.id)).owner_id).toBe(777);
  });
});
