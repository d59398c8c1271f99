import { createHmac } from "node:crypto";
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JOB_DEADLINE_MS, THREAD_TEXT_FROM } from "../../src/http/payload-thread.ts";
import type { DockWithSecret } from "../../src/store/docks.ts";
import { signIn } from "../helpers/console-client.ts";
import { basic, type RunningService, startService } from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON the service answered.
type Json = any;

/*
 * No single request stalls the service (issue 35): what a payload can make expensive is stopped by
 * a limit that really holds. Each test names the limit and asserts that it held, never how fast
 * anything was: a loaded machine stretches every time (bench:hostile measures them).
 */

/** The review's payload: 250,000 numbers (972 KB), and a filter LiquidJS cannot stop inside. */
const NUMBERS = JSON.stringify({ alerts: Array.from({ length: 250_000 }, (_, i) => i % 1000) });
const WHERE_EXP = '{{ payload.alerts | where_exp: "a", "a > 1 and a < 998" | size }}';

/** An Apprise xml:// body of 78,000 attributes (847 KB), as the review sent it. */
const ATTRIBUTES = `<?xml version="1.0"?><Notification ${Array.from({ length: 78_000 }, (_, i) => `a${i}="x"`).join(" ")}><Message>hi</Message></Notification>`;

describe("untrusted input is bounded", () => {
  let service: RunningService;

  beforeAll(async () => {
    service = await startService("sqlite", {
      AUTH_FAILURES_PER_MINUTE: "0",
      DOCK_RATE_BURST: "0",
      // Two bodies of the largest size fill the budget of unauthenticated bodies.
      INBOUND_MAX_BODY_BYTES: String(1024 * 1024),
      UNAUTHENTICATED_BODIES_MAX_BYTES: String(2 * 1024 * 1024),
      // Tells the budget's senders apart by X-Forwarded-For (one address may hold a quarter).
      TRUST_PROXY: "true",
    });
  });
  afterAll(async () => service?.close());

  const dockWithTemplate = async (text: string): Promise<DockWithSecret> => {
    const dock = await service.app.docks.create(1, { name: "Hostile", link: null, description: null });
    await service.app.docks.updateIntegrations(dock.id, { template: { text } });
    return dock;
  };
  const post = async (path: string, body: string, headers: Record<string, string>) => {
    const response = await fetch(`${service.url}${path}`, { method: "POST", headers, body });
    return { status: response.status, headers: response.headers, body: (await response.json()) as Json };
  };
  const asJson = (dock: DockWithSecret) => ({
    "content-type": "application/json",
    authorization: basic(dock.id, dock.secretKey),
  });

  it("a template's where_exp over 250,000 numbers is stopped at its deadline, while the event loop answers /healthz", async () => {
    const dock = await dockWithTemplate(WHERE_EXP);
    const answer = post("/webhook/template", NUMBERS, asJson(dock));
    // Seen from the event loop while the thread renders: the loop was free to look (a render on
    // the loop itself would have held it until the render ended).
    await waitFor("the render to run in its thread", () => service.app.payloadThread.working, 30_000, 5);
    const health = await fetch(`${service.url}/healthz`);
    expect(health.status).toBe(200);
    const stopped = await answer;
    expect(stopped.status).toBe(422);
    expect(stopped.body.error.code).toBe("template_failed");
    expect(stopped.body.error.fields).toEqual([
      {
        field: "template",
        message: `took too long: stopped after ${JOB_DEADLINE_MS} ms; a template may render for at most 100 ms, all fields together.`,
      },
    ]);
    // A new thread renders the next payload.
    await service.app.docks.updateIntegrations(dock.id, {
      template: { text: "{{ alerts | size }} numbers" },
    });
    const next = await post("/webhook/template", '{"alerts":[1,2,3]}', asJson(dock));
    expect(next.status).toBe(202);
  });

  it("takes a Dock's template time before each render starts: of five at once, the fifth is refused", async () => {
    // A second of template time; a render takes its deadline's worth first, and a stopped render
    // keeps it: four fit, the fifth is refused before it renders (charged after the render, all
    // five would start).
    const dock = await dockWithTemplate(WHERE_EXP);
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => post("/webhook/template", NUMBERS, asJson(dock))),
    );
    const codes = answers.map((a) => a.body.error?.code).sort();
    expect(codes).toEqual([
      "rate_limited",
      "template_failed",
      "template_failed",
      "template_failed",
      "template_failed",
    ]);
    const refused = answers.find((a) => a.status === 429);
    expect(Number(refused?.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
  });

  it("the console's preview renders in the same thread, with the same deadline", async () => {
    const console = await signIn(service, { id: 35, first_name: "Ada" });
    const created = await console.call("POST", "/docks", { name: "Preview" });
    expect(created.status).toBe(201);
    // Forty filters in one output: LiquidJS checks its time only between outputs.
    const chained = `{{ payload.alerts${' | where_exp: "a", "a >= 0"'.repeat(40)} | size }}`;
    const sample = JSON.stringify({ alerts: Array.from({ length: 16_000 }, (_, i) => i % 10) });
    const preview = await console.call("POST", `/docks/${created.body.dock.id}/integrations/preview`, {
      format: "template",
      template: { text: chained },
      sample,
    });
    expect(preview.status).toBe(422);
    expect(preview.body.error.fields[0].message).toMatch(/^took too long: stopped after/);
  });

  it("an Apprise XML body of 78,000 attributes is refused before it is parsed: 413 payload_too_complex", async () => {
    const dock = await service.app.docks.create(1, { name: "Apprise", link: null, description: null });
    const refused = await post("/webhook/apprise", ATTRIBUTES, {
      "content-type": "application/xml",
      authorization: basic(dock.id, dock.secretKey),
    });
    expect(refused.status).toBe(413);
    expect(refused.body).toEqual({
      ok: false,
      error: {
        code: "payload_too_complex",
        message:
          "This body is too complex to read as a apprise payload: the XML has more than 1,000 attributes (see docs/integrations.md).",
      },
    });
  });

  it("a form of more than 1,000 fields is refused before it is parsed (413 payload_too_complex), even before the key is checked", async () => {
    // A form's fields cost far more than their bytes: 9,500 names in 64 KiB to /ping took 1.5 s
    // to check for repeats, and a megabyte to a hook URL minutes.
    const dock = await service.app.docks.create(1, { name: "Form", link: null, description: null });
    const names = (count: number) => Array.from({ length: count }, (_, i) => `k${i}=`).join("&");
    const form = { "content-type": "application/x-www-form-urlencoded" };
    const refused = await post("/ping", `dock_id=${dock.id}&secret_key=wrong&msg=x&${names(9500)}`, form);
    expect(refused.status).toBe(413);
    expect(refused.body.error).toEqual({
      code: "payload_too_complex",
      message: "The form has more than 1,000 fields; send JSON instead.",
    });
    const token = (await service.app.docks.rotateHookToken(dock.id)) as string;
    const read = await post(`/hook/${token}`, `msg=Backup+done&${names(999)}`, form);
    expect(read.status).toBe(202);
  });

  describe("bodies read before their sender is known", () => {
    const MiB = 1024 * 1024;
    const open: Socket[] = [];
    afterAll(() => {
      for (const socket of open) socket.destroy();
    });

    /** A signed GitHub delivery's head (from `address`), declaring a body of `bytes`; its first answer line. */
    const signedHead = (dockId: string, address: string, bytes: number, body = "") => {
      const socket = connect(Number(new URL(service.url).port), "127.0.0.1");
      open.push(socket);
      const answer = new Promise<string>((resolve) => {
        let text = "";
        socket.on("data", (data: Buffer) => {
          text += data.toString("latin1");
          if (text.includes("\r\n\r\n")) resolve(text);
        });
        socket.on("error", () => resolve(text));
        socket.on("close", () => resolve(text));
      });
      socket.write(
        [
          `POST /webhook/github/${dockId} HTTP/1.1`,
          "Host: 127.0.0.1",
          "Content-Type: application/json",
          "X-GitHub-Event: ping",
          `X-Forwarded-For: ${address}`,
          `X-Hub-Signature-256: sha256=${"0".repeat(64)}`,
          `Content-Length: ${bytes}`,
          "",
          body,
        ].join("\r\n"),
      );
      return { socket, answer };
    };
    const held = async () => {
      const text = await (await fetch(`${service.url}/metrics`)).text();
      return Number(/^dock_notify_unauthenticated_body_bytes (\d+)/m.exec(text)?.[1]);
    };

    it("are held against one budget: past it, a delivery is answered 503 with Retry-After before its body is read", async () => {
      const dock = await service.app.docks.create(1, { name: "Signed", link: null, description: null });
      // Two unfinished deliveries of the largest size from two addresses fill the budget (2 MiB).
      const first = signedHead(dock.id, "203.0.113.1", MiB, "{");
      signedHead(dock.id, "203.0.113.2", MiB, "{");
      await waitFor("both bodies to be held", async () => (await held()) === 2 * MiB);
      // A third is refused at once: it has sent nothing of its body.
      const third = await signedHead(dock.id, "203.0.113.3", 100).answer;
      expect(third).toMatch(/^HTTP\/1\.1 503 /);
      expect(third).toMatch(/\r\nretry-after: 5\r\n/i);
      expect(third).toMatch(/\r\nconnection: close\r\n/i);
      expect(third).toContain('"code":"busy"');
      // A sender ending its body gets its answer, and gives its share back.
      first.socket.destroy();
      await waitFor("the first body to be let go", async () => (await held()) === MiB);
      const body = '{"zen":"Keep it logically awesome.","hook_id":1}';
      const signature = createHmac("sha256", dock.secretKey).update(body).digest("hex");
      const signed = await post(`/webhook/github/${dock.id}`, body, {
        "content-type": "application/json",
        "x-github-event": "ping",
        "x-forwarded-for": "203.0.113.3",
        "x-hub-signature-256": `sha256=${signature}`,
      });
      expect(signed.status).toBe(200);
      for (const socket of open.splice(0)) socket.destroy();
      await waitFor("every body to be let go", async () => (await held()) === 0);
    });

    it("one address holds at most a quarter of the budget (or one body of the largest size)", async () => {
      const dock = await service.app.docks.create(1, { name: "Signed 2", link: null, description: null });
      signedHead(dock.id, "198.51.100.7", MiB, "{");
      await waitFor("the body to be held", async () => (await held()) === MiB);
      // The budget has another MiB free, but not for this address.
      const again = await signedHead(dock.id, "198.51.100.7", 100).answer;
      expect(again).toMatch(/^HTTP\/1\.1 503 /);
      const other = await signedHead(dock.id, "198.51.100.8", 2, "{}").answer;
      expect(other).toMatch(/^HTTP\/1\.1 401 /);
    });
  });
});

