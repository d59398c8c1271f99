/**
 * bench:ingest — throughput and latency of POST /ping with durable writes, against a bare Fastify
 * route that only answers 202, on the same machine in the same run.
 *
 *   npm run bench:ingest [-- --duration 10 --connections 50 --rate 2000 --database sqlite|postgres://…
 *                            --service-node-options=--optimize-for-size --rich]
 *
 * The service runs as it ships: compiled, from dist/ (`npm run bench:ingest` builds it first).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import { loadEncryptionKey } from "../src/runtime/encryption-key.ts";
import { DockRepository } from "../src/store/docks.ts";
import { migrate, openDb } from "../src/store/open.ts";
import { SubscriptionRepository } from "../src/store/subscriptions.ts";
import { type OpenLoopResult, openLoop } from "./open-loop.ts";
import { SHIPPED_ENV, serviceNodeOptions as shippedOr } from "./shipped.ts";

const { values } = parseArgs({
  options: {
    duration: { type: "string", default: "10" },
    connections: { type: "string", default: "50" },
    rate: { type: "string", default: "2000" },
    database: { type: "string", default: "sqlite" },
    /** Node options for the service only (V8 flags to try), separated by spaces; `npm start`'s by default. */
    "service-node-options": { type: "string" },
    /** Send a rich message (Markdown, title, priority, tags, a button) instead of plain text. */
    rich: { type: "boolean", default: false },
  },
});
const serviceNodeOptions = shippedOr(values["service-node-options"]);
const duration = Number(values.duration);
const connections = Number(values.connections);
const rate = Number(values.rate);
const root = join(import.meta.dirname, "..");

async function startChild(
  args: string[],
  env: Record<string, string>,
  ready: (line: string) => number | undefined,
) {
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  for await (const line of createInterface({ input: child.stdout as NodeJS.ReadableStream })) {
    const port = ready(line);
    if (port !== undefined) {
      child.stdout?.resume();
      return { child, url: `http://127.0.0.1:${port}` };
    }
  }
  throw new Error(`${args.join(" ")} exited before it was ready`);
}

async function stop(child: ChildProcess) {
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await exited;
}

/** The machine's CPU counters (Linux /proc/stat, in clock ticks): all, idle, and stolen by the host. */
function machineTicks(): { total: number; idle: number; steal: number } | null {
  if (!existsSync("/proc/stat")) return null;
  // cpu  user nice system idle iowait irq softirq steal …
  const ticks = (readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "")
    .split(/\s+/)
    .slice(1, 9)
    .map(Number);
  const at = (i: number) => ticks[i] ?? 0;
  return { total: ticks.reduce((sum, n) => sum + n, 0), idle: at(3) + at(4), steal: at(7) };
}

/**
 * Per thread of process `pid` (Linux /proc): the CPU time it used and the time it spent runnable
 * but waiting for a CPU (the scheduler's run queue), in nanoseconds. Node names its event loop
 * "MainThread" and a worker thread (the service's SQLite thread) "WorkerThread".
 */
function threadTimes(pid: number | undefined): Map<string, { name: string; cpu: number; waiting: number }> {
  const threads = new Map<string, { name: string; cpu: number; waiting: number }>();
  const dir = `/proc/${pid}/task`;
  if (pid === undefined || !existsSync(dir)) return threads;
  for (const tid of readdirSync(dir)) {
    try {
      const name = readFileSync(`${dir}/${tid}/comm`, "utf8").trim();
      // schedstat: time on a CPU, time waiting on a run queue (ns), time slices.
      const [cpu, waiting] = readFileSync(`${dir}/${tid}/schedstat`, "utf8").split(" ").map(Number);
      threads.set(tid, { name, cpu: cpu ?? 0, waiting: waiting ?? 0 });
    } catch {
      // The thread ended meanwhile.
    }
  }
  return threads;
}

/** Where a process's time went, each as a share of one core over the run. */
interface ThreadShares {
  /** Its event loop running, and runnable but waiting for a CPU. */
  eventLoop: { running: number; waiting: number };
  /** Its worker threads (the SQLite thread), likewise. */
  workers: { running: number; waiting: number };
  /** The rest (V8's GC helpers, libuv's pool), running. */
  other: number;
}

/**
 * Runs `load` and says how busy the machine was meanwhile: the share of CPU time not idle (used by
 * anyone, stolen time included) and the share the hypervisor took for other guests (steal). On a
 * shared VM a high steal makes a run's figures worth little. With `pid`, also how much of one core
 * each of that process's threads used, and how long each was ready to run but had no CPU: an event
 * loop whose two shares add up to well under 100 % waited on something (its database); one that
 * waited for a CPU was crowded out by the other threads on the machine (the load generator's too).
 */
