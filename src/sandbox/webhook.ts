import { setTimeout as sleep } from "node:timers/promises";
import type { UpdateQueue } from "./updates.ts";

/** What setWebhook stored. */
export interface WebhookConfig {
  url: string;
  secretToken: string | undefined;
  maxConnections: number;
}

/** A webhook answer may carry one Bot API call (`{"method": "sendMessage", …}`), as on Telegram. */
export type WebhookReplyHandler = (method: string, params: Record<string, unknown>) => Promise<void>;

/** How long one POST to the webhook may take before it counts as failed. */
const REQUEST_TIMEOUT_MS = 30_000;
/** Retry delays after a failed delivery: doubling from the first to the last. */
const RETRY_FIRST_MS = 250;
const RETRY_MAX_MS = 10_000;

/**
 * Delivers pending updates to the webhook one at a time, in order, as Telegram does: POST the JSON
 * update with `X-Telegram-Bot-Api-Secret-Token`; a 2xx answer confirms it, anything else (or no
 * answer) is retried with a growing delay and reported in getWebhookInfo.
 */
export class WebhookSender {
  config: WebhookConfig | null = null;
  lastErrorDate: number | undefined;
  lastErrorMessage: string | undefined;
  readonly #queue: UpdateQueue;
  readonly #onReply: WebhookReplyHandler;
  #running = false;
  #stop = new AbortController();

  constructor(queue: UpdateQueue, onReply: WebhookReplyHandler) {
    this.#queue = queue;
    this.#onReply = onReply;
    queue.onPush(() => this.#kick());
  }

  set(config: WebhookConfig | null): void {
    this.config = config;
    this.lastErrorDate = undefined;
    this.lastErrorMessage = undefined;
    this.#kick();
  }

  /** Stops delivering for good (the server is closing). */
  close(): void {
    this.config = null;
    this.#stop.abort();
  }

  #kick(): void {
    if (this.#running || this.config === null || this.#stop.signal.aborted) return;
    this.#running = true;
    void this.#run().finally(() => {
      this.#running = false;
    });
  }

  async #run(): Promise<void> {
    let delay = RETRY_FIRST_MS;
    for (;;) {
      const config = this.config;
      const update = this.#queue.peek();
      if (config === null || update === undefined || this.#stop.signal.aborted) return;
      const error = await this.#post(config, update);
      if (error === undefined) {
        this.#queue.confirm(update.update_id + 1);
        delay = RETRY_FIRST_MS;
        continue;
      }
      this.lastErrorDate = Math.floor(Date.now() / 1000);
      this.lastErrorMessage = error;
      try {
        await sleep(delay, undefined, { signal: this.#stop.signal });
      } catch {
        return;
      }
      delay = Math.min(delay * 2, RETRY_MAX_MS);
    }
  }

  /** One delivery attempt; the error text for getWebhookInfo, or undefined on success. */
  async #post(config: WebhookConfig, update: unknown): Promise<string | undefined> {
    let response: Response;
    try {
      response = await fetch(config.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(config.secretToken ? { "x-telegram-bot-api-secret-token": config.secretToken } : {}),
        },
        body: JSON.stringify(update),
        signal: AbortSignal.any([this.#stop.signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]),
      });
    } catch (error) {
      const cause = (error as { cause?: { code?: string } }).cause?.code;
      if (cause === "ECONNREFUSED") return "Connection refused";
      if ((error as Error).name === "TimeoutError") return "Read timeout expired";
      return `Connection failed: ${(error as Error).message}`;
    }
    const body = await response.text().catch(() => "");
    if (!response.ok) return `Wrong response from the webhook: ${response.status} ${response.statusText}`;
    await this.#replyFrom(body);
    return undefined;
  }

  async #replyFrom(body: string): Promise<void> {
    let reply: unknown;
    try {
      reply = JSON.parse(body);
    } catch {
      return;
    }
    if (typeof reply !== "object" || reply === null) return;
    const { method, ...params } = reply as Record<string, unknown>;
    if (typeof method === "string") await this.#onReply(method, params).catch(() => undefined);
  }
}
