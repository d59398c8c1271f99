/**
 * bench:soak — what a busy instance does, for ten minutes, as it ships (compiled, `npm start`'s
 * Node options, a bot token, Telegram played by `dock-notify sandbox` in another process with its
 * limits on): every second, plain sends to a Dock nobody subscribed to (the ingest path and its
 * storage), and on each of three Docks with subscribers one of a send, a replacement by key (every
 * third asking for `ack`), an edit, a delete or a person pressing Acknowledge — while five console
 * streams stay open. Per minute: the service's RSS, its log's error and warning lines, Telegram's
 * `429`s, the requests' answers and latency (from their scheduled start: open loop), the queue.
 * Target: RSS grows by less than 0.5 MB a minute after the first two (a least-squares line through
 * every sample from then on), with no error line and no `429`.
 *
 *   npm run bench:soak [-- --minutes 10 --rate 40 --living-rate 0.6 --database sqlite|postgres://…
 *                          --service-node-options="…" --service-env="MALLOC_ARENA_MAX=…" --arenas]
 */
import { get, type IncomingMessage } from "node:http";
import { cpus, loadavg, totalmem } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { OPEN_POLICY } from "../src/domain/owners.ts";
import { ACK_PREFIX } from "../src/domain/render.ts";
import { loadEncryptionKey } from "../src/runtime/encryption-key.ts";
import { DockRepository, type DockWithSecret } from "../src/store/docks.ts";
import { migrate, openDb } from "../src/store/open.ts";
import { SessionRepository } from "../src/store/sessions.ts";
import { SubscriptionRepository } from "../src/store/subscriptions.ts";
import { SANDBOX_BOT_TOKEN } from "../src/telegram/sandbox-bot.ts";
import {
  anonymousByKind,
  arenas,
  createDatabase,
  killAll,
  liveHeaps,
  rss,
  type Server,
  sandbox,
  startServer,
  statusMb,
  stop,
  threadHeaps,
} from "./processes.ts";
import { SHIPPED_ENV, serviceNodeOptions } from "./shipped.ts";

const { values } = parseArgs({
  options: {
    minutes: { type: "string", default: "10" },
    /** Sends per second to the Dock without subscribers. */
    rate: { type: "string", default: "40" },
    /** Changes per second on each Dock with subscribers (each reaches all of its chats). */
    "living-rate": { type: "string", default: "0.6" },
    database: { type: "string", default: "sqlite" },
    "service-node-options": { type: "string" },
    /** The service's environment beyond the bench's own: "NAME=value …"; absent, what `npm start` sets (SHIPPED_ENV); "" none. */
    "service-env": { type: "string" },
    /**
     * At the end, once the queue is drained, each thread's V8 heap after a full collection, and the
     * malloc arenas by thread (gdb attached for a moment; needs gdb and glibc's debugging symbols,
     * Debian's libc6-dbg).
     */
    arenas: { type: "boolean", default: false },
  },
});
const minutes = Number(values.minutes);
const serviceEnv: Record<string, string> =
  values["service-env"] === undefined
    ? SHIPPED_ENV
    : Object.fromEntries(
        values["service-env"]
          .split(" ")
          .filter((pair) => pair.includes("="))
          .map((pair) => [pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1)]),
      );
const rate = Number(values.rate);
const livingRate = Number(values["living-rate"]);
/** Docks with subscribers, and the people subscribed to each (a chat follows one Dock). */
const LIVING_DOCKS = 3;
const SUBSCRIBERS = 8;
const STREAMS = 5;
/** Keys a Dock's replacements cycle through: each is an alert that fires and resolves again. */
const KEYS = 4;
const OWNER = 1;

interface Minute {
  rss: number[];
  latencies: number[];
  answers: Map<number | string, number>;
  errors: number;
  warnings: number;
}
const newMinute = (): Minute => ({ rss: [], latencies: [], answers: new Map(), errors: 0, warnings: 0 });
const minutesSeen: Minute[] = [newMinute()];
const current = () => minutesSeen[minutesSeen.length - 1] as Minute;
/** Every RSS sample: seconds since the load began, MB. */
const samples: [number, number][] = [];
const errorLines: string[] = [];

/** MB a minute: the least-squares line through the samples ([seconds, MB]) after the first two minutes. */
function growth(points: [number, number][]): number {
  const later = points.filter(([t]) => t >= 120);
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const tx = mean(later.map(([t]) => t));
  const my = mean(later.map(([, y]) => y));
  const slope =
    later.reduce((sum, [t, y]) => sum + (t - tx) * (y - my), 0) /
    later.reduce((sum, [t]) => sum + (t - tx) ** 2, 0);
  return slope * 60;
}

