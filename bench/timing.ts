/**
 * bench:timing — does the time of a refused send tell whether the Dock exists?
 *
 *   npm run bench:timing [-- --samples 3000 --database sqlite|postgres://… --door /ping]
 *
 * Sends, one at a time and alternating, requests with an unknown (well-formed) Dock ID and
 * requests with an existing Dock ID and a wrong credential, to every door that authenticates:
 * /ping, /webhook, /webhook/<format>/<DOCK_ID> with HTTP Basic, with GitHub's signature (against a
 * Dock with GitHub credentials, as in a rotation, and against one with none) and with GitLab's
 * token, named credentials (a wrong one against the Dock's own with its last character changed),
 * and /hook/<token> (there: an unknown token against the Dock's own with its last character
 * changed). Compares the two latency distributions with a Mann–Whitney U test (no
 * assumption about their shape). Exits 1 when a difference is significant (p < 0.001): then an
 * attacker could tell existing Docks from unknown ones by timing alone.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createHmac, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { Agent, request } from "node:http";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { newDockId } from "../src/domain/ids.ts";
import { DockRepository } from "../src/store/docks.ts";
import { migrate, openDb } from "../src/store/open.ts";

const { values } = parseArgs({
  options: {
    samples: { type: "string", default: "3000" },
    database: { type: "string", default: "sqlite" },
    door: { type: "string", multiple: true },
  },
});
const samples = Number(values.samples);
const dataDir = mkdtempSync(join(tmpdir(), "dock-notify-bench-timing-"));
const databaseUrl =
  values.database === "sqlite" ? `sqlite:${join(dataDir, "dock-notify.db")}` : values.database;
const key = randomBytes(32);

const db = await openDb(databaseUrl);
await migrate(db);
const docks = new DockRepository(db, key);
const dock = await docks.create(1, { name: "Timing", link: null, description: null });
const hookToken = (await docks.rotateHookToken(dock.id)) as string;
// A named credential of the Dock: a wrong one is looked up by its hash, as an unknown Dock's is.
const { secret: credential } = await docks.credentials.create(dock.id, "timing", "send");
// Two GitHub credentials, as during a rotation: a signature is still checked against as many
// secrets as for an unknown Dock (or for `bare`, which has none).
await docks.credentials.create(dock.id, "timing (old)", "github");
await docks.credentials.create(dock.id, "timing (new)", "github");
const bare = await docks.create(1, { name: "Timing, no GitHub credential", link: null, description: null });
await db.close();

async function startService(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ["src/cli.ts", "serve"], {
    cwd: join(import.meta.dirname, ".."),
    env: {
      ...process.env,
      PORT: "0",
      DATA_DIR: dataDir,
      DATABASE_URL: databaseUrl,
      ENCRYPTION_KEY: key.toString("base64"),
      // Every request here is a wrong guess: the limit would answer 429 instead of checking.
      AUTH_FAILURES_PER_MINUTE: "0",
      LOG_LEVEL: "error",
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  // At LOG_LEVEL=error the ready line is not printed: ask for the port the way the ready line would.
  child.stdout?.resume();
  for (;;) {
    await new Promise((r) => setTimeout(r, 100));
    const port = await listeningPort(child.pid as number);
    if (port) {
      lines.close();
      return { child, url: `http://127.0.0.1:${port}` };
    }
  }
}

/** The port a process listens on, read from /proc. */
async function listeningPort(pid: number): Promise<number> {
  const { readFileSync, readdirSync, readlinkSync } = await import("node:fs");
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match?.[1]) inodes.add(match[1]);
    } catch {}
  }
  for (const line of readFileSync("/proc/net/tcp", "utf8").split("\n").slice(1)) {
    const cols = line.trim().split(/\s+/);
    if (cols[3] === "0A" && inodes.has(cols[9] as string)) {
      return Number.parseInt((cols[1] as string).split(":")[1] as string, 16);
    }
  }
  return 0;
}

