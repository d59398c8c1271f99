/**
 * bench:memory — the service's resident memory (RSS): idle, under a constant rate of POST /ping,
 * and with a large backlog waiting for a Telegram that answers 500, each beside a bare Fastify
 * server (bench/bare-server.js) on the same Node in the same run. The service runs as it ships:
 * compiled, from dist/ (`npm run bench:memory` builds it first).
 *
 *   npm run bench:memory [-- --quick --duration 60 --rate 2000 --backlog 200000 --database sqlite|postgres://…
 *                            --sandbox separate|in-process --service-node-options="--max-semi-space-size=2"]
 *
 * The service runs as it does in production: with the Node options `npm start` gives it (unless
 * --service-node-options says otherwise, "" for none), with a bot token, talking to a Telegram in another
 * process (`dock-notify sandbox`, playing Telegram). `--sandbox in-process` measures the trial set-up
 * instead, where no token is set and the service carries the sandbox itself (about 5 MB more).
 *
 * RSS is read from /proc/<pid>/status (Linux only): VmRSS sampled every 250 ms, and the peak under
 * load from VmHWM after resetting it through /proc/<pid>/clear_refs, so a spike between two
 * samples still counts. The V8 heap of each server's main thread comes from bench/memory-probe.js.
 */
import { cpus, loadavg, totalmem } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import { loadEncryptionKey } from "../src/runtime/encryption-key.ts";
import type { AcceptItem } from "../src/store/accept-batch.ts";
import { DockRepository } from "../src/store/docks.ts";
import { migrate, openDb } from "../src/store/open.ts";
import { SubscriptionRepository } from "../src/store/subscriptions.ts";
import { SANDBOX_BOT_TOKEN } from "../src/telegram/sandbox-bot.ts";
import {
  createDatabase,
  killAll,
  memoryUsage,
  resetPeak,
  rss,
  type Server,
  sandbox,
  startServer,
  statusMb,
  stop,
} from "./processes.ts";
import { SHIPPED_ENV, serviceNodeOptions as shippedOr } from "./shipped.ts";

const { values } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    duration: { type: "string" },
    rate: { type: "string", default: "2000" },
    connections: { type: "string", default: "50" },
    idle: { type: "string" },
    backlog: { type: "string" },
    database: { type: "string", default: "sqlite" },
    /** Node options for the service only (V8 heap flags to try), separated by spaces. */
    "service-node-options": { type: "string" },
    sandbox: { type: "string", default: "separate" },
  },
});
if (values.sandbox !== "separate" && values.sandbox !== "in-process") {
  throw new Error(`--sandbox must be "separate" or "in-process", got "${values.sandbox}"`);
}
const separateSandbox = values.sandbox === "separate";
const serviceNodeOptions = shippedOr(values["service-node-options"]);
/** `--quick`: a short run to try the bench, not one to quote. */
const loadSeconds = Number(values.duration ?? (values.quick ? 10 : 60));
const idleSeconds = Number(values.idle ?? (values.quick ? 3 : 10));
const backlog = Number(values.backlog ?? (values.quick ? 20_000 : 200_000));
const rate = Number(values.rate);
const connections = Number(values.connections);
/** Subscribers of the backlog's Dock: each waiting message is this many deliveries. */
const BACKLOG_SUBSCRIBERS = 4;
/** Subscribers of the loaded Dock, as in bench:ingest: the delivery engine works under the load. */
const LOAD_SUBSCRIBERS = 3;
const SAMPLE_MS = 250;

/** RSS samples of each server, every SAMPLE_MS for `until` seconds or until that promise settles. */
async function sampleRss(servers: Server[], until: number | PromiseLike<unknown>): Promise<number[][]> {
  const samples = servers.map(() => [] as number[]);
  let finished = false;
  if (typeof until === "number") setTimeout(() => (finished = true), until * 1000);
  else void Promise.resolve(until).finally(() => (finished = true));
  while (!finished) {
    for (const [i, server] of servers.entries()) samples[i]?.push(rss(server));
    await sleep(SAMPLE_MS);
  }
  if (typeof until !== "number") await until;
  return samples;
}

