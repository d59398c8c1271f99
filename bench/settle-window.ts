/**
 * bench:settle-window — how long a send stays unrecorded after Telegram answered it: from the
 * moment the sandbox answers a sendMessage to the moment the copy's Telegram message id is
 * committed in the database. A crash (kill -9) inside that window leaves a copy in the chat that
 * the service does not know of, and the copy is sent again after the restart (docs/architecture.md,
 * "Failure modes").
 *
 *   npm run bench:settle-window [-- --database sqlite|postgres://… --seconds 20 --chats 40
 *                                  --storm 50 --stress 4 --runs 3 --baseline <checkout>]
 *
 * The service runs as a child process (`src/cli.ts serve`) on a fresh database; Telegram is a
 * sandbox in this process (rate limits on), whose answers are timed as they leave (an onSend hook).
 * With `--baseline` (the code before a change, exported elsewhere, with this one's node_modules)
 * each of the `--runs` runs this checkout and the baseline one after the other, so that both see
 * the same machine (whose load other work changes from minute to minute).
 * The commits are seen from a thread of their own: on SQLite a reader polls the file every
 * millisecond, on PostgreSQL a trigger NOTIFYs (delivered at commit) to a LISTENing connection.
 * The load: an edit storm (five keyed messages replaced, --storm replacements a second) and a new
 * message every 2 s, all to --chats subscribers, so sends, edits, claims, fan-outs and intake all
 * want the database at once, while Telegram's limits keep the queue from growing without end (a
 * copy has at most one edit waiting, which shows the message as it is when it goes). `--stress N` runs `stress-ng --cpu N` beside it.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { Worker } from "node:worker_threads";
import Fastify from "fastify";
import pg from "pg";
import { loadEncryptionKey } from "../src/runtime/encryption-key.ts";
import { sandbox } from "../src/sandbox/plugin.ts";
import { DockRepository, type DockWithSecret } from "../src/store/docks.ts";
import { openDb } from "../src/store/open.ts";
import { SubscriptionRepository } from "../src/store/subscriptions.ts";
import { SANDBOX_BOT_TOKEN } from "../src/telegram/sandbox-bot.ts";

const { values } = parseArgs({
  options: {
    database: { type: "string", default: "sqlite" },
    seconds: { type: "string", default: "20" },
    chats: { type: "string", default: "40" },
    stress: { type: "string", default: "0" },
    runs: { type: "string", default: "1" },
    storm: { type: "string", default: "50" },
    baseline: { type: "string" },
  },
});
const seconds = Number(values.seconds);
const chatsCount = Number(values.chats);
const stressCpus = Number(values.stress);
const stormRate = Number(values.storm);
const checkouts: [string, string][] = [["this checkout", join(import.meta.dirname, "..")]];
if (values.baseline !== undefined) checkouts.push(["baseline", resolve(values.baseline)]);
const wallClock = () => performance.timeOrigin + performance.now();

/** One run of the service in `serviceDir` under the load: each send's window, in ms. */
async function run(serviceDir: string): Promise<{ windows: number[]; unmatched: number; summary: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), "dock-notify-bench-settle-"));
  const cleanups: (() => Promise<void> | void)[] = [() => rmSync(dataDir, { recursive: true, force: true })];
  try {
    return await measure(serviceDir, dataDir, cleanups);
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup();
  }
}

