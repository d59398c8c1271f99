import { type ClientRequest, get, type IncomingHttpHeaders, type IncomingMessage } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/domain/secrets.ts";
import { LiveHub } from "../../src/http/console/live.ts";
import { DockStamps } from "../../src/store/dock-stamps.ts";
import { type ConsoleClient, signIn } from "../helpers/console-client.ts";
import { sandboxOf } from "../helpers/delivery-harness.ts";
import { admin, terminateAll } from "../helpers/fault-harness.ts";
import { basic, dialects, type RunningService, startService } from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON the service answered.
type Json = any;

const DIALECTS = await dialects();

interface ServerEvent {
  event: string;
  data: Json;
}

/**
 * The console's live stream read as a browser's EventSource reads it, over a real HTTP connection
 * of its own: every event kept in order; `after(mark, …)` waits for one that came after a point.
 * (node:http rather than fetch: fetch, aborted mid-body, leaves a spare connection open that never
 * sends a request, and the service's close would wait for the client to drop it.)
 */
class EventStream {
  readonly events: ServerEvent[] = [];
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  /** Everything the service wrote, comments and all. */
  raw = "";
  ended = false;
  readonly #request: ClientRequest;

  private constructor(request: ClientRequest, response: IncomingMessage) {
    this.#request = request;
    this.status = response.statusCode ?? 0;
    this.headers = response.headers;
    let buffer = "";
    response.setEncoding("utf8");
    response.on("data", (text: string) => {
      this.raw += text;
      buffer += text;
      for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const fields = Object.fromEntries(
          block
            .split("\n")
            .filter((line) => !line.startsWith(":"))
            .map((line) => [line.slice(0, line.indexOf(":")), line.slice(line.indexOf(":") + 1).trimStart()]),
        );
        if (fields.event !== undefined)
          this.events.push({ event: fields.event, data: JSON.parse(fields.data ?? "null") });
      }
    });
    response.on("close", () => {
      this.ended = true;
    });
  }

  /** A stream of `client`'s session, once it said hello. */
  static async open(client: ConsoleClient): Promise<EventStream> {
    const stream = await EventStream.connect(client);
    expect(stream.status).toBe(200);
    await stream.after(0, (e) => e.event === "hello", "hello");
    return stream;
  }

  /** A stream of `client`'s session as the service answered it (an error answer, perhaps). */
  static connect(client: ConsoleClient): Promise<EventStream> {
    return new Promise((resolve, reject) => {
      const request = get(
        `${client.url}/console/api/stream`,
        { headers: { cookie: `dn_session=${client.session}` }, agent: false },
        (response) => resolve(new EventStream(request, response)),
      );
      request.on("error", reject);
    });
  }

  /** Where the stream is now: `after` this mark sees only what comes later. */
  mark(): number {
    return this.events.length;
  }

  after(mark: number, match: (event: ServerEvent) => boolean, what: string): Promise<ServerEvent> {
    return waitFor(what, () => this.events.slice(mark).find(match), 30_000);
  }

  /** The browser closes the tab. */
  close(): void {
    this.#request.destroy();
  }
}

/** A `dock` event for this Dock; with `part`, one that says that part of it moved. */
const isDock = (id: string, part?: string) => (e: ServerEvent) =>
  e.event === "dock" && e.data.id === id && (part === undefined || e.data.changed.includes(part));

