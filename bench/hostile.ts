/**
 * bench:hostile — can one request stall the service?
 *
 *   npm run bench:hostile [-- --rounds 3 --database sqlite|postgres://… --root <another checkout>
 *                            --only <text in a door's or body's name> --except <text> --preauth 300]
 *
 * For every door that reads a body (/ping, /webhook, /webhook/<format> for each format, the Dock's
 * template, /hook/<token>, GitHub's signed door, the console's preview), the worst bodies we know
 * how to build within its body limit (MAX_BODY_BYTES, INBOUND_MAX_BODY_BYTES), each beside a normal
 * body of the same door and an idle window as the same run's baseline. Each body is sent `rounds`
 * times; the table shows the median round and, in brackets, the worst.
 *
 * What is measured, in the service's own process (a child, run as it ships: `npm start`'s Node
 * options, from dist/): the event loop's longest delay while the request ran, as the service itself
 * reports it (`dock_notify_nodejs_eventloop_lag_max_seconds` on /metrics: prom-client's
 * monitorEventLoopDelay, 10 ms resolution, reset at every scrape — scraped right before and right
 * after each request), the slowest of the /healthz probes sent one after another over their own
 * connection while it ran, and the time the event loop's thread spent on a CPU meanwhile (and
 * waited for one: other work on the machine). Target: no delay above 50 ms.
 *
 * Then `--preauth` connections (300) each send GitHub's signed door the headers of a 1 MiB
 * delivery with X-Hub-Signature-256 and all of its body but the last byte, and hold: the service's
 * resident memory (VmRSS) is sampled before and while they hold. Target: at most 20 MB more.
 *
 * `--root` runs the service of another checkout (built there with `node scripts/build-server.ts`)
 * with this script's bodies: the code before a change, measured the same way.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createHmac } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { Agent, request } from "node:http";
import { connect, type Socket } from "node:net";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { OPEN_POLICY } from "../src/domain/owners.ts";
import { csrfToken } from "../src/http/session.ts";
import { loadEncryptionKey } from "../src/runtime/encryption-key.ts";
import { DockRepository, type DockWithSecret } from "../src/store/docks.ts";
import { migrate, openDb } from "../src/store/open.ts";
import { SessionRepository } from "../src/store/sessions.ts";
import { SHIPPED_ENV, serviceNodeOptions } from "./shipped.ts";

const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "5" },
    database: { type: "string", default: "sqlite" },
    root: { type: "string" },
    only: { type: "string" },
    /** Leave out the bodies whose door or name contains this text (a body the old code takes minutes over). */
    except: { type: "string" },
    preauth: { type: "string", default: "300" },
    /** How long one request may take before the bench gives up on it (seconds). */
    timeout: { type: "string", default: "120" },
  },
});
const rounds = Number(values.rounds);
/** Other work on the machine shows in every figure: the idle row, and this, say how much. */
const loadAtStart = loadavg()[0]?.toFixed(1);
const root = resolve(values.root ?? join(import.meta.dirname, ".."));
const timeoutMs = Number(values.timeout) * 1000;

const KiB = 1024;
const MiB = 1024 * KiB;
/** The service's defaults: MAX_BODY_BYTES, INBOUND_MAX_BODY_BYTES. */
const BODY_LIMIT = 64 * KiB;
const INBOUND_LIMIT = MiB;

// ---------------------------------------------------------------------------------------------
// Bodies

/** `head`, then `unit(0)`, `unit(1)` … joined by `separator` while the whole fits in `limit` bytes, then `tail`. */
function fill(
  head: string,
  unit: (i: number) => string,
  separator: string,
  tail: string,
  limit: number,
): string {
  const parts: string[] = [];
  let size = Buffer.byteLength(head) + Buffer.byteLength(tail);
  for (let i = 0; ; i++) {
    const next = unit(i);
    const added = Buffer.byteLength(next) + (i === 0 ? 0 : separator.length);
    if (size + added > limit) break;
    parts.push(next);
    size += added;
  }
  return head + parts.join(separator) + tail;
}