async function measure(
  serviceDir: string,
  dataDir: string,
  cleanups: (() => Promise<void> | void)[],
): Promise<{ windows: number[]; unmatched: number; summary: string }> {
  // The database: a SQLite file, or a fresh PostgreSQL database on the given server.
  let databaseUrl: string;
  if (values.database === "sqlite") {
    databaseUrl = `sqlite:${join(dataDir, "dock-notify.db")}`;
  } else {
    const name = `dock_notify_settle_${randomBytes(6).toString("hex")}`;
    const admin = async (statement: string) => {
      const client = new pg.Client({ connectionString: values.database });
      await client.connect();
      try {
        await client.query(statement);
      } finally {
        await client.end();
      }
    };
    await admin(`create database ${name}`);
    cleanups.push(() => admin(`drop database if exists ${name} with (force)`));
    const url = new URL(values.database);
    url.pathname = `/${name}`;
    databaseUrl = url.toString();
  }

  // Telegram: the sandbox, each sendMessage answer timed as it leaves.
  const answered = new Map<string, number>();
  const telegram = Fastify();
  telegram.addHook("onSend", async (request, _reply, payload) => {
    if (request.url.endsWith("/sendMessage") && typeof payload === "string") {
      const body = JSON.parse(payload) as {
        ok: boolean;
        result?: { message_id: number; chat: { id: number }; text?: string };
      };
      // Notifications only: the bot also answers each person's /start.
      if (body.ok && body.result?.text?.startsWith("Storm\n"))
        answered.set(`${body.result.chat.id}:${body.result.message_id}`, wallClock());
    }
    return payload;
  });
  await telegram.register(sandbox, { prefix: "/sandbox", rateLimits: true, historyLimit: 200 });
  await telegram.listen({ port: 0, host: "127.0.0.1" });
  cleanups.push(() => telegram.close());
  const telegramRoot = `http://127.0.0.1:${(telegram.server.address() as { port: number }).port}/sandbox`;
  const control = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${telegramRoot}/api${path}`, {
      method,
      ...(body === undefined
        ? {}
        : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return text ? JSON.parse(text) : null;
  };

  // The schema of the checkout under test (the baseline's may be older), then a Dock and its
  // subscribers, made as an operator would.
  const migrated = spawn(process.execPath, ["src/cli.ts", "migrate"], {
    cwd: serviceDir,
    env: { ...process.env, DATABASE_URL: databaseUrl, DATA_DIR: dataDir },
    stdio: ["ignore", "ignore", "inherit"],
  });
  const [code] = await once(migrated, "exit");
  if (code !== 0) throw new Error(`migrate exited with ${code}`);
  const db = await openDb(databaseUrl);
  const dock = await new DockRepository(db, loadEncryptionKey(null, dataDir).key).create(1, {
    name: "Storm",
    link: null,
    description: null,
  });
  const subscriptions = new SubscriptionRepository(db);
  for (let i = 0; i < chatsCount; i++) {
    const user = await control("POST", "/users", { first_name: `Reader ${i}` });
    await control("POST", `/users/${user.id}/start`);
    await subscriptions.subscribe(dock.id, user.id, "private");
  }
  await db.close();

  // The commits, seen from a thread of their own (this one also plays Telegram).
  const recorded = new Map<string, number>();
  const watcher = new Worker(
    `
    const { parentPort, workerData } = require("node:worker_threads");
    const now = () => performance.timeOrigin + performance.now();
    const seen = new Set();
    const report = (chat, ids) => {
      for (const id of String(ids).split(",")) {
        const key = chat + ":" + id;
        if (seen.has(key)) continue;
        seen.add(key);
        parentPort.postMessage({ key, at: now() });
      }
    };
    if (workerData.url.startsWith("sqlite:")) {
      const { DatabaseSync } = require("node:sqlite");
      const db = new DatabaseSync(workerData.url.slice("sqlite:".length), { readOnly: true });
      db.exec("pragma busy_timeout = 1000");
      const poll = db.prepare(
        "select chat_id, telegram_message_ids from deliveries where kind = 'send' and telegram_message_ids is not null and updated_at >= ?",
      );
      let since = 0;
      const tick = () => {
        const started = Date.now();
        for (const row of poll.all(since)) report(row.chat_id, row.telegram_message_ids);
        since = started - 5000;
        setTimeout(tick, 1);
      };
      tick();
    } else {
      const pg = require(workerData.pg);
      const client = new pg.Client({ connectionString: workerData.url });
      client.connect().then(async () => {
        await client.query(\`
          create function bench_settle_notify() returns trigger language plpgsql as $f$
          begin
            if new.kind = 'send' and new.telegram_message_ids is not null
               and new.telegram_message_ids is distinct from old.telegram_message_ids then
              perform pg_notify('bench_settle', new.chat_id || ':' || new.telegram_message_ids);
            end if;
            return new;
          end $f$\`);
        await client.query("create trigger bench_settle after update on deliveries for each row execute function bench_settle_notify()");
        client.on("notification", (n) => {
          const [chat, ids] = n.payload.split(":");
          report(chat, ids);
        });
        await client.query("listen bench_settle");
        parentPort.postMessage({ ready: true });
      });
    }
    `,
    { eval: true, workerData: { url: databaseUrl, pg: import.meta.resolve("pg").replace("file://", "") } },
  );
  await new Promise<void>((resolve) => {
    watcher.on("message", (message: { key?: string; at?: number; ready?: boolean }) => {
      if (message.ready) resolve();
      if (message.key !== undefined) recorded.set(message.key, message.at as number);
    });
    if (values.database === "sqlite") resolve();
  });
  cleanups.push(() => watcher.terminate().then(() => {}));

  // The service.
  const service: { child: ChildProcess; url: string } = await new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["src/cli.ts", "serve"], {
      cwd: serviceDir,
      env: {
        ...process.env,
        PORT: "0",
        DATA_DIR: dataDir,
        DATABASE_URL: databaseUrl,
        TELEGRAM_BOT_TOKEN: SANDBOX_BOT_TOKEN,
        TELEGRAM_API_ROOT: telegramRoot,
        DOCK_RATE_BURST: "0",
        LOG_LEVEL: "info",
      },
      stdio: ["ignore", "pipe", "inherit"],
    });
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    lines.on("line", (line) => {
      try {
        const entry = JSON.parse(line) as { msg?: string; port?: number };
        if (entry.msg?.startsWith("Dock Notify is ready"))
          resolve({ child, url: `http://127.0.0.1:${entry.port}` });
      } catch {}
    });
    lines.on("close", () => reject(new Error("the service exited before it was ready")));
  });
  cleanups.push(async () => {
    service.child.kill("SIGKILL");
    if (service.child.exitCode === null) await new Promise((r) => service.child.once("exit", r));
  });

  const post = async (dockWith: DockWithSecret, body: Record<string, unknown>) => {
    const response = await fetch(`${service.url}/webhook`, {
      method: "POST",
      headers: {
        authorization: `Basic ${Buffer.from(`${dockWith.id}:${dockWith.secretKey}`).toString("base64")}`,
        "content-type": "application/json",
      },
      body: JSON.stringify(body),
    });
    if (response.status !== 202) throw new Error(`webhook answered ${response.status}`);
    await response.arrayBuffer();
  };

  // The load: the edit storm and new messages, for `seconds`.
  const until = performance.now() + seconds * 1000;
  let round = 0;
  const storm = (async () => {
    const started = performance.now();
    for (let sent = 0; performance.now() < until; ) {
      round++;
      for (const key of ["api", "web", "db", "queue", "disk"]) {
        await post(dock, { msg: `${key} r${round}`, key });
        const ahead = started + (++sent * 1000) / stormRate - performance.now();
        if (ahead > 0) await new Promise((r) => setTimeout(r, ahead));
      }
    }
  })();
  const news = (async () => {
    for (let n = 0; performance.now() < until; n++) {
      await post(dock, { msg: `news ${n}` });
      await new Promise((r) => setTimeout(r, 2000));
    }
  })();
  const loads: number[] = [];
  const sampler = setInterval(() => loads.push(loadavg()[0] as number), 1000);
  await Promise.all([storm, news]);
  clearInterval(sampler);
  // The sends answered under the load count; those answered in its last moments get 3 s for
  // their record (the queue still drains meanwhile: those answered after the load do not count).
  const ended = wallClock();
  await new Promise((r) => setTimeout(r, 3000));

  const windows: number[] = [];
  let unmatched = 0;
  for (const [key, at] of answered) {
    if (at > ended) continue;
    const committed = recorded.get(key);
    if (committed === undefined) unmatched++;
    else windows.push(committed - at);
  }
  const stats = await control("GET", "/stats");
  return {
    windows,
    unmatched,
    summary: `${round} storm rounds, ${windows.length + unmatched} sends, ${stats.edit_message} edits, ${stats.too_many_requests} 429s, load average ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}`,
  };
}