/** Mann–Whitney U (normal approximation with tie correction): the two-sided p-value. */
export function mannWhitney(a: number[], b: number[]): { u: number; z: number; p: number } {
  const all = [...a.map((v) => ({ v, g: 0 })), ...b.map((v) => ({ v, g: 1 }))].sort((x, y) => x.v - y.v);
  const ranks = new Array<number>(all.length);
  let ties = 0;
  for (let i = 0; i < all.length; ) {
    let j = i;
    while (j + 1 < all.length && (all[j + 1] as { v: number }).v === (all[i] as { v: number }).v) j++;
    const rank = (i + j) / 2 + 1;
    for (let k = i; k <= j; k++) ranks[k] = rank;
    const t = j - i + 1;
    ties += t ** 3 - t;
    i = j + 1;
  }
  let rankSumA = 0;
  for (let k = 0; k < all.length; k++) if ((all[k] as { g: number }).g === 0) rankSumA += ranks[k] as number;
  const n1 = a.length;
  const n2 = b.length;
  const u = rankSumA - (n1 * (n1 + 1)) / 2;
  const mean = (n1 * n2) / 2;
  const n = n1 + n2;
  const sd = Math.sqrt(((n1 * n2) / 12) * (n + 1 - ties / (n * (n - 1))));
  const z = (u - mean) / sd;
  return { u, z, p: 2 * (1 - normalCdf(Math.abs(z))) };
}

function normalCdf(x: number): number {
  // Abramowitz–Stegun 7.1.26 for erf.
  const t = 1 / (1 + 0.3275911 * (x / Math.SQRT2));
  const erf =
    1 -
    ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) *
      t *
      Math.exp(-((x / Math.SQRT2) ** 2));
  return 0.5 * (1 + erf);
}

const median = (values: number[]) => {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.floor(sorted.length / 2)] as number;
};

const service = await startService();
// One kept-alive connection: no connection setup inside a measurement.
const agent = new Agent({ keepAlive: true, maxSockets: 1 });
const unknownId = newDockId();

function time(path: string, body: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const sent = request(
      `${service.url}${path}`,
      { method: "POST", agent, headers: { "content-type": "application/json", ...headers } },
      (response) => {
        response.resume();
        response.on("end", () => {
          const elapsed = Number(process.hrtime.bigint() - started) / 1000;
          if (response.statusCode !== 401) reject(new Error(`expected 401, got ${response.statusCode}`));
          else resolve(elapsed);
        });
      },
    );
    sent.on("error", reject);
    sent.end(body);
  });
}

const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
/** A push as GitHub signs it, with a key that is not the Dock's. */
const push = JSON.stringify({ ref: "refs/heads/main", repository: { full_name: "octo/app" } });
const wrongSignature = {
  "x-github-event": "push",
  "x-hub-signature-256": `sha256=${createHmac("sha256", "dnsk_wrong").update(push).digest("hex")}`,
};
const gitlab = JSON.stringify({ object_kind: "push", project: { path_with_namespace: "octo/app" } });
/** A hook token of the right shape that no Dock has: the Dock's own with its last character changed. */
const nearToken = `${hookToken.slice(0, -1)}${hookToken.endsWith("A") ? "B" : "A"}`;
/** A credential of the right shape that no Dock has: the Dock's own with its last character changed. */
const wrongCredential = `${credential.slice(0, -1)}${credential.endsWith("A") ? "B" : "A"}`;
const cases: Record<string, { unknown: () => Promise<number>; wrongKey: () => Promise<number> }> = {
  "/ping": {
    unknown: () =>
      time("/ping", JSON.stringify({ dock_id: unknownId, secret_key: "dnsk_wrong", msg: "m" }), {}),
    wrongKey: () =>
      time("/ping", JSON.stringify({ dock_id: dock.id, secret_key: "dnsk_wrong", msg: "m" }), {}),
  },
  "/webhook": {
    unknown: () => time("/webhook", '{"msg":"m"}', { authorization: basic(unknownId, "dnsk_wrong") }),
    wrongKey: () => time("/webhook", '{"msg":"m"}', { authorization: basic(dock.id, "dnsk_wrong") }),
  },
  "/webhook/<format>/<DOCK_ID>, Basic": {
    unknown: () =>
      time(`/webhook/slack/${unknownId}`, '{"text":"m"}', { authorization: basic(unknownId, "dnsk_wrong") }),
    wrongKey: () =>
      time(`/webhook/slack/${dock.id}`, '{"text":"m"}', { authorization: basic(dock.id, "dnsk_wrong") }),
  },
  "/webhook/github/<DOCK_ID>, signature": {
    unknown: () => time(`/webhook/github/${unknownId}`, push, wrongSignature),
    wrongKey: () => time(`/webhook/github/${dock.id}`, push, wrongSignature),
  },
  "/webhook/github/<DOCK_ID>, signature, no GitHub credential": {
    unknown: () => time(`/webhook/github/${unknownId}`, push, wrongSignature),
    wrongKey: () => time(`/webhook/github/${bare.id}`, push, wrongSignature),
  },
  "/webhook/gitlab/<DOCK_ID>, token": {
    unknown: () => time(`/webhook/gitlab/${unknownId}`, gitlab, { "x-gitlab-token": "dnsk_wrong" }),
    wrongKey: () => time(`/webhook/gitlab/${dock.id}`, gitlab, { "x-gitlab-token": "dnsk_wrong" }),
  },
  "/ping, named credential": {
    unknown: () =>
      time("/ping", JSON.stringify({ dock_id: unknownId, secret_key: wrongCredential, msg: "m" }), {}),
    wrongKey: () =>
      time("/ping", JSON.stringify({ dock_id: dock.id, secret_key: wrongCredential, msg: "m" }), {}),
  },
  "/webhook, named credential": {
    unknown: () => time("/webhook", '{"msg":"m"}', { authorization: basic(unknownId, wrongCredential) }),
    wrongKey: () => time("/webhook", '{"msg":"m"}', { authorization: basic(dock.id, wrongCredential) }),
  },
  "/hook/<token>": {
    unknown: () => time(`/hook/dnhk_${"0".repeat(hookToken.length - 5)}`, '{"msg":"m"}', {}),
    wrongKey: () => time(`/hook/${nearToken}`, '{"msg":"m"}', {}),
  },
};
const doors = values.door ?? Object.keys(cases);