/** Where the service's anonymous memory is (MB), and each thread's V8 heap as a table's cells. */
interface Place {
  rss: number;
  anonymous: number;
  brk: number;
  arenas: number;
  arenaCount: number;
  otherAnonymous: number;
  young: number;
  mainTotal: number;
  mainUsed: number;
  workersTotal: number;
  heaps: string;
}
async function whereMemoryIs(server: Server): Promise<Place> {
  const { threads, young } = await threadHeaps(server);
  const anon = anonymousByKind(server);
  const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
  const heaps = (["main", "store/sqlite/worker", "store/sqlite/checkpointer", "http/payload-worker"] as const)
    .map((name) => {
      const thread = threads.filter((t) => t.name === name);
      if (thread.length === 0) return "–";
      const sum = (key: "used" | "total" | "malloced" | "external") => thread.reduce((n, t) => n + t[key], 0);
      return `${mb(sum("total"))} (${mb(sum("used"))}; ${mb(sum("malloced") + sum("external"))})`;
    })
    .join(" | ");
  const main = threads[0];
  return {
    rss: statusMb(server, "VmRSS"),
    anonymous: statusMb(server, "RssAnon"),
    brk: anon.brk,
    arenas: anon.arenas,
    arenaCount: anon.arenaCount,
    otherAnonymous: anon.other,
    young: young / 2 ** 20,
    mainTotal: (main?.total ?? 0) / 2 ** 20,
    mainUsed: (main?.used ?? 0) / 2 ** 20,
    workersTotal: threads.slice(1).reduce((n, t) => n + t.total, 0) / 2 ** 20,
    heaps,
  };
}
const warningLines: string[] = [];

