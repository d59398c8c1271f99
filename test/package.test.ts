import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import pkg from "../package.json" with { type: "json" };

const run = promisify(execFile);
const root = join(import.meta.dirname, "..");

/**
 * The npm package as a user gets it: `npm pack` (the global setup has built dist/ and the console),
 * `npm install -g` of the tarball into a prefix of its own (its two dependencies come from the
 * registry), the installed `dock-notify` command serving and managing Docks, then uninstalled.
 */
describe("the npm package", () => {
  const work = mkdtempSync(join(tmpdir(), "dock-notify-package-"));
  const prefix = join(work, "prefix");
  const installed = join(prefix, "bin", "dock-notify");
  // The installed command starts with `#!/usr/bin/env node`: this Node (24) must come first.
  const env = {
    ...process.env,
    PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ""}`,
    DATA_DIR: join(work, "data"),
    LOG_LEVEL: "info",
  };
  let service: ChildProcess | null = null;
  afterAll(() => {
    service?.kill("SIGKILL");
    rmSync(work, { recursive: true, force: true });
  });

  it("packs what runs and nothing else, installs, serves, manages Docks and uninstalls", async () => {
    const packed = JSON.parse(
      (await run("npm", ["pack", "--json", "--pack-destination", work], { cwd: root, env })).stdout,
    ) as { filename: string; files: { path: string }[] }[];
    const files = packed[0]?.files.map((file) => file.path) ?? [];
    for (const needed of [
      "package.json",
      "README.md",
      "CHANGELOG.md",
      "bin/dock-notify.js",
      "dist/cli.js",
      "dist/store/sqlite/worker.js",
      "dist/store/sqlite/checkpointer.js",
      "dist/sandbox/page/chat.html",
      "dist/THIRD-PARTY-LICENSES.md",
      "LICENSE",
      "web/dist/index.html",
    ]) {
      expect(files, needed).toContain(needed);
    }
    expect(files.filter((path) => /^(src|test|bench|scripts|web\/src|\.ci)\//.test(path))).toEqual([]);

    await run(
      "npm",
      [
        "install",
        "--global",
        "--prefix",
        prefix,
        "--no-audit",
        "--no-fund",
        join(work, packed[0]?.filename ?? ""),
      ],
      { env },
    );
    expect(existsSync(installed)).toBe(true);

    const version = await run(installed, ["--version"], { env });
    expect(version.stdout).toBe(`${pkg.version}\n`);
    // What runs is the bundle: the package has no sources to fall back on (and says nothing of them).
    expect(version.stderr).toBe("");

    const created = JSON.parse(
      (await run(installed, ["docks", "create", "--owner", "1", "--name", "Packaged", "--json"], { env }))
        .stdout,
    ) as { id: string; secret_key: string };

    const child = spawn(installed, ["serve"], {
      env: { ...env, PORT: "0" },
      stdio: ["ignore", "pipe", "inherit"],
    });
    service = child;
    const port = await new Promise<number>((resolve, reject) => {
      const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
      lines.on("line", (line) => {
        try {
          const entry = JSON.parse(line) as { msg?: string; port?: number };
          if (entry.msg?.startsWith("Dock Notify is ready") && entry.port) resolve(entry.port);
        } catch {
          // not a log line
        }
      });
      lines.on("close", () => reject(new Error("the installed service exited before it was ready")));
    });
    const url = `http://127.0.0.1:${port}`;
    expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ ok: true, version: pkg.version });
    const ping = await fetch(`${url}/ping`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ dock_id: created.id, secret_key: created.secret_key, msg: "from the package" }),
    });
    expect(ping.status).toBe(202);
    // The console, the API reference (Swagger UI from node_modules) and the sandbox's chat page.
    for (const path of ["/console/", "/docs/", "/sandbox"]) {
      const response = await fetch(`${url}${path}`);
      expect(response.status, path).toBe(200);
      await response.arrayBuffer();
    }
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    service = null;

    await run("npm", ["uninstall", "--global", "--prefix", prefix, "dock-notify"], { env });
    expect(existsSync(installed)).toBe(false);
    // Three npm runs (one installing from the registry) and a start: several seconds alone, much
    // longer when every core is busy, and nothing in it waits on the service's own speed.
  }, 120_000);
});
