import { createHmac } from "node:crypto";
import type { Config } from "../runtime/config.ts";
import { SANDBOX_BOT_TOKEN, SANDBOX_BOT_USERNAME } from "./sandbox-bot.ts";

/** Which Telegram the service talks to; point grammY at it with `client: { apiRoot }`. */
export interface TelegramTarget {
  /** Bot API root without a trailing slash, e.g. `https://api.telegram.org` or `<PUBLIC_URL>/sandbox`. */
  apiRoot: string;
  token: string;
  /** Known up front only in the sandbox; on Telegram ask getMe. */
  botUsername: string | null;
  /** True when no TELEGRAM_BOT_TOKEN is set and the built-in sandbox plays Telegram. */
  sandbox: boolean;
}

/** The real Telegram when a bot token is configured, otherwise the sandbox served by this service. */
export function telegramTarget(config: Config): TelegramTarget {
  if (config.telegramBotToken === null) {
    return {
      apiRoot: `${config.publicUrl}/sandbox`,
      token: SANDBOX_BOT_TOKEN,
      botUsername: SANDBOX_BOT_USERNAME,
      sandbox: true,
    };
  }
  return {
    apiRoot: config.telegramApiRoot,
    token: config.telegramBotToken,
    botUsername: null,
    sandbox: false,
  };
}

/**
 * The bot's username: known at once in the sandbox, asked of Telegram (`getMe`, at most 10 s)
 * otherwise; null when Telegram cannot be reached. (grammY is loaded only then: a command that
 * needs no Telegram does not load it.)
 */
export async function askBotUsername(target: TelegramTarget): Promise<string | null> {
  if (target.botUsername !== null) return target.botUsername;
  const { Api } = await import("grammy");
  try {
    return (await new Api(target.token, { apiRoot: target.apiRoot, timeoutSeconds: 10 }).getMe()).username;
  } catch {
    return null;
  }
}

/**
 * The `secret_token` given to `setWebhook`, derived from the bot token: every instance that
 * shares the token computes the same value without storing or configuring one more secret, and
 * nobody without the token can forge it.
 */
export function webhookSecret(botToken: string): string {
  return createHmac("sha256", botToken).update("dock-notify telegram webhook").digest("base64url");
}
