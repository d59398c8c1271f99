import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
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

  /** `npm start` until the service is ready: npm, the service's pid, and every line it writes. */
  async function started(options: { ownGroup: boolean }) {
    // --ignore-scripts skips `prestart` (the build, which the suite's global setup has done), not
    // `start`: what runs is the compiled service in dist/.
    const npm = spawn("npm", ["start", "--ignore-scripts"], {
      cwd: ROOT,
      env: { ...process.env, PORT: "0", DATA_DIR: dataDir, LOG_LEVEL: "info" },
      stdio: ["ignore", "pipe", "inherit"],
      // A process group of its own, as a shell gives a job in a terminal (Ctrl-C signals the group).
      detached: options.ownGroup,
    });
    const lines: string[] = [];
    let servicePid = 0;
    let port = 0;
    for await (const line of createInterface({ input: npm.stdout })) {
      if (!line.startsWith("{")) continue; // npm's own "> dock-notify@… start" lines
      lines.push(line);
      const entry = JSON.parse(line) as { msg?: string; pid?: number; port?: number };
      if (entry.msg?.startsWith("Dock Notify is ready")) {
        servicePid = entry.pid ?? 0;
        port = entry.port ?? 0;
        break;
      }
    }
    expect(servicePid).toBeGreaterThan(0);
    expect(servicePid).not.toBe(npm.pid);
    // Everything written, once npm and the service (both writing to this pipe) have closed it.
    const closed = new Promise<void>((resolve) => npm.stdout.once("close", () => resolve()));
    npm.stdout.on("data", (chunk: Buffer) => lines.push(...chunk.toString().split("\n")));
    return { npm, servicePid, port, lines, closed };
  }

  async function exited(servicePid: number, group?: number) {
    try {
      await waitFor("the service to exit", () => !alive(servicePid), 15_000, 50);
    } finally {
      if (alive(servicePid)) process.kill(servicePid, "SIGKILL");
      // npm too, when it has a process group of its own (nothing else would end it).
      if (group !== undefined && alive(group)) process.kill(-group, "SIGKILL");
    }
  }

  it("passes SIGTERM on to the service, which shuts down gracefully instead of being orphaned", async () => {
    const { npm, servicePid, lines, closed } = await started({ ownGroup: false });
    // Set for glibc before Node starts (docs/deployment.md, Memory): the service's own environment has it.
    const environment = readFileSync(`/proc/${servicePid}/environ`, "utf8").split("\0");
    expect(environment).toContain("MALLOC_ARENA_MAX=2");
    npm.kill("SIGTERM");
    await exited(servicePid);
    await closed;
    expect(lines.some((line) => line.includes('"msg":"stopped"'))).toBe(true);
  }, 60_000);

  it("Ctrl-C (SIGINT to npm and the service, then npm's forwarded one) is still a graceful stop", async () => {
    const { npm, servicePid, port, lines, closed } = await started({ ownGroup: true });
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    // The terminal signals the whole group, and npm passes its own on to the service: two SIGINTs
    // a moment apart (how far apart depends on the machine; a second Ctrl-C adds a third).
    process.kill(-(npm.pid as number), "SIGINT");
    await new Promise((resolve) => setTimeout(resolve, 2));
    if (alive(servicePid)) process.kill(servicePid, "SIGINT");
    await exited(servicePid, npm.pid);
    await closed;
    const messages = lines.filter((line) => line.startsWith("{")).map((line) => JSON.parse(line).msg);
    // Every line is there, the last request's included, down to "stopped".
    expect(messages.slice(-3)).toEqual(["request", "shutting down", "stopped"]);
  }, 60_000);
});
