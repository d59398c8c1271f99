/**
 * bench:delivery — the delivery engine against the sandbox with Telegram's limits on.
 *
 *   npm run bench:delivery [-- --messages 900 --chats 30 --probes 200 --outage 15 --database sqlite|postgres://…]
 *   npm run bench:delivery -- --paid [--copies 10000 --latency 100 --database …]   (see broadcast.ts)
 *
 * With PostgreSQL, give it a database of its own (its tables are made, and left behind).
 *
 * Phase 1 (throughput): one Dock with --chats subscribers receives --messages/--chats pings, so
 * --messages Telegram messages must go out; compares the time taken with the theoretical minimum
 * that Telegram's limits allow, and counts 429s.
 * Phase 2 (latency under the limit): --probes pings spread over 25 Docks with one subscriber each,
 * at 20 messages/s (0.8/s per chat: under every limit); measures accept (the 202) to arrival in the
 * chat, as seen on the sandbox's live event stream.
 * Phase 3 (after an outage): Telegram fails every send for --outage seconds while 15 chats get 26
 * messages each; once it answers again, the time until all are delivered is compared with the
 * pace's minimum (each chat's 3 in any 3 s: 24 s). The deliveries that waited out a backoff are
 * woken when Telegram is back, not left to their own backoff (test/delivery/delivery-pace.test.ts
 * checks the outcome; this the time).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { loadEncryptionKey } from "../src/runtime/encryption-key.ts";
import { SEND_LIMITS } from "../src/sandbox/limits.ts";
import { DockRepository, type DockWithSecret } from "../src/store/docks.ts";
import { migrate, openDb } from "../src/store/open.ts";
import { SubscriptionRepository } from "../src/store/subscriptions.ts";
import { TELEGRAM_LIMITS } from "../src/telegram/pacer.ts";

// Paid broadcast with Telegram's latency: a bench of its own (broadcast.ts), which exits when done.
if (process.argv.includes("--paid")) await import("./broadcast.ts");

const { values } = parseArgs({
  options: {
    messages: { type: "string", default: "900" },
    chats: { type: "string", default: "30" },
    probes: { type: "string", default: "200" },
    outage: { type: "string", default: "15" },
    database: { type: "string", default: "sqlite" },
  },
});
const chatsCount = Number(values.chats);
const perChat = Math.max(1, Math.round(Number(values.messages) / chatsCount));
const total = perChat * chatsCount;
const probes = Number(values.probes);
const root = join(import.meta.dirname, "..");
const dataDir = mkdtempSync(join(tmpdir(), "dock-notify-bench-delivery-"));
const rate = 30;
const databaseUrl =
  values.database === "sqlite" ? `sqlite:${join(dataDir, "dock-notify.db")}` : values.database;

async function startService(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ["src/cli.ts", "serve"], {
    cwd: root,
    env: {
      ...process.env,
      PORT: "0",
      DATA_DIR: dataDir,
      DATABASE_URL: databaseUrl,
      DOCK_RATE_BURST: "0",
      LOG_LEVEL: "warn",
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  // At LOG_LEVEL=warn the ready line is not printed; wait for /healthz instead.
  child.stdout?.resume();
  for (;;) {
    await new Promise((r) => setTimeout(r, 100));
    // The process may listen on a port it only reserves (port-reservation.ts) before the server's:
    // a port counts once it answers /healthz.
    const port = await findPort(child.pid as number);
    if (!port) continue;
    const url = `http://127.0.0.1:${port}`;
    const healthy = await fetch(`${url}/healthz`).then(
      (answer) => answer.ok,
      () => false,
    );
    if (healthy) return { child, url };
  }
}

/** The port a process listens on, read from /proc (no log line needed). */
async function findPort(pid: number): Promise<number> {
  const { readFileSync, readdirSync, readlinkSync } = await import("node:fs");
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const link = readlinkSync(`/proc/${pid}/fd/${fd}`);
      const match = /^socket:\[(\d+)\]$/.exec(link);
      if (match?.[1]) inodes.add(match[1]);
    } catch {}
  }
  for (const line of readFileSync("/proc/net/tcp", "utf8").split("\n").slice(1)) {
    const cols = line.trim().split(/\s+/);
    if (cols[3] === "0A" && inodes.has(cols[9] as string))
      return Number.parseInt((cols[1] as string).split(":")[1] as string, 16);
  }
  return 0;
}