/** JSON whose last array is filled with `item(i)` up to `limit` bytes: `{…"name":[` + items + `]}`. */
const jsonFill = (head: string, item: (i: number) => string, limit = INBOUND_LIMIT, tail = "]}") =>
  fill(head, item, ",", tail, limit);

const alert = (i: number) =>
  `{"status":"firing","labels":{"alertname":"A${i}","instance":"h${i}","severity":"critical"},"annotations":{"summary":"s${i}"},"startsAt":"2026-11-24T10:00:00Z","endsAt":"0001-01-01T00:00:00Z","generatorURL":"https://p.example.com/${i}"}`;
const alertHead =
  '{"version":"4","groupKey":"{}:{alertname=\\"A\\"}","status":"firing","receiver":"r","groupLabels":{},"commonLabels":{},"commonAnnotations":{},"externalURL":"https://am.example.com","alerts":[';
const grafanaHead =
  '{"orgId":1,"version":"1","groupKey":"{}:{alertname=\\"A\\"}","status":"firing","receiver":"r","groupLabels":{},"commonLabels":{},"commonAnnotations":{},"externalURL":"https://g.example.com","alerts":[';
const commit = (i: number) =>
  `{"id":"${i.toString(16).padStart(40, "0")}","message":"Commit ${i}\\n\\nbody","author":{"name":"Ada"},"url":"https://github.com/o/r/commit/${i}"}`;
const githubPushHead =
  '{"ref":"refs/heads/main","before":"0","after":"1","repository":{"full_name":"o/r","html_url":"https://github.com/o/r"},"pusher":{"name":"ada"},"sender":{"login":"ada"},"compare":"https://github.com/o/r/compare/a...b","commits":[';
const build = (i: number) => `{"id":${i},"name":"job ${i}","status":"failed","allow_failure":false}`;
const gitlabPipelineHead =
  '{"object_kind":"pipeline","project":{"path_with_namespace":"g/p","web_url":"https://gitlab.example.com/g/p"},"object_attributes":{"id":1,"ref":"main","status":"failed","duration":60},"commit":{"title":"Fix","author":{"name":"Ada"}},"builds":[';
const numbers = (count: number) =>
  `{"alerts":[${Array.from({ length: count }, (_, i) => i % 1000).join(",")}]}`;
const xmlAttributes = (limit: number) =>
  fill(
    '<?xml version="1.0"?><Notification ',
    (i) => `a${i}="x"`,
    " ",
    "><Message>hi</Message></Notification>",
    limit,
  );
const APPRISE_XML = `<?xml version="1.0" encoding="utf-8"?><soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soapenv:Body><Notification xmlns:xsi="http://nuxref.com/apprise/NotifyXML-1.0.xsd"><Version>1.0</Version><Subject>Backup</Subject><MessageType>success</MessageType><Message>The backup finished.</Message></Notification></soapenv:Body></soapenv:Envelope>`;
/** Section blocks with as many mrkdwn fields as fit: every field is rendered, at several lengths. */
const slackFields = (limit: number) =>
  fill(
    '{"blocks":[{"type":"section","fields":[',
    (i) => `{"type":"mrkdwn","text":"*f${i}* _x_"}`,
    ",",
    "]}]}",
    limit,
  );
/** Texts of 3,500 characters (what a block may show) of emphasis marks that never close. */
const slackMarks = (limit: number) =>
  jsonFill(
    '{"blocks":[',
    () => `{"type":"section","text":{"type":"mrkdwn","text":"${"*a ".repeat(1166)}"}}`,
    limit,
  );
const formFields = (head: string, limit: number) => fill(head, (i) => `k${i}=`, "&", "", limit);

