import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { Kysely, sql } from "kysely";
import { afterAll, describe, expect, it } from "vitest";
import { loadEncryptionKey } from "../../src/runtime/encryption-key.ts";
import { DockRepository } from "../../src/store/docks.ts";
import { type Db, migrate, openDb } from "../../src/store/open.ts";
import { SqliteThread, sqliteThreadDialect } from "../../src/store/sqlite/connection.ts";
import { startChildService } from "../helpers/child-service.ts";
import { waitFor } from "../helpers/wait.ts";

/**
 * SQLite's write-ahead log is copied into the database file by a thread of its own
 * (store/sqlite/checkpointer.ts), never by the commits that store messages.
 */

describe("SQLite checkpoints", () => {
  const dirs: string[] = [];
  const dbs: Db[] = [];
  afterAll(async () => {
    // A test that failed half-way leaves no thread behind (closing twice is harmless).
    await Promise.all(dbs.map((db) => db.close()));
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  async function open() {
    const dir = mkdtempSync(join(tmpdir(), "dock-notify-checkpoints-"));
    dirs.push(dir);
    const path = join(dir, "dock-notify.db");
    const db = await openDb(`sqlite:${path}`);
    dbs.push(db);
    const warnings: string[] = [];
    db.onWarning((message) => warnings.push(message));
    await migrate(db);
    const dock = await new DockRepository(db, loadEncryptionKey(null, dir).key).create(1, {
      name: "Checkpoints",
      link: null,
      description: null,
    });
    return { dir, path, db, dockId: dock.id, secretKey: dock.secretKey, warnings };
  }

  async function store(db: Db, dockId: string, count: number, text = "a message") {
    const items = Array.from({ length: count }, (_, i) => ({
      dockId,
      text: `${text} ${i}`,
      content: null,
      idempotencyKey: null,
      hash: null,
      secretKey: null,
    }));
    const outcomes = await db.acceptBatch({ items, now: Date.now(), dockRate: null });
    expect(outcomes.every((outcome) => outcome.kind === "accepted")).toBe(true);
  }

  /** Rows of `table` in the database file alone, without its WAL: what a checkpoint has copied there. */
  function rowsInDatabaseFile(dir: string, path: string, table: "messages" | "notes" = "messages"): number {
    const copy = join(dir, `copy-${Date.now()}.db`);
    copyFileSync(path, copy);
    const db = new DatabaseSync(copy);
    try {
      return Number((db.prepare(`select count(*) as n from ${table}`).get() as { n: number }).n);
    } finally {
      db.close();
      for (const file of [copy, `${copy}-wal`, `${copy}-shm`]) rmSync(file, { force: true });
    }
  }

  /** The WAL header's checkpoint sequence number: it goes up each time the WAL file starts over. */
  function walSequence(path: string): number {
    return readFileSync(`${path}-wal`).readUInt32BE(12);
  }

  it("commits leave checkpoints to the checkpoint thread, which copies an idle WAL in", async () => {
    const { dir, path, db, dockId, warnings } = await open();
    // The connection that stores messages never checkpoints on commit.
    const { rows } = await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(db.kysely);
    expect(rows[0]?.wal_autocheckpoint).toBe(0);

    // Far fewer than the 1,000 pages after which a commit would have checkpointed by default: the
    // messages reach the database file all the same, within moments, with nobody writing.
    await store(db, dockId, 200);
    await waitFor(
      "the 200 messages in the database file",
      () => rowsInDatabaseFile(dir, path) === 200,
      10_000,
    );
    expect(warnings).toEqual([]);
    await db.close();
  });

  it("the built service (dist/) runs its checkpoint thread: sent messages reach the database file", async () => {
    const { dir, path, db, dockId, secretKey } = await open();
    await db.close();
    // Fewer pages than a commit would checkpoint at by default: only the thread copies them in.
    const service = await startChildService({ DATA_DIR: dir, DOCK_RATE_BURST: "0" });
    try {
      for (let i = 0; i < 50; i++) {
        const response = await fetch(`${service.url}/ping`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ dock_id: dockId, secret_key: secretKey, msg: `message ${i}` }),
        });
        expect(response.status).toBe(202);
      }
      await waitFor(
        "the 50 messages in the database file",
        () => rowsInDatabaseFile(dir, path) === 50,
        10_000,
      );
      const warnings = service.logs
        .map((line) => JSON.parse(line) as { level: number; msg: string })
        .filter((entry) => entry.level >= 40 && entry.msg.includes("checkpoint"));
      expect(warnings).toEqual([]);
    } finally {
      if (service.child.exitCode === null && service.child.signalCode === null) {
        const exited = new Promise((resolve) => service.child.once("exit", resolve));
        service.child.kill("SIGTERM");
        await exited;
      }
    }
  });

  it("under a steady stream of commits, the WAL file still starts over", async () => {
    const { path, db, dockId, warnings } = await open();
    const first = walSequence(path);
    // ~1 KiB per message, four batches in flight so the writer never waits for the next: a
    // PASSIVE checkpoint alone never catches up with it, and the WAL would only grow.
    let stored = 0;
    const inFlight = new Set<Promise<void>>();
    while (walSequence(path) === first) {
      expect(stored, "messages stored before the WAL started over").toBeLessThan(200_000);
      const batch = store(db, dockId, 100, "x".repeat(1000)).finally(() => inFlight.delete(batch));
      inFlight.add(batch);
      stored += 100;
      if (inFlight.size >= 4) await Promise.race(inFlight);
    }
    await Promise.all(inFlight);
    expect(warnings).toEqual([]);
    await db.close();
  });

  it("a reader outside the service that keeps old pages in use holds up no commit", async () => {
    const { path, db, dockId, warnings } = await open();
    try {
      // An operator's `sqlite3` shell in the middle of a transaction: the WAL cannot start over
      // while it reads, and a checkpoint that waited for it would hold the write lock meanwhile.
      const reader = new DatabaseSync(path);
      reader.exec("begin");
      reader.prepare("select count(*) from messages").get();
      const first = walSequence(path);
      // Past the 4,000 pages at which RESTART checkpoints begin, then on for ten ticks of the
      // checkpoint thread: every batch is accepted (none fails on the lock).
      const restartBytes = 4000 * 4096;
      let until = Number.POSITIVE_INFINITY;
      while (Date.now() < until) {
        await store(db, dockId, 100, "x".repeat(1000));
        if (until === Number.POSITIVE_INFINITY && statSync(`${path}-wal`).size > restartBytes) {
          until = Date.now() + 2000;
        }
      }
      expect(walSequence(path)).toBe(first);
      reader.exec("commit");
      reader.close();
      // Once it lets go, the WAL is copied in and starts over.
      await waitFor("the WAL to start over", async () => {
        await store(db, dockId, 10);
        return walSequence(path) !== first;
      });
      expect(warnings).toEqual([]);
    } finally {
      await db.close();
    }
  });

  it("closing the database ends the checkpoint thread first, so the WAL is copied in and removed", async () => {
    const { dir, path, db, dockId } = await open();
    await store(db, dockId, 50);
    // The checkpoint thread has its connection open by now.
    await waitFor("a checkpoint", () => rowsInDatabaseFile(dir, path) === 50, 10_000);
    await db.close();
    expect(existsSync(`${path}-wal`)).toBe(false);
    expect(rowsInDatabaseFile(dir, path)).toBe(50);
  });

  it("the checkpoint thread rests while nothing is written, and the next write wakes it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "dock-notify-checkpoints-"));
    dirs.push(dir);
    const path = join(dir, "rest.db");
    const warnings: string[] = [];
    const thread = new SqliteThread(
      path,
      { synchronous: "normal", checkpointRestMs: 300 },
      { onWarning: (message) => warnings.push(message) },
    );
    const kysely = new Kysely<{ notes: { text: string } }>({ dialect: sqliteThreadDialect(thread) });
    const write = (count: number) =>
      kysely
        .insertInto("notes")
        .values(Array.from({ length: count }, (_, i) => ({ text: `note ${i}` })))
        .execute();
    try {
      await kysely.schema.createTable("notes").addColumn("text", "text").execute();
      expect(thread.checkpoints).toBe("running");
      await write(100);
      await waitFor(
        "the first notes in the database file",
        () => rowsInDatabaseFile(dir, path, "notes") === 100,
        10_000,
      );
      // Nothing written for a while: the thread ends.
      await waitFor("the checkpoint thread to rest", () => thread.checkpoints === "resting", 10_000);
      // Writing again starts it, and it copies the new notes in: with the writer's own automatic
      // checkpoints off, nothing else would.
      await write(50);
      expect(thread.checkpoints).toBe("running");
      await waitFor(
        "the new notes in the database file",
        () => rowsInDatabaseFile(dir, path, "notes") === 150,
        10_000,
      );
      await waitFor("the checkpoint thread to rest again", () => thread.checkpoints === "resting", 10_000);

      // A write that answers rows (DELETE … RETURNING) wakes it too.
      const deleted = await kysely
        .deleteFrom("notes")
        .where("text", "=", "note 0")
        .returning("text")
        .execute();
      expect(deleted.length).toBe(2);
      expect(thread.checkpoints).toBe("running");
      await waitFor(
        "the deletion in the database file",
        () => rowsInDatabaseFile(dir, path, "notes") === 148,
        10_000,
      );
      await waitFor(
        "the checkpoint thread to rest once more",
        () => thread.checkpoints === "resting",
        10_000,
      );

      // So does a transaction whose last statement changed nothing: what counts is its commit.
      await kysely.transaction().execute(async (tx) => {
        await tx.insertInto("notes").values({ text: "in a transaction" }).execute();
        await tx.updateTable("notes").set({ text: "never" }).where("text", "=", "nobody").execute();
      });
      expect(thread.checkpoints).toBe("running");
      await waitFor(
        "the transaction in the database file",
        () => rowsInDatabaseFile(dir, path, "notes") === 149,
        10_000,
      );
      expect(warnings).toEqual([]);
    } finally {
      await kysely.destroy();
    }
  });

  it("a second connection's writes reach the database file when it closes, while the first one's thread rests", async () => {
    const dir = mkdtempSync(join(tmpdir(), "dock-notify-checkpoints-"));
    dirs.push(dir);
    const path = join(dir, "two.db");
    // The service: its checkpoint thread rests, with nothing to copy.
    const service = new SqliteThread(path, { synchronous: "normal", checkpointRestMs: 300 });
    const serviceDb = new Kysely<{ notes: { text: string } }>({ dialect: sqliteThreadDialect(service) });
    // A CLI command beside it: opens, writes, closes (its own checkpoint thread never gets a turn).
    const cli = new SqliteThread(path, { synchronous: "normal" });
    const cliDb = new Kysely<{ notes: { text: string } }>({ dialect: sqliteThreadDialect(cli) });
    try {
      await serviceDb.schema.createTable("notes").addColumn("text", "text").execute();
      await waitFor(
        "the service's checkpoint thread to rest",
        () => service.checkpoints === "resting",
        10_000,
      );
      await cliDb.insertInto("notes").values({ text: "from the CLI" }).execute();
      await cliDb.destroy();
      expect(rowsInDatabaseFile(dir, path, "notes")).toBe(1);
      expect(existsSync(`${path}-wal`)).toBe(true);
    } finally {
      await cliDb.destroy();
      await serviceDb.destroy();
    }
  });
});
