import { autoRetry } from "@grammyjs/auto-retry";
import type { FastifyBaseLogger } from "fastify";
import { Bot, BotError, Composer, type Context, GrammyError, HttpError } from "grammy";
import type { Update } from "grammy/types";
import type { BackgroundWorker } from "../app.ts";
import { type Pacer, pacedSends } from "../delivery/pacer.ts";
import { maskUrl } from "../log.ts";
import type { TelegramTarget } from "../telegram-target.ts";
import { answer, type BotDeps, say } from "./context.ts";
import { login } from "./login.ts";
import { membership } from "./membership.ts";
import { start } from "./start.ts";
import { subscribe } from "./subscribe.ts";
import { subscriptionsMenu } from "./subscriptions-menu.ts";
import { texts } from "./texts.ts";
import { webhookSecret } from "./webhook.ts";

/** The updates the bot acts on; Telegram (and the sandbox) leave out the rest. */
export const ALLOWED_UPDATES = ["message", "callback_query", "my_chat_member"] as const;

/**
 * Everything the bot does, in the order it must be tried: specific commands, buttons and menu
 * texts first, then the handler of free text (pasted Dock IDs), then a polite answer to buttons
 * of messages whose meaning is gone.
 */
export function botHandlers(deps: BotDeps): Composer<Context> {
  const composer = new Composer<Context>();
  const manual = subscribe(deps);
  composer.use(membership(deps), start(deps), login(deps), subscriptionsMenu(deps));
  composer.command("help", (ctx) => say(ctx, texts.help));
  composer.hears(texts.menu.help, (ctx) => say(ctx, texts.help));
  composer.use(manual.commands, manual.replies);
  composer.on("callback_query", (ctx) => answer(ctx, { text: texts.staleButton }));
  return composer;
}

/** How long starting the service waits for Telegram before the bot goes on connecting in the background. */
const START_GRACE_MS = 5000;

/** What `setMyCommands` publishes: the commands Telegram suggests when a person types `/`. */
const COMMANDS = (["start", "subscribe", "list", "unsubscribe", "cancel", "help"] as const).map(
  (command) => ({
    command,
    description: texts.commands[command],
  }),
);

/** The bot worker's dependencies: the store, a logger, and the mode. */
export interface BotWorkerOptions extends BotDeps {
  log: FastifyBaseLogger;
  /** Webhook mode when set: Telegram posts updates there instead of being polled. */
  webhookUrl: string | null;
  /** Shared with the delivery engine: the bot's replies count against the same flood limits. */
  pacer: Pacer;
}

/**
 * The bot as a background worker of the service. On start it learns who it is (`getMe`),
 * publishes its commands, and either polls for updates (the default; one instance at a time) or
 * registers its webhook (any number of instances behind the same URL). Every Bot API call goes
 * through auto-retry, so a `429` is waited out instead of losing the reply.
 */
export class BotWorker implements BackgroundWorker {
  readonly name = "bot";
  readonly #options: BotWorkerOptions;
  #bot: Bot | null = null;
  #token = "";
  #polling: Promise<void> | null = null;
  #username: string | null = null;
  #stopped = false;
  #abort = new AbortController();
  #retryTimer: NodeJS.Timeout | null = null;

  constructor(options: BotWorkerOptions) {
    this.#options = options;
  }

  /** The bot's username once it started (for "Open in Telegram" links); null before. */
  botUsername(): string | null {
    return this.#username;
  }