/** The worst Markdown we found for markdown-it: 16,384 characters (MAX_MESSAGE_LENGTH) of `**_`. */
const MARKDOWN = "**_".repeat(5461);
/** A list of 4,096 items in 16,384 characters: our conversion was quadratic in a list's length. */
const MARKDOWN_LIST = "- a\n".repeat(4096);

const WHERE_EXP = '{{ payload.alerts | where_exp: "a", "a > 1 and a < 998" | size }}';
const GROUP_BY_EXP = '{{ payload.alerts | group_by_exp: "a", "a" | size }}';
const SORT_NATURAL = "{{ payload.alerts | sort_natural | size }}";
const NORMAL_TEMPLATE = "{{ title }}: {{ alerts | size }} alerts";

interface Sent {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
}

/** A Dock made for one request (each has its own template time and rate). */
interface BenchDock {
  dock: DockWithSecret;
  hookToken: string;
}

interface Case {
  door: string;
  name: string;
  /** The Dock's saved template, when the door reads one. */
  template?: string;
  /** A normal body: the door's baseline, not counted against the target. */
  baseline?: boolean;
  build: (d: BenchDock) => Sent;
}

const basicAuth = (d: BenchDock) =>
  `Basic ${Buffer.from(`${d.dock.id}:${d.dock.secretKey}`).toString("base64")}`;
const json =
  (path: string, body: string, headers: Record<string, string> = {}) =>
  (d: BenchDock) => ({
    method: "POST",
    path,
    headers: { "content-type": "application/json", authorization: basicAuth(d), ...headers },
    body,
  });
const form = (path: string, body: (d: BenchDock) => string) => (d: BenchDock) => ({
  method: "POST",
  path,
  headers: { "content-type": "application/x-www-form-urlencoded", authorization: basicAuth(d) },
  body: body(d),
});

