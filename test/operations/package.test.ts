import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { createInterface } from "node:readline";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pkg from "../../package.json" with { type: "json" };
import { freshClone, withNode } from "../helpers/fresh-clone.ts";

const run = promisify(execFile);

/** `npm install` of `spec` (the `node` package of a Node.js line) into `folder`; its node binary. */
async function nodeFromNpm(spec: string, folder: string, env: NodeJS.ProcessEnv): Promise<string> {
  mkdirSync(folder, { recursive: true });
  await run("npm", ["install", "--prefix", folder, "--no-save", "--no-audit", "--no-fund", spec], { env });
  return join(folder, "node_modules", "node", "bin", "node");
}

/**
 * A Node.js the installed command must refuse (older than 22.16): the system's first `node` outside
 * any node_modules when it is that old (Node 20 on these machines), else Node 20 from npm.
 */
async function unsupportedNode(folder: string, env: NodeJS.ProcessEnv): Promise<string> {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (dir.includes("node_modules") || !existsSync(join(dir, "node"))) continue;
    const version = (await run(join(dir, "node"), ["--version"])).stdout.trim();
    const [major = 0, minor = 0] = version.slice(1).split(".").map(Number);
    if (major < 22 || (major === 22 && minor < 16)) return join(dir, "node");
    break;
  }
  return nodeFromNpm("node@20", folder, env);
}

/** `dock-notify serve` until it is ready: the process and the port it listens on. */
async function serveUntilReady(
  command: string,
  env: NodeJS.ProcessEnv,
): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(command, ["serve"], {
    env: { ...env, PORT: "0" },
    stdio: ["ignore", "pipe", "inherit"],
  });
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
  return { child, port };
}

async function stopped(child: ChildProcess): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  return exited;
}

/**
 * The npm package as a user gets it, made the way a release is: `npm pack` of a fresh clone of
 * this repository's HEAD (committed work only, see fresh-clone.ts), in which nothing was built —
 * its `prepack` builds the console and the service. The tarball is installed with `npm install -g` into a prefix of its own (its two dependencies come
 * from the registry); the installed `dock-notify` command serves and manages Docks on Node.js 24
 * and on Node.js 22 (from npm's `node` package), tells a user of an older Node.js which to install,
 * and is uninstalled.
 */
describe("the npm package, packed from a fresh clone", () => {
  const work = mkdtempSync(join(tmpdir(), "dock-notify-package-"));
  const clone = join(work, "clone");
  const prefix = join(work, "prefix");
  const installed = join(prefix, "bin", "dock-notify");
  // This Node (24) first on the PATH: npm, and the installed command's `#!/usr/bin/env node`.
  const env = { ...withNode(process.env, process.execPath), DATA_DIR: join(work, "data"), LOG_LEVEL: "info" };
  const children = new Set<ChildProcess>();
  let files: string[] = [];
  let node22 = "";
  let node20 = "";

  beforeAll(async () => {
    await freshClone(clone);
    const pack = run("npm", ["pack", "--json", "--pack-destination", work], { cwd: clone, env });
    // The two other Nodes download meanwhile (~30 MB each at most, from npm's cache once fetched).
    [node22, node20] = await Promise.all([
      nodeFromNpm("node@22", join(work, "node22"), env),
      unsupportedNode(join(work, "node20"), env),
    ]);
    const packed = JSON.parse((await pack).stdout) as { filename: string; files: { path: string }[] }[];
    files = packed[0]?.files.map((file) => file.path) ?? [];
    const tarball = join(work, packed[0]?.filename ?? "");
    await run("npm", ["install", "--global", "--prefix", prefix, "--no-audit", "--no-fund", tarball], {
      env,
    });
    // npm pack and the build behind it, three npm installs (two Node.js binaries): a minute or two
    // on a busy machine, and nothing in it waits on the service's own speed.
  }, 600_000);

  afterAll(() => {
    for (const child of children) child.kill("SIGKILL");
    rmSync(work, { recursive: true, force: true });
  });

  it("packs what runs and nothing else", () => {
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
      // The banner and the README point at these: the installed package carries them.
      "docs/telegram.md",
      "docs/deployment.md",
    ]) {
      expect(files, needed).toContain(needed);
    }
    expect(files.filter((path) => /^(src|test|bench|scripts|web\/src|\.ci)\//.test(path))).toEqual([]);
    expect(files).not.toContain(".build-stamp.json");
  });

  it("installed, on Node.js 24: the version, Docks made from the command line, a sandbox service", async () => {
    expect(existsSync(installed)).toBe(true);
    const version = await run(installed, ["--version"], { env });
    expect(version.stdout).toBe(`${pkg.version}\n`);
    // What runs is the bundle: the package has no sources to fall back on (and says nothing of them).
    expect(version.stderr).toBe("");

    const created = JSON.parse(
      (await run(installed, ["docks", "create", "--owner", "1", "--name", "Packaged", "--json"], { env }))
        .stdout,
    ) as { id: string; secret_key: string };

    const { child, port } = await serveUntilReady(installed, env);
    children.add(child);
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
    expect(await stopped(child)).toBe(0);
    children.delete(child);
  }, 120_000);

  it("installed, on Node.js 22: the version, a Dock, a sandbox service that answers, a backup", async () => {
    const on22 = { ...withNode(env, node22), DATA_DIR: join(work, "data22") };
    expect((await run("node", ["--version"], { env: on22 })).stdout).toMatch(/^v22\./);
    expect((await run(installed, ["--version"], { env: on22 })).stdout).toBe(`${pkg.version}\n`);
    const created = JSON.parse(
      (await run(installed, ["docks", "create", "--owner", "1", "--name", "On 22", "--json"], { env: on22 }))
        .stdout,
    ) as { id: string; secret_key: string };
    const { child, port } = await serveUntilReady(installed, on22);
    children.add(child);
    const url = `http://127.0.0.1:${port}`;
    expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ ok: true, version: pkg.version });
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    const console = await fetch(`${url}/console/`);
    expect(console.status).toBe(200);
    await console.arrayBuffer();
    const ping = await fetch(`${url}/webhook`, {
      method: "POST",
      headers: {
        authorization: `Basic ${Buffer.from(`${created.id}:${created.secret_key}`).toString("base64")}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({ msg: "from Node 22" }),
    });
    expect(ping.status).toBe(202);
    // node:sqlite's backup(), new in 22.16.
    const backup = await run(installed, ["backup", join(work, "backup22.db"), "--json"], { env: on22 });
    expect(JSON.parse(backup.stdout)).toMatchObject({ file: join(work, "backup22.db") });
    expect(await stopped(child)).toBe(0);
    children.delete(child);
  }, 120_000);

  it("installed, on an older Node.js: says which Node.js to install, not to run it through npm", async () => {
    const old = withNode(env, node20);
    const refused = await run(installed, ["--version"], { env: old }).then(
      () => null,
      (error: { code: number; stderr: string }) => error,
    );
    expect(refused?.code).toBe(2);
    expect(refused?.stderr).toMatch(/Node\.js 24 LTS \(or 22\.16 or newer\) is required, and this is v\d+/);
    expect(refused?.stderr).toContain("Install Node.js 24");
    expect(refused?.stderr).not.toContain("npx");
  }, 60_000);

  it("uninstalls", async () => {
    await run("npm", ["uninstall", "--global", "--prefix", prefix, "dock-notify"], { env });
    expect(existsSync(installed)).toBe(false);
  }, 60_000);
});
