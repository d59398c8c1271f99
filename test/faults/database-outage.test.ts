import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin } from "../helpers/fault-harness.ts";
import {
  createTestDatabase,
  hasPostgres,
  type RunningService,
  startServiceOver,
  type TestDatabase,
} from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

describe.skipIf(!(await hasPostgres()))("a PostgreSQL outage", () => {
  let database: TestDatabase;
  let service: RunningService;
  let name: string;

  beforeAll(async () => {
    database = await createTestDatabase("postgres", { migrated: true });
    name = new URL(database.url).pathname.slice(1);
    service = await startServiceOver(database);
  });
  afterAll(async () => {
    await admin(`alter database ${name} allow_connections true`).catch(() => {});
    await service?.close();
    await database?.drop();
  });

  const ping = (dock: { id: string; secretKey: string }, msg: string) =>
    fetch(`${service.url}/ping`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ dock_id: dock.id, secret_key: dock.secretKey, msg }),
    });

  it("is a 503 with Retry-After for senders (retry later), not our bug's 500; metrics still answer", async () => {
    const dock = await service.app.docks.create(42, { name: "Outage", link: null, description: null });
    expect((await ping(dock, "before")).status).toBe(202);

    // The database refuses new connections and drops the service's open ones.
    await admin(`alter database ${name} allow_connections false`);
    await admin(`select pg_terminate_backend(pid) from pg_stat_activity where datname = '${name}'`);

    // The pool's idle connections were dropped: a warn line in the service's log (JSON like every
    // line), not a bare process warning on stderr.
    await waitFor("the dropped connection's log line", () =>
      service.logs.lines.some((line) => line.includes("an idle PostgreSQL connection was closed")),
    );

    const refused = await ping(dock, "during");
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(await refused.json()).toMatchObject({ ok: false, error: { code: "database_unavailable" } });

    // A scrape during the outage still has the process's metrics, and says the database is down.
    const scrape = await fetch(`${service.url}/metrics`);
    expect(scrape.status).toBe(200);
    const text = await scrape.text();
    expect(text).toMatch(/^dock_notify_database_up 0$/m);
    expect(text).toMatch(/^dock_notify_messages_accepted_total\{endpoint="ping"\} 1$/m);
    expect(text).toMatch(/^dock_notify_requests_rejected_total\{code="database_unavailable"\} 1$/m);
    // The queue cannot be read: unknown (NaN; prom-client writes "Nan", which Prometheus reads), not empty.
    expect(text).toMatch(/^dock_notify_queue_depth nan$/im);

    // An outage is no bug of ours: warn lines, no error with a stack.
    const entries = service.logs.lines.map((line) => JSON.parse(line) as { level: number; msg: string });
    expect(entries.filter((entry) => entry.msg === "database_unavailable").map((e) => e.level)).toEqual([40]);
    expect(entries.filter((entry) => entry.level >= 50)).toEqual([]);

    // Back: sends are accepted again, and the scrape says so.
    await admin(`alter database ${name} allow_connections true`);
    await waitFor("sends accepted again", async () => (await ping(dock, "after")).status === 202);
    const after = await (await fetch(`${service.url}/metrics`)).text();
    expect(after).toMatch(/^dock_notify_database_up 1$/m);
    expect(after).toMatch(/^dock_notify_queue_depth \d+$/m);
  });
});