const CASES: Case[] = [
  {
    door: "/ping",
    name: "a message",
    baseline: true,
    build: (d) => ({
      method: "POST",
      path: "/ping",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ dock_id: d.dock.id, secret_key: d.dock.secretKey, msg: "Backup done" }),
    }),
  },
  {
    door: "/ping",
    name: "64 KiB form of distinct field names, before the key is checked",
    build: (d) => ({
      method: "POST",
      path: "/ping",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: formFields(`dock_id=${d.dock.id}&secret_key=wrong&msg=x&`, BODY_LIMIT),
    }),
  },
  {
    door: "/ping",
    name: "16,384 characters of Markdown (`**_`), a wrong key",
    build: (d) => ({
      method: "POST",
      path: "/ping",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ dock_id: d.dock.id, secret_key: "wrong", msg: MARKDOWN, format: "markdown" }),
    }),
  },
  { door: "/webhook", name: "a message", baseline: true, build: json("/webhook", '{"msg":"Backup done"}') },
  {
    door: "/webhook",
    name: "64 KiB form: msg and distinct field names",
    build: form("/webhook", () => formFields("msg=x&", BODY_LIMIT)),
  },
  {
    door: "/webhook",
    name: "16,384 characters of Markdown (`**_`)",
    build: json("/webhook", JSON.stringify({ msg: MARKDOWN, format: "markdown" })),
  },
  {
    door: "/webhook",
    name: "16,384 characters of Markdown list items (`- a`)",
    build: json("/webhook", JSON.stringify({ msg: MARKDOWN_LIST, format: "markdown" })),
  },
  {
    door: "/webhook/alertmanager",
    name: "a group of one alert",
    baseline: true,
    build: json("/webhook/alertmanager", jsonFill(alertHead, alert, 2 * KiB)),
  },
  {
    door: "/webhook/alertmanager",
    name: "1 MiB of alerts",
    build: json("/webhook/alertmanager", jsonFill(alertHead, alert)),
  },
  {
    door: "/webhook/grafana",
    name: "1 MiB of alerts",
    build: json("/webhook/grafana", jsonFill(grafanaHead, alert)),
  },
  {
    door: "/webhook/github",
    name: "a push of 1 MiB of commits",
    build: json("/webhook/github", jsonFill(githubPushHead, commit), { "x-github-event": "push" }),
  },
  {
    door: "/webhook/gitlab",
    name: "a failed pipeline of 1 MiB of jobs",
    build: json("/webhook/gitlab", jsonFill(gitlabPipelineHead, build)),
  },
  {
    door: "/webhook/uptime-kuma",
    name: "a 1 MiB message",
    build: json(
      "/webhook/uptime-kuma",
      `{"heartbeat":{"status":0,"msg":"down"},"monitor":{"name":"web","url":"https://x.example.com"},"msg":"${"x".repeat(INBOUND_LIMIT - 200)}"}`,
    ),
  },
  {
    door: "/webhook/apprise",
    name: "an xml:// notification",
    baseline: true,
    build: (d) => ({
      ...json("/webhook/apprise", APPRISE_XML)(d),
      headers: { "content-type": "application/xml", authorization: basicAuth(d) },
    }),
  },
  {
    door: "/webhook/apprise",
    name: "XML: 78,000 attributes (847 KB)",
    build: (d) => ({
      ...json("/webhook/apprise", xmlAttributes(847_000))(d),
      headers: { "content-type": "application/xml", authorization: basicAuth(d) },
    }),
  },
  {
    door: "/webhook/apprise",
    name: "XML: 1 MiB of empty elements",
    build: (d) => ({
      ...json(
        "/webhook/apprise",
        fill("<Notification><Message>hi</Message>", () => "<a/>", "", "</Notification>", INBOUND_LIMIT),
      )(d),
      headers: { "content-type": "application/xml", authorization: basicAuth(d) },
    }),
  },
  {
    door: "/webhook/apprise",
    name: "XML: 1 MiB of entity references",
    build: (d) => ({
      ...json(
        "/webhook/apprise",
        fill("<Notification><Message>", () => "&amp;", "", "</Message></Notification>", INBOUND_LIMIT),
      )(d),
      headers: { "content-type": "application/xml", authorization: basicAuth(d) },
    }),
  },
  {
    door: "/webhook/apprise",
    name: "JSON: 1 MiB of attachments",
    build: json(
      "/webhook/apprise",
      jsonFill(
        '{"version":"1.0","title":"t","message":"m","type":"info","attachments":[',
        (i) => `{"filename":"f${i}.txt","base64":""}`,
      ),
    ),
  },
  {
    door: "/webhook/ntfy",
    name: "1 MiB of tags and actions",
    build: json(
      "/webhook/ntfy",
      jsonFill(
        '{"topic":"t","message":"m","markdown":true,"actions":[{"action":"view","label":"x","url":"https://x.example.com"}],"tags":[',
        (i) => `"t${i}"`,
      ),
    ),
  },
  {
    door: "/webhook/slack",
    name: "a section's fields, 1 MiB",
    build: json("/webhook/slack", slackFields(INBOUND_LIMIT)),
  },
  {
    door: "/webhook/slack",
    name: "blocks of unclosed emphasis marks, 1 MiB",
    build: json("/webhook/slack", slackMarks(INBOUND_LIMIT)),
  },
  {
    door: "/webhook/slack",
    name: "1 MiB of dividers",
    build: json(
      "/webhook/slack",
      jsonFill('{"blocks":[', () => '{"type":"divider"}'),
    ),
  },
  {
    door: "/webhook/template",
    name: "a normal template and payload",
    baseline: true,
    template: NORMAL_TEMPLATE,
    build: json("/webhook/template", '{"title":"Disk","alerts":[1,2,3]}'),
  },
  {
    door: "/webhook/template",
    name: "where_exp over 250,000 numbers (972 KB)",
    template: WHERE_EXP,
    build: json("/webhook/template", numbers(250_000)),
  },
  {
    door: "/webhook/template",
    name: "group_by_exp over 250,000 numbers",
    template: GROUP_BY_EXP,
    build: json("/webhook/template", numbers(250_000)),
  },
  {
    door: "/webhook/template",
    name: "sort_natural over 250,000 numbers",
    template: SORT_NATURAL,
    build: json("/webhook/template", numbers(250_000)),
  },
  {
    door: "/hook/<token>",
    name: "a message",
    baseline: true,
    build: (d) => ({
      method: "POST",
      path: `/hook/${d.hookToken}`,
      headers: { "content-type": "text/plain" },
      body: "Backup done",
    }),
  },
  {
    door: "/hook/<token>",
    name: "1 MiB form: msg and distinct field names",
    build: (d) => ({
      method: "POST",
      path: `/hook/${d.hookToken}`,
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: formFields("msg=x&", INBOUND_LIMIT),
    }),
  },
  {
    door: "/hook/<token>",
    name: "1 MiB of JSON that no format reads (every format's detection)",
    build: (d) => ({
      method: "POST",
      path: `/hook/${d.hookToken}`,
      headers: { "content-type": "application/json" },
      body: jsonFill('{"items":[', (i) => `{"a":${i}}`),
    }),
  },
  {
    door: "/webhook/github/<dock>",
    name: "a signed 1 MiB push, wrong signature",
    build: (d) => {
      const body = jsonFill(githubPushHead, commit);
      return {
        method: "POST",
        path: `/webhook/github/${d.dock.id}`,
        headers: {
          "content-type": "application/json",
          "x-github-event": "push",
          "x-hub-signature-256": `sha256=${createHmac("sha256", "wrong").update(body).digest("hex")}`,
        },
        body,
      };
    },
  },
  {
    door: "/webhook/github/<dock>",
    name: "a signed 1 MiB push",
    build: (d) => {
      const body = jsonFill(githubPushHead, commit);
      return {
        method: "POST",
        path: `/webhook/github/${d.dock.id}`,
        headers: {
          "content-type": "application/json",
          "x-github-event": "push",
          "x-hub-signature-256": `sha256=${createHmac("sha256", d.dock.secretKey).update(body).digest("hex")}`,
        },
        body,
      };
    },
  },
  {
    door: "console preview",
    name: "a template's where_exp over 64 KiB of numbers",
    build: (d) => preview(d, { format: "template", template: { text: WHERE_EXP }, sample: numbers(16_000) }),
  },
  {
    door: "console preview",
    name: "Apprise XML: 4,500 attributes (what the body limit holds)",
    build: (d) => preview(d, { format: "apprise", sample: xmlAttributes(50_000) }),
  },
];

