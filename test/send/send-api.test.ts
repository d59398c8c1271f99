import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { DockWithSecret } from "../../src/store/docks.ts";
import { basic, dialects, type RunningService, startService } from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

const DIALECTS = await dialects();

interface Answer {
  status: number;
  headers: Headers;
  body: { ok: boolean; message_id?: string; subscribers?: number; error?: { code: string; message: string } };
}

async function post(
  url: string,
  body: string | Uint8Array | undefined,
  headers: Record<string, string> = {},
  method = "POST",
): Promise<Answer> {
  const response = await fetch(url, { method, body, headers });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : {} };
}

const json = { "Content-Type": "application/json" };
const bytes = (text: string) => new TextEncoder().encode(text);

describe.each(DIALECTS)("send API on %s", (dialect) => {
  let service: RunningService;
  let dock: DockWithSecret;
  let other: DockWithSecret;

  beforeAll(async () => {
    // Limits are exercised by their own suite below; here they would only get in the way.
    service = await startService(dialect, { AUTH_FAILURES_PER_MINUTE: "0", DOCK_RATE_BURST: "0" });
    dock = await service.app.docks.create(1001, { name: "Deploys", link: null, description: null });
    other = await service.app.docks.create(1002, { name: "Other", link: null, description: null });
  });
  afterAll(async () => service.close());

  const ping = (body: unknown, headers: Record<string, string> = json) =>
    post(`${service.url}/ping`, typeof body === "string" ? body : JSON.stringify(body), headers);
  const webhook = (body: string | Uint8Array, headers: Record<string, string>) =>
    post(`${service.url}/webhook`, body, headers);
  const creds = () => ({ dock_id: dock.id, secret_key: dock.secretKey });
  const messageCount = async () =>
    Number(
      (
        await service.db.kysely
          .selectFrom("messages")
          .select((e) => e.fn.countAll<number>().as("n"))
          .executeTakeFirstOrThrow()
      ).n,
    );
  const storedText = async (messageId: string | undefined) =>
    (await service.app.messages.get(messageId ?? ""))?.text;

  describe("accepted", () => {
    it("202 with message_id and subscriber count for /ping, and the message is stored", async () => {
      const answer = await ping({ ...creds(), msg: "Build #42 passed" });
      expect(answer.status).toBe(202);
      expect(answer.body).toEqual({
        ok: true,
        message_id: expect.stringMatching(/^msg_[A-Za-z0-9]{22}$/),
        subscribers: 0,
      });
      expect(await storedText(answer.body.message_id)).toBe("Build #42 passed");
    });

    it("a UTF-8 byte order mark before the body is not part of it (some Windows clients send one)", async () => {
      const bom = Buffer.from([0xef, 0xbb, 0xbf]);
      const answer = await post(
        `${service.url}/ping`,
        Buffer.concat([bom, Buffer.from(JSON.stringify({ ...creds(), msg: "from Windows" }))]),
        json,
      );
      expect(answer.status).toBe(202);
      expect(await storedText(answer.body.message_id)).toBe("from Windows");
      const text = await webhook(Buffer.concat([bom, Buffer.from("plain")]), {
        "Content-Type": "text/plain",
        Authorization: basic(dock.id, dock.secretKey),
      });
      expect(text.status).toBe(202);
      expect(await storedText(text.body.message_id)).toBe("plain");
    });

    it("202 for /webhook with Basic credentials and a JSON body", async () => {
      const answer = await webhook(JSON.stringify({ msg: "from webhook" }), {
        ...json,
        Authorization: basic(dock.id, dock.secretKey),
      });
      expect(answer.status).toBe(202);
      expect(await storedText(answer.body.message_id)).toBe("from webhook");
    });

    it("/webhook with text/plain takes the raw body as the message", async () => {
      const raw = '{"not": "parsed"}\nsecond line ✅';
      const answer = await webhook(raw, {
        "Content-Type": "text/plain; charset=utf-8",
        Authorization: basic(dock.id, dock.secretKey),
      });
      expect(answer.status).toBe(202);
      expect(await storedText(answer.body.message_id)).toBe(raw);
    });

    it("/webhook takes a form body without a msg field as the text, as ntfy does with `curl -d`", async () => {
      const form = { "Content-Type": "application/x-www-form-urlencoded" };
      for (const raw of ["hello", "Disk at 95% on db-1", "a=b&c=d"]) {
        const answer = await webhook(raw, { ...form, Authorization: basic(dock.id, dock.secretKey) });
        expect(answer.status).toBe(202);
        expect(await storedText(answer.body.message_id)).toBe(raw);
      }
    });

    it("a JSON object without Content-Type is accepted (both endpoints)", async () => {
      const a = await post(`${service.url}/ping`, bytes(JSON.stringify({ ...creds(), msg: "no type" })));
      expect(a.status).toBe(202);
      const b = await post(`${service.url}/webhook`, bytes('{"msg":"no type either"}'), {
        Authorization: basic(dock.id, dock.secretKey),
      });
      expect(b.status).toBe(202);
      expect(await storedText(b.body.message_id)).toBe("no type either");
    });

    it("a JSON object sent as application/x-www-form-urlencoded (plain curl -d) is accepted", async () => {
      const form = { "Content-Type": "application/x-www-form-urlencoded" };
      const answer = await ping(JSON.stringify({ ...creds(), msg: "curl -d" }), form);
      expect(answer.status).toBe(202);
      expect(await storedText(answer.body.message_id)).toBe("curl -d");
    });

    it("real form fields are accepted too", async () => {
      const form = new URLSearchParams({ ...creds(), msg: "a form & more" }).toString();
      const answer = await ping(form, { "Content-Type": "application/x-www-form-urlencoded" });
      expect(answer.status).toBe(202);
      expect(await storedText(answer.body.message_id)).toBe("a form & more");
    });

    it("keeps newlines and every script and emoji exactly, as read back from the database", async () => {
      const msg = "Line 1\nLine 2\r\n\ttabbed 🚀👩‍👩‍👧 漢字 עברית العربية Ünïcödé \u200d end";
      const raw = `{"dock_id":"${dock.id}","secret_key":"${dock.secretKey}","msg":${JSON.stringify(msg)}}`;
      const answer = await ping(raw);
      expect(answer.status).toBe(202);
      expect(await storedText(answer.body.message_id)).toBe(msg);
      expect(raw).toContain("\\n");
    });

    it("counts and queues one delivery per active subscriber", async () => {
      const fresh = await service.app.docks.create(1003, {
        name: "Subscribed",
        link: null,
        description: null,
      });
      for (const chat of [11, 12, 13, 14]) await service.subscriptions.subscribe(fresh.id, chat, "private");
      expect(await service.subscriptions.transition(14, "active", "blocked", fresh.id)).toBe(1);
      const answer = await ping({ dock_id: fresh.id, secret_key: fresh.secretKey, msg: "hello all" });
      expect(answer.body.subscribers).toBe(3);
      // The dispatcher fans the message out into one delivery per active subscriber; it may
      // already be sending them: which chats got one is what matters here.
      const deliveriesOf = () =>
        service.db.kysely
          .selectFrom("deliveries")
          .select(["chat_id"])
          .where("message_id", "=", answer.body.message_id ?? "")
          .orderBy("chat_id")
          .execute();
      await waitFor("the message fanned out", async () => (await deliveriesOf()).length >= 3);
      expect(await deliveriesOf()).toEqual([{ chat_id: 11 }, { chat_id: 12 }, { chat_id: 13 }]);
    });
  });

  describe("400 for a malformed body or field, naming the field", () => {
    const cases: [string, () => string, string, RegExp][] = [
      ["not JSON", () => "{nope", "invalid_json", /not valid JSON/],
      ["an empty body", () => "", "invalid_json", /empty/],
      ["a JSON array", () => "[1,2]", "invalid_json", /JSON object/],
      ["a JSON string", () => '"hello"', "invalid_json", /JSON object/],
      ["JSON null", () => "null", "invalid_json", /JSON object/],
      [
        "missing dock_id",
        () => JSON.stringify({ secret_key: "x", msg: "m" }),
        "invalid_request",
        /dock_id is required/,
      ],
      [
        "missing secret_key",
        () => JSON.stringify({ dock_id: "x", msg: "m" }),
        "invalid_request",
        /secret_key is required/,
      ],
      [
        "missing msg",
        () => JSON.stringify({ dock_id: "x", secret_key: "y" }),
        "invalid_request",
        /msg is required/,
      ],
      [
        "a number msg",
        () => JSON.stringify({ dock_id: "x", secret_key: "y", msg: 5 }),
        "invalid_request",
        /msg must be a string/,
      ],
      [
        "a null dock_id",
        () => JSON.stringify({ dock_id: null, secret_key: "y", msg: "m" }),
        "invalid_request",
        /dock_id must be a string/,
      ],
      [
        "an array secret_key",
        () => JSON.stringify({ dock_id: "x", secret_key: ["y"], msg: "m" }),
        "invalid_request",
        /secret_key must be a string/,
      ],
      [
        "an empty msg",
        () => JSON.stringify({ dock_id: "x", secret_key: "y", msg: "" }),
        "invalid_request",
        /msg must not be empty/,
      ],
      [
        "a whitespace msg",
        () => JSON.stringify({ dock_id: "x", secret_key: "y", msg: " \n\t\u3000 " }),
        "invalid_request",
        /msg must not be empty/,
      ],
      [
        "a lone surrogate in msg",
        () => '{"dock_id":"x","secret_key":"y","msg":"bad \\ud800 here"}',
        "invalid_request",
        /msg contains invalid Unicode/,
      ],
    ];
    it.each(cases)("%s", async (_name, body, code, message) => {
      const answer = await ping(body());
      expect(answer.status).toBe(400);
      expect(answer.body.ok).toBe(false);
      expect(answer.body.error?.code).toBe(code);
      expect(answer.body.error?.message).toMatch(message);
    });

    it("a form field given twice, rather than keeping one of them", async () => {
      const form = `dock_id=${dock.id}&secret_key=${dock.secretKey}&msg=first&msg=second`;
      const answer = await ping(form, { "Content-Type": "application/x-www-form-urlencoded" });
      expect(answer.status).toBe(400);
      expect(answer.body.error).toEqual({ code: "invalid_request", message: "msg is given more than once." });
    });

    it("plain `curl -d 'hello'` on /ping is told what to send instead", async () => {
      const form = { "Content-Type": "application/x-www-form-urlencoded" };
      const toPing = await ping("hello", form);
      expect(toPing.status).toBe(400);
      expect(toPing.body.error?.message).toMatch(/application\/json/);
    });

    it("invalid UTF-8 bytes", async () => {
      const body = Buffer.concat([
        Buffer.from('{"dock_id":"x","secret_key":"y","msg":"'),
        Buffer.from([0xff, 0xfe]),
        Buffer.from('"}'),
      ]);
      const answer = await post(`${service.url}/ping`, body, json);
      expect(answer.status).toBe(400);
      expect(answer.body.error?.message).toMatch(/UTF-8/);
    });

    it("invalid UTF-8 on every door, raw or percent-escaped in a form: 400, nothing stored", async () => {
      const before = await messageCount();
      const auth = { Authorization: basic(dock.id, dock.secretKey) };
      const form = { ...auth, "Content-Type": "application/x-www-form-urlencoded" };
      const token = await service.app.docks.rotateHookToken(dock.id);
      for (const bad of [Buffer.from([0xc3, 0x28]), Buffer.from([0xff])]) {
        const wrapped = (head: string, tail: string) =>
          Buffer.concat([Buffer.from(head), bad, Buffer.from(tail)]);
        const escaped = [...bad].map((byte) => `%${byte.toString(16).toUpperCase()}`).join("");
        const creds = `"dock_id":"${dock.id}","secret_key":"${dock.secretKey}"`;
        const refused = [
          await post(`${service.url}/ping`, wrapped(`{${creds},"msg":"a`, '"}'), json),
          await webhook(wrapped('{"msg":"a', '"}'), { ...auth, ...json }),
          await webhook(wrapped("a", ""), { ...auth, "Content-Type": "text/plain" }),
          await webhook(`msg=a${escaped}&title=t`, form),
          await webhook(`a${escaped}`, form),
          await post(
            `${service.url}/ping`,
            `dock_id=${dock.id}&secret_key=${dock.secretKey}&msg=a${escaped}`,
            {
              "Content-Type": "application/x-www-form-urlencoded",
            },
          ),
          await post(`${service.url}/webhook/slack`, wrapped('{"text":"a', '"}'), { ...auth, ...json }),
          await post(
            `${service.url}/webhook/slack`,
            `payload=${encodeURIComponent('{"text":"a')}${escaped}%22%7D`,
            form,
          ),
          await post(`${service.url}/hook/${token}`, wrapped('{"msg":"a', '"}'), json),
        ];
        for (const [n, answer] of refused.entries()) {
          expect(answer.status, `${bad.toString("hex")}, request ${n}`).toBe(400);
          expect(answer.body.error?.code).toBe("invalid_request");
          expect(answer.body.error?.message).toMatch(/UTF-8/);
        }
      }
      // A lone % in a form is text, as before.
      expect((await webhook("msg=100%&title=t", form)).status).toBe(202);
      expect(await messageCount()).toBe(before + 1);
    });

    it("the same rules hold on /webhook", async () => {
      const auth = { ...json, Authorization: basic(dock.id, dock.secretKey) };
      expect((await webhook("{nope", auth)).body.error?.code).toBe("invalid_json");
      expect((await webhook("{}", auth)).body.error?.message).toMatch(/msg is required/);
      expect((await webhook('{"msg":"  "}', auth)).status).toBe(400);
      const lone = await webhook('{"msg":"\\udc00"}', auth);
      expect(lone.body.error?.message).toMatch(/invalid Unicode/);
      const plain = await webhook("   ", {
        "Content-Type": "text/plain",
        Authorization: basic(dock.id, dock.secretKey),
      });
      expect(plain.status).toBe(400);
    });

    it("an invalid body is not stored", async () => {
      const before = await service.db.kysely
        .selectFrom("messages")
        .select((e) => e.fn.countAll<number>().as("n"))
        .executeTakeFirstOrThrow();
      await ping({ ...creds(), msg: "" });
      const after = await service.db.kysely
        .selectFrom("messages")
        .select((e) => e.fn.countAll<number>().as("n"))
        .executeTakeFirstOrThrow();
      expect(Number(after.n)).toBe(Number(before.n));
    });
  });

  describe("401 for unknown Docks and wrong keys alike", () => {
    it("one identical answer for an unknown Dock, a wrong key and another Dock's key", async () => {
      const unknown = await ping({ dock_id: "AAAAAAAAAAAAAAAAAAAAAA", secret_key: dock.secretKey, msg: "m" });
      const wrong = await ping({ dock_id: dock.id, secret_key: "dnsk_wrong", msg: "m" });
      const crossed = await ping({ dock_id: dock.id, secret_key: other.secretKey, msg: "m" });
      for (const answer of [unknown, wrong, crossed]) {
        expect(answer.status).toBe(401);
        expect(answer.body).toEqual(unknown.body);
      }
      expect(unknown.body.error?.code).toBe("unauthorized");
    });

    it("/webhook answers 401 with WWW-Authenticate for a missing, malformed or wrong header", async () => {
      const headers: Record<string, string>[] = [
        {},
        { Authorization: "Bearer abc" },
        { Authorization: "Basic !!!" },
        { Authorization: `Basic ${Buffer.from("no-colon").toString("base64")}` },
        { Authorization: basic(dock.id, "wrong") },
        { Authorization: basic("unknown", dock.secretKey) },
      ];
      const answers = await Promise.all(headers.map((h) => webhook('{"msg":"m"}', { ...json, ...h })));
      for (const answer of answers) {
        expect(answer.status).toBe(401);
        expect(answer.headers.get("www-authenticate")).toMatch(/^Basic realm="dock-notify"/);
      }
      // Every wrong credential answers alike; none at all says how to send them (it tells nothing).
      for (const answer of answers.slice(1)) expect(answer.body).toEqual(answers[1]?.body);
      expect(answers[0]?.body.error?.code).toBe("unauthorized");
      expect(answers[0]?.body.error?.message).toMatch(/^No credentials: .*curl -u/);
    });

    it("code copied with its placeholders still in is told so (both endpoints), and stores nothing", async () => {
      const before = await messageCount();
      const viaPing = await ping({ dock_id: dock.id, secret_key: "<SECRET_KEY>", msg: "m" });
      expect(viaPing.status).toBe(401);
      expect(viaPing.body.error?.code).toBe("unauthorized");
      expect(viaPing.body.error?.message).toMatch(
        /^<SECRET_KEY> is a placeholder: put in your Dock's ID and secret key/,
      );
      const both = await webhook('{"msg":"m"}', {
        ...json,
        Authorization: basic("<DOCK_ID>", "<SECRET_KEY>"),
      });
      expect(both.status).toBe(401);
      expect(both.headers.get("www-authenticate")).toMatch(/^Basic realm="dock-notify"/);
      expect(both.body.error?.message).toMatch(/^<DOCK_ID> and <SECRET_KEY> are placeholders/);
      expect(await messageCount()).toBe(before);
      // The edit and delete commands' <MESSAGE_ID>, left in: the 404 says what goes there.
      for (const method of ["PATCH", "DELETE"]) {
        const answer = await fetch(`${service.url}/messages/<MESSAGE_ID>`, {
          method,
          headers: { ...json, Authorization: basic(dock.id, dock.secretKey) },
          ...(method === "PATCH" ? { body: '{"msg":"x"}' } : {}),
        });
        expect(answer.status).toBe(404);
        expect(((await answer.json()) as { error: { message: string } }).error.message).toMatch(
          /^<MESSAGE_ID> is a placeholder: put in the message_id/,
        );
      }
    });
  });

  describe("size limits", () => {
    it("413 payload_too_large for a body over MAX_BODY_BYTES", async () => {
      const answer = await ping({ ...creds(), msg: "x".repeat(70 * 1024) });
      expect(answer.status).toBe(413);
      expect(answer.body.error?.code).toBe("payload_too_large");
    });

    it("413 message_too_long for msg over MAX_MESSAGE_LENGTH (UTF-16 units), the limit itself accepted", async () => {
      const limit = service.config.maxMessageLength;
      expect((await ping({ ...creds(), msg: "y".repeat(limit) })).status).toBe(202);
      const over = await ping({ ...creds(), msg: `${"y".repeat(limit - 1)}😀` });
      expect(over.status).toBe(413);
      expect(over.body.error?.code).toBe("message_too_long");
    });
  });

  describe("content types", () => {
    it.each(["text/plain", "application/xml", "multipart/form-data; boundary=x"])(
      "415 for %s on /ping",
      async (type) => {
        const answer = await ping(JSON.stringify({ ...creds(), msg: "m" }), { "Content-Type": type });
        expect(answer.status).toBe(415);
        expect(answer.body.error?.code).toBe("unsupported_media_type");
      },
    );

    it("on /webhook, XML is only a tool's (Apprise's xml://): other XML is 400, other types 415", async () => {
      const auth = { Authorization: basic(dock.id, dock.secretKey) };
      const xml = await webhook("<msg/>", { "Content-Type": "application/xml", ...auth });
      expect(xml.status).toBe(400);
      expect(xml.body.error?.code).toBe("unknown_format");
      const image = await webhook("\x89PNG", { "Content-Type": "image/png", ...auth });
      expect(image.status).toBe(415);
    });
  });

  describe("methods", () => {
    it.each(["GET", "PUT", "DELETE", "PATCH"])("405 with Allow: POST for %s", async (method) => {
      for (const path of ["/ping", "/webhook"]) {
        const answer = await post(`${service.url}${path}`, method === "GET" ? undefined : "{}", json, method);
        expect(answer.status).toBe(405);
        expect(answer.headers.get("allow")).toBe("POST");
        expect(answer.body.error?.code).toBe("method_not_allowed");
      }
    });

    it("405 also for methods no route knows (PROPFIND, LOCK)", async () => {
      for (const method of ["PROPFIND", "LOCK"]) {
        const answer = await post(`${service.url}/ping`, undefined, {}, method);
        expect(answer.status).toBe(405);
        expect(answer.headers.get("allow")).toBe("POST");
      }
    });

    it("404 in the error format for an unknown path", async () => {
      const answer = await post(`${service.url}/nope`, "{}", json);
      expect(answer.status).toBe(404);
      expect(answer.body.error?.code).toBe("not_found");
    });
  });

  describe("message status", () => {
    it("a message sent while nobody was subscribed says so", async () => {
      const accepted = await ping({ ...creds(), msg: "into the void" });
      const response = await fetch(`${service.url}/messages/${accepted.body.message_id}`, {
        headers: { authorization: basic(dock.id, dock.secretKey) },
      });
      const body = (await response.json()) as { message: { state: string; subscribers: number } };
      expect(body.message).toMatchObject({ state: "no_subscribers", subscribers: 0 });
    });
  });

  describe("Idempotency-Key", () => {
    it("a repeat within 24 h returns the first answer and stores nothing new", async () => {
      const key = { ...json, "Idempotency-Key": `deploy-${dialect}-1` };
      const first = await ping({ ...creds(), msg: "once" }, key);
      const second = await ping({ ...creds(), msg: "once" }, key);
      expect(first.status).toBe(202);
      expect(second.status).toBe(202);
      expect(second.body).toEqual(first.body);
      expect(second.headers.get("idempotent-replayed")).toBe("true");
      const rows = await service.db.kysely
        .selectFrom("messages")
        .select("id")
        .where("idempotency_key", "=", `deploy-${dialect}-1`)
        .execute();
      expect(rows).toHaveLength(1);
    });

    it("the same key with a different message is 422", async () => {
      const key = { ...json, "Idempotency-Key": `deploy-${dialect}-2` };
      expect((await ping({ ...creds(), msg: "first" }, key)).status).toBe(202);
      const conflict = await ping({ ...creds(), msg: "second" }, key);
      expect(conflict.status).toBe(422);
      expect(conflict.body.error?.code).toBe("idempotency_conflict");
    });

    it("keys are per Dock, and /webhook honours them too", async () => {
      const key = `shared-${dialect}`;
      const a = await ping({ ...creds(), msg: "m" }, { ...json, "Idempotency-Key": key });
      const b = await webhook('{"msg":"m"}', {
        ...json,
        "Idempotency-Key": key,
        Authorization: basic(other.id, other.secretKey),
      });
      const c = await webhook('{"msg":"m"}', {
        ...json,
        "Idempotency-Key": key,
        Authorization: basic(dock.id, dock.secretKey),
      });
      expect(b.body.message_id).not.toBe(a.body.message_id);
      expect(c.body.message_id).toBe(a.body.message_id);
    });

    it("concurrent repeats of one key store one message", async () => {
      const key = { ...json, "Idempotency-Key": `race-${dialect}` };
      const answers = await Promise.all(
        Array.from({ length: 8 }, () => ping({ ...creds(), msg: "race" }, key)),
      );
      expect(new Set(answers.map((a) => a.status))).toEqual(new Set([202]));
      expect(new Set(answers.map((a) => a.body.message_id)).size).toBe(1);
    });

    it("400 for a key over 255 characters", async () => {
      const answer = await ping({ ...creds(), msg: "m" }, { ...json, "Idempotency-Key": "k".repeat(256) });
      expect(answer.status).toBe(400);
      expect(answer.body.error?.message).toMatch(/Idempotency-Key/);
    });
  });
});