/**
 * Waits at least `min` seconds, then until no server's RSS moved by more than 1 MB over the last
 * 3 s (at most `max` seconds): start-up work (JIT, the bot's first calls, a checkpoint) is over.
 */
async function settle(servers: Server[], min = 5, max = 30) {
  await sleep(min * 1000);
  const history = servers.map(() => [] as number[]);
  for (let waited = min; waited < max; waited++) {
    for (const [i, server] of servers.entries()) history[i]?.push(rss(server));
    const steady = history.every((h) => {
      const last = h.slice(-4);
      return last.length === 4 && Math.max(...last) - Math.min(...last) <= 1;
    });
    if (steady) return;
    await sleep(1000);
  }
}

const median = (numbers: number[]) => {
  const sorted = [...numbers].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
};
const mb = (n: number) => n.toFixed(0);

/**
 * The service on a fresh database with one Dock whose `subscribers` are people of its Telegram (the
 * sandbox) who pressed Start: what a delivery needs to reach someone. `telegram` is the server that
 * plays Telegram: a `dock-notify sandbox` of its own, or with `--sandbox in-process` the service.
 */
async function startService(subscribers: number) {
  const database = await createDatabase(values.database, "memory");
  cleanups.push(() => database.drop());
  const db = await openDb(database.url);
  await migrate(db);
  const dock = await new DockRepository(db, loadEncryptionKey(null, database.dataDir).key).create(1, {
    name: "Memory",
    link: null,
    description: null,
  });
  const telegram = separateSandbox
    ? await startServer(
        "Telegram sandbox",
        ["dist/cli.js", "sandbox"],
        { PORT: "0", DATA_DIR: join(database.dataDir, "sandbox"), LOG_LEVEL: "info" },
        (line) => {
          const entry = JSON.parse(line) as { msg?: string; port?: number };
          return entry.msg?.startsWith("Telegram sandbox is ready") ? entry.port : undefined;
        },
      )
    : null;
  const server = await startServer(
    "Dock Notify",
    [...serviceNodeOptions, "dist/cli.js", "serve"],
    {
      ...SHIPPED_ENV,
      PORT: "0",
      DATA_DIR: database.dataDir,
      DATABASE_URL: database.url,
      LOG_LEVEL: "info",
      DOCK_RATE_BURST: "0",
      AUTH_FAILURES_PER_MINUTE: "0",
      ...(telegram === null
        ? {}
        : { TELEGRAM_BOT_TOKEN: SANDBOX_BOT_TOKEN, TELEGRAM_API_ROOT: `${telegram.url}/sandbox` }),
    },
    (line) => {
      const entry = JSON.parse(line) as { msg?: string; port?: number };
      return entry.msg?.startsWith("Dock Notify is ready") ? entry.port : undefined;
    },
  );
  const subscriptions = new SubscriptionRepository(db);
  for (let i = 0; i < subscribers; i++) {
    const person = (await (
      await sandbox(telegram ?? server, "users", { method: "POST", body: { first_name: `Reader ${i}` } })
    ).json()) as { id: number };
    await sandbox(telegram ?? server, `users/${person.id}/start`, { method: "POST" });
    await subscriptions.subscribe(dock.id, person.id, "private");
  }
  return { server, telegram: telegram ?? server, db, dock };
}

/** Deliveries waiting, as the service's own /metrics gauge counts them. */
async function queueDepth(server: Server): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  return Number(/^dock_notify_queue_depth (\d+)/m.exec(text)?.[1] ?? Number.NaN);
}

