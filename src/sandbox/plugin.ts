import type { FastifyInstance } from "fastify";
import { SIGNATURE_HEADER } from "../domain/event-signature.ts";
import { ApiError } from "../http/errors.ts";
import { SANDBOX_BOT_TOKEN } from "../telegram/sandbox-bot.ts";
import { botApi } from "./bot-api.ts";
import { callMethod } from "./bot-methods.ts";
import { chatPage } from "./chat-page.ts";
import { controlApi } from "./control-api.ts";
import { Emulator } from "./emulator.ts";
import { Params } from "./params.ts";
import { StateFile } from "./persistence.ts";

export interface SandboxOptions {
  /** Answer 429 like Telegram when the bot sends too fast (SANDBOX_RATE_LIMITS). */
  rateLimits: boolean;
  /** Messages kept per chat (SANDBOX_HISTORY_LIMIT). */
  historyLimit: number;
  /** People it holds at most (SANDBOX_MAX_PEOPLE; chats twice as many). */
  maxPeople?: number;
  /** Every Bot API call's round trip, in milliseconds (SANDBOX_LATENCY_MS). */
  latencyMs?: number;
  /** Clock in milliseconds; tests freeze it to make rate limits exact. */
  now?: () => number;
  /**
   * A file that keeps people, chats and pending updates across restarts (persistence.ts);
   * absent = everything lives in memory and ends when the server closes.
   */
  stateFile?: string;
  /** Built into the service: its own bot's calls are logged at debug (see BotApiOptions.quiet). */
  builtIn?: boolean;
  /**
   * The bot token its Bot API answers to (401 for any other); SANDBOX_BOT_TOKEN when omitted. A
   * test that plays "the real Telegram" with a sandbox gives it a token of its own, so that nothing
   * can pass for the real bot by knowing the sandbox's public one.
   */
  token?: string;
}

/**
 * The Telegram sandbox as one Fastify plugin; register it with `{ prefix: "/sandbox" }`. Serves the
 * Bot API emulator (`/bot<token>/<method>`), the control API (`/api/…`) and the chat page (`/`).
 * With `stateFile` it starts from that file and keeps it up to date, writing once more on close.
 */
export async function sandbox(app: FastifyInstance, options: SandboxOptions): Promise<void> {
  const closing = new AbortController();
  const emulator: Emulator = new Emulator(
    {
      rateLimits: options.rateLimits,
      historyLimit: options.historyLimit,
      ...(options.maxPeople === undefined ? {} : { maxPeople: options.maxPeople }),
      ...(options.latencyMs === undefined ? {} : { latencyMs: options.latencyMs }),
      ...(options.now ? { now: options.now } : {}),
    },
    async (method, params) => {
      await callMethod(emulator, method, new Params(params), closing.signal);
    },
  );

  if (options.stateFile !== undefined) {
    const file = new StateFile(options.stateFile, app.log, () => emulator.snapshot());
    const state = await file.load();
    if (state !== undefined) emulator.restore(state);
    emulator.onChange(() => file.changed());
    // After preClose has ended long polls and the webhook: nothing changes any more.
    app.addHook("onClose", () => file.close());
  }

  // A Dock's callback URL can point here (a receiver on this machine, loopback in
  // CALLBACK_ALLOWED_NETWORKS): the request then comes from this machine, and would pass for a
  // local person's. Every event carries the sender's signature header, which no person's request
  // does: the sandbox never acts on one, whatever the network settings.
  const eventHeader = SIGNATURE_HEADER.toLowerCase();
  app.addHook("onRequest", async (request) => {
    if (request.headers[eventHeader] !== undefined) {
      throw new ApiError(
        "sandbox_not_local",
        "The Telegram sandbox does not act on the service's own callback events.",
      );
    }
  });

  // The sandbox is not part of the service's API: keep it out of the OpenAPI document.
  app.addHook("onRoute", (route) => {
    route.schema = { ...route.schema, hide: true };
  });
  app.addHook("preClose", async () => {
    closing.abort();
    emulator.webhook.close();
  });

  await app.register(botApi, {
    emulator,
    closing: closing.signal,
    quiet: options.builtIn ?? false,
    token: options.token ?? SANDBOX_BOT_TOKEN,
  });
  await app.register(controlApi, { emulator, closing: closing.signal, prefix: "/api" });
  await app.register(chatPage);
}
