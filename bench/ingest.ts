/**
 * bench:ingest — throughput and latency of the send doors with durable writes (POST /ping, POST
 * /webhook with HTTP Basic, a hook URL, Alertmanager's door with ten alerts), against a bare
 * Fastify route that only answers 202, on the same machine in the same run.
 *
 *   npm run bench:ingest [-- --duration 10 --connections 50 --rate 2000 --database sqlite|postgres://…
 *                            --doors ping,webhook,hook,alertmanager --limiter --instances 2
 *                            --service-node-options=--optimize-for-size --rich]
 *
 * `--limiter` turns the Dock's rate limit on (a budget no run reaches: its cost is measured, no
 * request is refused); off by default. `--instances N` (PostgreSQL) runs N instances of the service
 * on the one database, every door's load spread over them (autocannon's connections round-robin,
 * the constant-rate runs by turns), all sending to the same Dock.
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
    /** The doors measured beside the bare route, each in every round. */
    doors: { type: "string", default: "ping,webhook,hook,alertmanager" },
    /** The Dock's rate limit on, with a budget no run reaches. */
    limiter: { type: "boolean", default: false },
    /** Instances of the service on the one (PostgreSQL) database, the load spread over them. */
    instances: { type: "string", default: "1" },
  },
});
const instanceCount = Number(values.instances);
if (instanceCount > 1 && !values.database.startsWith("postgres"))
  throw new Error("--instances: several instances share a PostgreSQL database only");
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

/** A send door as autocannon calls it: its path, headers and body (a new body per request, maybe). */
interface Door {
  name: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  /** A fresh body for each request (Alertmanager's group key: each request a new alert group). */
  nextBody?: () => string;
}

