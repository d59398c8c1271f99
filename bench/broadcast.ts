/**
 * bench:delivery --paid — paid broadcast at its real rate: one message to --copies people, with
 * Telegram (`dock-notify sandbox`, in its own process) answering every call after --latency ms, as
 * a real network does, and the bot allowed 1000 messages a second (TELEGRAM_PAID_BROADCAST).
 *
 *   npm run bench:delivery -- --paid [--copies 10000 --latency 100 --database sqlite|postgres://…
 *                                     --urgent]
 *
 * Runs the built service (npm run build:server, which the npm script does first). Measures the time from the message's 202 until Telegram has taken every copy, against the
 * minimum N/1000 s; meanwhile another Dock (no subscribers) is sent /ping at a constant 50/s, whose
 * latencies say what the fan-out costs everyone else; the service's peak RSS; on PostgreSQL, the
 * commits per copy (pg_stat_database). With --urgent, 2 s into the fan-out an urgent message goes to
 * another Dock's one subscriber and one to the broadcasting Dock's people: how long until the first
 * copy of each is out (a priority lane's work). With PostgreSQL a database of its own is made and dropped.
 */
import { readFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { Readable } from "node:stream";
import { parseArgs } from "node:util";
import pg from "pg";
import { loadEncryptionKey } from "../src/runtime/encryption-key.ts";
import { DockRepository } from "../src/store/docks.ts";
import { migrate, openDb } from "../src/store/open.ts";
import { SubscriptionRepository } from "../src/store/subscriptions.ts";
import { SANDBOX_BOT_TOKEN } from "../src/telegram/sandbox-bot.ts";
import { openLoop } from "./open-loop.ts";
import {
  createDatabase,
  killAll,
  memoryUsage,
  rss,
  type Server,
  sandbox,
  startServer,
  statusMb,
  stop,
} from "./processes.ts";
import { SHIPPED_ENV, serviceNodeOptions } from "./shipped.ts";

const { values } = parseArgs({
  options: {
    paid: { type: "boolean", default: true },
    copies: { type: "string", default: "10000" },
    latency: { type: "string", default: "100" },
    database: { type: "string", default: "sqlite" },
    "other-rate": { type: "string", default: "50" },
    urgent: { type: "boolean", default: false },
    "service-node-options": { type: "string" },
  },
});
const copies = Number(values.copies);
const latency = Number(values.latency);
const otherRate = Number(values["other-rate"]);
const RATE = 1000;
const OWNER = 1;

const database = await createDatabase(values.database, "broadcast");
const readyOn = (message: string) => (line: string) => {
  const entry = JSON.parse(line) as { msg?: string; port?: number };
  return entry.msg?.startsWith(message) ? entry.port : undefined;
};
let service: Server | undefined;
let telegram: Server | undefined;
try {
  telegram = await startServer(
    "Telegram sandbox",
    ["dist/cli.js", "sandbox"],
    {
      PORT: "0",
      DATA_DIR: join(database.dataDir, "sandbox"),
      LOG_LEVEL: "info",
      SANDBOX_LATENCY_MS: String(latency),
      SANDBOX_MAX_PEOPLE: String(copies + 10),
    },
    readyOn("Telegram sandbox is ready"),
  );
  const db = await openDb(database.url);
  await migrate(db);
  const docks = new DockRepository(db, loadEncryptionKey(null, database.dataDir).key);
  const broadcast = await docks.create(OWNER, { name: "Broadcast", link: null, description: null });
  const other = await docks.create(OWNER, { name: "Other", link: null, description: null });
  const pager = await docks.create(OWNER, { name: "Pager", link: null, description: null });
  const made = performance.now();
  const { ids } = (await (
    await sandbox(telegram, "users/crowd", { method: "POST", body: { count: copies + 1 } })
  ).json()) as { ids: number[] };
  // The last one is the Pager's only subscriber.
  await new SubscriptionRepository(db).subscribe(pager.id, ids.pop() as number, "private");
  const subscriptions = new SubscriptionRepository(db);
  // PostgreSQL answers several at once; SQLite one at a time either way.
  const lanes = values.database === "sqlite" ? 1 : 16;
  let next = 0;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (next < ids.length) await subscriptions.subscribe(broadcast.id, ids[next++] as number, "private");
    }),
  );
  await db.close();
  console.log(`${copies} people subscribed in ${((performance.now() - made) / 1000).toFixed(1)} s`);

  service = await startServer(
    "Dock Notify",
    [...serviceNodeOptions(values["service-node-options"]), "dist/cli.js", "serve"],
    {
      ...SHIPPED_ENV,
      PORT: "0",
      DATA_DIR: database.dataDir,
      DATABASE_URL: database.url,
      LOG_LEVEL: "info",
      DOCK_RATE_BURST: "0",
      TELEGRAM_BOT_TOKEN: SANDBOX_BOT_TOKEN,
      TELEGRAM_API_ROOT: `${telegram.url}/sandbox`,
      TELEGRAM_PAID_BROADCAST: "true",
      TELEGRAM_RATE_LIMIT: String(RATE),
    },
    readyOn("Dock Notify is ready"),
  );
  const url = service.url;
  await new Promise((resolve) => setTimeout(resolve, 3500)); // past the pacer's cold start
  // The same load with nothing else going on first: the baseline for the figures during the fan-out
  // (after a second of it to warm up: a fresh process compiles its code on the first requests).
  await openLoop({
    url: `${url}/ping`,
    body: JSON.stringify({ dock_id: other.id, secret_key: other.secretKey, msg: "warming up" }),
    rate: otherRate,
    seconds: 1,
  });
  const quiet = await openLoop({
    url: `${url}/ping`,
    body: JSON.stringify({ dock_id: other.id, secret_key: other.secretKey, msg: "quietly" }),
    rate: otherRate,
    seconds: 3,
  });
  await sandbox(telegram, "stats", { method: "DELETE" });
  const commits = values.database === "sqlite" ? null : await commitCount(database.url);
  const cpuBefore = { service: cpuSeconds(service), telegram: cpuSeconds(telegram) };
  const idleRss = rss(service);
  let peakRss = idleRss;
  // The heap as the service sees it, read when its RSS was highest: what the peak is made of.
  let atPeak: NodeJS.MemoryUsage | null = null;
  let peakSplit = { anon: 0, file: 0 };
  let reading = false;
  const sampler = setInterval(() => {
    const now = rss(service as Server);
    if (now <= peakRss || reading) return;
    peakRss = now;
    peakSplit = {
      anon: statusMb(service as Server, "RssAnon"),
      file: statusMb(service as Server, "RssFile"),
    };
    reading = true;
    void memoryUsage(service as Server).then(
      (usage) => {
        atPeak = usage;
        reading = false;
      },
      () => (reading = false),
    );
  }, 100);

  // Every copy's arrival, by text: the first, the last, how many.
  const arrivals = new Map<string, { first: number; last: number; count: number }>();
  const watching = new AbortController();
  void watch(telegram, arrivals, watching.signal);

  const minimum = copies / RATE;
  const others = openLoop({
    url: `${url}/ping`,
    body: JSON.stringify({ dock_id: other.id, secret_key: other.secretKey, msg: "meanwhile" }),
    rate: otherRate,
    seconds: Math.max(2, minimum),
  });
  const started = performance.now();
  const answer = await fetch(`${url}/ping`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ dock_id: broadcast.id, secret_key: broadcast.secretKey, msg: "To everyone" }),
  });
  if (answer.status !== 202) throw new Error(`the broadcast's ping answered ${answer.status}`);
  const accepted = performance.now();
  // Two seconds in (most of the fan-out still waiting), urgent messages: one to another Dock, one
  // to the broadcasting Dock itself. How long until the first copy of each is in a chat?
  const urgent = (async () => {
    if (!values.urgent) return {};
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const sent: Record<string, number> = {};
    for (const [dock, text] of [
      [pager, "Urgent elsewhere"],
      [broadcast, "Urgent here"],
    ] as const) {
      const response = await fetch(`${url}/ping`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ dock_id: dock.id, secret_key: dock.secretKey, msg: text, priority: "urgent" }),
      });
      if (response.status !== 202) throw new Error(`the urgent ping answered ${response.status}`);
      sent[text] = performance.now();
    }
    return sent;
  })();
  let stats: { send_message: number; too_many_requests: number; peak_per_second: number };
  for (;;) {
    stats = (await (await sandbox(telegram, "stats", { method: "GET" })).json()) as typeof stats;
    // The fan-out, and with --urgent the first copy of each urgent message.
    if (
      (arrivals.get("To everyone")?.count ?? 0) >= copies &&
      (!values.urgent || (arrivals.has("Urgent here") && arrivals.has("Urgent elsewhere")))
    )
      break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const elapsed = ((arrivals.get("To everyone")?.last ?? 0) - accepted) / 1000;
  const urgentSent = await urgent;
  clearInterval(sampler);
  watching.abort();
  const cpu = {
    service: cpuSeconds(service) - cpuBefore.service,
    telegram: cpuSeconds(telegram) - cpuBefore.telegram,
  };
  const meanwhile = await others;
  // A backend reports its commits when it ends (or within seconds): stop the service first.
  await stop(service);
  const perCopy = commits === null ? null : ((await commitCount(database.url)) - commits) / copies;

  console.log(
    `\nbench:delivery --paid on ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, load ${loadavg()[0]?.toFixed(2)}`,
  );
  console.log(
    `database ${values.database === "sqlite" ? "SQLite" : "PostgreSQL"}; sandbox latency ${latency} ms; TELEGRAM_RATE_LIMIT ${RATE}`,
  );
  console.log(
    `  ${copies} copies in ${elapsed.toFixed(2)} s (accept ${(accepted - started).toFixed(1)} ms); minimum ${minimum.toFixed(2)} s; ${(elapsed / minimum).toFixed(3)} × the minimum; ${(copies / elapsed).toFixed(0)} copies/s`,
  );
  console.log(
    `  another Dock's /ping at ${otherRate}/s before (nothing else going on): p50 ${quiet.p50.toFixed(1)} ms, p99 ${quiet.p99.toFixed(1)} ms`,
  );
  console.log(`  Telegram's peak ${stats.peak_per_second} in any second; 429s ${stats.too_many_requests}`);
  console.log(
    `  another Dock's /ping at ${otherRate}/s meanwhile: p50 ${meanwhile.p50.toFixed(1)} ms, p99 ${meanwhile.p99.toFixed(1)} ms, max ${meanwhile.max.toFixed(1)} ms, ${meanwhile.failed} failed`,
  );
  console.log(
    `  CPU meanwhile: service ${cpu.service.toFixed(1)} s (${((cpu.service / copies) * 1e6).toFixed(0)} µs per copy), sandbox ${cpu.telegram.toFixed(1)} s, of ${(elapsed * cpus().length).toFixed(1)} s the machine had`,
  );
  const mb = (bytes: number | undefined) => ((bytes ?? 0) / 2 ** 20).toFixed(0);
  const heap = atPeak as NodeJS.MemoryUsage | null;
  console.log(
    `  service RSS ${idleRss.toFixed(0)} MB before, peak ${peakRss.toFixed(0)} MB (then: anonymous ${peakSplit.anon.toFixed(0)} MB, files ${peakSplit.file.toFixed(0)} MB; heap ${mb(heap?.heapUsed)} of ${mb(heap?.heapTotal)} MB, external ${mb(heap?.external)} MB)`,
  );
  for (const [text, at] of Object.entries(urgentSent)) {
    console.log(
      `  "${text}" (urgent), sent 2 s into the fan-out: its first copy out after ${((arrivals.get(text)?.first ?? 0) - at).toFixed(0)} ms${text === "Urgent here" ? ` (${copies} more copies, sent ahead of the rest: the time above counts both fan-outs)` : ""}`,
    );
  }
  if (perCopy !== null) console.log(`  PostgreSQL commits per copy ${perCopy.toFixed(2)}`);
} finally {
  if (service) await stop(service);
  if (telegram) await stop(telegram);
  killAll();
  await database.drop();
}
process.exit(0);