let session = "";

function preview(d: BenchDock, body: Record<string, unknown>): Sent {
  return {
    method: "POST",
    path: `/console/api/docks/${d.dock.id}/integrations/preview`,
    headers: {
      "content-type": "application/json",
      cookie: `dn_session=${session}`,
      "x-csrf-token": csrfToken(session),
    },
    body: JSON.stringify(body),
  };
}

// ---------------------------------------------------------------------------------------------
// The service

const named = (c: Case, text: string | undefined) =>
  text !== undefined && `${c.door} ${c.name}`.toLowerCase().includes(text.toLowerCase());
const cases = CASES.filter(
  (c) => (values.only === undefined || named(c, values.only)) && !named(c, values.except),
);
const dataDir = mkdtempSync(join(tmpdir(), "dock-notify-bench-hostile-"));
const databaseUrl = values.database === "sqlite" ? `sqlite:${join(dataDir, "bench.db")}` : values.database;
const key = loadEncryptionKey(null, dataDir).key;
const db = await openDb(databaseUrl);
await migrate(db);
const docks = new DockRepository(db, key);
/** A fresh Dock for every request: its template time, rate and hook token are its own. */
const docksFor = new Map<Case, BenchDock[]>();
for (const c of cases) {
  const made: BenchDock[] = [];
  for (let round = 0; round <= rounds; round++) {
    const dock = await docks.create(1, { name: "Bench", link: null, description: null });
    if (c.template !== undefined) {
      await docks.updateIntegrations(dock.id, { template: { text: c.template } });
    }
    made.push({ dock, hookToken: (await docks.rotateHookToken(dock.id)) as string });
  }
  docksFor.set(c, made);
}
const preauthDock = await docks.create(1, { name: "Preauth", link: null, description: null });
session = (await new SessionRepository(db, OPEN_POLICY).create({ id: 1, first_name: "Bench" }, 3_600_000))
  .token;
