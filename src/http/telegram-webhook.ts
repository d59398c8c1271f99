import type { FastifyInstance } from "fastify";
import type { Update } from "grammy/types";
import { constantTimeEqual } from "../domain/constant-time.ts";
import { ApiError } from "./errors.ts";

/** Where Telegram posts the bot's updates in webhook mode; TELEGRAM_WEBHOOK_URL must reach it. */
const TELEGRAM_WEBHOOK_PATH = "/telegram/webhook";

/** What the webhook route needs: the secret to check, and the bot to hand updates to. */
export interface TelegramWebhookOptions {
  /** The expected `X-Telegram-Bot-Api-Secret-Token`. */
  secret: string;
  /** Handles one update; false when the bot is not running (Telegram then retries later). */
  handle(update: Update): Promise<boolean>;
}

/**
 * `POST /telegram/webhook`: takes updates from Telegram in webhook mode. Only requests carrying
 * the secret token pass (anyone can find the URL; only Telegram knows the secret), others get
 * `401`. The update is handled before the answer, so Telegram sends a chat's next update only
 * after this one is done.
 */
export async function telegramWebhook(app: FastifyInstance, options: TelegramWebhookOptions): Promise<void> {
  app.post(
    TELEGRAM_WEBHOOK_PATH,
    {
      schema: {
        hide: true,
        body: {
          type: "object",
          required: ["update_id"],
          properties: { update_id: { type: "integer" } },
        },
      },
      // The secret is checked before the body is parsed or validated.
      onRequest: async (request) => {
        const given = request.headers["x-telegram-bot-api-secret-token"];
        if (typeof given !== "string" || !constantTimeEqual(given, options.secret)) {
          throw new ApiError("unauthorized", "Wrong or missing X-Telegram-Bot-Api-Secret-Token.");
        }
      },
    },
    async (request, reply) => {
      if (!(await options.handle(request.body as Update))) {
        throw new ApiError("not_ready", "The bot is not running yet.");
      }
      return reply.code(200).send({ ok: true });
    },
  );
}