const service = await startService();
const control = async (method: string, path: string, body?: unknown) => {
  const response = await fetch(`${service.url}/sandbox/api${path}`, {
    method,
    ...(body === undefined
      ? {}
      : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return text ? JSON.parse(text) : null;
};

// Watch every message arrive, with our own clock.
const arrivals = new Map<string, number>();
const events = await fetch(`${service.url}/sandbox/api/events`);
void (async () => {
  const lines = createInterface({
    input: (await import("node:stream")).Readable.fromWeb(events.body as never),
  });
  for await (const line of lines) {
    if (!line.startsWith("data: ")) continue;
    const event = JSON.parse(line.slice(6)) as {
      type: string;
      chat_id: number;
      message?: { from?: { is_bot: boolean }; text: string };
    };
    // Notifications only (the bot also welcomes each person): "<Dock name>\n<text>".
    const [header, text] = event.message?.text.split("\n") ?? [];
    if (
      event.type === "message" &&
      event.message?.from?.is_bot &&
      /^(Flood|Probe \d+|Outage)$/.test(header ?? "")
    ) {
      arrivals.set(`${event.chat_id}:${text}`, performance.now());
    }
  }
})();

const db = await openDb(databaseUrl);
await migrate(db);
const docks = new DockRepository(db, loadEncryptionKey(null, dataDir).key);
const subscriptions = new SubscriptionRepository(db);
const person = async (name: string) => {
  const user = await control("POST", "/users", { first_name: name });
  await control("POST", `/users/${user.id}/start`);
  return user.id as number;
};
const ping = async (dock: DockWithSecret, msg: string) => {
  const response = await fetch(`${service.url}/ping`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ dock_id: dock.id, secret_key: dock.secretKey, msg }),
  });
  if (response.status !== 202) throw new Error(`ping answered ${response.status}`);
  await response.arrayBuffer();
};
const waitUntil = async (done: () => boolean) => {
  while (!done()) await new Promise((r) => setTimeout(r, 5));
};

// Phase 1: throughput against the limits.
const flood = await docks.create(1, { name: "Flood", link: null, description: null });
for (let i = 0; i < chatsCount; i++)
  await subscriptions.subscribe(flood.id, await person(`Reader ${i}`), "private");
await new Promise((r) => setTimeout(r, 3500)); // past the pacer's cold start
await control("DELETE", "/stats");
const started = performance.now();
for (let n = 0; n < perChat; n++) await ping(flood, `flood ${n}`);
await waitUntil(() => arrivals.size >= total);
const elapsed = (performance.now() - started) / 1000;
const floodStats = await control("GET", "/stats");
// Telegram's limits: the bot's first second's allowance, then `rate`/s; each chat a burst, then 1/s.
const globalMin = Math.max(0, (total - SEND_LIMITS.globalPerSecond) / rate);
const chatMin = Math.max(0, (perChat - TELEGRAM_LIMITS.privateBurst) / TELEGRAM_LIMITS.privatePerSecond);
const theoretical = Math.max(globalMin, chatMin);

// Phase 2: accept-to-send latency under the limits.
arrivals.clear();
const probeDocks: DockWithSecret[] = [];
const probeChats: number[] = [];
const PROBE_CHATS = 25;
for (let i = 0; i < PROBE_CHATS; i++) {
  const dock = await docks.create(2, { name: `Probe ${i}`, link: null, description: null });
  const chat = await person(`Probe reader ${i}`);
  await subscriptions.subscribe(dock.id, chat, "private");
  probeDocks.push(dock);
  probeChats.push(chat);
}
await new Promise((r) => setTimeout(r, 1500));
const accepted = new Map<string, number>();
const probeStart = performance.now();
for (let i = 0; i < probes; i++) {
  const due = probeStart + i * 50; // 20/s overall, 0.8/s per chat
  const wait = due - performance.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  const msg = `probe ${i}`;
  await ping(probeDocks[i % PROBE_CHATS] as DockWithSecret, msg);
  accepted.set(`${probeChats[i % PROBE_CHATS]}:${msg}`, performance.now());
}
await waitUntil(() => arrivals.size >= probes);
const latencies = [...accepted].map(([key, at]) => (arrivals.get(key) as number) - at).sort((a, b) => a - b);
const pct = (q: number) =>
  (latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0).toFixed(1);
