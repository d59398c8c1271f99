import { type AddressInfo, createConnection, createServer, type Socket } from "node:net";
import { Api } from "grammy";
import { describe, expect, it } from "vitest";
import { SANDBOX_BOT_TOKEN } from "../../src/telegram/sandbox-bot.ts";
import { People } from "../helpers/bot-harness.ts";
import { freePort } from "../helpers/browser.ts";
import { type RunningService, startService } from "../helpers/harness.ts";
import { type RunningSandbox, startSandbox } from "../helpers/sandbox-harness.ts";
import { waitFor } from "../helpers/wait.ts";

/** What `/readyz` says of the bot, and the `dock_notify_bot_up` gauge. */
async function botState(service: RunningService): Promise<{ state: string; up: number; ready: number }> {
  const readyz = await fetch(`${service.url}/readyz`);
  const body = (await readyz.json()) as { checks: { bot: { state: string } } };
  const metrics = await (await fetch(`${service.url}/metrics`)).text();
  const up = Number(/^dock_notify_bot_up (\d)$/m.exec(metrics)?.[1]);
  return { state: body.checks.bot.state, up, ready: readyz.status };
}

/**
 * The bot is supervised: whatever stops it after it started (a 409 from someone else's getUpdates,
 * Telegram failing its polls, a webhook someone else replaced) relaunches it, and a call that only
 * polishes it (the command list) never keeps it from starting.
 */
// Each test waits out the bot's own schedules (polls, retries, webhook checks) on a service and a
// sandbox of its own: they wait side by side.
describe.concurrent("the bot keeps running", () => {
  it("a getUpdates from someone else with the token (409 Conflict) does not stop it: it answers a new /start", async ({
    onTestFinished,
  }) => {
    const running = await startService("sqlite");
    onTestFinished(() => running.close());
    const people = new People(`${running.url}/sandbox`);
    await waitFor("the bot running", async () => (await botState(running)).state === "running");
    expect(await botState(running)).toEqual({ state: "running", up: 1, ready: 200 });

    // An operator debugging with curl: their poll ends the bot's waiting one with 409 Conflict.
    // (Sent until it lands on a waiting poll: the bot may be between two polls at that instant.)
    await waitFor(
      "the bot to meet a 409",
      async () => {
        await fetch(`${running.url}/sandbox/bot${SANDBOX_BOT_TOKEN}/getUpdates?timeout=1`);
        return running.logs.lines.some((line) => line.includes("bot stopped; relaunching"));
      },
      20_000,
      200,
    );
    const stopped = JSON.parse(
      running.logs.lines.find((line) => line.includes("bot stopped; relaunching")) as string,
    );
    expect(stopped.reason).toMatch(/409 .*another getUpdates call or instance uses this bot token/);
    // Named as such, with what to do; and still ready (the instance takes messages meanwhile).
    expect(stopped.state).toBe("conflict");
    expect(stopped.msg).toBe(
      "bot stopped; relaunching: another program polls Telegram with this bot token (409 Conflict)",
    );
    expect(stopped.fix).toMatch(/stop the other program or Dock Notify instance that uses the token/);

    const newcomer = await people.person("Nia");
    const welcome = await people.botReply(
      newcomer,
      await people.start(newcomer),
      "the welcome after the 409",
    );
    expect(welcome.text).toContain("Dock");
    expect(running.logs.text).toContain("bot running again");
    expect(await botState(running)).toEqual({ state: "running", up: 1, ready: 200 });
  });

  it("Telegram unreachable at start: the service starts and takes messages; the bot starts once Telegram answers", async ({
    onTestFinished,
  }) => {
    // Telegram's address, held by the test the whole time (a port found free and listened on later
    // can be taken meanwhile by another test's server): its connections are reset until the
    // sandbox is up, then passed through to it.
    let target: number | null = null;
    const sockets = new Set<Socket>();
    const front = createServer((socket) => {
      if (target === null) return socket.destroy();
      const upstream = createConnection({ host: "127.0.0.1", port: target });
      for (const end of [socket, upstream]) {
        sockets.add(end);
        end.on("close", () => sockets.delete(end));
        end.on("error", () => {
          socket.destroy();
          upstream.destroy();
        });
      }
      socket.pipe(upstream).pipe(socket);
    });
    await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
    const port = (front.address() as AddressInfo).port;
    const running = await startService("sqlite", {
      TELEGRAM_BOT_TOKEN: SANDBOX_BOT_TOKEN,
      TELEGRAM_API_ROOT: `http://127.0.0.1:${port}/sandbox`,
    });
    let sandbox: RunningSandbox | undefined;
    onTestFinished(async () => {
      await running.close();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => front.close(resolve));
      await sandbox?.close();
    });
    expect(running.logs.text).toContain("bot could not start yet; retrying: Telegram cannot be reached");
    // Telegram's outage, not this instance's: still ready (messages are taken, sent once it is back).
    expect(await botState(running)).toEqual({ state: "unreachable", up: 0, ready: 200 });
    const dock = await running.app.docks.create(1, { name: "Early", link: null, description: null });
    const accepted = await fetch(`${running.url}/ping`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ dock_id: dock.id, secret_key: dock.secretKey, msg: "before Telegram" }),
    });
    expect(accepted.status).toBe(202);

    sandbox = await startSandbox();
    target = Number(new URL(sandbox.root).port);
    await waitFor("the bot running", async () => (await botState(running)).state === "running", 20_000, 200);
    const people = new People(sandbox.root);
    const rui = await people.person("Rui");
    expect((await people.botReply(rui, await people.start(rui), "the welcome")).text).toContain("Dock");
  }, 60_000);

  it("Telegram failing its polls (5xx) puts it in unreachable (gauge 0, /readyz still 200) until they work again", async ({
    onTestFinished,
  }) => {
    const sandbox = await startSandbox();
    onTestFinished(() => sandbox.close());
    const running = await startService("sqlite", {
      TELEGRAM_BOT_TOKEN: SANDBOX_BOT_TOKEN,
      TELEGRAM_API_ROOT: sandbox.root,
    });
    onTestFinished(() => running.close());
    await waitFor("the bot running", async () => (await botState(running)).state === "running");
    await sandbox.control("POST", "/faults", { kind: "server_error", methods: ["getUpdates"], rate: 1 });
    // An update ends the poll waiting now; the bot's next poll meets the fault.
    const people = new People(sandbox.root);
    await people.start(await people.person("Early"));
    await waitFor(
      "the bot unreachable",
      async () => (await botState(running)).state === "unreachable",
      20_000,
      200,
    );
    expect(await botState(running)).toEqual({ state: "unreachable", up: 0, ready: 200 });

    await sandbox.control("DELETE", "/faults");
    await waitFor(
      "the bot running again",
      async () => (await botState(running)).state === "running",
      20_000,
      200,
    );
    const ola = await people.person("Ola");
    expect((await people.botReply(ola, await people.start(ola), "the welcome")).text).toContain("Dock");
  }, 90_000);

  it("a reply retrying a failing Telegram (5xx) does not hold a shutdown up: the service stops at once", {
    // Before the fix, stopping waited out the reply's retries: about 90 s per update.
    timeout: 30_000,
  }, async ({ onTestFinished }) => {
    const running = await startService("sqlite");
    let closed = false;
    onTestFinished(() => (closed ? undefined : running.close()));
    const people = new People(`${running.url}/sandbox`);
    await waitFor("the bot running", async () => (await botState(running)).state === "running");
    await people.control("POST", "/faults", { kind: "server_error", methods: ["sendMessage"], rate: 1 });
    await people.start(await people.person("Rita"));
    // Its first try failed: the reply waits between tries now.
    await waitFor("the bot's reply to fail", async () => {
      const stats = await people.control<{ calls: Record<string, number> }>("GET", "/stats");
      return (stats.calls.sendmessage ?? 0) >= 1;
    });
    await running.close();
    closed = true;
    expect(running.logs.text).not.toContain('"level":50');
    expect(running.logs.text).toContain("bot update cut short: the service is stopping");
  });

  it("starts and answers although Telegram refuses its command list; publishes the list once it takes it", async ({
    onTestFinished,
  }) => {
    const sandbox = await startSandbox();
    onTestFinished(() => sandbox.close());
    await sandbox.control("POST", "/faults", { kind: "server_error", methods: ["setMyCommands"], rate: 1 });
    const running = await startService("sqlite", {
      TELEGRAM_BOT_TOKEN: SANDBOX_BOT_TOKEN,
      TELEGRAM_API_ROOT: sandbox.root,
    });
    onTestFinished(() => running.close());
    // Started within the service's start: no "has not answered yet", no retry loop.
    expect(running.logs.text).toContain("bot started");
    expect(running.logs.text).not.toContain("Telegram has not answered yet");
    await waitFor("the warning about the command list", () =>
      running.logs.text.includes("could not publish the bot's command list"),
    );
    const people = new People(sandbox.root);
    const pia = await people.person("Pia");
    expect((await people.botReply(pia, await people.start(pia), "the welcome")).text).toContain("Dock");
    expect(await sandbox.api.getMyCommands()).toEqual([]);

    await sandbox.control("DELETE", "/faults");
    // Retried 5, 10, 20 … s after the first failure: the next try may be half a minute away.
    await waitFor(
      "the command list published",
      async () => (await sandbox.api.getMyCommands()).length === 6,
      60_000,
      250,
    );
  }, 120_000);
});

