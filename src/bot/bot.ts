import { setTimeout as sleep } from "node:timers/promises";
import { autoRetry } from "@grammyjs/auto-retry";
import type { FastifyBaseLogger } from "fastify";
import { Bot, BotError, Composer, type Context, GrammyError, HttpError, type Transformer } from "grammy";
import type { Update } from "grammy/types";
import { maskUrl, scrubToken } from "../runtime/log.ts";
import type { BackgroundWorker } from "../runtime/worker.ts";
import { isOutage, logDatabaseFailure } from "../store/faults.ts";
import { type Pacer, PaceWaitAborted, pacedSends } from "../telegram/pacer.ts";
import { type TelegramTarget, webhookSecret } from "../telegram/target.ts";
import { acknowledge } from "./acknowledge.ts";
import { type BotProblem, type BotState, botProblem, DOWN_STATES, stateForFailure } from "./bot-health.ts";
import { answer, type BotDeps, say } from "./context.ts";
import { joinButtons } from "./join.ts";
import { login } from "./login.ts";
import { membership } from "./membership.ts";
import { ownerLinks } from "./owners.ts";
import { requestDecisions } from "./requests.ts";
import { start } from "./start.ts";
import { subscribe } from "./subscribe.ts";
import { subscriptionsMenu } from "./subscriptions-menu.ts";
import { texts } from "./texts.ts";

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
  composer.use(
    membership(deps),
    start(deps),
    login(deps),
    ownerLinks(deps),
    subscriptionsMenu(deps),
    acknowledge(deps),
    joinButtons(deps),
    requestDecisions(deps),
  );
  composer.command("help", (ctx) => say(ctx, texts.help));
  composer.hears(texts.menu.help, (ctx) => say(ctx, texts.help));
  composer.use(manual.commands, manual.replies);
  composer.on("callback_query", (ctx) => answer(ctx, { text: texts.staleButton }));
  return composer;
}

/** How long starting the service waits for Telegram before the bot goes on connecting in the background. */
const START_GRACE_MS = 5000;

/** Relaunch delays after the bot stopped or could not start: doubling from the first to the cap. */
const RELAUNCH_FIRST_MS = 1000;
const RELAUNCH_MAX_MS = 60_000;
/** A bot that ran this long before it stopped starts its relaunch delays over from the first. */
const HEALTHY_AFTER_MS = 60_000;
/** Retries of the calls that only polish the bot (its command list): doubling up to this. */
const POLISH_RETRY_MAX_MS = 10 * 60_000;
/** A poll the server has held open this long (not failed) shows the bot is reachable again. */
const POLL_HELD_MS = 2000;
/** While the bot is down, its warning (with the fix) is repeated this often, not at every retry. */
export const DOWN_WARNING_EVERY_MS = 60_000;
/** How long stopping waits for polling to confirm the last update before giving up on it. */
const STOP_CONFIRM_MS = 3000;

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
  /** In webhook mode, how often to check with Telegram that the webhook is still ours. */
  webhookCheckMs: number;
  /** Shared with the delivery engine: the bot's replies count against the same flood limits. */
  pacer: Pacer;
  /** A reply Telegram has not answered by then fails (TELEGRAM_TIMEOUT_SECONDS). */
  replyTimeoutMs: number;
  /** How often a bot that is down warns again (DOWN_WARNING_EVERY_MS when omitted). */
  downWarningEveryMs?: number;
  now?: () => number;
}

/**
 * Where the bot stands, for `/readyz`, the banner and the `dock_notify_bot_up` gauge (the states:
 * bot-health.ts).
 */
export interface BotStatus {
  state: BotState;
  mode: "polling" | "webhook";
  /** Since when (ms since the epoch) the bot is in this state. */
  since: number;
  /** Why it is not running, when it is not. */
  reason?: string;
}

/** Thrown by the webhook watch when someone else's webhook replaced ours; the relaunch restores it. */
class WebhookReplaced extends Error {
  override name = "WebhookReplaced";
}

/**
 * The bot as a background worker of the service, supervised: it learns who it is (`getMe`), then
 * polls for updates (the default; one instance at a time) or registers its webhook (any number of
 * instances behind the same URL). Whatever stops it after that — a `409 Conflict` because someone
 * else called getUpdates with the token, Telegram unreachable, a `401`, a failing handler, a
 * webhook someone else replaced — relaunches it with capped backoff, for as long as the service
 * runs; each change of state is logged once. Publishing the command list only polishes the bot:
 * its failure never holds the start up, it is retried in the background.
 */