let stress: ChildProcess | null = null;
if (stressCpus > 0) {
  stress = spawn("stress-ng", ["--cpu", String(stressCpus), "--quiet"], { stdio: "ignore" });
  await new Promise((r) => setTimeout(r, 2000));
}
const pooled = new Map<string, number[]>(checkouts.map(([name]) => [name, []]));
const lines: string[] = [];
const percentiles = (windows: number[]) => {
  const sorted = [...windows].sort((a, b) => a - b);
  const pct = (q: number) =>
    (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0).toFixed(1);
  return `p50 ${pct(0.5)} ms, p90 ${pct(0.9)} ms, p99 ${pct(0.99)} ms, max ${(sorted.at(-1) ?? 0).toFixed(1)} ms (${sorted.length} sends)`;
};
try {
  for (let n = 1; n <= Number(values.runs); n++) {
    for (const [name, dir] of checkouts) {
      const result = await run(dir);
      (pooled.get(name) as number[]).push(...result.windows);
      lines.push(
        `run ${n}, ${name}: ${percentiles(result.windows)}; ${result.summary}${result.unmatched ? `; ${result.unmatched} never recorded` : ""}`,
      );
      console.error(lines.at(-1));
    }
  }
} finally {
  stress?.kill("SIGTERM");
}

console.log(
  `\nbench:settle-window on ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}; database ${values.database === "sqlite" ? "sqlite" : "postgres"}; stress-ng --cpu ${stressCpus}`,
);
console.log(
  `load: ${seconds} s of an edit storm (5 keys replaced, ${stormRate} replacements/s) and a message every 2 s, to ${chatsCount} chats`,
);
for (const line of lines) console.log(line);
for (const [name, windows] of pooled)
  console.log(`all runs, ${name}: Telegram's answer → id committed: ${percentiles(windows)}`);
process.exit(0);
