import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, describe, expect, it } from "vitest";
import { waitFor } from "./wait.ts";

const ROOT = join(import.meta.dirname, "..");

/** Whether a process is still there (signal 0 checks without sending anything). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * `npm start`, as the README and docs/deployment.md run it, stopped the way a container runtime or
 * a process manager stops it: SIGTERM to npm alone, not to its whole process group.
 */
describe("npm start", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "dock-notify-npm-start-"));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it("passes SIGTERM on to the service, which shuts down gracefully instead of being orphaned", async () => {
    // --ignore-scripts skips `prestart` (the console's build, which other tests cover), not `start`.
    const npm = spawn("npm", ["start", "--ignore-scripts"], {
      cwd: ROOT,
      env: { ...process.env, PORT: "0", DATA_DIR: dataDir, LOG_LEVEL: "info" },
      stdio: ["ignore", "pipe", "inherit"],
    });
    const lines: string[] = [];
    let servicePid = 0;
    for await (const line of createInterface({ input: npm.stdout })) {
      if (!line.startsWith("{")) continue; // npm's own "> dock-notify@… start" lines
      lines.push(line);
      const entry = JSON.parse(line) as { msg?: string; pid?: number };
      if (entry.msg?.startsWith("Dock Notify is ready")) {
        servicePid = entry.pid ?? 0;
        break;
      }
    }
    expect(servicePid).toBeGreaterThan(0);
    expect(servicePid).not.toBe(npm.pid);
    npm.stdout.on("data", (chunk: Buffer) => lines.push(...chunk.toString().split("\n")));

    npm.kill("SIGTERM");
    try {
      await waitFor("the service to exit", () => !alive(servicePid), 15_000, 50);
    } finally {
      if (alive(servicePid)) process.kill(servicePid, "SIGKILL");
    }
    expect(lines.some((line) => line.includes('"msg":"stopped"'))).toBe(true);
  }, 60_000);
});
