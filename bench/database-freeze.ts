/**
 * bench:freeze — how long do sends wait while PostgreSQL stops answering, and after?
 *
 *   npm run bench:freeze [-- --rate 50 --before 5 --freeze 10 --after 30 --modes freeze,blackhole,lock
 *                           --timeout 5 --baseline <another checkout>]
 *
 * The service (`src/cli.ts serve` of this checkout; with `--baseline`, first that checkout's: the
 * code before a change, exported elsewhere with this one's node_modules) on a PostgreSQL database
 * of its own (TEST_POSTGRES_URL's server, created and dropped here), reached through a TCP proxy
 * this script controls (test/helpers/tcp-proxy.ts). `/ping` at a constant `--rate` (an open loop: each
 * request starts on schedule, however long the others take) to one Dock, `--before` seconds of
 * normal service, then `--freeze` seconds of outage, then `--after` seconds more. The outages:
 *
 * - `freeze`: the proxy holds every byte both ways and accepts new connections that hear nothing;
 *   when it ends, what was held is delivered (a partition that heals, a paused VM that wakes);
 * - `blackhole`: the same, but every connection that lived through it is reset when it ends (a
 *   host gone without a word, back after a reboot);
 * - `lock`: the server answers, slowly: another session holds `messages` locked exclusively.
 *
 * For each request: its arrival (the scheduled start), its status (0: no answer, or none within
 * 180 s), whether a 503 carried Retry-After, and how long its answer took; "waited for the
 * outage's end" counts those that arrived more than `--timeout` + 1 s before the outage ended and
 * were answered only after it. Then the database itself (not through the proxy) says which
 * messages are stored: a `202` must be, and a message answered anything else must not (a client
 * that retries it would get it twice). DATABASE_TIMEOUT_SECONDS is `--timeout`; the Dock's rate
 * limit is off (DOCK_RATE_BURST=0), every other setting is the default (AUTH_FAILURES_PER_MINUTE
 * included: its attempts in judgement are part of what a request may wait for).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { Agent, request } from "node:http";
import { type AddressInfo, createServer } from "node:net";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { DockRepository } from "../src/store/docks.ts";
import { migrate, openDb } from "../src/store/open.ts";
import { startTcpProxy, type TcpProxy } from "../test/helpers/tcp-proxy.ts";

const { values } = parseArgs({
  options: {
    rate: { type: "string", default: "50" },
    before: { type: "string", default: "5" },
    freeze: { type: "string", default: "10" },
    after: { type: "string", default: "30" },
    modes: { type: "string", default: "freeze,blackhole,lock" },
    timeout: { type: "string", default: "5" },
    "service-dir": { type: "string", default: join(import.meta.dirname, "..") },
    baseline: { type: "string" },
  },
});
const rate = Number(values.rate);
const beforeMs = Number(values.before) * 1000;
const freezeMs = Number(values.freeze) * 1000;
const afterMs = Number(values.after) * 1000;
const timeoutSeconds = Number(values.timeout);
const modes = values.modes.split(",") as Mode[];
const services = [
  ...(values.baseline ? [{ name: "before", dir: resolve(values.baseline) }] : []),
  { name: values.baseline ? "after" : "this checkout", dir: resolve(values["service-dir"]) },
];
const ADMIN_URL = process.env.TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
/** Give up on a request after this long (it counts as unanswered). */
const GIVE_UP_MS = 180_000;
const loadAtStart = loadavg()[0]?.toFixed(1);

type Mode = "freeze" | "blackhole" | "lock";

interface Sample {
  /** When it was due, relative to the start of the load (ms). */
  at: number;
  latency: number;
  /** 0: no answer (the connection failed, or GIVE_UP_MS passed). */
  status: number;
  retryAfter: boolean;
  text: string;
}

async function admin<T>(work: (client: pg.Client) => Promise<T>, url = ADMIN_URL): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as AddressInfo;
  await new Promise((done) => server.close(done));
  return port;
}