const database = await createDatabase(values.database, "soak");
const dataDir = database.dataDir;
let service: Server | undefined;
let telegram: Server | undefined;
const streams: IncomingMessage[] = [];
let streamEvents = 0;
try {
  const db = await openDb(database.url);
  await migrate(db);
  const docks = new DockRepository(db, loadEncryptionKey(null, dataDir).key);
  const busy = await docks.create(OWNER, { name: "Busy", link: null, description: null });
  const living: { dock: DockWithSecret; people: number[]; sent: string[] }[] = [];
  telegram = await startServer(
    "Telegram sandbox",
    ["dist/cli.js", "sandbox"],
    { PORT: "0", DATA_DIR: join(dataDir, "sandbox"), LOG_LEVEL: "info" },
    (line) => {
      const entry = JSON.parse(line) as { msg?: string; port?: number };
      return entry.msg?.startsWith("Telegram sandbox is ready") ? entry.port : undefined;
    },
  );
  const subscriptions = new SubscriptionRepository(db);
  for (let d = 0; d < LIVING_DOCKS; d++) {
    const dock = await docks.create(OWNER, { name: `Alerts ${d + 1}`, link: null, description: null });
    const people: number[] = [];
    for (let i = 0; i < SUBSCRIBERS; i++) {
      const body = { first_name: `Reader ${d}.${i}` };
      const person = (await (await sandbox(telegram, "users", { method: "POST", body })).json()) as {
        id: number;
      };
      await sandbox(telegram, `users/${person.id}/start`, { method: "POST" });
      await subscriptions.subscribe(dock.id, person.id, "private");
      people.push(person.id);
    }
    living.push({ dock, people, sent: [] });
  }
  const session = (
    await new SessionRepository(db, OPEN_POLICY).create({ id: OWNER, first_name: "Soak" }, 4 * 3_600_000)
  ).token;
  await db.close();

  service = await startServer(
    "Dock Notify",
    [...serviceNodeOptions(values["service-node-options"]), "dist/cli.js", "serve"],
    {
      PORT: "0",
      DATA_DIR: dataDir,
      DATABASE_URL: database.url,
      LOG_LEVEL: "info",
      DOCK_RATE_BURST: "0",
      AUTH_FAILURES_PER_MINUTE: "0",
      OWNERS: String(OWNER),
      TELEGRAM_BOT_TOKEN: SANDBOX_BOT_TOKEN,
      TELEGRAM_API_ROOT: `${telegram.url}/sandbox`,
      ...serviceEnv,
    },
    (line) => {
      const entry = JSON.parse(line) as { msg?: string; port?: number };
      return entry.msg?.startsWith("Dock Notify is ready") ? entry.port : undefined;
    },
  );
  const url = service.url;
  createInterface({ input: service.child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
    let level = 0;
    try {
      level = (JSON.parse(line) as { level?: number }).level ?? 0;
    } catch {
      return;
    }
    if (level >= 50) {
      current().errors++;
      if (errorLines.length < 10) errorLines.push(line.slice(0, 400));
    } else if (level >= 40) {
      current().warnings++;
      if (warningLines.length < 10) warningLines.push(line.slice(0, 400));
    }
  });

  const openStream = () => {
    const request = get(
      `${url}/console/api/stream`,
      { headers: { cookie: `dn_session=${session}` } },
      (res) => {
        streams.push(res);
        res.on("data", (chunk: Buffer) => {
          streamEvents += chunk.toString().match(/^event: /gm)?.length ?? 0;
        });
        // The stream ended (it should not): a console reopens it.
        res.on("close", () => {
          if (streams.includes(res)) streams.splice(streams.indexOf(res), 1);
          if (!stopping) setTimeout(openStream, 3000);
        });
      },
    );
    request.on("error", () => {
      if (!stopping) setTimeout(openStream, 3000);
    });
  };
  let stopping = false;
  for (let i = 0; i < STREAMS; i++) openStream();

  const basic = (dock: DockWithSecret) =>
    `Basic ${Buffer.from(`${dock.id}:${dock.secretKey}`).toString("base64")}`;
  /** One request, counted in the minute it was scheduled in. */
  const call = async (
    method: string,
    path: string,
    body: unknown,
    auth?: string,
  ): Promise<{ status: number; json: Record<string, unknown> }> => {
    const minute = current();
    const started = performance.now();
    try {
      const response = await fetch(`${url}${path}`, {
        method,
        headers: {
          ...(body === undefined ? {} : { "content-type": "application/json" }),
          ...(auth === undefined ? {} : { authorization: auth }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const json = (await response.json()) as Record<string, unknown>;
      minute.latencies.push(performance.now() - started);
      minute.answers.set(response.status, (minute.answers.get(response.status) ?? 0) + 1);
      return { status: response.status, json };
    } catch (error) {
      const name = (error as Error).name;
      minute.answers.set(name, (minute.answers.get(name) ?? 0) + 1);
      return { status: 0, json: {} };
    }
  };

  let counter = 0;
  /** One change on a living Dock: what it does goes round. */
  const change = async (target: (typeof living)[number]) => {
    const n = counter++;
    const dock = target.dock;
    switch (n % 6) {
      case 0:
      case 1: {
        const sent = await call("POST", "/ping", {
          dock_id: dock.id,
          secret_key: dock.secretKey,
          msg: `Deploy ${n} finished`,
        });
        if (typeof sent.json.message_id === "string") target.sent.push(sent.json.message_id);
        return;
      }
      case 2: {
        const sent = await call(
          "POST",
          "/webhook",
          { msg: `CPU high on node-${n % KEYS}`, key: `alert-${n % KEYS}`, ack: n % 3 === 0 },
          basic(dock),
        );
        if (typeof sent.json.message_id === "string") target.sent.push(sent.json.message_id);
        return;
      }
      case 3: {
        const id = target.sent.at(-1);
        if (id !== undefined)
          await call("PATCH", `/messages/${id}`, { msg: `Deploy ${n}: edited` }, basic(dock));
        return;
      }
      case 4: {
        // The oldest still kept: the list stays short, as a Dock's living messages do.
        const id = target.sent.shift();
        if (id !== undefined) await call("DELETE", `/messages/${id}`, undefined, basic(dock));
        return;
      }
      default: {
        // Someone presses the newest Acknowledge button in their chat, if there is one.
        const person = target.people[n % target.people.length] as number;
        const history = (await (
          await sandbox(telegram as Server, `chats/${person}/messages?limit=20`, { method: "GET" })
        ).json()) as {
          message_id: number;
          reply_markup?: { inline_keyboard?: { callback_data?: string }[][] };
        }[];
        const button = history.toReversed().flatMap((m) =>
          (m.reply_markup?.inline_keyboard ?? [])
            .flat()
            .filter((b) => b.callback_data?.startsWith(ACK_PREFIX))
            .map((b) => ({ message: m.message_id, data: b.callback_data as string })),
        )[0];
        if (button !== undefined) {
          await sandbox(telegram as Server, `chats/${person}/messages/${button.message}/press`, {
            method: "POST",
            body: { callback_data: button.data },
          }).catch(() => undefined); // an alert replaced meanwhile: the press is answered, not an error here
        }
      }
    }
  };

  const loadBefore = loadavg()[0] ?? 0;
  const started = performance.now();
  const seconds = minutes * 60;
  const inflight = new Set<Promise<unknown>>();
  const schedule = (at: number, work: () => Promise<unknown>) => {
    const run = (async () => {
      const wait = started + at - performance.now();
      if (wait > 0) await sleep(wait);
      // A request the bench itself could not make (the sandbox closed a kept-alive connection
      // under load) is counted in its minute, and the soak goes on.
      if (!stopping)
        await work().catch((error: Error) => {
          const name = `bench: ${error.message}`;
          current().answers.set(name, (current().answers.get(name) ?? 0) + 1);
        });
    })();
    inflight.add(run);
    void run.finally(() => inflight.delete(run));
  };
  /** The bench's own look at a server, tried again once if the connection was closed under it. */
  const twice = async <T>(look: () => Promise<T>): Promise<T> => look().catch(() => look());
  const stats = () =>
    twice(
      async () =>
        (await (await sandbox(telegram as Server, "stats", { method: "GET" })).json()) as {
          too_many_requests: number;
          send_message: number;
          edit_message: number;
          delete_message: number;
        },
    );
  const queueDepth = () =>
    twice(async () => {
      const text = await (await fetch(`${url}/metrics`)).text();
      return Number(/^dock_notify_queue_depth (\d+)/m.exec(text)?.[1] ?? Number.NaN);
    });
  const rows: string[] = [];
  /** Where the anonymous memory is, each minute (see anonymousByKind, threadHeaps). */
  const memoryRows: string[] = [];
  /** The same every 10 s: seconds since the load began, and the figures. */
  const places: [number, Place][] = [];
  let told = await stats();
  for (let second = 0; second < seconds; second++) {
    // This second's work, spread over it.
    for (let i = 0; i < rate; i++) {
      schedule(second * 1000 + (i * 1000) / rate, () =>
        call("POST", "/ping", { dock_id: busy.id, secret_key: busy.secretKey, msg: `Busy ${second}.${i}` }),
      );
    }
    for (const [d, target] of living.entries()) {
      // Fractional rates: a change in the seconds where the running total passes a whole one.
      if (Math.floor((second + 1) * livingRate) > Math.floor(second * livingRate)) {
        schedule(second * 1000 + (d * 1000) / LIVING_DOCKS, () => change(target));
      }
    }
    const due = started + (second + 1) * 1000 - performance.now();
    if (due > 0) await sleep(due);
    const mb = rss(service);
    current().rss.push(mb);
    const t = (performance.now() - started) / 1000;
    samples.push([t, mb]);
    if ((second + 1) % 10 === 0 && (second + 1) % 60 !== 0) places.push([t, await whereMemoryIs(service)]);
    if ((second + 1) % 60 === 0) {
      const minute = current();
      const now = await stats();
      const sorted = [...minute.latencies].sort((a, b) => a - b);
      const at = (q: number) =>
        (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0).toFixed(1);
      const place = await whereMemoryIs(service);
      places.push([t, place]);
      const heap = place.mainUsed;
      const split = `${place.anonymous.toFixed(0)} + ${statusMb(service, "RssFile").toFixed(0)}; heap ${heap.toFixed(0)}`;
      memoryRows.push(
        `| ${(second + 1) / 60} | ${place.anonymous.toFixed(1)} | ${place.brk.toFixed(1)} | ${place.arenas.toFixed(1)} (${place.arenaCount}) | ${place.otherAnonymous.toFixed(1)} | ${place.young.toFixed(1)} | ${place.heaps} |`,
      );
      console.error(memoryRows.at(-1));
      const answers = [...minute.answers].map(([code, n]) => `${code}×${n}`).join(" ");
      rows.push(
        `| ${(second + 1) / 60} | ${Math.min(...minute.rss).toFixed(0)}–${Math.max(...minute.rss).toFixed(0)} | ${split} | ${answers} | ${at(0.5)} / ${at(0.99)} / ${at(1)} | ${now.send_message - told.send_message} / ${now.edit_message - told.edit_message} / ${now.delete_message - told.delete_message} | ${now.too_many_requests - told.too_many_requests} | ${minute.errors} / ${minute.warnings} | ${await queueDepth()} | ${streams.length} |`,
      );
      console.error(rows.at(-1));
      told = now;
      minutesSeen.push(newMinute());
    }
  }
  stopping = true;
  await Promise.all(inflight);
  let depth = await queueDepth();
  for (let waited = 0; depth > 0 && waited < 120; waited++) {
    await sleep(1000);
    depth = await queueDepth();
  }
  const final = await stats();
  // The arenas first: the heap snapshots that collect each thread malloc hundreds of MB themselves.
  const arenaReport =
    values.arenas && service !== undefined
      ? arenas(
          service,
          (await threadHeaps(service)).threads.slice(1).map((t) => t.name),
        )
      : null;
  const live = values.arenas && service !== undefined ? await liveHeaps(service) : null;

  // RSS growth: a least-squares line through every sample after the first two minutes.
  const perMinute = growth(samples);
  /** The same line through each part of the memory, sampled every 10 s. */
  const parts = (
    [
      // What V8 grows and shrinks with the allocation rate, up to 2 × --max-semi-space-size: bounded.
      ["RSS less the main thread's young generation", (p) => p.rss - p.young],
      ["anonymous", (p) => p.anonymous],
      ["main malloc arena", (p) => p.brk],
      ["other malloc arenas", (p) => p.arenas],
      ["other anonymous", (p) => p.otherAnonymous],
      ["main thread's young generation", (p) => p.young],
      ["main thread's V8 heap but its young generation", (p) => p.mainTotal - p.young],
      ["worker threads' V8 heaps", (p) => p.workersTotal],
    ] as [string, (p: Place) => number][]
  )
    .map(([name, of]) => `${name} ${growth(places.map(([t, p]) => [t, of(p)])).toFixed(2)}`)
    .join(" · ");

  console.log(
    `\nbench:soak on ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}; database ${values.database}; ${minutes} min; every second ${rate} sends to a Dock without subscribers and ${livingRate} changes on each of ${LIVING_DOCKS} Docks of ${SUBSCRIBERS} subscribers (send, send, replace by key, edit, delete, acknowledge); ${STREAMS} console streams open; load average ${loadBefore.toFixed(1)} before, ${(loadavg()[0] ?? 0).toFixed(1)} after\n`,
  );
  console.log(
    "| minute | RSS MB (min–max) | at the end: anonymous + file-backed; V8 heap used (MB) | answers | latency ms p50 / p99 / max | Telegram: sent / edited / deleted | 429s | log errors / warnings | queue at the end | streams open |",
  );
  console.log("|---|---|---|---|---|---|---|---|---|---|");
  for (const row of rows) console.log(row);
  console.log(
    "\nWhere the anonymous memory is, at each minute's end (MB): the main malloc arena (brk), the other malloc arenas (their number), the rest of the anonymous mappings (V8's heap pages, large mmapped blocks, stacks); the main thread's young generation committed; and per thread, V8 heap committed (used; malloced by V8 + external)\n",
  );
  console.log(
    "| minute | anonymous | main arena | other arenas | other anonymous | main thread's young generation | main thread | SQLite thread | checkpoint thread | payload thread |",
  );
  console.log("|---|---|---|---|---|---|---|---|---|---|");
  for (const row of memoryRows) console.log(row);
  const errors = minutesSeen.reduce((n, m) => n + m.errors, 0);
  console.log(
    `\nRSS growth after minute 2: ${perMinute.toFixed(2)} MB/min (target < 0.5); by part (MB/min): ${parts} · 429s: ${final.too_many_requests} · error lines: ${errors} · console stream events: ${streamEvents} · queue ${depth === 0 ? "drained" : `${depth} left after 2 min`}`,
  );
  if (arenaReport !== null) {
    console.log("\nmalloc arenas at the end (MB): size, free inside, threads that malloc from it\n");
    console.log("| size | free | threads |\n|---|---|---|");
    for (const arena of arenaReport.arenas) {
      console.log(
        `| ${(arena.system / 2 ** 20).toFixed(1)} | ${(arena.free / 2 ** 20).toFixed(1)} | ${arena.threads.join(", ")} |`,
      );
    }
    console.log(
      `\nmmapped by malloc apart from the arenas: ${(arenaReport.mmapped / 2 ** 20).toFixed(1)} MB`,
    );
  } else if (values.arenas)
    console.log("\nmalloc arenas: gdb could not read them (gdb and libc6-dbg needed)");
  if (live !== null) {
    console.log(
      `\nV8 heap used once collected, at the end (MB): ${live.map((t) => `${t.name} ${(t.used / 2 ** 20).toFixed(1)} of ${(t.total / 2 ** 20).toFixed(1)} committed`).join(" · ")}`,
    );
  }
  for (const line of errorLines) console.log(`error line: ${line}`);
  for (const line of warningLines) console.log(`warning line: ${line}`);
} finally {
  for (const stream of streams) stream.destroy();
  if (service !== undefined) await stop(service);
  if (telegram !== undefined) await stop(telegram);
  killAll();
  await database.drop();
}