const probeStats = await control("GET", "/stats");

// Phase 3: draining after a Telegram outage.
arrivals.clear();
const OUTAGE_CHATS = 15;
const OUTAGE_PER_CHAT = 26;
const outageSeconds = Number(values.outage);
const outageDock = await docks.create(3, { name: "Outage", link: null, description: null });
for (let i = 0; i < OUTAGE_CHATS; i++)
  await subscriptions.subscribe(outageDock.id, await person(`Outage reader ${i}`), "private");
await new Promise((r) => setTimeout(r, 1500)); // the bot's welcomes go before the outage
await control("DELETE", "/stats");
await control("POST", "/faults", { kind: "server_error", methods: ["sendMessage"], rate: 1 });
for (let n = 0; n < OUTAGE_PER_CHAT; n++) await ping(outageDock, `outage ${n}`);
await new Promise((r) => setTimeout(r, outageSeconds * 1000));
await control("DELETE", "/faults");
const recovered = performance.now();
await waitUntil(() => arrivals.size >= OUTAGE_CHATS * OUTAGE_PER_CHAT);
const drained = (performance.now() - recovered) / 1000;
const drainMinimum =
  ((Math.ceil(OUTAGE_PER_CHAT / TELEGRAM_LIMITS.privateBurst) - 1) * TELEGRAM_LIMITS.privateBurst) /
  TELEGRAM_LIMITS.privatePerSecond;
const outageStats = await control("GET", "/stats");

service.child.kill("SIGTERM");
await db.close();
await new Promise((r) => service.child.once("exit", r));
rmSync(dataDir, { recursive: true, force: true });

console.log(
  `\nbench:delivery on ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
);
console.log(
  `sandbox limits ON: ${SEND_LIMITS.globalPerSecond} in any second per bot, ${SEND_LIMITS.privateChatBurst} in any ${SEND_LIMITS.privateChatBurst / SEND_LIMITS.privateChatPerSecond} s per chat\n`,
);
console.log(`database: ${values.database === "sqlite" ? "SQLite" : "PostgreSQL"}`);
console.log(`phase 1: ${total} messages to ${chatsCount} chats (${perChat} each) from one Dock`);
console.log(
  `  time ${elapsed.toFixed(2)} s; theoretical minimum ${theoretical.toFixed(2)} s; ${((elapsed / theoretical - 1) * 100).toFixed(1)} % over (target ≤ 5 %)`,
);
console.log(`  achieved ${(total / elapsed).toFixed(1)} messages/s against a configured ${rate}/s`);
console.log(`  429s received: ${floodStats.too_many_requests} (target 0)`);
console.log(`phase 2: ${probes} messages at 20/s to ${PROBE_CHATS} chats (0.8/s each, under every limit)`);
console.log(
  `  accept-to-send p50 ${pct(0.5)} ms, p99 ${pct(0.99)} ms (target p50 < 20 ms); 429s: ${probeStats.too_many_requests}`,
);
console.log(
  `phase 3: Telegram failing every send for ${outageSeconds} s, ${OUTAGE_CHATS * OUTAGE_PER_CHAT} messages to ${OUTAGE_CHATS} chats (${OUTAGE_PER_CHAT} each)`,
);
console.log(
  `  drained ${drained.toFixed(2)} s after Telegram answered; the pace's minimum ${drainMinimum.toFixed(0)} s; ${((drained / drainMinimum - 1) * 100).toFixed(1)} % over (target ≤ 15 %); 429s: ${outageStats.too_many_requests} (target 0)`,
);
process.exit(0);
