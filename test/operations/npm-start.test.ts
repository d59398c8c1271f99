import { execFile, spawn } from "node:child_process";
import { appendFileSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { freshClone, withNode } from "../helpers/fresh-clone.ts";
import { waitFor } from "../helpers/wait.ts";

const ROOT = join(import.meta.dirname, "..", "..");

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

/**
 * `npm start` builds first only when a source changed since the last build (scripts/build.ts and its
 * stamp), in a fresh clone of this repository (fresh-clone.ts) so that the test can edit sources
 * without touching the ones the other tests run.
 */
describe("npm start's build", () => {
  const work = mkdtempSync(join(tmpdir(), "dock-notify-npm-start-build-"));
  const clone = join(work, "clone");
  const env = {
    ...withNode(process.env, process.execPath),
    PORT: "0",
    DATA_DIR: join(work, "data"),
    LOG_LEVEL: "info",
  };
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  /** `npm run prestart`, what `npm start` runs first: whether it built (and what it said). */
  async function prestart(): Promise<"built" | "current"> {
    const { stderr } = await promisify(execFile)("npm", ["run", "prestart"], { cwd: clone, env });
    if (stderr.includes("dock-notify: built the console and the service")) return "built";
    if (stderr.includes("dock-notify: the build is current")) return "current";
    throw new Error(`npm run prestart said neither: ${stderr}`);
  }

  /** Which files dist/cli.js and web/dist/index.html are (a build writes new ones). */
  function outputs(): string {
    return ["dist/cli.js", "web/dist/index.html"]
      .map((file) => {
        const stat = statSync(join(clone, file));
        return `${stat.ino}@${stat.mtimeMs}`;
      })
      .join(" ");
  }

  it("builds a fresh clone, then starts at once until a source or a console file changes", async () => {
    await freshClone(clone);
    expect(await prestart()).toBe("built");
    const first = outputs();

    // npm start itself: no build, and the service it starts is ready.
    const npm = spawn("npm", ["start"], { cwd: clone, env, stdio: ["ignore", "pipe", "pipe"] });
    let said = "";
    npm.stderr.on("data", (chunk: Buffer) => (said += chunk));
    const exited = new Promise((resolve) => npm.once("exit", resolve));
    for await (const line of createInterface({ input: npm.stdout })) {
      if (line.includes('"msg":"Dock Notify is ready')) break;
    }
    npm.kill("SIGTERM");
    await exited;
    expect(said).toContain("dock-notify: the build is current");
    expect(outputs()).toBe(first);

    // A change of the service's sources: built again, then current again.
    appendFileSync(join(clone, "src", "cli", "banner.ts"), "// changed after the build\n");
    expect(await prestart()).toBe("built");
    const second = outputs();
    expect(second).not.toBe(first);
    expect(await prestart()).toBe("current");
    expect(outputs()).toBe(second);

    // A change of the console's.
    appendFileSync(join(clone, "web", "src", "main.tsx"), "// changed after the build\n");
    expect(await prestart()).toBe("built");
    expect(outputs()).not.toBe(second);
    expect(await prestart()).toBe("current");

    // A change whose file carries an old time (copied with its times, unpacked from an archive):
    // the build is known by the sources' contents, not their times.
    const banner = join(clone, "src", "cli", "banner.ts");
    appendFileSync(banner, "// changed again\n");
    utimesSync(banner, new Date("2001-01-01"), new Date("2001-01-01"));
    expect(await prestart()).toBe("built");
    // Four builds and a start on a busy machine: a minute or two, none of it the service's speed.
  }, 300_000);
});
