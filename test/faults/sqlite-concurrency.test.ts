import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadEncryptionKey } from "../../src/runtime/encryption-key.ts";
import { DockRepository } from "../../src/store/docks.ts";
import { migrate, openDb } from "../../src/store/open.ts";
import { SubscriptionRepository } from "../../src/store/subscriptions.ts";
import { startChildService } from "../helpers/child-service.ts";

/**
 * An operator's process (the CLI, a script) writes to the SQLite file while the service takes
 * messages: each must wait its turn for the write lock, and neither may fail.
 */
describe("SQLite shared by two processes", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "dock-notify-shared-"));
  let child: ChildProcess | undefined;
  afterAll(() => {
    child?.kill("SIGKILL");
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("pings and another process's read-then-write transactions all succeed", async () => {
    const db = await openDb(`sqlite:${join(dataDir, "dock-notify.db")}`);
    await migrate(db);
    const dock = await new DockRepository(db, loadEncryptionKey(null, dataDir).key).create(1, {
      name: "Shared",
      link: null,
      description: null,
    });
    const subscriptions = new SubscriptionRepository(db);
    const started = await startChildService({ DATA_DIR: dataDir, DOCK_RATE_BURST: "0" });
    child = started.child;

    let sending = true;
    const statuses: number[] = [];
    const sender = async () => {
      for (let n = 0; sending; n++) {
        const response = await fetch(`${started.url}/ping`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ dock_id: dock.id, secret_key: dock.secretKey, msg: `m${n}` }),
        });
        statuses.push(response.status);
        await response.arrayBuffer();
      }
    };
    const senders = Array.from({ length: 6 }, sender);
    // subscribe() reads, then writes: the pattern that a deferred transaction cannot survive when
    // another process commits in between.
    // Until both sides have done plenty (a count, not a time: a loaded machine does less per second).
    const failures: string[] = [];
    const giveUp = Date.now() + 45_000;
    for (let chat = 1000; (chat < 1100 || statuses.length <= 50) && Date.now() < giveUp; chat++) {
      await subscriptions
        .subscribe(dock.id, chat, "private")
        .catch((error: Error) => failures.push(error.message));
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    sending = false;
    await Promise.all(senders);
    await db.close();
    expect(failures.slice(0, 3)).toEqual([]);
    expect(statuses.length).toBeGreaterThan(50);
    expect(statuses.filter((s) => s !== 202)).toEqual([]);
  }, 60_000);
});