describe("long formatted texts are read off the event loop", () => {
  /** The slowest Markdown we know for markdown-it: `**_` repeated (16,384 characters: 10–200 ms on the loop). */
  const stars = (characters: number) => "**_".repeat(Math.ceil(characters / 3)).slice(0, characters);
  const messages = async (service: RunningService, dockId: string) =>
    Number(
      (
        await service.db.kysely
          .selectFrom("messages")
          .select((e) => e.fn.countAll<number>().as("n"))
          .where("dock_id", "=", dockId)
          .executeTakeFirstOrThrow()
      ).n,
    );
  const send = async (
    service: RunningService,
    path: string,
    body: unknown,
    headers: Record<string, string> = {},
  ) => {
    const response = await fetch(`${service.url}${path}`, {
      method: path.startsWith("/messages/") ? "PATCH" : "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Json };
  };
  const stopped = (format: string, ms: number) => ({
    field: "msg",
    message: `took too long to read as ${format}: stopped after ${ms} ms. Send a shorter text, or it as plain text.`,
  });

  describe("at the thread's deadline", () => {
    let service: RunningService;
    beforeAll(async () => {
      // A million characters (MAX_MESSAGE_LENGTH's ceiling) of `**_` read in about a second, ten
      // times this deadline; a text of 2,100 in a millisecond.
      service = await startService(
        "sqlite",
        {
          AUTH_FAILURES_PER_MINUTE: "0",
          DOCK_RATE_BURST: "0",
          MAX_MESSAGE_LENGTH: "1000000",
          MAX_BODY_BYTES: String(4 * 1024 * 1024),
        },
        { threadDeadlineMs: 100 },
      );
    });
    afterAll(async () => service?.close());

    it("a million characters of Markdown are stopped at the deadline and refused (400, msg), while the event loop answers /healthz", async () => {
      const dock = await service.app.docks.create(1, { name: "Markdown", link: null, description: null });
      const auth = { authorization: basic(dock.id, dock.secretKey) };
      const answer = send(service, "/webhook", { msg: stars(1_000_000), format: "markdown" }, auth);
      await waitFor("the text to be read in its thread", () => service.app.payloadThread.working, 30_000, 5);
      expect((await fetch(`${service.url}/healthz`)).status).toBe(200);
      const refused = await answer;
      expect(refused.status).toBe(400);
      expect(refused.body.error.code).toBe("invalid_fields");
      expect(refused.body.error.fields).toEqual([stopped("Markdown", 100)]);
      expect(await messages(service, dock.id)).toBe(0);
      // A new thread reads the next one.
      const next = await send(
        service,
        "/webhook",
        { msg: `# Report\n\n${"*ok* ".repeat(420)}`, format: "markdown" },
        auth,
      );
      expect(next.status).toBe(202);
      expect(await messages(service, dock.id)).toBe(1);
    });
  });

  describe("with a deadline no long text meets", () => {
    let service: RunningService;
    let dock: DockWithSecret;
    beforeAll(async () => {
      service = await startService(
        "sqlite",
        { AUTH_FAILURES_PER_MINUTE: "0", DOCK_RATE_BURST: "0" },
        { threadDeadlineMs: 0 },
      );
      dock = await service.app.docks.create(1, { name: "Hasty", link: null, description: null });
    });
    afterAll(async () => service?.close());

    it("every door refuses a text its thread stopped, in the documented format, and stores nothing; shorter texts are read on the event loop", async () => {
      const auth = { authorization: basic(dock.id, dock.secretKey) };
      const token = (await service.app.docks.rotateHookToken(dock.id)) as string;
      const short = stars(THREAD_TEXT_FROM - 1);
      const sent = await send(service, "/webhook", { msg: short, format: "markdown" }, auth);
      expect(sent.status).toBe(202);
      const refusals = [
        await send(service, "/webhook", { msg: stars(16_384), format: "markdown" }, auth),
        await send(service, "/ping", {
          dock_id: dock.id,
          secret_key: dock.secretKey,
          msg: stars(16_384),
          format: "markdown",
        }),
        await send(service, `/hook/${token}`, { msg: "<b>x</b>".repeat(2000), format: "html" }),
        await send(service, `/messages/${sent.body.message_id}`, { msg: stars(THREAD_TEXT_FROM) }, auth),
      ];
      const formats = ["Markdown", "Markdown", "Telegram HTML", "Markdown"];
      for (const [i, refused] of refusals.entries()) {
        expect(refused.status, `request ${i}`).toBe(400);
        expect(refused.body).toEqual({
          ok: false,
          error: {
            code: "invalid_fields",
            message: expect.stringContaining("took too long"),
            fields: [stopped(formats[i] as string, 0)],
          },
        });
      }
      expect(await messages(service, dock.id)).toBe(1);
      // The short text went nowhere near the thread: the same text one character longer is refused.
      const ping = await send(service, "/ping", {
        dock_id: dock.id,
        secret_key: dock.secretKey,
        msg: short,
        format: "markdown",
      });
      expect(ping.status).toBe(202);
    });

    it("/ping checks the key before a long text is read: a wrong key or a placeholder is 401, whatever the text", async () => {
      const long = { msg: stars(16_384), format: "markdown" };
      const wrong = await send(service, "/ping", { dock_id: dock.id, secret_key: "dnsk_wrong", ...long });
      expect(wrong.status).toBe(401);
      expect(wrong.body.error.code).toBe("unauthorized");
      const unknown = await send(service, "/ping", {
        dock_id: "AAAAAAAAAAAAAAAAAAAAAA",
        secret_key: dock.secretKey,
        ...long,
      });
      expect(unknown.body).toEqual(wrong.body);
      const placeholder = await send(service, "/ping", {
        dock_id: dock.id,
        secret_key: "<SECRET_KEY>",
        ...long,
      });
      expect(placeholder.status).toBe(401);
      expect(placeholder.body.error.message).toMatch(/^<SECRET_KEY> is a placeholder/);
      // With the right key, the text is read (and here stopped).
      const right = await send(service, "/ping", { dock_id: dock.id, secret_key: dock.secretKey, ...long });
      expect(right.status).toBe(400);
    });
  });
});

describe("large JSON bodies are read off the event loop", () => {
  const KiB = 1024;
  /** JSON of `bytes` or a little more: `head`, then items `item(i)` until it is that long, then `tail`. */
  const filled = (head: string, item: (i: number) => string, tail: string, bytes: number) => {
    const items: string[] = [];
    for (let length = head.length + tail.length; length < bytes; length += (items.at(-1)?.length ?? 0) + 1)
      items.push(item(items.length));
    return `${head}${items.join(",")}${tail}`;
  };
  /** An Alertmanager group of `bytes`. */
  const alerts = (bytes: number) =>
    filled(
      '{"version":"4","groupKey":"{}:{}","status":"firing","receiver":"r","groupLabels":{},"commonLabels":{},"commonAnnotations":{},"externalURL":"https://am.example.com","alerts":[',
      (i) =>
        `{"status":"firing","labels":{"alertname":"DiskFull","instance":"db-${i}.example.com","severity":"critical"},"annotations":{"summary":"Disk ${i} is full"},"startsAt":"2026-11-28T10:00:00Z","fingerprint":"f${i}"}`,
      "]}",
      bytes,
    );
  const post = async (
    service: RunningService,
    path: string,
    body: string | Buffer,
    headers: Record<string, string>,
  ) => {
    const response = await fetch(`${service.url}${path}`, { method: "POST", headers, body });
    return { status: response.status, body: (await response.json()) as Json };
  };
  const json = { "content-type": "application/json" };
  const signed = (dock: DockWithSecret, body: string | Buffer) => ({
    ...json,
    "x-github-event": "push",
    "x-hub-signature-256": `sha256=${createHmac("sha256", dock.secretKey).update(body).digest("hex")}`,
  });
  /** A push of `bytes`, GitHub's shape. */
  const push = (bytes: number) =>
    filled(
      '{"ref":"refs/heads/main","repository":{"full_name":"o/r","html_url":"https://github.com/o/r"},"pusher":{"name":"ada"},"compare":"https://github.com/o/r/compare/a...b","commits":[',
      (i) =>
        `{"id":"${i.toString(16).padStart(40, "0")}","message":"Fix","author":{"name":"Ada"},"url":"https://github.com/o/r/commit/${i}"}`,
      "]}",
      bytes,
    );

  describe("read in the thread, answered as ever", () => {
    let service: RunningService;
    let dock: DockWithSecret;
    let token: string;
    beforeAll(async () => {
      service = await startService("sqlite", { AUTH_FAILURES_PER_MINUTE: "0", DOCK_RATE_BURST: "0" });
      dock = await service.app.docks.create(1, { name: "Large", link: null, description: null });
      token = (await service.app.docks.rotateHookToken(dock.id)) as string;
    });
    afterAll(async () => service?.close());

    it("a megabyte of alerts, a large message, a signed push and a template's payload are taken", async () => {
      const auth = { ...json, authorization: basic(dock.id, dock.secretKey) };
      const group = await post(service, "/webhook/alertmanager", alerts(1000 * KiB), auth);
      expect(group.status).toBe(202);
      expect(group.body.format).toBe("alertmanager");
      const text = (await service.app.messages.get(group.body.message_id))?.text;
      expect(text).toMatch(/DiskFull/);
      // A message of ours with 100 KiB beside it: its fields are picked out in the thread.
      const message = JSON.stringify({ msg: "Backup done", title: "Nightly", extra: "x".repeat(100 * KiB) });
      const sent = await post(service, `/hook/${token}`, message, json);
      expect(sent.status).toBe(202);
      const stored = await service.app.messages.get(sent.body.message_id);
      expect(stored?.text).toBe("Backup done");
      expect(stored?.content).toMatch(/"title":"Nightly"/);
      // JSON sent as a form (`curl -d @alerts.json`) is JSON too; detected as Alertmanager's.
      const another = alerts(100 * KiB).replace('"groupKey":"{}:{}"', '"groupKey":"{}:{hook}"');
      const form = await post(service, `/hook/${token}`, another, {
        "content-type": "application/x-www-form-urlencoded",
      });
      expect(form.body).toMatchObject({ format: "alertmanager" });
      const body = push(200 * KiB);
      const delivery = await post(service, `/webhook/github/${dock.id}`, body, signed(dock, body));
      expect(delivery.status).toBe(202);
      expect(delivery.body.format).toBe("github");
      const templated = await service.app.docks.create(1, {
        name: "Templated",
        link: null,
        description: null,
      });
      await service.app.docks.updateIntegrations(templated.id, {
        template: { text: "{{ alerts | size }} alerts" },
      });
      const rendered = await post(service, "/webhook/template", alerts(100 * KiB), {
        ...json,
        authorization: basic(templated.id, templated.secretKey),
      });
      expect(rendered.status).toBe(202);
      expect((await service.app.messages.get(rendered.body.message_id))?.text).toMatch(/^\d+ alerts$/);
    });

    it("a large body that is not UTF-8, not JSON, not an object or no format's is refused as a small one is", async () => {
      const large = (text: string) => text + " ".repeat(70 * KiB);
      const hook = (body: string | Buffer) => post(service, `/hook/${token}`, body, json);
      const auth = { ...json, authorization: basic(dock.id, dock.secretKey) };
      for (const [answer, code, message] of [
        [await hook(large("{nope")), "invalid_json", "The request body is not valid JSON."],
        [await hook(large("[1, 2]")), "invalid_json", "The request body must be a JSON object."],
        [
          await post(service, "/webhook/alertmanager", large("{nope"), auth),
          "invalid_json",
          "The request body is not valid JSON.",
        ],
        [
          await post(
            service,
            "/webhook/alertmanager",
            Buffer.concat([Buffer.from(large('{"a":"')), Buffer.from([0xff]), Buffer.from('"}')]),
            auth,
          ),
          "invalid_request",
          "The request body is not valid UTF-8.",
        ],
      ] as const) {
        expect(answer.status).toBe(400);
        expect(answer.body.error).toEqual({ code, message });
      }
      const unknown = await hook(large('{"items": [1, 2, 3]}'));
      expect(unknown.status).toBe(400);
      expect(unknown.body.error.code).toBe("unknown_format");
      const invalid = await post(service, "/webhook/alertmanager", large('{"alerts": 5}'), auth);
      expect(invalid.body.error).toEqual({
        code: "invalid_payload",
        message: "This body is not a valid alertmanager payload: alerts must be an array",
      });
      // A signed body is a JSON object, or refused before it is read any further.
      const array = large(`[${push(100)}]`);
      const refused = await post(service, `/webhook/github/${dock.id}`, array, signed(dock, array));
      expect(refused.status).toBe(400);
      expect(refused.body.error.code).toBe("invalid_payload");
    });
  });

  describe("with a deadline no body meets", () => {
    let service: RunningService;
    let dock: DockWithSecret;
    beforeAll(async () => {
      service = await startService(
        "sqlite",
        { AUTH_FAILURES_PER_MINUTE: "0", DOCK_RATE_BURST: "0" },
        { threadDeadlineMs: 0 },
      );
      dock = await service.app.docks.create(1, { name: "Hasty bodies", link: null, description: null });
    });
    afterAll(async () => service?.close());

    it(`every door reads a JSON body of ${64} KiB or more in the thread (stopped here: 413), a smaller one on the event loop`, async () => {
      const token = (await service.app.docks.rotateHookToken(dock.id)) as string;
      const auth = { ...json, authorization: basic(dock.id, dock.secretKey) };
      const body = push(1000 * KiB);
      const refusals = [
        await post(service, "/webhook/alertmanager", alerts(1000 * KiB), auth),
        await post(service, `/hook/${token}`, alerts(64 * KiB), json),
        await post(
          service,
          `/hook/${token}`,
          JSON.stringify({ msg: "m", extra: "x".repeat(64 * KiB) }),
          json,
        ),
        await post(service, `/hook/${token}/alertmanager`, alerts(64 * KiB), {
          "content-type": "application/x-www-form-urlencoded",
        }),
        await post(service, `/webhook/github/${dock.id}`, body, signed(dock, body)),
      ];
      for (const [i, refused] of refusals.entries()) {
        expect(refused.status, `request ${i}`).toBe(413);
        expect(refused.body.error).toEqual({
          code: "payload_too_complex",
          message: "This body took longer than 0 ms to read (see docs/integrations.md).",
        });
      }
      // (Its message short too: a long one's text would be read in the thread, and stopped.)
      const small = await post(service, "/webhook/alertmanager", alerts(300), auth);
      expect(small.status).toBe(202);
    });
  });
});