await db.close();

async function startService(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(
    process.execPath,
    [...serviceNodeOptions(undefined), join(root, "dist/cli.js"), "serve"],
    {
      cwd: root,
      env: {
        ...process.env,
        ...SHIPPED_ENV,
        PORT: "0",
        DATA_DIR: dataDir,
        DATABASE_URL: databaseUrl,
        // Every hostile request is its own Dock's; wrong keys are part of the bodies.
        AUTH_FAILURES_PER_MINUTE: "0",
        DOCK_RATE_BURST: "0",
        LOG_LEVEL: "info",
        // The held bodies below come from as many addresses (X-Forwarded-For) as connections: the
        // whole budget is filled, not one address's share.
        TRUST_PROXY: "true",
      },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  for await (const line of createInterface({ input: child.stdout as NodeJS.ReadableStream })) {
    const entry = JSON.parse(line) as { msg?: string; port?: number };
    if (entry.msg?.startsWith("Dock Notify is ready") && entry.port !== undefined) {
      child.stdout?.resume();
      return { child, url: `http://127.0.0.1:${entry.port}` };
    }
  }
  throw new Error("the service exited before it was ready");
}

const service = await startService();
const pid = service.child.pid as number;

// ---------------------------------------------------------------------------------------------
// Measuring

const senders = new Agent({ keepAlive: true });
const probes = new Agent({ keepAlive: true, maxSockets: 1 });

interface Answer {
  status: number;
  code: string;
  ms: number;
}

function send(sent: Sent, agent = senders): Promise<Answer> {
  return new Promise((done) => {
    const started = performance.now();
    const req = request(
      `${service.url}${sent.path}`,
      { method: sent.method, headers: sent.headers, agent, timeout: timeoutMs },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          let code = "";
          try {
            const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { error?: { code?: string } };
            code = body.error?.code ?? "";
          } catch {}
          done({ status: res.statusCode ?? 0, code, ms: performance.now() - started });
        });
      },
    );
    req.on("timeout", () => req.destroy(new Error("timed out")));
    req.on("error", (error) => done({ status: 0, code: error.message, ms: performance.now() - started }));
    req.end(sent.body);
  });
}

/** The event loop's longest delay since the last scrape, in ms (the service's own histogram). */
async function scrapeLagMax(): Promise<number> {
  const text = await new Promise<string>((done, fail) => {
    request(`${service.url}/metrics`, { agent: probes }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        body += chunk;
      });
      res.on("end", () => done(body));
    })
      .on("error", fail)
      .end();
  });
  const match = /^dock_notify_nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(text);
  return match ? Number(match[1]) * 1000 : Number.NaN;
}

interface Measure {
  answer: Answer;
  lagMs: number;
  healthzMaxMs: number;
  probes: number;
  /** The event loop's thread on a CPU meanwhile, and runnable but waiting for one (ms). */
  cpuMs: number;
  waitMs: number;
}

/**
 * The service's main thread (the event loop's): time on a CPU and time waiting for one (ns), from
 * /proc's schedstat. On a busy machine the delays above include the waiting; the time on a CPU
 * is what the request's work cost the loop whatever else runs.
 */
