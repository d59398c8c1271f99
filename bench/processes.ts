/**
 * What the benches that run the service as it ships share: a server as a child process (the
 * compiled service, the sandbox, a bare Fastify) with bench/memory-probe.js loaded, its memory from
 * /proc, a fresh database of either kind, and the sandbox's control API.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
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

export interface ThreadHeap {
  /** The module the thread runs ("main" for the main thread), e.g. store/sqlite/worker. */
  name: string;
  /** V8 heap: used and committed (total_heap_size), memory outside it the isolate holds, malloced by V8 itself (bytes). */
  used: number;
  total: number;
  external: number;
  malloced: number;
}

/**
 * The V8 heap of every thread of the server (main first, then the worker threads in the order they
 * started), and the main thread's young generation committed (bytes), through the probe.
 */
export async function threadHeaps(
  server: Server,
): Promise<{ usage: NodeJS.MemoryUsage; young: number; threads: ThreadHeap[] }> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${server.name} did not report its threads`)), 10_000);
    const listener = (answer: unknown) => {
      if (typeof answer !== "object" || answer === null || !("threads" in answer)) return;
      clearTimeout(timer);
      server.child.off("message", listener);
      resolve(answer as { usage: NodeJS.MemoryUsage; young: number; threads: ThreadHeap[] });
    };
    server.child.on("message", listener);
    server.child.send("threads");
  });
}

/** Each thread's V8 heap once a full collection has run in it (see the probe's "live"). */
export async function liveHeaps(server: Server): Promise<ThreadHeap[]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${server.name} did not report its live heaps`)),
      120_000,
    );
    const listener = (answer: unknown) => {
      if (typeof answer !== "object" || answer === null || !("live" in answer)) return;
      clearTimeout(timer);
      server.child.off("message", listener);
      resolve((answer as { live: ThreadHeap[] }).live);
    };
    server.child.on("message", listener);
    server.child.send("live");
  });
}

/** One anonymous mapping of the process (/proc/<pid>/smaps): where it starts, its size and resident part (kB). */
export interface Mapping {
  start: bigint;
  sizeKb: number;
  rssKb: number;
  perms: string;
  name: string;
}

/** The process's mappings with resident memory (/proc/<pid>/smaps). */
export function mappings(server: Server): Mapping[] {
  const text = readFileSync(`/proc/${server.pid}/smaps`, "utf8");
  const out: Mapping[] = [];
  let current: Mapping | null = null;
  for (const line of text.split("\n")) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head !== null) {
      const start = BigInt(`0x${head[1]}`);
      const end = BigInt(`0x${head[2]}`);
      current = {
        start,
        sizeKb: Number((end - start) / 1024n),
        rssKb: 0,
        perms: head[3] as string,
        name: head[4] ?? "",
      };
      out.push(current);
      continue;
    }
    const rssLine = /^Rss:\s+(\d+) kB/.exec(line);
    if (rssLine !== null && current !== null) current.rssKb = Number(rssLine[1]);
  }
  return out;
}

/**
 * The process's anonymous resident memory by kind (MB): the main malloc arena ([heap], grown by
 * brk), glibc's other malloc arenas (each thread that mallocs gets one: 64 MB reservations aligned
 * on 64 MB, what is used of them read-write), thread stacks ([stack] and 8 MB read-write mappings),
 * and the rest (V8's heap pages, mmapped large blocks, WebAssembly, code).
 */
