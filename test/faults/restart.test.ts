import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadEncryptionKey } from "../../src/runtime/encryption-key.ts";
import { DockRepository } from "../../src/store/docks.ts";
import { migrate, openDb } from "../../src/store/open.ts";
import { startChildService } from "../helpers/child-service.ts";

describe("a crash loses no acknowledged message", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "dock-notify-restart-"));
  let child: ChildProcess | undefined;
  afterEach(() => {
    child?.kill("SIGKILL");
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("SIGKILL mid-stream, restart: every 202 is in the database", async () => {
    const env = { DATA_DIR: dataDir, AUTH_FAILURES_PER_MINUTE: "0", DOCK_RATE_BURST: "0" };
    // The Dock is made the way an operator would, in the same database the service uses.
    const db = await openDb(`sqlite:${join(dataDir, "dock-notify.db")}`);
    await migrate(db);
    const docks = new DockRepository(db, loadEncryptionKey(null, dataDir).key);
    const dock = await docks.create(9, { name: "Crash", link: null, description: null });
    await db.close();

    const first = await startChildService(env);
    child = first.child;
    const acknowledged: string[] = [];
    let sent = 0;
    const sender = async () => {
      while (true) {
        const n = sent++;
        try {
          const response = await fetch(`${first.url}/ping`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ dock_id: dock.id, secret_key: dock.secretKey, msg: `message ${n}` }),
          });
          if (response.status === 202)
            acknowledged.push(((await response.json()) as { message_id: string }).message_id);
        } catch {
          return; // the process is gone
        }
      }
    };
    const senders = Array.from({ length: 8 }, sender);
    while (acknowledged.length < 300) await new Promise((r) => setTimeout(r, 5));
    first.child.kill("SIGKILL");
    await once(first.child, "exit");
    await Promise.all(senders);
    expect(acknowledged.length).toBeGreaterThanOrEqual(300);

    const second = await startChildService(env);
    child = second.child;
    const check = await openDb(`sqlite:${join(dataDir, "dock-notify.db")}`);
    const stored = new Set(
      (await check.kysely.selectFrom("messages").select("id").where("dock_id", "=", dock.id).execute()).map(
        (r) => r.id,
      ),
    );
    await check.close();
    const lost = acknowledged.filter((id) => !stored.has(id));
    expect(lost).toEqual([]);

    // And the restarted service takes new messages.
    const after = await fetch(`${second.url}/ping`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ dock_id: dock.id, secret_key: dock.secretKey, msg: "after restart" }),
    });
    expect(after.status).toBe(202);
  }, 60_000);
});