  async start(telegram: TelegramTarget): Promise<void> {
    const { log } = this.#options;
    this.#token = telegram.token;
    const bot = new Bot(telegram.token, { client: { apiRoot: telegram.apiRoot } });
    // Paced like deliveries (inside auto-retry, so every attempt waits its turn), then retried on 429.
    bot.api.config.use(pacedSends(this.#options.pacer));
    bot.api.config.use(autoRetry({ maxRetryAttempts: 5, maxDelaySeconds: 300 }));
    bot.use(botHandlers(this.#options));
    bot.catch((error) => this.#failed(error.error, error.ctx.update));

    // Telegram unreachable, refusing or silent at start must not stop the service (the send API
    // keeps accepting, deliveries wait): give the first attempt a few seconds, then keep trying in
    // the background, backing off up to a minute.
    this.#stopped = false;
    this.#abort = new AbortController();
    const launched = this.#keepLaunching(bot, telegram);
    const grace = new Promise<"waiting">((resolve) =>
      setTimeout(() => resolve("waiting"), START_GRACE_MS).unref(),
    );
    if ((await Promise.race([launched, grace])) === "waiting") {
      log.warn("Telegram has not answered yet; the bot starts once it does");
    }
  }

  async #keepLaunching(bot: Bot, telegram: TelegramTarget): Promise<"launched" | "stopped"> {
    for (let attempt = 1; !this.#stopped; attempt++) {
      try {
        await this.#launch(bot, telegram);
        return "launched";
      } catch (error) {
        if (this.#stopped) break;
        this.#options.log.error({ error: this.#describe(error), attempt }, "bot could not start; retrying");
      }
      await new Promise<void>((resolve) => {
        this.#retryTimer = setTimeout(resolve, Math.min(60_000, 1000 * 2 ** attempt));
      });
    }
    return "stopped";
  }

  async #launch(bot: Bot, telegram: TelegramTarget): Promise<void> {
    const { log, webhookUrl } = this.#options;

    await bot.init(this.#abort.signal as Parameters<Bot["init"]>[0]);
    this.#username = bot.botInfo.username;
    await bot.api.setMyCommands(COMMANDS);
    await this.#options.states.prune();

    if (webhookUrl !== null) {
      await bot.api.setWebhook(webhookUrl, {
        secret_token: webhookSecret(telegram.token),
        allowed_updates: [...ALLOWED_UPDATES],
      });
      this.#bot = bot;
      log.info({ username: this.#username, mode: "webhook", url: webhookUrl }, "bot started");
      return;
    }
    this.#bot = bot;
    await new Promise<void>((resolve, reject) => {
      this.#polling = bot
        .start({ allowed_updates: [...ALLOWED_UPDATES], onStart: () => resolve() })
        .catch((error: unknown) => {
          log.error({ error: this.#describe(error) }, "bot polling stopped");
          reject(error);
        });
    });
    log.info({ username: this.#username, mode: "polling" }, "bot started");
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#abort.abort();
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
    const bot = this.#bot;
    const polling = this.#polling;
    this.#bot = null;
    this.#polling = null;
    if (bot !== null && polling !== null) {
      await bot.stop();
      await polling;
    }
  }

  /**
   * Handles one update that came through the webhook route. False when the bot is not running;
   * a failing handler is logged and counts as handled, so Telegram does not resend a poison update.
   */
  async handleUpdate(update: Update): Promise<boolean> {
    const bot = this.#bot;
    if (bot === null) return false;
    try {
      await bot.handleUpdate(update);
    } catch (error) {
      this.#failed(error instanceof BotError ? error.error : error, update);
    }
    return true;
  }

  #failed(error: unknown, update: Update): void {
    this.#options.log.error(
      { update_id: update.update_id, error: this.#describe(error) },
      "bot update failed",
    );
  }

  /** An error as a log field, with the bot token scrubbed from every string (network errors embed URLs). */
  #describe(error: unknown): Record<string, unknown> {
    const clean = (text: string | undefined) =>
      text === undefined
        ? undefined
        : maskUrl(this.#token === "" ? text : text.replaceAll(this.#token, "<redacted>"));
    if (error instanceof GrammyError) {
      return {
        kind: "telegram",
        method: error.method,
        code: error.error_code,
        description: error.description,
      };
    }
    if (error instanceof HttpError) {
      return { kind: "network", message: clean(error.message), cause: clean(String(error.error)) };
    }
    if (error instanceof Error)
      return { kind: error.name, message: clean(error.message), stack: clean(error.stack) };
    return { kind: "unknown", message: clean(String(error)) };
  }
}
