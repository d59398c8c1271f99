import pino, { type LoggerOptions } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loggerOptions } from "../src/log.ts";
import { basic, LogCapture, type RunningService, startService } from "./harness.ts";

describe("logs", () => {
  let service: RunningService;

  beforeAll(async () => {
    service = await startService("sqlite", { LOG_LEVEL: "trace" });
  });
  afterAll(async () => service.close());

  it("never contain secret keys, Authorization headers, cookies or bot tokens", async () => {
    const dock = await service.app.docks.create(5, { name: "Logged", link: null, description: null });
    const botToken = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0";
    const auth = basic(dock.id, dock.secretKey);
    const requests: [string, RequestInit][] = [
      [
        "/ping",
        { method: "POST", body: JSON.stringify({ dock_id: dock.id, secret_key: dock.secretKey, msg: "hi" }) },
      ],
      // Invalid JSON that holds the key: JSON.parse's own error message would quote it.
      ["/ping", { method: "POST", body: `{"secret_key":"${dock.secretKey}",` }],
      [
        "/ping",
        {
          method: "POST",
          body: JSON.stringify({ dock_id: dock.id, secret_key: `${dock.secretKey}x`, msg: "hi" }),
        },
      ],
      [
        "/webhook",
        {
          method: "POST",
          headers: { authorization: auth, cookie: "session=s3cr3t-cookie-value" },
          body: '{"msg":"hi"}',
        },
      ],
      [
        "/webhook",
        {
          method: "POST",
          headers: { authorization: basic(dock.id, "wrong-key-value") },
          body: '{"msg":"hi"}',
        },
      ],
      [`/sandbox/bot${botToken}/getMe`, { method: "GET" }],
      [`/bot${botToken}/sendMessage?chat_id=1`, { method: "POST" }],
      ["/console/api/sign-in/telegram-widget?id=1&hash=f00dfeedwidgetsignature", { method: "GET" }],
    ];
    for (const [path, init] of requests) await fetch(`${service.url}${path}`, init);

    const log = service.logs.text;
    expect(log).toContain(dock.id);
    expect(log).toMatch(/"messageId":"msg_/);
    expect(log).toContain("/bot<redacted>/getMe");
    for (const secret of [
      dock.secretKey,
      auth.slice("Basic ".length),
      "wrong-key-value",
      "s3cr3t-cookie-value",
      botToken,
      "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0",
      "f00dfeedwidgetsignature",
    ]) {
      expect(log).not.toContain(secret);
    }
  });
});

describe("redaction", () => {
  it("blanks secret fields at the top of a line and inside the objects the service logs", () => {
    const capture = new LogCapture();
    // The service's own options (Fastify takes the stream among them; pino as its own argument).
    const { stream: _stream, ...options } = loggerOptions("info", capture) as LoggerOptions & {
      stream: unknown;
    };
    const log = pino(options, capture);
    const secret = "dnsk_thisMustNeverBeLogged0000000000000";
    log.info({ secret_key: secret, token: secret }, "top");
    for (const parent of ["body", "dock", "err", "error", "config", "options", "payload"]) {
      log.info(
        { [parent]: { secretKey: secret, secret_key: secret, token: secret, botToken: secret } },
        parent,
      );
    }
    log.info({ res: { headers: { "set-cookie": `session=${secret}` } } }, "response");
    expect(capture.text.split("\n").filter(Boolean)).toHaveLength(9);
    expect(capture.text).not.toContain(secret);
    expect(capture.text).toContain("[redacted]");
  });
});
