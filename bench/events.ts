/**
 * bench:events — how long a Dock's callback event waits while other Docks' receivers hang.
 *
 *   npm run bench:events [-- --hanging 4 --backlog 15 --samples 5 --service-dir <checkout>]
 *
 * Starts the service (`src/cli.ts serve` of this checkout, or of `--service-dir`: the code before
 * a change, exported elsewhere, with this one's node_modules), with `--hanging` Docks whose
 * receiver accepts the connection and never answers, each with `--backlog` events queued (messages
 * nobody is subscribed to: each is reported at once). Then, one at a time, `--samples` messages of
 * another Dock whose receiver answers at once, and for each the time from its `202` to its event
 * arriving. The receivers run in this process, on 127.0.0.1 (CALLBACK_ALLOWED_NETWORKS allows it).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { type AddressInfo, createServer as createTcpServer } from "node:net";
import { cpus, tmpdir, totalmem } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { DockRepository } from "../src/store/docks.ts";
import { migrate, openDb } from "../src/store/open.ts";

const { values } = parseArgs({
  options: {
    hanging: { type: "string", default: "4" },
    backlog: { type: "string", default: "15" },
    samples: { type: "string", default: "5" },
    "service-dir": { type: "string", default: join(import.meta.dirname, "..") },
    "max-wait": { type: "string", default: "600" },
  },
});
const hangingDocks = Number(values.hanging);
const backlog = Number(values.backlog);
const samples = Number(values.samples);
const serviceDir = resolve(values["service-dir"]);
const maxWaitMs = Number(values["max-wait"]) * 1000;

const listen = (server: Server) =>
  new Promise<number>((done) =>
    server.listen(0, "127.0.0.1", () => done((server.address() as AddressInfo).port)),
  );

// Receivers that hang: the request is read, never answered (the service gives up after its timeout).
const hanging = createServer((request) => request.resume());
const hangingPort = await listen(hanging);
// The receiver that answers: notes when each event arrived, by the message it reports.
const arrived = new Map<string, number>();
const prompt = createServer((request, response) => {
  let body = "";
  request.on("data", (chunk: Buffer) => {
    body += chunk;
  });
  request.on("end", () => {
    const id = (JSON.parse(body) as { message?: { id?: string } }).message?.id;
    if (id !== undefined) arrived.set(id, performance.now());
    response.end();
  });
});
const promptPort = await listen(prompt);

const dataDir = mkdtempSync(join(tmpdir(), "dock-notify-bench-events-"));
const databaseUrl = `sqlite:${join(dataDir, "dock-notify.db")}`;
const key = randomBytes(32);
const db = await openDb(databaseUrl);
await migrate(db);
const docks = new DockRepository(db, key);
const stuck = [];
for (let i = 0; i < hangingDocks; i++) {
  stuck.push(
    await docks.create(1, {
      name: `Hanging ${i}`,
      link: null,
      description: null,
      callback_url: `http://127.0.0.1:${hangingPort}/dock-${i}`,
    }),
  );
}
const other = await docks.create(2, {
  name: "Another owner's",
  link: null,
  description: null,
  callback_url: `http://127.0.0.1:${promptPort}/events`,
});
await db.close();

/** A port nothing listens on now (the service is told to listen there). */
async function freePort(): Promise<number> {
  const server = createTcpServer();
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as AddressInfo;
  await new Promise((done) => server.close(done));
  return port;
}

const port = await freePort();
const url = `http://127.0.0.1:${port}`;
const child: ChildProcess = spawn(process.execPath, ["src/cli.ts", "serve"], {
  cwd: serviceDir,
  env: {
    ...process.env,
    PORT: String(port),
    DATA_DIR: dataDir,
    DATABASE_URL: databaseUrl,
    ENCRYPTION_KEY: key.toString("base64"),
    AUTH_FAILURES_PER_MINUTE: "0",
    DOCK_RATE_BURST: "0",
    CALLBACK_ALLOWED_NETWORKS: "127.0.0.1/32",
    LOG_LEVEL: "error",
  },
  stdio: ["ignore", "ignore", "inherit"],
});
for (;;) {
  const ready = await fetch(`${url}/healthz`).then(
    (response) => response.ok,
    () => false,
  );
  if (ready) break;
  await new Promise((done) => setTimeout(done, 100));
}

const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
async function send(dock: { id: string; secretKey: string }, msg: string): Promise<string> {
  const response = await fetch(`${url}/webhook`, {
    method: "POST",
    headers: { Authorization: basic(dock.id, dock.secretKey), "Content-Type": "text/plain" },
    body: msg,
  });
  if (response.status !== 202) throw new Error(`send: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { message_id: string }).message_id;
}

for (const dock of stuck) for (let m = 0; m < backlog; m++) await send(dock, `into the void ${m}`);
// Let the hanging receivers take their first posts.
await new Promise((done) => setTimeout(done, 1000));

const waits: number[] = [];
for (let i = 0; i < samples; i++) {
  const id = await send(other, `sample ${i}`);
  const sent = performance.now();
  while (!arrived.has(id) && performance.now() - sent < maxWaitMs) {
    await new Promise((done) => setTimeout(done, 20));
  }
  const at = arrived.get(id);
  waits.push(at === undefined ? Number.POSITIVE_INFINITY : at - sent);
  if (at === undefined) break;
}

child.kill("SIGTERM");
await new Promise((done) => child.once("exit", done));
hanging.closeAllConnections();
prompt.closeAllConnections();
hanging.close();
prompt.close();
rmSync(dataDir, { recursive: true, force: true });

const seconds = (ms: number) =>
  Number.isFinite(ms) ? `${(ms / 1000).toFixed(2)} s` : `> ${maxWaitMs / 1000} s`;
const sorted = [...waits].sort((a, b) => a - b);
console.log(
  `\nbench:events on ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}; service: ${serviceDir}`,
);
console.log("\n| hanging Docks × queued events | samples | first | median | worst |");
console.log("|---|---|---|---|---|");
console.log(
  `| ${hangingDocks} × ${backlog} | ${waits.length} | ${seconds(waits[0] as number)} | ${seconds(sorted[Math.floor(sorted.length / 2)] as number)} | ${seconds(sorted.at(-1) as number)} |`,
);
