import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { basic, type RunningService, startService } from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

const TOKEN = "123456789:AAHechoes-the-path-secret-part-0123456789";
const SECRET = TOKEN.split(":")[1] as string;

/**
 * A Bot API server that repeats the request's path (with the bot token in it) in its error texts,
 * as some do: every text that comes back from Telegram is cleaned of the token before the service
 * logs it, stores it as a delivery's last error, shows it to a Dock's holder or in /readyz.
 */
describe("texts from a Bot API server that echoes the token", () => {
  let telegram: Server;
  let service: RunningService;
  let polls = 0;
  beforeAll(async () => {
    telegram = createServer((request, response) => {
      const path = request.url ?? "";
      const method = path.split("/").at(-1)?.split("?")[0] ?? "";
      const answer = (status: number, body: unknown) => {
        response.writeHead(status, { "content-type": "application/json" });
        response.end(JSON.stringify(body));
      };
      request.resume();
      request.on("end", () => {
        if (method === "getMe") {
          return answer(200, {
            ok: true,
            result: { id: 123456789, is_bot: true, first_name: "Echo", username: "echo_bot" },
          });
        }
        if (method === "getUpdates") {
          // The first poll fails, saying where it was sent; the others wait a little, then find nothing.
          if (polls++ === 0)
            return answer(502, { ok: false, error_code: 502, description: `Bad Gateway: ${path}` });
          return void setTimeout(() => answer(200, { ok: true, result: [] }), 300);
        }
        if (method === "sendMessage") {
          return answer(400, {
            ok: false,
            error_code: 400,
            description: `Bad Request: cannot send at ${path}`,
          });
        }
        return answer(200, { ok: true, result: true });
      });
    });
    await new Promise<void>((resolve) => telegram.listen(0, "127.0.0.1", resolve));
    const address = telegram.address();
    const port = typeof address === "object" && address ? address.port : 0;
    service = await startService("sqlite", {
      TELEGRAM_BOT_TOKEN: TOKEN,
      TELEGRAM_API_ROOT: `http://127.0.0.1:${port}`,
      DOCK_RATE_BURST: "0",
    });
  });
  afterAll(async () => {
    await service?.close();
    await new Promise<void>((resolve) => telegram.close(() => resolve()));
  });

  it("never show it: not in the log, not in a delivery's last error, not in /readyz", async () => {
    const dock = await service.app.docks.create(1, { name: "Echo", link: null, description: null });
    await service.subscriptions.subscribe(dock.id, 4242, "private");
    const response = await fetch(`${service.url}/ping`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ dock_id: dock.id, secret_key: dock.secretKey, msg: "hello" }),
    });
    const { message_id } = (await response.json()) as { message_id: string };
    const status = await waitFor("the delivery failed", async () => {
      const answer = await fetch(`${service.url}/messages/${message_id}`, {
        headers: { authorization: basic(dock.id, dock.secretKey) },
      });
      const text = await answer.text();
      const body = JSON.parse(text) as { message: { deliveries: { state: string }[] } };
      return body.message.deliveries[0]?.state === "failed" ? text : undefined;
    });
    expect(status).toContain("Bad Request: cannot send at /bot<redacted>/sendMessage");
    await waitFor(
      "the bot's failed poll",
      () => service.logs.text.includes("bot stopped; relaunching") || polls > 1,
    );
    const readyz = await (await fetch(`${service.url}/readyz`)).text();

    for (const text of [status, readyz, service.logs.text]) {
      expect(text).not.toContain(SECRET);
    }
    expect(service.logs.text).toContain("<redacted>");
  });
});