export class BotWorker implements BackgroundWorker {
  readonly name = "bot";
  readonly #options: BotWorkerOptions;
  readonly #now: () => number;
  #bot: Bot | null = null;
  #token = "";
  #username: string | null = null;
  #stopped = true;
  #abort = new AbortController();
  #supervisor: Promise<void> | null = null;
  #polishing: Promise<void> | null = null;
  #status: BotStatus;
  #runningSince = 0;
  /** Where Telegram is looked for, for the fix of `unreachable` (set by start). */
  #apiRoot = "";
  /** When the bot last warned that it is down (0: not since it last ran). */
  #warnedAt = 0;
  /** Resolves the start's wait once the first launch succeeded or failed. */
  #leftStarting: (() => void) | null = null;

  constructor(options: BotWorkerOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#status = {
      state: "stopped",
      mode: options.webhookUrl === null ? "polling" : "webhook",
      since: this.#now(),
    };
  }

  /** Ends the worker's Bot API calls when it stops (grammY types its signals with its own shim). */
  #signal(): Parameters<Bot["init"]>[0] {
    return this.#abort.signal as Parameters<Bot["init"]>[0];
  }

  /** The bot's username once it started (for "Open in Telegram" links); null before. */
  botUsername(): string | null {
    return this.#username;
  }

  status(): BotStatus {
    return { ...this.#status };
  }

  /** What is wrong with the bot and how to fix it; null while it runs, starts or stops. */
  problem(): BotProblem | null {
    return botProblem(this.#status.state, this.#status.reason, {
      apiRoot: this.#apiRoot,
      mode: this.#status.mode,
    });
  }

  /** Where the bot looks for Telegram (the Bot API root, never with the token). */
  apiRoot(): string {
    return this.#apiRoot;
  }

  async start(telegram: TelegramTarget): Promise<void> {
    this.#token = telegram.token;
    this.#apiRoot = telegram.apiRoot;
    this.#stopped = false;
    this.#abort = new AbortController();
    const bot = new Bot(telegram.token, { client: { apiRoot: telegram.apiRoot } });
    bot.api.config.use(this.#watchPolls());
    // Each attempt of a reply that Telegram does not answer gives up after TELEGRAM_TIMEOUT_SECONDS
    // (grammY's own default is 500 s).
    bot.api.config.use(repliesOnly(timeLimit(this.#options.replyTimeoutMs)));
    // Paced like deliveries (inside auto-retry, so every attempt waits its turn), then, for the
    // bot's replies, retried on 429 and Telegram's 5xx. Network failures are not retried there
    // (auto-retry would wait up to an hour between tries, long after Telegram is back): a reply is
    // tried a few times. The worker's own calls (polling, its webhook, its command list) fail fast
    // and are retried by the worker, which says so in its state.
    bot.api.config.use(pacedSends(this.#options.pacer));
    bot.api.config.use(
      repliesOnly(autoRetry({ maxRetryAttempts: 5, maxDelaySeconds: 300, rethrowHttpErrors: true })),
    );
    bot.api.config.use(repliesOnly(retryNetwork(this.#abort.signal)));
    // Stopping ends every reply still under way, its waits between retries included: a reply
    // retrying a failing Telegram (five tries over about 90 s) must not hold a shutdown up.
    bot.api.config.use(repliesOnly(endedBy(this.#abort.signal)));
    bot.use(botHandlers(this.#options));
    bot.catch((error) => this.#failed(error.error, error.ctx.update));

    // Telegram unreachable, refusing or silent at start must not stop the service (the send API
    // keeps accepting, deliveries wait): give the first attempt a few seconds, then go on trying
    // in the background.
    const settled = new Promise<void>((resolve) => {
      this.#leftStarting = resolve;
      setTimeout(resolve, START_GRACE_MS).unref();
    });
    this.#setState("starting");
    this.#supervisor = this.#supervise(bot, telegram);
    await settled;
    this.#leftStarting = null;
    if (this.#status.state === "starting") {
      this.#options.log.warn("Telegram has not answered yet; the bot starts once it does");
    }
  }

  /** Launches the bot, and again whenever it stops, until the service stops. */
  async #supervise(bot: Bot, telegram: TelegramTarget): Promise<void> {
    for (let attempt = 0; !this.#stopped; ) {
      try {
        await this.#run(bot, telegram);
        if (this.#stopped) return;
        throw new Error("polling ended by itself");
      } catch (error) {
        if (this.#stopped) return;
        if (this.#runningSince > 0 && this.#now() - this.#runningSince >= HEALTHY_AFTER_MS) attempt = 0;
        this.#runningSince = 0;
        attempt++;
        const delay = Math.min(RELAUNCH_MAX_MS, RELAUNCH_FIRST_MS * 2 ** (attempt - 1));
        this.#setState(this.#stateFor(error), this.#reason(error), { retryInSeconds: delay / 1000 });
        try {
          await sleep(delay, undefined, { signal: this.#abort.signal });
        } catch {
          return;
        }
      }
    }
  }

  /** One life of the bot: resolves when polling was stopped, rejects with whatever ended it. */
  async #run(bot: Bot, telegram: TelegramTarget): Promise<void> {
    const { webhookUrl } = this.#options;
    // getMe once per process (grammY keeps the answer); every relaunch after that skips it. Asked
    // here, not by grammY's init, which retries by itself with waits growing to 20 minutes: a bot
    // that started while Telegram was away would then start long after it came back.
    if (!bot.isInited()) bot.botInfo = await bot.api.getMe(this.#signal());
    this.#username = bot.botInfo.username;
    this.#bot = bot;
    this.#polishing ??= this.#polish(bot);

    if (webhookUrl !== null) {
      await this.#register(bot, telegram, webhookUrl);
      this.#running({ username: this.#username, mode: "webhook", url: webhookUrl });
      await this.#watchWebhook(bot, webhookUrl);
      return;
    }
    // grammY's start removes any webhook too, but retrying with the same growing waits: fail fast here.
    await bot.api.deleteWebhook(undefined, this.#signal());
    await bot.start({
      allowed_updates: [...ALLOWED_UPDATES],
      // The first start counts as running at once; a relaunch only once a poll has been held (or
      // answered): a second poller still there would otherwise make it flip back within a moment.
      onStart: () => {
        if (this.#status.state === "starting") this.#running({ username: this.#username, mode: "polling" });
      },
    });
  }

  async #register(bot: Bot, telegram: TelegramTarget, url: string): Promise<void> {
    await bot.api.setWebhook(
      url,
      { secret_token: webhookSecret(telegram.token), allowed_updates: [...ALLOWED_UPDATES] },
      this.#signal(),
    );
  }

  /**
   * Asks Telegram every `webhookCheckMs` whether the webhook is still ours: someone with the token
   * (a script, another deployment, a `deleteWebhook` to debug with getUpdates) can replace it, and
   * Telegram would then post our updates elsewhere, or nowhere. Returns when the worker stops;
   * throws when the webhook was replaced (the relaunch registers it again) or Telegram cannot be asked.
   */
  async #watchWebhook(bot: Bot, url: string): Promise<void> {
    let told: string | undefined;
    while (!this.#stopped) {
      try {
        await sleep(this.#options.webhookCheckMs, undefined, { signal: this.#abort.signal });
      } catch {
        return;
      }
      const info = await bot.api.getWebhookInfo(this.#signal());
      const current = info.url ?? "";
      if (current !== url) {
        throw new WebhookReplaced(
          current === ""
            ? "the webhook was removed by someone else; registering it again"
            : `the webhook was changed by someone else (to ${maskUrl(current)}); registering ours again`,
        );
      }
      // Telegram cannot reach us: nothing to fix from here, but the operator must know (once).
      const recent = (info.last_error_date ?? 0) * 1000 > this.#now() - 2 * this.#options.webhookCheckMs;
      const failing = recent && info.pending_update_count > 0 ? info.last_error_message : undefined;
      if (failing !== told) {
        if (failing !== undefined) {
          this.#options.log.warn(
            { reason: scrubToken(failing, this.#token), pending: info.pending_update_count },
            "Telegram reports it cannot deliver updates to the webhook",
          );
        } else this.#options.log.info("Telegram delivers updates to the webhook again");
        told = failing;
      }
    }
  }

  /**
   * Housekeeping and the command list: nice to have, never a reason not to run. The list is
   * retried until Telegram takes it.
   */
  async #polish(bot: Bot): Promise<void> {
    await this.#options.states.prune().catch((error: unknown) => {
      logDatabaseFailure(this.#options.log, error, "could not prune old bot conversations");
    });
    for (let attempt = 1; !this.#stopped; attempt++) {
      try {
        await bot.api.setMyCommands(COMMANDS, undefined, this.#signal());
        return;
      } catch (error) {
        if (this.#stopped) return;
        const delay = Math.min(POLISH_RETRY_MAX_MS, 5000 * 2 ** (attempt - 1));
        if (attempt === 1) {
          this.#options.log.warn(
            { error: this.#describe(error), retryInSeconds: delay / 1000 },
            "could not publish the bot's command list; the bot works without it, trying again later",
          );
        }
        try {
          await sleep(delay, undefined, { signal: this.#abort.signal });
        } catch {
          return;
        }
      }
    }
  }

  #running(fields: Record<string, unknown>): void {
    if (this.#stopped) return;
    this.#runningSince = this.#now();
    this.#setState("running", undefined, fields);
  }

  /**
   * A grammY transformer that follows getUpdates: one that fails (Telegram unreachable, a `5xx`)
   * puts the bot in `reconnecting` — grammY keeps polling, every few seconds — and the next one
   * that succeeds puts it back in `running`.
   */
  #watchPolls(): Transformer {
    return async (prev, method, payload, signal) => {
      if (method !== "getUpdates") return prev(method, payload, signal);
      // A long poll answers only when an update comes or its timeout ends: one that the server
      // has held open for a moment is answered, and the bot is running again.
      const held = DOWN_STATES.has(this.#status.state)
        ? setTimeout(() => this.#running({ mode: "polling" }), POLL_HELD_MS)
        : null;
      try {
        const result = await prev(method, payload, signal);
        if (result.ok) {
          if (DOWN_STATES.has(this.#status.state)) this.#running({ mode: "polling" });
        } else if (result.error_code !== 409 && result.error_code !== 401) {
          this.#setState(
            stateForFailure(result.error_code),
            scrubToken(`getUpdates: ${result.error_code} ${result.description}`, this.#token),
          );
        }
        return result;
      } catch (error) {
        if (!signal?.aborted && !this.#stopped) this.#setState(this.#stateFor(error), this.#reason(error));
        throw error;
      } finally {
        if (held !== null) clearTimeout(held);
      }
    };
  }

  /**
   * Logs each change of state once, and while the bot is down the same warning with its fix again
   * every DOWN_WARNING_EVERY_MS: an operator reads a story, not a line per retry, and one who
   * looks at the log an hour later still finds what to do.
   */
  #setState(state: BotState, reason?: string, fields: Record<string, unknown> = {}): void {
    const previous = this.#status;
    const now = this.#now();
    if (previous.state === state && previous.reason === reason) {
      this.#warnAgain(now);
      return;
    }
    this.#status = {
      state,
      mode: previous.mode,
      since: previous.state === state ? previous.since : now,
      ...(reason !== undefined ? { reason } : {}),
    };
    if (previous.state === state) {
      this.#warnAgain(now);
      return;
    }
    if (state !== "starting") this.#leftStarting?.();
    const { log } = this.#options;
    if (state === "running") {
      this.#warnedAt = 0;
      log.info(fields, DOWN_STATES.has(previous.state) ? "bot running again" : "bot started");
    } else if (DOWN_STATES.has(state)) {
      this.#warnedAt = now;
      const problem = this.problem();
      const story = DOWN_STATES.has(previous.state)
        ? "bot still not running"
        : previous.state === "starting"
          ? "bot could not start yet; retrying"
          : "bot stopped; relaunching";
      log.warn(
        { state, reason, ...(problem ? { fix: problem.fix } : {}), ...fields },
        problem && state !== "reconnecting" ? `${story}: ${problem.what}` : story,
      );
    }
  }

  /** The down warning again, once DOWN_WARNING_EVERY_MS has passed since the last one. */
  #warnAgain(now: number): void {
    const { state, reason, since } = this.#status;
    if (!DOWN_STATES.has(state)) return;
    if (now - this.#warnedAt < (this.#options.downWarningEveryMs ?? DOWN_WARNING_EVERY_MS)) return;
    this.#warnedAt = now;
    const problem = this.problem();
    this.#options.log.warn(
      { state, reason, fix: problem?.fix, downForSeconds: Math.round((now - since) / 1000) },
      `bot still not running: ${problem?.what ?? state}`,
    );
  }

  /** The state a failure that stopped the bot puts it in. */
  #stateFor(error: unknown): BotState {
    if (error instanceof GrammyError) return stateForFailure(error.error_code);
    if (error instanceof HttpError) return "unreachable";
    return "reconnecting";
  }

  #reason(error: unknown): string {
    if (error instanceof WebhookReplaced) return error.message;
    if (error instanceof GrammyError) {
      const hint =
        error.error_code === 409
          ? " (another getUpdates call or instance uses this bot token)"
          : error.error_code === 401
            ? " (check TELEGRAM_BOT_TOKEN)"
            : "";
      return scrubToken(`${error.method}: ${error.error_code} ${error.description}${hint}`, this.#token);
    }
    const described = this.#describe(error);
    return String(described.cause ?? described.message ?? described.kind);
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#abort.abort();
    const bot = this.#bot;
    this.#bot = null;
    if (bot?.isRunning()) {
      // Confirms the last update to Telegram; not worth holding a shutdown up when it is away.
      await Promise.race([bot.stop().catch(() => undefined), sleep(STOP_CONFIRM_MS)]);
    }
    await this.#supervisor;
    await this.#polishing;
    this.#setState("stopped");
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
    if (isOutage(error)) {
      // The surroundings' fault, passing by itself: a warning, and the person is told to try again
      // rather than left without an answer (Telegram will not send the update again).
      logDatabaseFailure(this.#options.log, error, "bot update failed: the database is away", {
        update_id: update.update_id,
      });
      void this.#sayAway(update);
      return;
    }
    if (this.#abort.signal.aborted && endedByStopping(error)) {
      // Stopping ended its reply (endedBy): the person's message went unanswered.
      this.#options.log.warn(
        { update_id: update.update_id, error: this.#describe(error) },
        "bot update cut short: the service is stopping",
      );
      return;
    }
    this.#options.log.error(
      { update_id: update.update_id, error: this.#describe(error) },
      "bot update failed",
    );
  }

  /** Tells whoever sent `update` that the bot cannot answer now: a toast for a button, else a message. */
  async #sayAway(update: Update): Promise<void> {
    const api = this.#bot?.api;
    if (api === undefined) return;
    try {
      if (update.callback_query !== undefined) {
        await api.answerCallbackQuery(update.callback_query.id, {
          text: texts.databaseAway,
          show_alert: true,
        });
      } else if (update.message !== undefined) {
        await api.sendMessage(update.message.chat.id, texts.databaseAway);
      }
    } catch (error) {
      this.#options.log.warn(
        { error: this.#describe(error) },
        "could not tell a person the bot cannot answer now",
      );
    }
  }

  /**
   * An error as a log field, with the bot token scrubbed from every string (network errors embed
   * URLs, and a Bot API server may echo the request's path in an error's description).
   */
  #describe(error: unknown): Record<string, unknown> {
    const clean = (text: string | undefined) =>
      text === undefined ? undefined : scrubToken(text, this.#token);
    if (error instanceof GrammyError) {
      return {
        kind: "telegram",
        method: error.method,
        code: error.error_code,
        description: clean(error.description),
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

/** Calls the worker makes and retries itself (grammY's polling retries getUpdates on its own). */
const SUPERVISED_METHODS = new Set([
  "getUpdates",
  "getMe",
  "deleteWebhook",
  "setWebhook",
  "getWebhookInfo",
  "setMyCommands",
]);

/** A transformer applied to the bot's replies only, not to the calls the worker retries itself. */
function repliesOnly(transformer: Transformer): Transformer {
  return (prev, method, payload, signal) =>
    SUPERVISED_METHODS.has(method)
      ? prev(method, payload, signal)
      : transformer(prev, method, payload, signal);
}

/**
 * Whether `error` is a call ended by an abort (endedBy): the fetch's AbortError inside grammY's
 * HttpError, auto-retry's wait between tries or the pacer's wait for a turn given up. Any other
 * error is a real failure.
 */
function endedByStopping(error: unknown): boolean {
  if (error instanceof HttpError) return endedByStopping(error.error);
  if (!(error instanceof Error)) return false;
  return (
    error instanceof PaceWaitAborted ||
    error.name === "AbortError" ||
    error.message === "Request aborted while waiting between retries"
  );
}

/** A call (its retries and their waits) ends when `stopping` is aborted. */
function endedBy(stopping: AbortSignal): Transformer {
  return (prev, method, payload, signal) =>
    prev(
      method,
      payload,
      (signal ? AbortSignal.any([signal as AbortSignal, stopping]) : stopping) as typeof signal,
    );
}

/** Each attempt of a call fails when Telegram has not answered within `ms`. */
function timeLimit(ms: number): Transformer {
  return (prev, method, payload, signal) => {
    const limit = AbortSignal.timeout(ms);
    return prev(
      method,
      payload,
      (signal ? AbortSignal.any([signal as AbortSignal, limit]) : limit) as typeof signal,
    );
  };
}

/** Network failures of a reply are tried again twice, after 0.5 s and 1 s; then the reply fails. */
function retryNetwork(stopping: AbortSignal): Transformer {
  return async (prev, method, payload, signal) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await prev(method, payload, signal);
      } catch (error) {
        if (!(error instanceof HttpError) || attempt >= 3 || signal?.aborted || stopping.aborted) throw error;
        await sleep(500 * attempt);
      }
    }
  };
}