export function anonymousByKind(server: Server): {
  brk: number;
  arenas: number;
  arenaCount: number;
  other: number;
} {
  const ARENA = 64n * 1024n * 1024n;
  let brk = 0;
  let arenas = 0;
  let other = 0;
  const arenaStarts = new Set<bigint>();
  const all = mappings(server);
  for (const [i, m] of all.entries()) {
    if (m.rssKb === 0) continue;
    // An arena's heap: read-write from a 64 MB boundary, the rest of its 64 MB reserved (---p) after it.
    const next = all[i + 1];
    const sizeKb = BigInt(m.sizeKb);
    const reserved =
      m.sizeKb === 65536 ||
      (next?.perms.startsWith("---") &&
        next.start === m.start + sizeKb * 1024n &&
        m.sizeKb + next.sizeKb === 65536);
    if (m.name === "[heap]") brk += m.rssKb;
    else if (m.name === "" && m.perms.startsWith("rw") && m.start % ARENA === 0n && reserved) {
      arenas += m.rssKb;
      arenaStarts.add(m.start);
    } else if (m.name === "") other += m.rssKb;
  }
  return { brk: brk / 1024, arenas: arenas / 1024, arenaCount: arenaStarts.size, other: other / 1024 };
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

/** One glibc malloc arena: the threads that malloc from it, what it holds from the system and how much of that is free (bytes). */
export interface Arena {
  threads: string[];
  system: number;
  free: number;
}

const arenasScript = (infoFile: string) => `set pagination off
set print thread-events off
thread apply all -q printf "ARENA-OF %d %p\\n", $_thread, thread_arena
info threads
set $a = &main_arena
set $i = 0
while $i < 256
  printf "ARENA %p\\n", $a
  set $a = $a->next
  if $a == &main_arena
    set $i = 256
  end
  set $i = $i + 1
end
set $f = (FILE*) fopen("${infoFile}", "w")
call (int) malloc_info(0, $f)
call (int) fclose($f)
detach
quit
`;

/**
 * The server's malloc arenas, read by attaching gdb for a moment (it stops the process for about a
 * second): which threads use each arena (their names, worker threads by the module they run, in the
 * order they started), and each arena's size and free part (glibc's malloc_info). Needs gdb and
 * glibc's debugging symbols (Debian: libc6-dbg); null without them.
 */
export function arenas(server: Server, workers: string[]): { arenas: Arena[]; mmapped: number } | null {
  const script = join(tmpdir(), `dock-notify-arenas-${process.pid}.gdb`);
  const infoFile = join(tmpdir(), `dock-notify-arenas-${process.pid}.xml`);
  writeFileSync(script, arenasScript(infoFile));
  const run = spawnSync("gdb", ["-q", "-batch", "-p", String(server.pid), "-x", script], {
    encoding: "utf8",
    timeout: 60_000,
  });
  rmSync(script, { force: true });
  let info = "";
  try {
    info = readFileSync(infoFile, "utf8");
  } catch {
    return null; // no gdb, no symbols, or the process could not be attached to
  }
  rmSync(infoFile, { force: true });
  const text = `${run.stdout ?? ""}\n${info}`;
  const arenaOf = new Map<number, string>();
  for (const [, thread, arena] of text.matchAll(/^ARENA-OF (\d+) (\S+)$/gm))
    arenaOf.set(Number(thread), arena as string);
  if (arenaOf.size === 0) return null;
  const threadLines = [...text.matchAll(/^[ *]+(\d+)\s+Thread 0x[0-9a-f]+ \(LWP (\d+)\) "([^"]*)"/gm)].map(
    ([, id, lwp, name]) => ({ id: Number(id), lwp: Number(lwp), name: name as string }),
  );
  const workerThreads = threadLines.filter((t) => t.name === "WorkerThread").sort((a, b) => a.lwp - b.lwp);
  const nameOf = (id: number) => {
    const thread = threadLines.find((t) => t.id === id);
    if (thread === undefined) return `thread ${id}`;
    const index = workerThreads.indexOf(thread);
    return index >= 0 && workers[index] !== undefined ? `${workers[index]}` : thread.name;
  };
  const order = [...text.matchAll(/^ARENA (\S+)$/gm)].map(([, a]) => a as string);
  const heaps = [...text.matchAll(/<heap nr="(\d+)">([\s\S]*?)<\/heap>/g)].map(([, , body]) => {
    const size = (type: string) =>
      Number(new RegExp(`<total type="${type}" count="\\d+" size="(\\d+)"/>`).exec(body as string)?.[1] ?? 0);
    const system = Number(/<system type="current" size="(\d+)"\/>/.exec(body as string)?.[1] ?? 0);
    return { system, free: size("fast") + size("rest") };
  });
  const mmapped = Number(/<total type="mmap" count="\d+" size="(\d+)"\/>\s*<system/.exec(text)?.[1] ?? 0);
  const result = order.map((address, i) => ({
    threads: [...arenaOf].filter(([, a]) => a === address).map(([id]) => nameOf(id)),
    system: heaps[i]?.system ?? 0,
    free: heaps[i]?.free ?? 0,
  }));
  return { arenas: result, mmapped };
}