function mainThread(): { cpu: number; wait: number } {
  const [cpu, wait] = readFileSync(`/proc/${pid}/task/${pid}/schedstat`, "utf8").split(" ").map(Number);
  return { cpu: cpu ?? 0, wait: wait ?? 0 };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One request beside a stream of /healthz probes, between two scrapes of the delay histogram. */
async function measure(sent: Sent | null): Promise<Measure> {
  await scrapeLagMax();
  // A reset histogram records nothing until its timer has fired once more (Node measures from one
  // tick to the next): a stall in that first tick would go unseen. Three ticks' wait.
  await sleep(30);
  const before = mainThread();
  let running = true;
  let healthzMaxMs = 0;
  let count = 0;
  const prober = (async () => {
    while (running) {
      const answer = await send({ method: "GET", path: "/healthz", headers: {}, body: "" }, probes);
      healthzMaxMs = Math.max(healthzMaxMs, answer.ms);
      count++;
      await sleep(5);
    }
  })();
  let answer: Answer = { status: 0, code: "", ms: 300 };
  if (sent === null) await sleep(300);
  else answer = await send(sent);
  // The histogram records a stall when its next timer fires, and the probes need one more turn.
  await sleep(60);
  running = false;
  await prober;
  const after = mainThread();
  const lagMs = await scrapeLagMax();
  return {
    answer,
    lagMs,
    healthzMaxMs,
    probes: count,
    cpuMs: (after.cpu - before.cpu) / 1e6,
    waitMs: (after.wait - before.wait) / 1e6,
  };
}

const fmt = (ms: number) => (Number.isNaN(ms) ? "n/a" : ms >= 100 ? ms.toFixed(0) : ms.toFixed(1));

function median(measured: Measure[], pick: (m: Measure) => number): number {
  const sorted = measured.map(pick).sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] ?? Number.NaN;
}

/** "median (worst)" of the rounds: on a shared machine the worst round alone says more of the machine. */
const spread = (measured: Measure[], pick: (m: Measure) => number) =>
  `${fmt(median(measured, pick))} (${fmt(Math.max(...measured.map(pick)))})`;

const rows: string[] = [];
// Warm-up: the lazily loaded parts (markdown-it, LiquidJS, fast-xml-parser, the emoji table) load
// on their first use, once per process; a door's normal body loads them before it is measured.
for (const c of cases.filter((c) => c.baseline))
  await send(c.build((docksFor.get(c) as BenchDock[])[rounds] as BenchDock));
for (const c of cases) {
  const made = docksFor.get(c) as BenchDock[];
  if (c.template !== undefined && !c.baseline) {
    // Its Dock's template parsed once, as a template in use is.
    await send(json("/webhook/template", '{"alerts":[1]}')(made[rounds] as BenchDock));
  }
}
const idle = [];
for (let round = 0; round < rounds; round++) idle.push(await measure(null));
rows.push(
  `| (none) | idle, 300 ms | — | — | ${spread(idle, (m) => m.healthzMaxMs)} | ${spread(idle, (m) => m.lagMs)} | ${fmt(median(idle, (m) => m.cpuMs))} / ${fmt(median(idle, (m) => m.waitMs))} |`,
);
for (const c of cases) {
  const made = docksFor.get(c) as BenchDock[];
  const measured: Measure[] = [];
  let size = 0;
  for (let round = 0; round < rounds; round++) {
    const sent = c.build(made[round] as BenchDock);
    size = Buffer.byteLength(sent.body);
    measured.push(await measure(sent));
  }
  const worst = (pick: (m: Measure) => number) => Math.max(...measured.map(pick));
  const mid = (pick: (m: Measure) => number) => fmt(median(measured, pick));
  const answers = [
    ...new Set(measured.map((m) => `${m.answer.status}${m.answer.code ? ` ${m.answer.code}` : ""}`)),
  ];
  const row = `| ${c.door} | ${c.baseline ? "*baseline:* " : ""}${c.name} | ${(size / KiB).toFixed(size < 10 * KiB ? 1 : 0)} KiB | ${answers.join(", ")} in ${fmt(worst((m) => m.answer.ms))} ms | ${spread(measured, (m) => m.healthzMaxMs)} | ${spread(measured, (m) => m.lagMs)} | ${mid((m) => m.cpuMs)} / ${mid((m) => m.waitMs)} |`;
  rows.push(row);
  console.error(row);
}