/** The server's RSS while a constant `rate` of POST /ping runs: median of the samples, and the peak. */
async function underLoad(server: Server, body: string) {
  const exact = resetPeak(server);
  const load = autocannon({
    url: `${server.url}/ping`,
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
    connections,
    duration: loadSeconds,
    overallRate: rate,
  });
  const [samples = []] = await sampleRss([server], load);
  const result = await load;
  return {
    median: median(samples),
    peak: exact ? statusMb(server, "VmHWM") : Math.max(...samples),
    heap: (await memoryUsage(server)).heapUsed / 2 ** 20,
    rate: result.requests.average,
    failed: result.non2xx + result.errors + result.timeouts,
  };
}

const cleanups: (() => Promise<void>)[] = [];
const loadBefore = loadavg()[0] ?? 0;
try {
  // Idle and under load: the service (three subscribers, delivery running at Telegram's pace)
  // and the bare server side by side.
  const loaded = await startService(LOAD_SUBSCRIBERS);
  const body = JSON.stringify({
    dock_id: loaded.dock.id,
    secret_key: loaded.dock.secretKey,
    msg: "Deploy finished ✅\nbuild 1234",
  });
  await loaded.db.close();
  const bare = await startServer("bare Fastify", ["bench/bare-server.js"], {}, (line) => {
    return (JSON.parse(line) as { port: number }).port;
  });
  const service = loaded.server;
  // Idle is after the service's own idle housekeeping: it gives memory back 5 s after it is ready
  // (src/runtime/heap.ts), and its SQLite checkpoint thread rests once nothing has been written for 30 s
  // (the subscriptions above were the last writes), so the samples start well after both.
  await settle([service, bare], 40, 60);
  const [serviceIdle = [], bareIdle = []] = await sampleRss([service, bare], idleSeconds);
  const idleSplit = (server: Server) =>
    `${mb(statusMb(server, "RssAnon"))} anonymous + ${mb(statusMb(server, "RssFile"))} file-backed`;
  const split = { service: idleSplit(service), bare: idleSplit(bare) };
  const idleHeap = {
    service: (await memoryUsage(service)).heapUsed / 2 ** 20,
    bare: (await memoryUsage(bare)).heapUsed / 2 ** 20,
  };
  const bareLoad = await underLoad(bare, body);
  const serviceLoad = await underLoad(service, body);
  await stop(service);
  await stop(bare);
  if (loaded.telegram !== service) await stop(loaded.telegram);

  // The backlog: Telegram answers 500 to every call but getUpdates, and `backlog` deliveries wait.
  const waiting = await startService(BACKLOG_SUBSCRIBERS);
  await sandbox(waiting.telegram, "faults", { method: "POST", body: { kind: "server_error", rate: 1 } });
  const exact = resetPeak(waiting.server);
  const item: AcceptItem = {
    dockId: waiting.dock.id,
    text: "Deploy finished",
    content: null,
    idempotencyKey: null,
    hash: null,
    secretKey: null,
  };
  const messages = Math.ceil(backlog / BACKLOG_SUBSCRIBERS);
  const fill = (async () => {
    // Stored straight into the database (as bench:backlog does): far faster than through /ping.
    for (let stored = 0; stored < messages; stored += 256) {
      const items = Array.from({ length: Math.min(256, messages - stored) }, () => item);
      await waiting.db.acceptBatch({ items, now: Date.now(), dockRate: null });
    }
    await waiting.db.close();
  })();
  const [fillSamples = []] = await sampleRss([waiting.server], fill);
  let depth = await queueDepth(waiting.server);
  for (let waited = 0; !(depth >= backlog) && waited < 120; waited += 2) {
    await sleep(2000);
    depth = await queueDepth(waiting.server);
  }
  await settle([waiting.server]);
  const [backlogSamples = []] = await sampleRss([waiting.server], idleSeconds);
  const backlogPeak = exact ? statusMb(waiting.server, "VmHWM") : Math.max(...fillSamples, ...backlogSamples);
  const backlogHeap = (await memoryUsage(waiting.server)).heapUsed / 2 ** 20;
  await stop(waiting.server);
  if (waiting.telegram !== waiting.server) await stop(waiting.telegram);

  const idle = { service: median(serviceIdle), bare: median(bareIdle) };
  const thousands = (n: number) => n.toLocaleString("en");
  console.log(
    `\nbench:memory on ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}; database ${values.database}; ${separateSandbox ? "Telegram (the sandbox) in another process" : "the sandbox in the service's process"}; service run with ${serviceNodeOptions.length > 0 ? serviceNodeOptions.join(" ") : "no Node options"}${values["service-node-options"] === undefined ? " (as npm start runs it)" : ""}`,
  );
  console.log(
    `idle: median of ${idleSeconds} s of samples after settling; load: ${thousands(rate)} req/s of POST /ping for ${loadSeconds} s (autocannon, ${connections} connections, ${LOAD_SUBSCRIBERS} subscribers, delivery running); backlog: ${thousands(depth)} deliveries waiting (${thousands(messages)} messages × ${BACKLOG_SUBSCRIBERS} subscribers), Telegram answering 500\n`,
  );
  const rows: [string, string, string][] = [
    ["idle: RSS (median)", mb(idle.service), mb(idle.bare)],
    ["idle: V8 heap used", mb(idleHeap.service), mb(idleHeap.bare)],
    [`${thousands(rate)} req/s: RSS (median)`, mb(serviceLoad.median), mb(bareLoad.median)],
    [`${thousands(rate)} req/s: RSS (peak)`, mb(serviceLoad.peak), mb(bareLoad.peak)],
    [`${thousands(rate)} req/s: V8 heap used at the end`, mb(serviceLoad.heap), mb(bareLoad.heap)],
    [`${thousands(backlog)} queued: RSS (median)`, mb(median(backlogSamples)), "—"],
    [`${thousands(backlog)} queued: RSS (peak, filling included)`, mb(backlogPeak), "—"],
    [`${thousands(backlog)} queued: V8 heap used`, mb(backlogHeap), "—"],
  ];
  console.log("| MB | Dock Notify | bare Fastify |");
  console.log("|---|---|---|");
  for (const [what, service, bare] of rows) console.log(`| ${what} | ${service} | ${bare} |`);
  console.log(
    `\nload achieved (req/s, failed requests) — Dock Notify: ${Math.round(serviceLoad.rate)}, ${serviceLoad.failed}; bare: ${Math.round(bareLoad.rate)}, ${bareLoad.failed}`,
  );
  console.log(`\nidle RSS split — Dock Notify: ${split.service}; bare: ${split.bare} (MB)`);
  console.log(
    `all idle samples (MB) — Dock Notify: ${mb(Math.min(...serviceIdle))}–${mb(Math.max(...serviceIdle))}; bare: ${mb(Math.min(...bareIdle))}–${mb(Math.max(...bareIdle))}`,
  );
  console.log(
    `peaks ${exact ? "from VmHWM (exact)" : "from the samples (VmHWM could not be reset)"}; load average ${loadBefore.toFixed(1)} before, ${(loadavg()[0] ?? 0).toFixed(1)} after`,
  );
  for (const [name, run] of [
    ["Dock Notify", serviceLoad],
    ["bare Fastify", bareLoad],
  ] as const) {
    if (run.rate < rate * 0.95) {
      console.log(
        `warning: ${name} got ${Math.round(run.rate)} req/s, not ${rate}: the machine was too busy`,
      );
    }
  }
  if (!(depth >= backlog)) console.log(`warning: the backlog reached only ${depth} deliveries`);
  console.log(
    `\nidle ${mb(idle.service)} MB (target ≤ 120 MB) · peak under ${thousands(rate)} req/s ${mb(serviceLoad.peak)} MB (target ≤ 200 MB) · bare Fastify idle ${mb(idle.bare)} MB`,
  );
} finally {
  killAll();
  for (const cleanup of cleanups) await cleanup().catch((error) => console.error(error));
}
