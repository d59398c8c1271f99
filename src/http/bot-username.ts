import type { TelegramTarget } from "../telegram-target.ts";
import { ApiError } from "./errors.ts";

/**
 * The bot's username, which every `t.me/<bot>` link needs: known up front in the sandbox, asked
 * from Telegram's `getMe` on first use otherwise and then remembered (a bot's username is fixed).
 * While Telegram cannot be reached, callers get `telegram_unavailable` and may try again.
 */
export function botUsernameResolver(telegram: TelegramTarget): () => Promise<string> {
  let known: string | null = telegram.botUsername;
  return async () => {
    if (known !== null) return known;
    try {
      const response = await fetch(`${telegram.apiRoot}/bot${telegram.token}/getMe`, {
        signal: AbortSignal.timeout(5000),
      });
      const body = (await response.json()) as { ok?: boolean; result?: { username?: unknown } };
      if (body.ok && typeof body.result?.username === "string") {
        known = body.result.username;
        return known;
      }
    } catch {
      // Network failure or a non-JSON answer: reported below like any other failure.
    }
    throw new ApiError("telegram_unavailable");
  };
}
