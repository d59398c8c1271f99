import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { GrammyError, HttpError } from "grammy";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RenderedPart } from "../../src/domain/render.ts";
import { changeAnswer, classify } from "../../src/telegram/answers.ts";
import { grammyCopySender } from "../../src/telegram/copies.ts";
import { SANDBOX_BOT_TOKEN } from "../../src/telegram/sandbox-bot.ts";
import { type RunningSandbox, startSandbox } from "../helpers/sandbox-harness.ts";

const part = (text: string, url = "https://example.com/a"): RenderedPart => ({
  text,
  entities: [{ type: "bold", offset: 0, length: 6 }],
  reply_markup: { inline_keyboard: [[{ text: "Open", url }]] },
  link_preview_options: { is_disabled: true },
});

/** The error a call threw (the test fails if it did not throw). */
async function thrown(call: Promise<unknown>): Promise<unknown> {
  try {
    await call;
  } catch (error) {
    return error;
  }
  throw new Error("the call did not fail");
}

/**
 * The dispatcher's CopySender as the service uses it: grammY's client against the sandbox's Bot
 * API (a copy sent, edited, deleted, as Telegram answers each), and against a Bot API server that
 * echoes the request's path (with the token) in its errors. (The dispatcher's own decisions are
 * test/delivery/dispatcher.test.ts's, with a fake sender.)
 */
describe("grammY's CopySender", () => {
  let sandbox: RunningSandbox;
  beforeAll(async () => {
    sandbox = await startSandbox();
  });
  afterAll(() => sandbox?.close());

  it("sends a part with its entities, buttons and preview; edits it; deletes it; Telegram's refusals keep their class", async () => {
    const copies = grammyCopySender(
      { apiRoot: sandbox.root, token: SANDBOX_BOT_TOKEN, botUsername: null, sandbox: true },
      { timeoutSeconds: 10, paidBroadcast: false },
    );
    await copies.probe();
    const chat = await sandbox.startedPerson("Ada");
    const id = await copies.send(chat, part("Alerts\ndisk 91%"));
    const fromBot = async () =>
      (
        (await sandbox.control("GET", `/chats/${chat}/messages`)).body as { from?: { is_bot: boolean } }[]
      ).filter((message) => message.from?.is_bot);
    const shown = async () => (await fromBot()).at(-1);
    expect(await shown()).toMatchObject({
      message_id: id,
      text: "Alerts\ndisk 91%",
      entities: [{ type: "bold", offset: 0, length: 6 }],
      reply_markup: { inline_keyboard: [[{ text: "Open", url: "https://example.com/a" }]] },
    });

    await copies.edit(chat, id, part("Alerts\ndisk 95%", "https://example.com/b"));
    expect(await shown()).toMatchObject({
      message_id: id,
      text: "Alerts\ndisk 95%",
      entities: [{ type: "bold", offset: 0, length: 6 }],
      reply_markup: { inline_keyboard: [[{ text: "Open", url: "https://example.com/b" }]] },
    });
    const unchanged = await thrown(copies.edit(chat, id, part("Alerts\ndisk 95%", "https://example.com/b")));
    expect(unchanged).toBeInstanceOf(GrammyError);
    expect(changeAnswer(unchanged)).toBe("not_modified");

    await copies.delete(chat, id);
    expect(await fromBot()).toEqual([]);
    expect(changeAnswer(await thrown(copies.delete(chat, id)))).toBe("not_found");
    expect(changeAnswer(await thrown(copies.edit(chat, id, part("Alerts\nx"))))).toBe("not_found");
  });

  describe("against a Bot API server that repeats the request's path in its errors", () => {
    const TOKEN = "123456789:AAHechoes-the-path-secret-part-0123456789";
    const SECRET = TOKEN.split(":")[1] as string;
    const bodies: { method: string; body: Record<string, unknown> }[] = [];
    let root = "";
    const server = createServer((request, response) => {
      const path = request.url ?? "";
      const method = path.split("/").at(-1) ?? "";
      let text = "";
      request.on("data", (chunk: Buffer) => (text += chunk.toString()));
      request.on("end", () => {
        bodies.push({ method, body: text === "" ? {} : JSON.parse(text) });
        response.writeHead(400, { "content-type": "application/json" });
        response.end(JSON.stringify({ ok: false, error_code: 400, description: `Bad Request: no ${path}` }));
      });
    });
    beforeAll(async () => {
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      root = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    it("its errors keep their class and carry no token; paid broadcast goes with sends only", async () => {
      const copies = grammyCopySender(
        { apiRoot: root, token: TOKEN, botUsername: null, sandbox: false },
        { timeoutSeconds: 10, paidBroadcast: true },
      );
      const errors = [
        await thrown(copies.send(7, part("Alerts\nx"))),
        await thrown(copies.edit(7, 1, part("Alerts\nx"))),
        await thrown(copies.delete(7, 1)),
        await thrown(copies.probe()),
      ];
      for (const error of errors) {
        expect(error).toBeInstanceOf(GrammyError);
        const { message, stack, description } = error as GrammyError;
        expect(description).toMatch(/^Bad Request: no \/bot/);
        for (const text of [message, stack ?? "", description, classify(error, 7).reason])
          expect(text).not.toContain(SECRET);
      }
      expect(bodies.map(({ method }) => method)).toEqual([
        "sendMessage",
        "editMessageText",
        "deleteMessage",
        "getMe",
      ]);
      expect(bodies[0]?.body).toMatchObject({ chat_id: 7, text: "Alerts\nx", allow_paid_broadcast: true });
      expect(bodies[1]?.body).toEqual({
        chat_id: 7,
        message_id: 1,
        text: "Alerts\nx",
        entities: [{ type: "bold", offset: 0, length: 6 }],
        reply_markup: { inline_keyboard: [[{ text: "Open", url: "https://example.com/a" }]] },
        link_preview_options: { is_disabled: true },
      });
    });

    it("an unreachable Telegram is grammY's HttpError, with no token in it", async () => {
      const closed = createServer();
      await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
      const port = (closed.address() as AddressInfo).port;
      await new Promise<void>((resolve) => closed.close(() => resolve()));
      const copies = grammyCopySender(
        { apiRoot: `http://127.0.0.1:${port}`, token: TOKEN, botUsername: null, sandbox: false },
        { timeoutSeconds: 10, paidBroadcast: false },
      );
      const error = await thrown(copies.send(7, part("Alerts\nx")));
      expect(error).toBeInstanceOf(HttpError);
      expect(classify(error, 7).kind).toBe("transient");
      const inner = (error as HttpError).error as Error;
      for (const text of [
        (error as Error).message,
        (error as Error).stack ?? "",
        inner.message,
        inner.stack ?? "",
      ])
        expect(text).not.toContain(SECRET);
    });
  });
});