describe("the bot's webhook stays its own", () => {
  it("a webhook someone else changed or removed is registered again, and updates flow to it", async ({
    onTestFinished,
  }) => {
    const port = await freePort();
    const running = await startService("sqlite", {
      PORT: String(port),
      TELEGRAM_WEBHOOK_URL: `http://127.0.0.1:${port}/telegram/webhook`,
      TELEGRAM_WEBHOOK_CHECK_SECONDS: "1",
    });
    onTestFinished(() => running.close());
    const ours = `${running.url}/telegram/webhook`;
    const api = new Api(SANDBOX_BOT_TOKEN, { apiRoot: `${running.url}/sandbox` });
    expect((await api.getWebhookInfo()).url).toBe(ours);

    // Someone with the token points the webhook elsewhere…
    await api.setWebhook("http://127.0.0.1:9/elsewhere");
    await waitFor(
      "our webhook registered again",
      async () => (await api.getWebhookInfo()).url === ours,
      15_000,
      100,
    );
    const replaced = running.logs.lines.find((line) =>
      line.includes("the webhook was changed by someone else"),
    );
    expect(replaced).toBeDefined();
    // …and the bot token never appears in what the log says about it.
    expect(running.logs.text).not.toContain(SANDBOX_BOT_TOKEN.split(":")[1]);

    // …or removes it to poll with curl.
    await api.deleteWebhook();
    await waitFor(
      "our webhook registered again",
      async () => (await api.getWebhookInfo()).url === ours,
      15_000,
      100,
    );
    expect(running.logs.text).toContain("the webhook was removed by someone else");

    const people = new People(`${running.url}/sandbox`);
    const quinn = await people.person("Quinn");
    expect((await people.botReply(quinn, await people.start(quinn), "the welcome")).text).toContain("Dock");
    expect(await botState(running)).toMatchObject({ state: "running", up: 1 });
  }, 60_000);
});