const results: { endpoint: string; unknown: number; wrongKey: number; p: number; z: number }[] = [];
for (const endpoint of doors) {
  const probe = cases[endpoint];
  if (probe === undefined)
    throw new Error(`no such door: ${endpoint} (doors: ${Object.keys(cases).join(", ")})`);
  // Warm up (JIT, prepared statements, connection).
  for (let i = 0; i < 500; i++) {
    await probe.unknown();
    await probe.wrongKey();
  }
  const unknown: number[] = [];
  const wrongKey: number[] = [];
  for (let i = 0; i < samples; i++) {
    // Alternating, in a random order each pair: drift in the machine's speed hits both alike.
    if (Math.random() < 0.5) {
      unknown.push(await probe.unknown());
      wrongKey.push(await probe.wrongKey());
    } else {
      wrongKey.push(await probe.wrongKey());
      unknown.push(await probe.unknown());
    }
  }
  const { p, z } = mannWhitney(unknown, wrongKey);
  results.push({ endpoint, unknown: median(unknown), wrongKey: median(wrongKey), p, z });
}

service.child.kill("SIGTERM");
await new Promise((r) => service.child.once("exit", r));
agent.destroy();
rmSync(dataDir, { recursive: true, force: true });

console.log(
  `\nbench:timing on ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}; database: ${values.database}; ${samples} samples per class`,
);
console.log(
  "\n| endpoint | unknown Dock, median µs | existing Dock + wrong key, median µs | difference µs | z | p |",
);
console.log("|---|---|---|---|---|---|");
for (const r of results) {
  console.log(
    `| ${r.endpoint} | ${r.unknown.toFixed(1)} | ${r.wrongKey.toFixed(1)} | ${(r.wrongKey - r.unknown).toFixed(1)} | ${r.z.toFixed(2)} | ${r.p.toExponential(1)} |`,
  );
}
const leaks = results.filter((r) => r.p < 0.001);
if (leaks.length > 0) {
  console.log(
    `\nSIGNIFICANT (p < 0.001) on ${leaks.map((r) => r.endpoint).join(", ")}: timing tells whether a Dock exists.`,
  );
  process.exit(1);
}
console.log("\nno significant difference (p ≥ 0.001): timing does not tell whether a Dock exists.");
process.exit(0);