function run(url: string | string[], door: Door, options: { overallRate?: number }) {
  return autocannon({
    // Several URLs share the connections round-robin (autocannon's url.js; its types say one).
    url: (typeof url === "string" ? `${url}${door.path}` : url.map((one) => `${one}${door.path}`)) as string,
    method: "POST",
    headers: door.headers,
    body: door.body,
    ...(door.nextBody
      ? {
          requests: [
            {
              setupRequest: (request: autocannon.Request) => ({ ...request, body: door.nextBody?.() }),
            },
          ],
        }
      : {}),
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
const docks = new DockRepository(db, key);
const dock = await docks.create(1, { name: "Bench", link: null, description: null });
const hookToken = (await docks.rotateHookToken(dock.id)) as string;
const subscriptions = new SubscriptionRepository(db);
const message = values.rich
  ? {
      msg: "**Build 42** failed on `main`\n[logs](https://ci.example/42)",
      format: "markdown",
      title: "CI",
      priority: "high",
      tags: ["warning", "ci"],
      buttons: [{ text: "Retry", url: "https://ci.example/42/retry" }],
    }
  : { msg: "Deploy finished ✅\nbuild 1234" };
const json = { "content-type": "application/json" };
const basicAuth = `Basic ${Buffer.from(`${dock.id}:${dock.secretKey}`).toString("base64")}`;
/** Alertmanager's webhook with ten firing alerts, as test/fixtures/integrations/alertmanager has it. */
const alertmanager = (group: number) =>
  JSON.stringify({
    receiver: "dock-notify",
    status: "firing",
    alerts: Array.from({ length: 10 }, (_, i) => ({
      status: "firing",
      labels: { alertname: "DiskFull", instance: `db-${i}:9100`, severity: "critical" },
      annotations: { summary: `Disk 9${i}% full on db-${i}` },
      startsAt: "2026-11-29T00:00:00Z",
      endsAt: "0001-01-01T00:00:00Z",
      generatorURL: "http://prometheus:9090/graph",
      fingerprint: `f${i}`,
    })),
    groupLabels: { alertname: "DiskFull" },
    commonLabels: { alertname: "DiskFull", severity: "critical" },
    commonAnnotations: {},
    externalURL: "http://alertmanager:9093",
    version: "4",
    groupKey: `{}:{alertname="DiskFull",group="${group}"}`,
    truncatedAlerts: 0,
  });
let group = 0;
const ALL_DOORS: Door[] = [
  {
    name: "POST /ping",
    path: "/ping",
    headers: json,
    body: JSON.stringify({ dock_id: dock.id, secret_key: dock.secretKey, ...message }),
  },
  {
    name: "POST /webhook (Basic)",
    path: "/webhook",
    headers: { ...json, authorization: basicAuth },
    body: JSON.stringify(message),
  },
  { name: "POST /hook/<token>", path: `/hook/${hookToken}`, headers: json, body: JSON.stringify(message) },
  {
    name: "POST /webhook/alertmanager (10 alerts)",
    path: "/webhook/alertmanager",
    headers: { ...json, authorization: basicAuth },
    body: alertmanager(0),
    nextBody: () => alertmanager(++group),
  },
];
const DOOR_NAMES: Record<string, string> = {
  ping: "POST /ping",
  webhook: "POST /webhook (Basic)",
  hook: "POST /hook/<token>",
  alertmanager: "POST /webhook/alertmanager (10 alerts)",
};
const doors = values.doors.split(",").map((name) => {
  const door = ALL_DOORS.find((d) => d.name === DOOR_NAMES[name.trim()]);
  if (door === undefined) throw new Error(`--doors: no door ${name} (ping, webhook, hook, alertmanager)`);
  return door;
});
const barePing: Door = { ...(ALL_DOORS[0] as Door), name: "bare Fastify 202" };

const startService = () =>
  startChild(
    [...serviceNodeOptions, "dist/cli.js", "serve"],
    {
      ...SHIPPED_ENV,
      PORT: "0",
      DATA_DIR: dataDir,
      DATABASE_URL: databaseUrl,
      LOG_LEVEL: "info",
      // On: a budget no run reaches (its cost measured, nothing refused). Off: no limit at all.
      ...(values.limiter
        ? { DOCK_RATE_BURST: "1000000", DOCK_RATE_PER_SECOND: "1000000" }
        : { DOCK_RATE_BURST: "0" }),
      AUTH_FAILURES_PER_MINUTE: "0",
    },
    (line) => {
      const entry = JSON.parse(line) as { msg?: string; port?: number };
      return entry.msg?.startsWith("Dock Notify is ready") ? entry.port : undefined;
    },
  );
const services = [];
for (let i = 0; i < instanceCount; i++) services.push(await startService());
const service = services[0] as Awaited<ReturnType<typeof startService>>;
const serviceUrls = services.map((one) => one.url);
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
for (const door of doors) {
  const warm = await run(serviceUrls, door, { overallRate: 500 });
  if (warm.non2xx > 0) throw new Error(`${door.name}: ${warm.non2xx} answers not 2xx while warming up`);
}
await run(bare.url, barePing, { overallRate: 500 });

interface Round {
  bare: autocannon.Result;
  /** Each door's run, by name. */
  doors: Map<
    string,
    { result: autocannon.Result; busy: number; steal: number; threads: ThreadShares | null }
  >;
  bareMachine: { busy: number; steal: number };
}
// Maximum throughput: three rounds, each running the bare route and every door back to back (the
// order rotates from round to round), and per door the median round by its ratio to the bare
// route's. On a shared VM the bare route alone varies by a third from one run to the next; a ratio
// taken within a round compares like with like.
const rounds: Round[] = [];
for (let round = 0; round < 3; round++) {
  const order: (Door | null)[] = [null, ...doors];
  for (let i = 0; i < round; i++) order.push(order.shift() as Door | null);
  const current: Round = {
    bare: undefined as unknown as autocannon.Result,
    doors: new Map(),
    bareMachine: { busy: 0, steal: 0 },
  };
  for (const door of order) {
    if (door === null) {
      const measuredBare = await measured(() => run(bare.url, barePing, {}));
      current.bare = measuredBare.result;
      current.bareMachine = measuredBare;
    } else {
      // Threads are sampled for the service only: the bare route has nothing but its event loop.
      current.doors.set(door.name, await measured(() => run(serviceUrls, door, {}), service.child.pid));
    }
  }
  rounds.push(current);
}
const ratioIn = (round: Round, door: Door) =>
  (round.doors.get(door.name)?.result.requests.average ?? 0) / round.bare.requests.average;
const medianRoundOf = (door: Door) =>
  [...rounds].sort((x, y) => ratioIn(x, door) - ratioIn(y, door))[1] as Round;

// The constant-rate runs alternate between the bare route and each door, three rounds each, and
// report the median: this machine's own hiccups (a shared VM) show up in the bare route's too.
const atRate = new Map<string, OpenLoopResult[]>([["bare", []]]);
for (let round = 0; round < 3; round++) {
  (atRate.get("bare") as OpenLoopResult[]).push(
    await openLoop({ url: `${bare.url}/ping`, body: barePing.body, rate, seconds: duration }),
  );
  for (const door of doors) {
    if (door.nextBody) continue; // open-loop sends one body: Alertmanager's door is measured at full speed only
    const runs = atRate.get(door.name) ?? [];
    runs.push(
      await openLoop({
        url: `${serviceUrls[round % serviceUrls.length]}${door.path}`,
        body: door.body,
        headers: door.headers,
        rate,
        seconds: duration,
      }),
    );
    atRate.set(door.name, runs);
  }
}
const median = (runs: OpenLoopResult[]) => [...runs].sort((a, b) => a.p99 - b.p99)[1] as OpenLoopResult;

for (const one of services) await stop(one.child);
await stop(bare.child);
rmSync(dataDir, { recursive: true, force: true });

console.log(
  `\nbench:ingest on ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
);
console.log(
  `database: ${values.database}; ${instanceCount > 1 ? `${instanceCount} instances (the constant-rate runs one instance a round, by turns; threads: the first); ` : ""}limiter ${values.limiter ? "on" : "off"}; ${values.rich ? "rich messages (Markdown, title, priority, tags, a button)" : "plain messages"}; ${connections} connections; ${duration} s per run; 3 subscribers per message (delivery running); service node options: ${serviceNodeOptions.join(" ") || "none"}\n`,
);
console.log(
  "| door | req/s (median round) | bare req/s, same round | % of bare | % of /ping | p50 ms | p99 ms | non-2xx | errors |",
);
console.log("|---|---|---|---|---|---|---|---|---|");
const pingDoor = doors.find((d) => d.path === "/ping");
for (const door of doors) {
  const round = medianRoundOf(door);
  const r = round.doors.get(door.name)?.result as autocannon.Result;
  // Against /ping in the same round, median of the rounds: like compared with like.
  const pingShare = pingDoor
    ? `${(
        ([...rounds.map((x) => ratioIn(x, door) / ratioIn(x, pingDoor))].sort((a, b) => a - b)[1] as number) *
          100
      ).toFixed(1)} %`
    : "n/a";
  console.log(
    `| ${door.name} | ${Math.round(r.requests.average)} | ${Math.round(round.bare.requests.average)} | ${(ratioIn(round, door) * 100).toFixed(1)} % | ${pingShare} | ${r.latency.p50} | ${r.latency.p99} | ${r.non2xx} | ${r.errors} |`,
  );
}
console.log(`\nat a constant ${rate} req/s (median of 3 by p99):\n`);
console.log("| run | achieved req/s | p50 ms | p99 ms | max ms | failed |");
console.log("|---|---|---|---|---|---|");
for (const [name, runs] of atRate) {
  const r = median(runs);
  console.log(
    `| ${name === "bare" ? "bare Fastify 202" : name} | ${r.achievedRate} | ${r.p50} | ${r.p99} | ${r.max} | ${r.failed} |`,
  );
}
console.log(
  `\nall p99 at ${rate} req/s — ${[...atRate].map(([name, runs]) => `${name}: ${runs.map((r) => r.p99).join(", ")} ms`).join("; ")}`,
);
console.log(
  `all max rounds (req/s, % of the same round's bare) — ${rounds
    .map(
      (round, i) =>
        `round ${i + 1}: bare ${Math.round(round.bare.requests.average)}; ${doors
          .map(
            (door) =>
              `${door.name} ${Math.round(round.doors.get(door.name)?.result.requests.average ?? 0)} (${(ratioIn(round, door) * 100).toFixed(1)} %)`,
          )
          .join("; ")}`,
    )
    .join(" · ")}`,
);
console.log(
  `machine CPU busy / stolen by the host during the bare runs — ${rounds
    .map((round) => `${percent(round.bareMachine.busy)} / ${percent(round.bareMachine.steal)}`)
    .join(" · ")}`,
);
const workerName = values.database === "sqlite" ? "SQLite thread" : "worker threads";
const runningWaiting = (share: { running: number; waiting: number }) =>
  `${percent(share.running)} + ${percent(share.waiting)}`;
for (const door of doors) {
  console.log(
    `${door.name}: machine busy / stolen ${rounds
      .map((round) => {
        const m = round.doors.get(door.name);
        return m ? `${percent(m.busy)} / ${percent(m.steal)}` : "n/a";
      })
      .join(
        " · ",
      )}; service threads, share of one core running + runnable but waiting (event loop; ${workerName}; GC and libuv helpers) — ${rounds
      .map((round) => {
        const t = round.doors.get(door.name)?.threads ?? null;
        return t === null
          ? "n/a"
          : `${runningWaiting(t.eventLoop)}; ${runningWaiting(t.workers)}; ${percent(t.other)}`;
      })
      .join(" · ")}`,
  );
}
