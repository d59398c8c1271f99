import { execFileSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync, unlinkSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type RunningService, startServiceOver } from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

/**
 * A small filesystem of its own for the database (tmpfs), so that the test can fill it up; null,
 * with the reason logged, where the machine does not let the test mount one (not root, a container
 * without the capability).
 */
function tinyFilesystem(megabytes: number): { dir: string; unmount(): void } | null {
  const dir = mkdtempSync(join(tmpdir(), "dock-notify-full-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${megabytes}m`, "tmpfs", dir], { stdio: "pipe" });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    const reason = (error as { stderr?: Buffer }).stderr?.toString().trim() || (error as Error).message;
    console.warn(`storage-full tests skipped: cannot mount a tmpfs here (${reason})`);
    return null;
  }
  return {
    dir,
    unmount() {
      execFileSync("umount", [dir]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Fills the filesystem: a file grows until the disk refuses another byte. */
function fill(path: string): void {
  const fd = openSync(path, "w");
  try {
    for (const size of [1024 * 1024, 64 * 1024, 4096, 512, 1]) {
      const chunk = Buffer.alloc(size);
      for (;;) {
        try {
          writeSync(fd, chunk);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === "ENOSPC") break;
          throw error;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
}

const tiny = tinyFilesystem(24);

/**
 * SQLite on a disk that fills up, a real one (tmpfs): the send API answers a 503 with a code of
 * the catalogue and Retry-After, never a 500; `/readyz` says the database refuses writes; the log
 * names the cause; and once space is freed everything works again by itself, with nothing that
 * was acknowledged lost.
 */
describe.skipIf(tiny === null)("a full disk under SQLite", () => {
  let service: RunningService | undefined;
  afterAll(async () => {
    await service?.close();
    tiny?.unmount();
  });

  it("is a 503 storage_unavailable and /readyz 503 while full, and 202 again once space is freed", async () => {
    const dir = (tiny as { dir: string }).dir;
    service = await startServiceOver(
      { url: `sqlite:${join(dir, "dock-notify.db")}`, dataDir: dir, drop: async () => {} },
      { DOCK_RATE_BURST: "0", AUTH_FAILURES_PER_MINUTE: "0" },
    );
    const running = service;
    const dock = await running.app.docks.create(1, { name: "Full", link: null, description: null });
    const acknowledged: string[] = [];
    const statuses = new Map<number, number>();
    const text = "x".repeat(4000);
    let last: Response | undefined;
    const ping = async (n: number) => {
      const response = await fetch(`${running.url}/ping`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ dock_id: dock.id, secret_key: dock.secretKey, msg: `${n} ${text}` }),
      });
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      if (response.status === 202)
        acknowledged.push(((await response.json()) as { message_id: string }).message_id);
      last = response;
      return response;
    };

    for (let n = 0; n < 20; n++) expect((await ping(n)).status).toBe(202);
    // The disk fills up but for a quarter megabyte, which the WAL file takes: the messages in it
    // can no longer be copied into the database file, and then no more fit.
    const reserve = join(dir, "reserve");
    writeFileSync(reserve, Buffer.alloc(256 * 1024));
    const filler = join(dir, "filler");
    fill(filler);
    unlinkSync(reserve);

    // Sends go on until the database has no room left (the WAL file may still have some).
    let refused: Response | undefined;
    for (let n = 20; n < 5000 && refused === undefined; n++) {
      const response = await ping(n);
      if (response.status !== 202) refused = response;
    }
    expect(refused?.status).toBe(503);
    expect(refused?.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(await refused?.json()).toMatchObject({ ok: false, error: { code: "storage_unavailable" } });

    const readyz = await fetch(`${running.url}/readyz`);
    expect(readyz.status).toBe(503);
    expect(await readyz.json()).toMatchObject({
      error: { code: "not_ready" },
      checks: { database: "not_writable" },
    });
    const scrape = await (await fetch(`${running.url}/metrics`)).text();
    expect(scrape).toMatch(/^dock_notify_database_writable 0$/m);

    // The log says why, in so many words, and is no error with a stack (the disk is not our bug).
    const lines = running.logs.lines.map(
      (line) => JSON.parse(line) as { level: number; msg: string; cause?: string },
    );
    expect(lines.find((line) => line.msg === "storage_unavailable")).toMatchObject({
      level: 40,
      cause: "SQLITE_FULL",
    });
    expect(running.logs.text).not.toContain("cannot rollback");
    expect(lines.filter((line) => line.level >= 50)).toEqual([]);
    // The checkpoint thread meets the full disk too, and keeps trying (it used to give up for good).
    await waitFor("a checkpoint failing", () => running.logs.text.includes("a SQLite checkpoint failed"));
    // The disk stays full a while (longer than the 5 s after which the thread used to end), the
    // senders still told to come back later.
    const fullUntil = Date.now() + 7000;
    while (Date.now() < fullUntil) {
      expect((await ping(-2)).status).toBe(503);
      await new Promise((r) => setTimeout(r, 250));
    }

    // An operator frees space: everything works again without a restart.
    unlinkSync(filler);
    await waitFor("sends accepted again", async () => (await ping(-1)).status === 202, 30_000, 200);
    await waitFor(
      "/readyz ready again",
      async () => (await fetch(`${running.url}/readyz`)).status === 200,
      30_000,
      200,
    );
    expect([...statuses.keys()].sort()).toEqual([202, 503]);
    expect(last?.status).toBe(202);

    // The checkpoint thread works again by itself, and is still the one doing the checkpoints.
    await waitFor("checkpoints working again", () =>
      running.logs.text.includes("SQLite checkpoints work again"),
    );
    expect(running.logs.text).not.toContain("commits copy the WAL into the database from now on");

    const stored = new Set(
      (await running.db.kysely.selectFrom("messages").select("id").execute()).map((row) => row.id),
    );
    expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
  }, 120_000);
});
