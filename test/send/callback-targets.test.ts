import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HostResolver } from "../../src/delivery/callback-post.ts";
import { INTERNAL_FAILURE } from "../../src/delivery/event-sender.ts";
import type { DockWithSecret } from "../../src/store/docks.ts";
import { type ConsoleClient, signIn } from "../helpers/console-client.ts";
import { sandboxOf } from "../helpers/delivery-harness.ts";
import { basic, dialects, type RunningService, startService } from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON the service answered.
type Json = any;

const DIALECTS = await dialects();

/**
 * A real server on a loopback address that counts the connections made to it (a refused target
 * must see none) and answers each request with `answer` (200 when none).
 */
async function listener(
  host: string,
  answer: (request: IncomingMessage, response: ServerResponse) => void = (_q, r) => r.end(),
): Promise<{
  port: number;
  connections: number;
  requests: IncomingMessage[];
  close(): Promise<void>;
}> {
  const seen = { connections: 0, requests: [] as IncomingMessage[] };
  const server: Server = createServer((request, response) => {
    seen.requests.push(request);
    request.resume();
    request.on("end", () => answer(request, response));
  });
  server.on("connection", () => seen.connections++);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    port: (server.address() as AddressInfo).port,
    get connections() {
      return seen.connections;
    },
    requests: seen.requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** What the loopback refusal says when the URL holds a name (no address: see event-sender.ts). */
const NAMED_LOOPBACK =
  "the callback URL's host resolves to an address that is not allowed (loopback); see CALLBACK_ALLOWED_NETWORKS";

/** Forms of an address the operator did not allow, each with the reason it is refused for. */
const REFUSED: [url: (port: number) => string, reason: string][] = [
  [(p) => `http://127.0.0.1:${p}/events`, "loopback"],
  [(p) => `http://2130706433:${p}/events`, "loopback"],
  [(p) => `http://0x7f.1:${p}/events`, "loopback"],
  [(p) => `http://[::ffff:127.0.0.1]:${p}/events`, "loopback"],
  [(p) => `http://[::1]:${p}/events`, "loopback"],
  [(p) => `http://0.0.0.0:${p}/events`, "unspecified address"],
  [(p) => `http://[::]:${p}/events`, "unspecified address"],
  [(p) => `http://localhost:${p}/events`, "loopback"],
  [() => "http://10.0.0.5:8080/events", "private network"],
  [() => "http://172.16.4.4/events", "private network"],
  [() => "http://192.168.1.1/events", "private network"],
  [() => "http://100.64.0.1/events", "shared address space (carrier-grade NAT)"],
  [() => "http://169.254.169.254/latest/meta-data/", "link-local"],
  [() => "http://[fe80::1]/events", "link-local"],
  [() => "http://[fd00::5]/events", "private network (unique local)"],
  [() => "http://224.0.0.1/events", "multicast"],
  [() => "http://[ff02::1]/events", "multicast"],
  [() => "http://255.255.255.255/events", "broadcast"],
  [() => "http://192.0.2.1/events", "documentation range"],
  [() => "http://240.0.0.1/events", "reserved"],
  [() => "http://[::ffff:10.0.0.5]/events", "private network"],
  [() => "http://[64:ff9b::a00:5]/events", "private network"],
  [() => "http://[2002:a00:5::1]/events", "private network"],
  [() => "http://[::a00:5]/events", "reserved"],
];

describe.each(DIALECTS)("callback targets on %s", (dialect) => {
  let service: RunningService;
  let alice: ConsoleClient;
  /** Refused (loopback): must never see a connection. */
  let closed: Awaited<ReturnType<typeof listener>>;
  /** Names the test resolver knows; `flip.example.com` changes its answer during a test. */
  const names = new Map<string, { address: string; family: number }[]>([
    ["localhost", [{ address: "127.0.0.1", family: 4 }]],
    ["hooks.example.com", [{ address: "127.0.0.1", family: 4 }]],
    ["receiver.example.com", [{ address: "127.0.0.2", family: 4 }]],
    ["flip.example.com", [{ address: "127.0.0.2", family: 4 }]],
  ]);
  const resolveHost: HostResolver = async (hostname) => {
    const found = names.get(hostname);
    if (found === undefined) throw Object.assign(new Error(`no ${hostname}`), { code: "ENOTFOUND" });
    return found;
  };

  beforeAll(async () => {
    closed = await listener("127.0.0.1");
    // The operator's receivers live at 127.0.0.2; 127.0.0.1 (the service itself) is not allowed.
    service = await startService(
      dialect,
      { AUTH_FAILURES_PER_MINUTE: "0", DOCK_RATE_BURST: "0", CALLBACK_ALLOWED_NETWORKS: "127.0.0.2/32" },
      { resolveHost },
    );
    alice = await signIn(service, { id: 3001, first_name: "Alice" });
  });
  afterAll(async () => {
    await service?.close();
    await closed?.close();
  });

  /** A Dock with this callback URL stored as it is (as one set before the rule, or before the networks narrowed). */
  const dockAt = (url: string, name = "Hooked") =>
    service.app.docks.create(3001, { name, link: null, description: null, callback_url: url });
  /** Sends a message nobody is subscribed to: its `message.failed` event is queued at once. */
  const send = async (dock: DockWithSecret): Promise<string> => {
    const response = await fetch(`${service.url}/webhook`, {
      method: "POST",
      headers: { Authorization: basic(dock.id, dock.secretKey), "Content-Type": "application/json" },
      body: JSON.stringify({ msg: "disk full" }),
    });
    expect(response.status).toBe(202);
    return ((await response.json()) as Json).message_id;
  };
  const eventOf = (messageId: string) =>
    service.db.kysely.selectFrom("events").selectAll().where("message_id", "=", messageId).executeTakeFirst();
  const lastError = (messageId: string, what: string, matches: (error: string) => boolean) =>
    waitFor(what, async () => {
      const event = await eventOf(messageId);
      return event?.last_error != null && matches(event.last_error) ? event : undefined;
    });

  it("every refused form is a 400 when set, on create and on edit; an allowed address and a name are taken", async () => {
    const path = `/docks/${(await alice.call("POST", "/docks", { name: "Targets" })).body.dock.id}`;
    for (const [url, reason] of REFUSED) {
      const given = url(8080);
      const host = new URL(given).hostname;
      const expected = {
        ok: false,
        error: {
          code: "invalid_fields",
          message: "Some fields are not valid; see error.fields.",
          fields: [
            {
              field: "callback_url",
              message: `callback_url must not point to ${host} (${reason}): events go only to public addresses unless the operator allows the network with CALLBACK_ALLOWED_NETWORKS`,
            },
          ],
        },
      };
      const created = await alice.call("POST", "/docks", { name: "Refused", callback_url: given });
      expect({ url: given, status: created.status, body: created.body }).toEqual({
        url: given,
        status: 400,
        body: expected,
      });
      const edited = await alice.call("PATCH", path, { callback_url: given });
      expect({ url: given, status: edited.status, body: edited.body }).toEqual({
        url: given,
        status: 400,
        body: expected,
      });
    }
    expect((await alice.call("GET", path)).body.dock.callback_url).toBeNull();
    // The allowed network, in any spelling; a name is judged when events are posted.
    for (const url of [
      "http://127.0.0.2:8080/events",
      "http://[::ffff:127.0.0.2]/events",
      "https://hooks.example.com/",
    ]) {
      const edited = await alice.call("PATCH", path, { callback_url: url });
      expect({ url, status: edited.status }).toEqual({ url, status: 200 });
    }
    expect((await service.app.docks.list(3001)).map((dock) => dock.name)).not.toContain("Refused");
  });

  it("a stored URL to a refused address is refused when posting, with a clear last error and no connection", async () => {
    const sent: { given: string; id: string; expected: string }[] = [];
    for (const [url, reason] of REFUSED) {
      const given = url(closed.port);
      const host = new URL(given).hostname.replace(/^\[(.*)\]$/, "$1");
      sent.push({
        given,
        id: await send(await dockAt(given)),
        // An address written in the URL is quoted; a name's address is not (see event-sender.ts).
        expected:
          host === "localhost"
            ? NAMED_LOOPBACK
            : `callback address ${host} is not allowed (${reason}); see CALLBACK_ALLOWED_NETWORKS`,
      });
    }
    for (const { given, id, expected } of sent) {
      const event = await lastError(id, `the refusal of ${given}`, () => true);
      expect({ given, error: event.last_error }).toEqual({ given, error: expected });
    }
    expect(closed.connections).toBe(0);
  });

  it("a public-looking name that resolves to loopback: refused, no connection made, nothing secret told", async () => {
    const dock = await dockAt(`http://hooks.example.com:${closed.port}/events?token=tok_NOT_FOR_LOGS`);
    const id = await send(dock);
    const event = await lastError(id, "the refusal", (error) => error === NAMED_LOOPBACK);
    expect(event.state).toBe("queued");
    // Tried again later (the name may change), refused again, still without a connection.
    await waitFor("a second refused try", async () => ((await eventOf(id))?.attempts ?? 0) >= 2);
    expect(closed.connections).toBe(0);
    // The operator's log says which address; neither the log nor the error holds the URL's token or the key.
    expect(service.logs.text).toContain("callback address 127.0.0.1 is not allowed (loopback)");
    expect(service.logs.text).not.toContain("tok_NOT_FOR_LOGS");
    expect(service.logs.text).not.toContain(dock.secretKey);
    expect(event.last_error).not.toContain("127.0.0.1");
  });

  it("an allowed network's receiver takes its events, by address or by name (which it sees as its Host)", async () => {
    const receiver = await listener("127.0.0.2");
    try {
      const byAddress = await send(await dockAt(`http://127.0.0.2:${receiver.port}/events`));
      const byName = await send(await dockAt(`http://receiver.example.com:${receiver.port}/events`));
      for (const id of [byAddress, byName]) {
        await waitFor("the event taken", async () =>
          (await eventOf(id))?.state === "sent" ? true : undefined,
        );
      }
      expect(receiver.requests.map((request) => request.headers.host).sort()).toEqual(
        [`127.0.0.2:${receiver.port}`, `receiver.example.com:${receiver.port}`].sort(),
      );
      expect(receiver.requests.every((request) => request.headers["dock-signature"] !== undefined)).toBe(
        true,
      );
    } finally {
      await receiver.close();
    }
  });

  it("a redirect is not followed: the server it points to sees nothing", async () => {
    const target = await listener("127.0.0.2");
    const redirecting = await listener("127.0.0.2", (_request, response) =>
      response.writeHead(302, { location: `http://127.0.0.2:${target.port}/stolen` }).end(),
    );
    try {
      const id = await send(await dockAt(`http://127.0.0.2:${redirecting.port}/events`));
      // At an internal address: the owner is told it was not taken, the operator's log says why.
      const event = await lastError(id, "the redirect's outcome", (error) => error === INTERNAL_FAILURE);
      expect(event.state).toBe("queued");
      expect(redirecting.requests.length).toBeGreaterThan(0);
      expect(service.logs.lines.some((line) => JSON.parse(line).reason === "HTTP 302")).toBe(true);
      expect(target.connections).toBe(0);
    } finally {
      await redirecting.close();
      await target.close();
    }
  });

  it("every retry resolves and checks again: a name that turns to a refused address is refused", async () => {
    const failing = await listener("127.0.0.2", (_request, response) => response.writeHead(500).end());
    try {
      const id = await send(await dockAt(`http://flip.example.com:${failing.port}/events`));
      await waitFor("a post to the allowed address", () => failing.requests.length > 0);
      // The name now answers with an address the operator did not allow (DNS rebinding).
      names.set("flip.example.com", [{ address: "127.0.0.1", family: 4 }]);
      await lastError(id, "the refusal on a later try", (error) => error === NAMED_LOOPBACK);
      expect(closed.connections).toBe(0);
    } finally {
      await failing.close();
    }
  });
});

describe("the sandbox and callbacks", () => {
  let service: RunningService;

  beforeAll(async () => {
    // Loopback allowed: the service's own address (and so the sandbox's) can be a callback URL.
    service = await startService("sqlite", {
      AUTH_FAILURES_PER_MINUTE: "0",
      DOCK_RATE_BURST: "0",
      CALLBACK_ALLOWED_NETWORKS: "127.0.0.0/8",
    });
  });
  afterAll(async () => service?.close());

  it("an event posted to the sandbox's control API is refused: the person is not blocked", async () => {
    const sandbox = sandboxOf(service);
    const person = await sandbox.person("Ada");
    const dock = await service.app.docks.create(1, {
      name: "Blocker",
      link: null,
      description: null,
      callback_url: `${service.url}/sandbox/api/users/${person}/block`,
    });
    const response = await fetch(`${service.url}/webhook`, {
      method: "POST",
      headers: { Authorization: basic(dock.id, dock.secretKey), "Content-Type": "application/json" },
      body: JSON.stringify({ msg: "block them" }),
    });
    const id = ((await response.json()) as Json).message_id;
    const event = await waitFor("the event posted", async () => {
      const found = await service.db.kysely
        .selectFrom("events")
        .selectAll()
        .where("message_id", "=", id)
        .executeTakeFirst();
      return found !== undefined && found.attempts > 0 && found.state !== "sending" ? found : undefined;
    });
    expect(event).toMatchObject({ state: "queued", last_error: INTERNAL_FAILURE });
    expect(service.logs.lines.some((line) => JSON.parse(line).reason === "HTTP 403")).toBe(true);
    const chats: Json[] = await sandbox.control("GET", "/chats");
    expect(chats.find((chat) => chat.id === person)?.blocked).toBe(false);
    // A person's request with the event's signature header is refused just the same.
    const forged = await fetch(`${service.url}/sandbox/api/users/${person}/block`, {
      method: "POST",
      headers: { "Dock-Signature": "t=1,v1=00" },
    });
    expect(forged.status).toBe(403);
    expect(((await forged.json()) as Json).error.code).toBe("sandbox_not_local");
  });
});