describe.each(DIALECTS)("the console's live stream on %s", (dialect) => {
  let service: RunningService;
  let alice: ConsoleClient;
  let bob: ConsoleClient;
  let live: EventStream;

  beforeAll(async () => {
    service = await startService(
      dialect,
      { DOCK_RATE_BURST: "0", AUTH_FAILURES_PER_MINUTE: "0", SIGN_IN_ATTEMPTS_PER_MINUTE: "100" },
      { pace: "unpaced" },
    );
    alice = await signIn(service, { id: 3001, first_name: "Alice" });
    bob = await signIn(service, { id: 3002, first_name: "Bob" });
    live = await EventStream.open(alice);
  });
  afterAll(async () => {
    live?.close();
    await service?.close();
  });

  /** A new Dock of `client`'s, once `stream` has heard that the list changed (so it watches it). */
  const createDock = async (client: ConsoleClient, stream: EventStream, name: string) => {
    const mark = stream.mark();
    const created = await client.call("POST", "/docks", { name });
    expect(created.status).toBe(201);
    await stream.after(mark, (e) => e.event === "docks", `the list changed (${name} created)`);
    return created.body.dock as { id: string; secret_key: string };
  };

  it("says retry and hello first, as an event stream nothing may buffer or keep", async () => {
    expect(live.headers["content-type"]).toBe("text/event-stream");
    expect(live.headers["cache-control"]).toBe("no-store");
    expect(live.headers["x-accel-buffering"]).toBe("no");
    expect(live.headers["content-encoding"]).toBeUndefined();
    expect(live.raw.startsWith("retry: 3000\n\nevent: hello\ndata: {}\n\n")).toBe(true);
  });

  it("a message sent, and its copy delivered, is a dock event for that Dock, naming what moved", async () => {
    const dock = await createDock(alice, live, "Deploys");
    const sandbox = sandboxOf(service);
    const person = await sandbox.person("Reader");
    let mark = live.mark();
    await service.subscriptions.subscribe(dock.id, person, "private");
    await live.after(mark, isDock(dock.id, "subscribers"), "a dock event for the subscription");
    mark = live.mark();
    const sent = await fetch(`${service.url}/webhook`, {
      method: "POST",
      headers: { authorization: basic(dock.id, dock.secret_key), "content-type": "application/json" },
      body: JSON.stringify({ msg: "deployed" }),
    });
    expect(sent.status).toBe(202);
    const { message_id: id } = (await sent.json()) as { message_id: string };
    // Its messages moved, nothing else: the console reads the history again, not the Dock.
    const accepted = await live.after(mark, isDock(dock.id, "messages"), "a dock event for the message");
    expect(accepted.data.changed).toEqual(["messages"]);
    await waitFor("delivered", async () => (await sandbox.botTexts(person)).length === 1);
    // An edit of the message (the send API, another client altogether) is one too.
    mark = live.mark();
    const edited = await fetch(`${service.url}/messages/${id}`, {
      method: "PATCH",
      headers: { authorization: basic(dock.id, dock.secret_key), "content-type": "application/json" },
      body: JSON.stringify({ msg: "deployed, and checked" }),
    });
    expect(edited.status).toBe(202);
    await live.after(mark, isDock(dock.id, "messages"), "a dock event for the edit");
    mark = live.mark();
    expect((await alice.call("DELETE", `/docks/${dock.id}/subscribers/${person}`)).status).toBe(200);
    await live.after(mark, isDock(dock.id, "subscribers"), "a dock event for the removed subscriber");
  });

  it("a refused request is a dock event naming refused, and nothing else", async () => {
    const dock = await createDock(alice, live, "Refusing");
    const mark = live.mark();
    const refused = await fetch(`${service.url}/webhook`, {
      method: "POST",
      headers: { authorization: basic(dock.id, dock.secret_key), "content-type": "application/json" },
      body: "{",
    });
    expect(refused.status).toBe(400);
    const told = await live.after(mark, isDock(dock.id, "refused"), "a dock event for the refusal");
    expect(told.data.changed).toEqual(["refused"]);
  });

  it("editing, rotating and hook tokens are dock events; creating and deleting a Dock is docks", async () => {
    const dock = await createDock(alice, live, "Settings");
    for (const [method, path, body] of [
      ["PATCH", `/docks/${dock.id}`, { name: "Renamed" }],
      ["POST", `/docks/${dock.id}/rotate-secret`, undefined],
      ["POST", `/docks/${dock.id}/hook-token`, undefined],
    ] as const) {
      const mark = live.mark();
      expect((await alice.call(method, path, body)).status).toBe(200);
      const told = await live.after(mark, isDock(dock.id), `a dock event for ${method} ${path}`);
      // The change is written to the Dock's audit log too (issue 37), in the same moment.
      expect(told.data.changed, `${method} ${path}`).toEqual(["settings", "audit"]);
    }
    const mark = live.mark();
    expect((await alice.call("DELETE", `/docks/${dock.id}`)).status).toBe(200);
    await live.after(mark, (e) => e.event === "docks", "the list changed (deleted)");
  });

  it("says nothing of other people's Docks", async () => {
    const bobs = await EventStream.open(bob);
    try {
      const hers = await createDock(alice, live, "Hers");
      const his = await createDock(bob, bobs, "His");
      // Her change is told to her stream; his, made after it, to his: by then his stream would
      // have heard hers, had it been told.
      let mark = live.mark();
      expect((await alice.call("PATCH", `/docks/${hers.id}`, { name: "Hers, renamed" })).status).toBe(200);
      await live.after(mark, isDock(hers.id), "her dock event");
      mark = bobs.mark();
      expect((await bob.call("PATCH", `/docks/${his.id}`, { name: "His, renamed" })).status).toBe(200);
      await bobs.after(mark, isDock(his.id), "his dock event");
      expect(bobs.events.filter((e) => e.event === "dock").map((e) => e.data.id)).toEqual([his.id]);
      expect(JSON.stringify(bobs.events)).not.toContain(hers.id);
      expect(JSON.stringify(live.events)).not.toContain(his.id);
    } finally {
      bobs.close();
    }
  });

  it("five streams per session; the sixth is a 429 until one closes", async () => {
    const carol = await signIn(service, { id: 3003, first_name: "Carol" });
    const streams = [];
    for (let i = 0; i < 5; i++) streams.push(await EventStream.open(carol));
    const sixth = await carol.call("GET", "/stream");
    expect(sixth.status).toBe(429);
    expect(sixth.body).toEqual({
      ok: false,
      error: {
        code: "too_many_streams",
        message: "This session has too many live streams open; close other console tabs and try again.",
      },
    });
    // Another session of the same person has its own five.
    const elsewhere = await signIn(service, { id: 3003, first_name: "Carol" });
    const other = await EventStream.open(elsewhere);
    other.close();
    streams.pop()?.close();
    await waitFor("a place free", async () => (await fetchStatus(carol)) === 200);
    for (const stream of streams) stream.close();
  });

  it("a stream the browser left while its session was looked up holds no place (a reload in a loop)", async () => {
    const erin = await signIn(service, { id: 3006, first_name: "Erin" });
    const before = service.app.live.watching().streams;
    // Each request is dropped as soon as it is sent: some before the service looked the session
    // up, some during, some after.
    await Promise.all(
      Array.from({ length: 12 }, (_, i) => {
        const request = get(`${service.url}/console/api/stream`, {
          headers: { cookie: `dn_session=${erin.session}` },
          agent: false,
        });
        request.on("error", () => {});
        return new Promise<void>((resolve) => {
          request.on("close", () => resolve());
          request.on("socket", (socket) =>
            socket.on("connect", () => setTimeout(() => request.destroy(), i % 4)),
          );
        });
      }),
    );
    await waitFor(
      "nothing of the dropped streams held",
      () => service.app.live.watching().streams === before,
    );
    // All five places are Erin's to take.
    const streams = [];
    for (let i = 0; i < 5; i++) streams.push(await EventStream.open(erin));
    for (const stream of streams) stream.close();
  });

  it("ends with signed_out when the session ends, and forgets everything of closed streams", async () => {
    const dave = await signIn(service, { id: 3004, first_name: "Dave" });
    const first = await EventStream.open(dave);
    const second = await EventStream.open(dave);
    second.close();
    expect((await dave.call("POST", "/sign-out")).status).toBe(200);
    await first.after(0, (e) => e.event === "signed_out", "signed_out");
    await waitFor("the stream ended by the service", () => first.ended);
    // Every stream of Dave's, and of the tests before, closed: nothing of them is held or ticks.
    live.close();
    await waitFor("no stream watched", () => {
      const watching = service.app.live.watching();
      return watching.streams === 0 && watching.owners === 0 && watching.sessions === 0 && !watching.ticking;
    });
    live = await EventStream.open(alice);
  });

  it("a stream whose browser stopped reading is ended past its allowance, not kept growing", async () => {
    // The service's own hub, with a small allowance and a browser that never takes a byte.
    const hub = new LiveHub({
      stamps: new DockStamps(service.db),
      sessions: service.app.sessions,
      log: service.app.server.log,
      tickMs: 3_600_000,
      maxUnreadBytes: 200,
    });
    const frank = await signIn(service, { id: 3005, first_name: "Frank" });
    const session = sha256Hex(frank.session as string);
    let unread = 0;
    let aborted = false;
    await hub.open(3005, session, {
      write: (chunk) => {
        unread += chunk.length;
      },
      end: () => {},
      unread: () => unread,
      abort: () => {
        aborted = true;
      },
    });
    try {
      const dock = (await frank.call("POST", "/docks", { name: "Busy" })).body.dock;
      await hub.tick();
      for (let i = 0; !aborted && i < 20; i++) {
        expect((await frank.call("PATCH", `/docks/${dock.id}`, { name: `Busy ${i}` })).status).toBe(200);
        await hub.tick();
      }
      expect(aborted).toBe(true);
      expect(unread).toBeLessThan(200 + 100);
      expect(hub.watching()).toMatchObject({ streams: 0, owners: 0, sessions: 0, ticking: false });
    } finally {
      hub.close();
    }
  });

  it("neither opening nor closing a stream is an info log line", async () => {
    const lines = service.logs.lines.map((line) => JSON.parse(line) as { msg?: string; url?: string });
    expect(
      lines.filter((line) => line.url?.includes("/console/api/stream") && line.msg === "request"),
    ).toEqual(
      // The 429 and the 401 are logged, as every refused request is.
      lines.filter(
        (line) =>
          line.url === "/console/api/stream" && line.msg === "request" && (line as Json).status >= 400,
      ),
    );
    expect(lines.some((line) => line.msg === "stream closed prematurely")).toBe(false);
  });
});