/** One run: a fresh database, the service of `dir` through a proxy, the load, the outage. */
async function run(dir: string, mode: Mode) {
  const name = `dock_notify_bench_freeze_${randomBytes(4).toString("hex")}`;
  await admin((client) => client.query(`create database ${name}`));
  const direct = new URL(ADMIN_URL);
  direct.pathname = `/${name}`;
  const dataDir = mkdtempSync(join(tmpdir(), "dock-notify-bench-freeze-"));
  const key = randomBytes(32);
  let child: ChildProcess | undefined;
  let proxy: TcpProxy | undefined;
  let holder: pg.Client | undefined;
  try {
    const db = await openDb(direct.toString());
    await migrate(db);
    const dock = await new DockRepository(db, key).create(1, {
      name: "Freeze",
      link: null,
      description: null,
    });
    await db.close();

    proxy = await startTcpProxy({ host: direct.hostname, port: Number(direct.port || 5432) });
    const through = new URL(direct);
    through.port = String(proxy.port);
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    child = spawn(process.execPath, ["src/cli.ts", "serve"], {
      cwd: dir,
      env: {
        ...process.env,
        PORT: String(port),
        DATA_DIR: dataDir,
        DATABASE_URL: through.toString(),
        ENCRYPTION_KEY: key.toString("base64"),
        DATABASE_TIMEOUT_SECONDS: String(timeoutSeconds),
        DOCK_RATE_BURST: "0",
        LOG_LEVEL: "error",
      },
      stdio: ["ignore", "ignore", "inherit"],
    });
    for (;;) {
      const ready = await fetch(`${url}/readyz`).then(
        (response) => response.ok,
        () => false,
      );
      if (ready) break;
      await new Promise((done) => setTimeout(done, 100));
    }

    const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });
    const samples: Sample[] = [];
    const send = (index: number, due: number, start: number) =>
      new Promise<void>((done) => {
        const text = `m${index}`;
        const body = JSON.stringify({ dock_id: dock.id, secret_key: dock.secretKey, msg: text });
        const scheduled = Math.min(due, performance.now());
        const sample: Sample = { at: scheduled - start, latency: 0, status: 0, retryAfter: false, text };
        const finish = () => {
          sample.latency = performance.now() - scheduled;
          samples.push(sample);
          done();
        };
        const req = request(
          {
            agent,
            host: "127.0.0.1",
            port,
            path: "/ping",
            method: "POST",
            headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
            timeout: GIVE_UP_MS,
          },
          (res) => {
            sample.status = res.statusCode ?? 0;
            sample.retryAfter = res.headers["retry-after"] !== undefined;
            res.resume();
            res.on("end", finish);
          },
        );
        req.on("timeout", () => req.destroy());
        req.on("error", finish);
        req.end(body);
      });

    const total = Math.round((rate * (beforeMs + freezeMs + afterMs)) / 1000);
    const start = performance.now();
    const inflight: Promise<void>[] = [];
    let outageStarted = false;
    let outageEnded = false;
    for (let i = 0; i < total; i++) {
      const due = start + (i * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      const now = performance.now() - start;
      if (!outageStarted && now >= beforeMs) {
        outageStarted = true;
        if (mode === "freeze") proxy.silence();
        else if (mode === "blackhole") proxy.blackHole();
        else {
          holder = new pg.Client({ connectionString: direct.toString() });
          await holder.connect();
          await holder.query("begin");
          await holder.query("lock table messages in access exclusive mode");
        }
      }
      if (!outageEnded && now >= beforeMs + freezeMs) {
        outageEnded = true;
        if (mode === "lock") {
          await holder?.query("rollback");
          await holder?.end();
          holder = undefined;
        } else proxy.restore();
      }
      inflight.push(send(i, due, start));
    }
    await Promise.all(inflight);
    agent.destroy();

    const stored = new Set(
      await admin(
        async (client) => (await client.query<{ text: string }>("select text from messages")).rows,
        direct.toString(),
      ).then((rows) => rows.map((row) => row.text)),
    );
    return samples
      .sort((a, b) => a.at - b.at)
      .map((sample) => ({ ...sample, stored: stored.has(sample.text) }));
  } finally {
    await holder?.end().catch(() => {});
    if (child && child.exitCode === null) {
      child.kill("SIGTERM");
      await new Promise((done) => child?.once("exit", done));
    }
    await proxy?.close();
    await admin((client) => client.query(`drop database if exists ${name} with (force)`));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** How many were answered neither 202 nor 503, and with what (0: no answer). */
function others(rows: { status: number }[]): string {
  const counts = new Map<number, number>();
  for (const { status } of rows)
    if (status !== 202 && status !== 503) counts.set(status, (counts.get(status) ?? 0) + 1);
  const total = [...counts.values()].reduce((sum, n) => sum + n, 0);
  return total === 0 ? "0" : `${total} (${[...counts].map(([status, n]) => `${status}: ${n}`).join(", ")})`;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;

console.log(
  `\nbench:freeze on ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}; ${rate} req/s, ${beforeMs / 1000} s + ${freezeMs / 1000} s outage + ${afterMs / 1000} s; DATABASE_TIMEOUT_SECONDS=${timeoutSeconds}; load average at the start ${loadAtStart}`,
);
for (const service of services) console.log(`${service.name}: ${service.dir}`);
console.log(
  "\n| service | outage | arrived | requests | 202 | 503 (with Retry-After) | other | p50 | p99 | max | over timeout + 1 s | waited for the outage's end | not 202 yet stored | 202 not stored |",
);
console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
const outageEnd = beforeMs + freezeMs;
/** A request that arrived longer than this before the outage ended was owed its answer during it. */
const dueMs = (timeoutSeconds + 1) * 1000;
const phases: [string, (at: number) => boolean][] = [
  ["before", (at) => at < beforeMs],
  ["during", (at) => at >= beforeMs && at < outageEnd],
  ["0–5 s after", (at) => at >= outageEnd && at < outageEnd + 5000],
  ["5 s after →", (at) => at >= outageEnd + 5000],
];
const recovery: string[] = [];
for (const mode of modes) {
  for (const service of services) {
    const samples = await run(service.dir, mode);
    for (const [phase, within] of phases) {
      const rows = samples.filter((sample) => within(sample.at));
      const latencies = rows.map((row) => row.latency).sort((a, b) => a - b);
      const count = (test: (row: (typeof rows)[number]) => boolean) => rows.filter(test).length;
      const refused = count((row) => row.status === 503);
      console.log(
        `| ${service.name} | ${mode} | ${phase} | ${rows.length} | ${count((row) => row.status === 202)} | ${refused} (${count((row) => row.status === 503 && row.retryAfter)}) | ${others(rows)} | ${seconds(quantile(latencies, 0.5))} | ${seconds(quantile(latencies, 0.99))} | ${seconds(latencies.at(-1) ?? 0)} | ${count((row) => row.latency > (timeoutSeconds + 1) * 1000)} | ${count((row) => row.at < outageEnd - dueMs && row.at + row.latency > outageEnd)} | ${count((row) => row.status !== 202 && row.stored)} | ${count((row) => row.status === 202 && !row.stored)} |`,
      );
    }
    const after = samples.filter((sample) => sample.at >= outageEnd);
    const firstAccepted = after.find((sample) => sample.status === 202);
    const lastSlow = after.filter((sample) => sample.latency > 1000).at(-1);
    recovery.push(
      `${service.name}, ${mode}: first 202 for a request that arrived after the outage: ${firstAccepted ? `+${seconds(firstAccepted.at + firstAccepted.latency - outageEnd)}` : "none"}; the last request slower than 1 s arrived ${lastSlow ? `+${seconds(lastSlow.at - outageEnd)}` : "—"} after the outage`,
    );
  }
}
console.log(`\n${recovery.join("\n")}`);
console.log(`load average at the end ${loadavg()[0]?.toFixed(1)}`);