describe("rate limits", () => {
  let service: RunningService;
  let dock: DockWithSecret;

  beforeEach(async () => {
    service = await startService("sqlite", {
      AUTH_FAILURES_PER_MINUTE: "3",
      DOCK_RATE_BURST: "2",
      DOCK_RATE_PER_SECOND: "0.01",
    });
    dock = await service.app.docks.create(7, { name: "Limited", link: null, description: null });
    return () => service.close();
  });

  it("429 with Retry-After after too many failed authentications from one address, even with the right key", async () => {
    for (let i = 0; i < 3; i++) {
      const answer = await post(
        `${service.url}/ping`,
        JSON.stringify({ dock_id: dock.id, secret_key: "wrong", msg: "m" }),
        json,
      );
      expect(answer.status).toBe(401);
    }
    const blocked = await post(`${service.url}/webhook`, '{"msg":"m"}', {
      ...json,
      Authorization: basic(dock.id, dock.secretKey),
    });
    expect(blocked.status).toBe(429);
    expect(blocked.body.error?.code).toBe("too_many_auth_failures");
    expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  it("429 with Retry-After when a Dock exceeds its burst; nothing stored for the refused message", async () => {
    const send = (msg: string) =>
      post(
        `${service.url}/ping`,
        JSON.stringify({ dock_id: dock.id, secret_key: dock.secretKey, msg }),
        json,
      );
    expect((await send("1")).status).toBe(202);
    expect((await send("2")).status).toBe(202);
    const refused = await send("3");
    expect(refused.status).toBe(429);
    expect(refused.body.error?.code).toBe("rate_limited");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    const stored = await service.db.kysely
      .selectFrom("messages")
      .select("text")
      .where("dock_id", "=", dock.id)
      .execute();
    expect(stored.map((m) => m.text)).toEqual(["1", "2"]);
  });

  it("a wrong key does not spend the Dock's allowance", async () => {
    const send = (secretKey: string, msg: string) =>
      post(`${service.url}/ping`, JSON.stringify({ dock_id: dock.id, secret_key: secretKey, msg }), json);
    // Two strangers' attempts (under the failed-authentication limit of 3)…
    expect((await send("wrong", "a")).status).toBe(401);
    expect((await send("dnsk_wrong", "b")).status).toBe(401);
    // …and the owner still has the whole burst.
    expect((await send(dock.secretKey, "1")).status).toBe(202);
    expect((await send(dock.secretKey, "2")).status).toBe(202);
    expect((await send(dock.secretKey, "3")).status).toBe(429);
  });
});