async function measured<T>(
  load: () => Promise<T>,
  pid?: number,
): Promise<{ result: T; busy: number; steal: number; threads: ThreadShares | null }> {
  const before = machineTicks();
  const threadsBefore = threadTimes(pid);
  const startedAt = process.hrtime.bigint();
  const result = await load();
  const elapsed = Number(process.hrtime.bigint() - startedAt);
  const threadsAfter = threadTimes(pid);
  const after = machineTicks();
  if (before === null || after === null) {
    return { result, busy: Number.NaN, steal: Number.NaN, threads: null };
  }
  const total = after.total - before.total || 1;
  let threads: ThreadShares | null = null;
  if (threadsAfter.size > 0) {
    threads = { eventLoop: { running: 0, waiting: 0 }, workers: { running: 0, waiting: 0 }, other: 0 };
    for (const [tid, { name, cpu, waiting }] of threadsAfter) {
      const earlier = threadsBefore.get(tid);
      const running = (cpu - (earlier?.cpu ?? 0)) / elapsed;
      const waited = (waiting - (earlier?.waiting ?? 0)) / elapsed;
      const group =
        name === "MainThread" ? threads.eventLoop : name === "WorkerThread" ? threads.workers : null;
      if (group === null) threads.other += running;
      else {
        group.running += running;
        group.waiting += waited;
      }
    }
  }
  return {
    result,
    busy: 1 - (after.idle - before.idle) / total,
    steal: (after.steal - before.steal) / total,
    threads,
  };
}

const percent = (share: number) => (Number.isNaN(share) ? "n/a" : `${Math.round(share * 100)} %`);

function run(url: string, body: string, options: { overallRate?: number }) {
  return autocannon({
    url: `${url}/ping`,
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
    connections,
    duration,
    ...options,
  });
}

const dataDir = mkdtempSync(join(tmpdir(), "dock-notify-bench-"));
const databaseUrl = values.database === "sqlite" ? `sqlite:${join(dataDir, "bench.db")}` : values.database;
const key = loadEncryptionKey(null, dataDir).key;
const db = await openDb(databaseUrl);
await migrate(db);
const dock = await new DockRepository(db, key).create(1, { name: "Bench", link: null, description: null });
const subscriptions = new SubscriptionRepository(db);
const body = JSON.stringify({
  dock_id: dock.id,
  secret_key: dock.secretKey,
  ...(values.rich
    ? {
        msg: "**Build 42** failed on `main`\n[logs](https://ci.example/42)",
        format: "markdown",
        title: "CI",
        priority: "high",
        tags: ["warning", "ci"],
        buttons: [{ text: "Retry", url: "https://ci.example/42/retry" }],
      }
    : { msg: "Deploy finished ✅\nbuild 1234" }),
});

const service = await startChild(
  [...serviceNodeOptions, "dist/cli.js", "serve"],
  {
    ...SHIPPED_ENV,
    PORT: "0",
    DATA_DIR: dataDir,
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: "info",
    DOCK_RATE_BURST: "0",
    AUTH_FAILURES_PER_MINUTE: "0",
  },
  (line) => {
    const entry = JSON.parse(line) as { msg?: string; port?: number };
    return entry.msg?.startsWith("Dock Notify is ready") ? entry.port : undefined;
  },
);
// Three real subscribers in the service's sandbox: the delivery engine works while we measure,
// as it would in production (at Telegram's pace, so most of the backlog stays queued).
for (let i = 0; i < 3; i++) {
  const person = (await (
    await fetch(`${service.url}/sandbox/api/users`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ first_name: `Reader ${i}` }),
    })
  ).json()) as { id: number };
  await fetch(`${service.url}/sandbox/api/users/${person.id}/start`, { method: "POST" });
  await subscriptions.subscribe(dock.id, person.id, "private");
}
await db.close();

const bare = await startChild(
  ["bench/bare-server.js"],
  {},
  (line) => (JSON.parse(line) as { port: number }).port,
);

// Warm both up so the JIT and SQLite's page cache are not what we measure.
await run(service.url, body, { overallRate: 500 });
await run(bare.url, body, { overallRate: 500 });