/** The status of a new stream of `client`'s, which is closed at once. */
async function fetchStatus(client: ConsoleClient): Promise<number> {
  const stream = await EventStream.connect(client);
  stream.close();
  return stream.status;
}

describe.each(DIALECTS)("the console's live stream of who may sign in on %s", (dialect) => {
  it("tells administrators, and only them, when owners or invitations change", async () => {
    // OWNERS closes even the sandbox: 3301 is its administrator; 3302 an owner the CLI added.
    const service = await startService(dialect, { OWNERS: "3301" }, { pace: "unpaced" });
    try {
      expect(await service.app.owners.add(3302, "owner")).toBe("added");
      const boss = await signIn(service, { id: 3301, first_name: "Boss" });
      const owner = await signIn(service, { id: 3302, first_name: "Olga" });
      const bosses = await EventStream.open(boss);
      const owners = await EventStream.open(owner);
      const isOwners = (e: ServerEvent) => e.event === "owners";
      const told = async (what: string, change: () => Promise<unknown>) => {
        const mark = bosses.mark();
        await change();
        await bosses.after(mark, isOwners, `owners, after ${what}`);
      };
      try {
        let invite = "";
        await told("an invitation made", async () => {
          const made = await boss.call("POST", "/owners/invites");
          expect(made.status).toBe(201);
          invite = made.body.invite.id;
        });
        await told("an invitation withdrawn", async () => {
          expect((await boss.call("DELETE", `/owners/invites/${invite}`)).status).toBe(200);
        });
        // Changes made elsewhere (the CLI, another instance) are read from the database.
        await told("an owner added outside the console", () => service.app.owners.add(3303, "owner"));
        await told("a role changed", async () => {
          expect((await boss.call("PUT", "/owners/3303/role", { role: "admin" })).status).toBe(200);
        });
        await told("an owner's new Dock", async () => {
          expect((await owner.call("POST", "/docks", { name: "Olga's" })).status).toBe(201);
        });
        // The owner's stream heard its own Dock's list change, and nothing of the owners.
        await owners.after(0, (e) => e.event === "docks", "the owner's list changed");
        expect(owners.events.filter(isOwners)).toEqual([]);
      } finally {
        bosses.close();
        owners.close();
      }
    } finally {
      await service.close();
    }
  });
});