// ---------------------------------------------------------------------------------------------
// Unauthenticated bodies held open

const rssMb = () => {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match ? Number(match[1]) / 1024 : Number.NaN;
};

async function preauth(connections: number) {
  const port = Number(new URL(service.url).port);
  const bodyBytes = MiB;
  const head = [
    `POST /webhook/github/${preauthDock.id} HTTP/1.1`,
    "Host: 127.0.0.1",
    "Content-Type: application/json",
    "X-GitHub-Event: push",
    `X-Hub-Signature-256: sha256=${"0".repeat(64)}`,
    `Content-Length: ${bodyBytes}`,
  ].join("\r\n");
  const chunk = Buffer.alloc(64 * KiB, "a");
  const sockets: Socket[] = [];
  const statuses = new Map<string, number>();
  await sleep(1000);
  const before = rssMb();
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMb());
  }, 100);
  const sent = await Promise.all(
    Array.from(
      { length: connections },
      (_, n) =>
        new Promise<number>((done) => {
          const socket = connect(port, "127.0.0.1");
          sockets.push(socket);
          let written = 0;
          let answered = false;
          socket.on("data", (data: Buffer) => {
            if (answered) return;
            answered = true;
            const status = /^HTTP\/1\.1 (\d+)/.exec(data.toString("latin1"))?.[1] ?? "?";
            statuses.set(status, (statuses.get(status) ?? 0) + 1);
          });
          socket.on("error", () => done(written));
          socket.on("close", () => done(written));
          socket.write(`${head}\r\nX-Forwarded-For: 10.0.${n >> 8}.${n & 255}\r\n\r\n`);
          const more = () => {
            while (written < bodyBytes - 1) {
              const piece = chunk.subarray(0, Math.min(chunk.length, bodyBytes - 1 - written));
              written += piece.length;
              if (!socket.write(piece)) {
                socket.once("drain", more);
                return;
              }
            }
            done(written);
          };
          more();
        }),
    ),
  );
  // Held: everything but the last byte is on its way; give the service time to read it.
  await sleep(3000);
  clearInterval(sampler);
  peak = Math.max(peak, rssMb());
  for (const socket of sockets) socket.destroy();
  const answered = [...statuses].map(([status, n]) => `${n} × ${status}`).join(", ") || "none";
  const bodies = sent.filter((n) => n === bodyBytes - 1).length;
  return { before, peak, answered, bodies };
}

const held = Number(values.preauth) > 0 ? await preauth(Number(values.preauth)) : null;

const stop = new Promise((r) => service.child.once("exit", r));
service.child.kill("SIGTERM");
await stop;
rmSync(dataDir, { recursive: true, force: true });

console.log(
  `\nbench:hostile on ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}; ${values.database}; ${root}; ${rounds} rounds: median (worst); load average at the start ${loadAtStart}, at the end ${loadavg()[0]?.toFixed(1)}\n`,
);
console.log(
  "| door | body | size | answer (slowest) | /healthz max ms | event-loop delay max ms | event loop on a CPU / waiting for one, ms (median) |",
);
console.log("|---|---|---|---|---|---|---|");
for (const row of rows) console.log(row);
if (held !== null) {
  console.log(
    `\n${values.preauth} connections holding a signed 1 MiB body (all but its last byte): RSS ${held.before.toFixed(0)} → ${held.peak.toFixed(0)} MB (+${(held.peak - held.before).toFixed(0)} MB); answered while held: ${held.answered}; bodies written whole: ${held.bodies}`,
  );
}
