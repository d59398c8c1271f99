/**
 * What the benches that run the service as it ships share: a server as a child process (the
 * compiled service, the sandbox, a bare Fastify) with bench/memory-probe.js loaded, its memory from
 * /proc, a fresh database of either kind, and the sandbox's control API.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import pg from "pg";

const root = join(import.meta.dirname, "..");
const probe = new URL("./memory-probe.js", import.meta.url).href;

export interface Server {
  name: string;
  child: ChildProcess;
  pid: number;
  url: string;
}

/** A server as a child process with the memory probe loaded, resolved once it says it listens. */
export async function startServer(
  name: string,
  args: string[],
  env: Record<string, string>,
  ready: (line: string) => number | undefined,
): Promise<Server> {
  const child = spawn(process.execPath, ["--import", probe, ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit", "ipc"],
  });
  children.add(child);
  child.once("exit", () => children.delete(child));
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} was not ready within 60 s`)), 60_000);
    lines.on("line", (line) => {
      let port: number | undefined;
      try {
        port = ready(line);
      } catch {
        return; // not a log line
      }
      if (port !== undefined && child.pid !== undefined) {
        clearTimeout(timer);
        resolve({ name, child, pid: child.pid, url: `http://127.0.0.1:${port}` });
      }
    });
    lines.on("close", () => reject(new Error(`${name} exited before it was ready`)));
  });
}

/** Every server started and not yet exited: killed by `killAll` whatever happened. */
const children = new Set<ChildProcess>();

/** Kills every server still running (a bench's `finally`). */
export function killAll(): void {
  for (const child of children) child.kill("SIGKILL");
}

export async function stop(server: Server) {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return;
  const exited = new Promise((resolve) => server.child.once("exit", resolve));
  server.child.kill("SIGTERM");
  // The service stops its dispatcher gracefully; never wait on it for ever.
  const timer = setTimeout(() => server.child.kill("SIGKILL"), 15_000);
  await exited;
  clearTimeout(timer);
}

/** A field of /proc/<pid>/status in MB (VmRSS, VmHWM, RssAnon, RssFile); throws once the process is gone. */
export function statusMb(server: Server, field: string): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(
    readFileSync(`/proc/${server.pid}/status`, "utf8"),
  );
  if (match === null) throw new Error(`no ${field} in /proc/${server.pid}/status`);
  return Number(match[1]) / 1024;
}

export const rss = (server: Server) => {
  try {
    return statusMb(server, "VmRSS");
  } catch {
    throw new Error(`${server.name} is gone (exit code ${server.child.exitCode})`);
  }
};

/** Resets the process's peak RSS (VmHWM) to its current RSS; false where the kernel does not allow it. */
export function resetPeak(server: Server): boolean {
  try {
    writeFileSync(`/proc/${server.pid}/clear_refs`, "5");
    return true;
  } catch {
    return false;
  }
}

/** The server's own process.memoryUsage(), through the probe. */
export async function memoryUsage(server: Server): Promise<NodeJS.MemoryUsage> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${server.name} did not report its memory`)), 10_000);
    server.child.once("message", (usage) => {
      clearTimeout(timer);
      resolve(usage as NodeJS.MemoryUsage);
    });
    server.child.send("memory");
  });
}

/** A fresh database of the chosen kind: a SQLite file in `dataDir`, or a new PostgreSQL database. */
export async function createDatabase(
  database: string,
  prefix: string,
): Promise<{ url: string; dataDir: string; drop(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), `dock-notify-${prefix}-`));
  if (database === "sqlite") {
    return {
      url: `sqlite:${join(dataDir, "bench.db")}`,
      dataDir,
      drop: async () => rmSync(dataDir, { recursive: true, force: true }),
    };
  }
  const name = `dock_notify_${prefix}_${randomBytes(6).toString("hex")}`;
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: database });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  await admin(`create database ${name}`);
  const url = new URL(database);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    dataDir,
    drop: async () => {
      await admin(`drop database if exists ${name} with (force)`);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A call to the sandbox's control API; throws unless it succeeds. */
export async function sandbox(server: Server, path: string, init: { method: string; body?: unknown }) {
  const response = await fetch(`${server.url}/sandbox/api/${path}`, {
    method: init.method,
    ...(init.body === undefined
      ? {}
      : { headers: { "content-type": "application/json" }, body: JSON.stringify(init.body) }),
  });
  if (!response.ok) throw new Error(`sandbox ${path}: ${response.status} ${await response.text()}`);
  return response;
}