describe("the console's live stream as the service stops", () => {
  it("ends at once: stopping does not wait for the browsers to close them", async () => {
    const service = await startService("sqlite");
    const client = await signIn(service, { id: 3101 });
    const stream = await EventStream.open(client);
    await service.close();
    await waitFor("the stream ended", () => stream.ended);
    expect(service.app.live.watching()).toEqual({ streams: 0, owners: 0, sessions: 0, ticking: false });
  });
});

describe.runIf(DIALECTS.includes("postgres"))("the console's live stream through a database outage", () => {
  it("stays open, and says hello again once the database is back, so every page reads again", async () => {
    const service = await startService("postgres", { DATABASE_TIMEOUT_SECONDS: "2" });
    const name = new URL(service.config.databaseUrl).pathname.slice(1);
    try {
      const client = await signIn(service, { id: 3201, first_name: "Gail" });
      const stream = await EventStream.open(client);
      const hellos = () => stream.events.filter((e) => e.event === "hello").length;
      expect(hellos()).toBe(1);
      // Nobody may connect, and everyone connected is put out: the stream's reads fail.
      await admin(`alter database ${name} allow_connections false`, terminateAll(name));
      try {
        await waitFor("the stream's reads failing", () =>
          service.logs.text.includes("the console's live stream cannot read the database"),
        );
        expect(stream.ended).toBe(false);
      } finally {
        await admin(`alter database ${name} allow_connections true`);
      }
      await waitFor("hello again", () => hellos() === 2);
      expect(service.logs.text).toContain("the console's live stream reads the database again");
      stream.close();
    } finally {
      await service.close();
    }
  });
});