/** Follows the sandbox's event stream: each message the bot sent, by its text (the line after the Dock's name). */
async function watch(
  telegram: Server,
  arrivals: Map<string, { first: number; last: number; count: number }>,
  signal: AbortSignal,
): Promise<void> {
  const response = await fetch(`${telegram.url}/sandbox/api/events`, { signal });
  const lines = createInterface({ input: Readable.fromWeb(response.body as never) });
  try {
    for await (const line of lines) {
      if (!line.startsWith("data: ")) continue;
      const event = JSON.parse(line.slice(6)) as { type: string; message?: { text?: string } };
      if (event.type !== "message") continue;
      const text = event.message?.text?.split("\n")[1];
      if (text === undefined) continue;
      const now = performance.now();
      const seen = arrivals.get(text);
      if (seen === undefined) arrivals.set(text, { first: now, last: now, count: 1 });
      else {
        seen.last = now;
        seen.count++;
      }
    }
  } catch {
    // Aborted at the end.
  }
}

/** CPU time a process has used so far, user and system, in seconds (/proc/<pid>/stat). */
function cpuSeconds(server: Server): number {
  const fields = readFileSync(`/proc/${server.pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Transactions committed in the database so far (every connection's, this bench's included). */
async function commitCount(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    // The statistics of the current transaction are a snapshot: take a fresh one.
    await client.query("select pg_stat_clear_snapshot()");
    const { rows } = await client.query(
      "select xact_commit from pg_stat_database where datname = current_database()",
    );
    return Number(rows[0].xact_commit);
  } finally {
    await client.end();
  }
}