// Maximum throughput: three rounds, each running both servers back to back (which one goes first
// alternates), and the median round by ratio reported. On a shared VM the bare route alone varies
// by a third from one run to the next; a ratio taken within a round compares like with like.
const rounds: {
  service: autocannon.Result;
  bare: autocannon.Result;
  ratio: number;
  /** Shares of the machine's CPU during each run: used by anyone, and stolen by the host. */
  machine: { service: { busy: number; steal: number }; bare: { busy: number; steal: number } };
  /** The service's threads during its run, each as a share of one core. */
  threads: ThreadShares | null;
}[] = [];
// Threads are sampled for the service only: the bare route has nothing but its event loop.
const pidOf = (url: string) => (url === service.url ? service.child.pid : undefined);
for (let round = 0; round < 3; round++) {
  const first = round % 2 === 0 ? service.url : bare.url;
  const second = first === service.url ? bare.url : service.url;
  const a = await measured(() => run(first, body, {}), pidOf(first));
  const b = await measured(() => run(second, body, {}), pidOf(second));
  const [serviceRun, bareRun] = first === service.url ? [a, b] : [b, a];
  rounds.push({
    service: serviceRun.result,
    bare: bareRun.result,
    ratio: serviceRun.result.requests.average / bareRun.result.requests.average,
    machine: { service: serviceRun, bare: bareRun },
    threads: serviceRun.threads,
  });
}
const medianRound = [...rounds].sort((x, y) => x.ratio - y.ratio)[1] as (typeof rounds)[number];
const serviceMax = medianRound.service;
const bareMax = medianRound.bare;
// The constant-rate runs alternate between the two servers, three rounds each, and report the
// median: this machine's own hiccups (a shared VM) show up in the bare route's figures too.
const atRate: { bare: OpenLoopResult[]; service: OpenLoopResult[] } = { bare: [], service: [] };
for (let round = 0; round < 3; round++) {
  atRate.bare.push(await openLoop({ url: `${bare.url}/ping`, body, rate, seconds: duration }));
  atRate.service.push(await openLoop({ url: `${service.url}/ping`, body, rate, seconds: duration }));
}
const median = (runs: OpenLoopResult[]) => [...runs].sort((a, b) => a.p99 - b.p99)[1] as OpenLoopResult;
const bareAtRate = median(atRate.bare);
const serviceAtRate = median(atRate.service);

await stop(service.child);
await stop(bare.child);
rmSync(dataDir, { recursive: true, force: true });

const row = (name: string, r: autocannon.Result) =>
  `| ${name} | ${Math.round(r.requests.average)} | ${r.latency.p50} | ${r.latency.p99} | ${r.non2xx} | ${r.errors} |`;
const ratio = medianRound.ratio;
console.log(
  `\nbench:ingest on ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
);
console.log(
  `database: ${values.database}; ${values.rich ? "rich messages (Markdown, title, priority, tags, a button)" : "plain messages"}; ${connections} connections; ${duration} s per run; 3 subscribers per message (delivery running); service node options: ${serviceNodeOptions.join(" ") || "none"}\n`,
);
console.log("| run | req/s | p50 ms | p99 ms | non-2xx | errors |");
console.log("|---|---|---|---|---|---|");
console.log(row("bare Fastify 202, max (median round)", bareMax));
console.log(row("POST /ping, max (median round)", serviceMax));
const openRow = (name: string, r: OpenLoopResult) =>
  `| ${name} at a constant ${rate} req/s (median of 3) | ${r.achievedRate} | ${r.p50} | ${r.p99} | ${r.failed} | 0 |`;
console.log(openRow("bare Fastify 202", bareAtRate));
console.log(openRow("POST /ping", serviceAtRate));
console.log(
  `\nall p99 at ${rate} req/s — bare: ${atRate.bare.map((r) => r.p99).join(", ")} ms; /ping: ${atRate.service.map((r) => r.p99).join(", ")} ms`,
);
console.log(
  `all max rounds (/ping vs bare req/s) — ${rounds
    .map(
      (r) =>
        `${Math.round(r.service.requests.average)} vs ${Math.round(r.bare.requests.average)} (${(r.ratio * 100).toFixed(1)} %)`,
    )
    .join("; ")}`,
);
console.log(
  `machine CPU busy / stolen by the host during them (/ping; bare) — ${rounds
    .map(
      ({ machine: m }) =>
        `${percent(m.service.busy)} / ${percent(m.service.steal)}; ${percent(m.bare.busy)} / ${percent(m.bare.steal)}`,
    )
    .join(" · ")}`,
);
const workerName = values.database === "sqlite" ? "SQLite thread" : "worker threads";
const runningWaiting = (share: { running: number; waiting: number }) =>
  `${percent(share.running)} + ${percent(share.waiting)}`;
console.log(
  `service threads during /ping max runs, share of one core running + runnable but waiting for a CPU (event loop; ${workerName}; GC and libuv helpers running) — ${rounds
    .map(({ threads: t }) =>
      t === null
        ? "n/a"
        : `${runningWaiting(t.eventLoop)}; ${runningWaiting(t.workers)}; ${percent(t.other)}`,
    )
    .join(" · ")}`,
);
console.log(
  `\n/ping throughput = ${(ratio * 100).toFixed(1)} % of the bare route, median of 3 rounds (target ≥ 50 %)`,
);
console.log(
  `p99 at ${rate} req/s = ${serviceAtRate.p99} ms, max ${serviceAtRate.max} ms (target p99 < 25 ms)`,
);
