/** Telegram's `ResponseParameters`: when to try again, or where an upgraded group went. */
export interface ResponseParameters {
  retry_after?: number;
  migrate_to_chat_id?: number;
}

/**
 * A failed Bot API call, answered in Telegram's envelope:
 * `{"ok":false,"error_code":N,"description":"…","parameters":{…}}`. The descriptions are Telegram's
 * own wording, because clients (and our delivery code) branch on them.
 */
export class BotApiError extends Error {
  readonly code: number;
  readonly parameters: ResponseParameters | undefined;

  constructor(code: number, description: string, parameters?: ResponseParameters) {
    super(description);
    this.name = "BotApiError";
    this.code = code;
    this.parameters = parameters;
  }

  get body(): { ok: false; error_code: number; description: string; parameters?: ResponseParameters } {
    return {
      ok: false,
      error_code: this.code,
      description: this.message,
      ...(this.parameters ? { parameters: this.parameters } : {}),
    };
  }
}

/** `400 Bad Request: <what>`, Telegram's answer to a call it understood but refuses. */
export function badRequest(what: string): BotApiError {
  return new BotApiError(400, `Bad Request: ${what}`);
}

/** `403 Forbidden: <what>`: the bot may not write to this chat (blocked, kicked, never started). */
export function forbidden(what: string): BotApiError {
  return new BotApiError(403, `Forbidden: ${what}`);
}

/** `409 Conflict: <what>`: two getUpdates at once, or getUpdates while a webhook is set. */
export function conflict(what: string): BotApiError {
  return new BotApiError(409, `Conflict: ${what}`);
}

/** `429 Too Many Requests`, with `retry_after` in whole seconds as Telegram sends it. */
export function tooManyRequests(retryAfter: number): BotApiError {
  return new BotApiError(429, `Too Many Requests: retry after ${retryAfter}`, { retry_after: retryAfter });
}

export const UNAUTHORIZED = (): BotApiError => new BotApiError(401, "Unauthorized");
export const NOT_FOUND = (): BotApiError => new BotApiError(404, "Not Found");
export const CHAT_NOT_FOUND = (): BotApiError => badRequest("chat not found");
