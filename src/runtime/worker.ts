import type { TelegramTarget } from "../telegram/target.ts";

/**
 * A part of the service that runs in the background (the bot, the delivery dispatcher, retention).
 * It gets the Telegram target resolved to an address it can reach.
 */
export interface BackgroundWorker {
  readonly name: string;
  start(telegram: TelegramTarget): Promise<void>;
  stop(): Promise<void>;
}
