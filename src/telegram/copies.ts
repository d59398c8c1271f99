import { Api, GrammyError, HttpError } from "grammy";
import type { RenderedPart } from "../domain/render.ts";
import { scrubToken } from "../runtime/log.ts";
import type { TelegramTarget } from "./target.ts";

/**
 * What the dispatcher asks of Telegram for the copies of a message in one chat: send a part, edit
 * one of its messages into a part, delete one, and a call that sends nothing (the probe while
 * Telegram is down). A call that fails throws Telegram's answer, read with answers.ts (`classify`,
 * `changeAnswer`, `answerText`), its texts cleaned of the bot token: what the dispatcher stores and
 * logs of it never holds a secret.
 *
 * The dispatcher knows only this interface, so that its scheduling is tested with a fake sender
 * (test/delivery/dispatcher.test.ts) and grammY stays inside src/telegram/ and src/bot/.
 */
export interface CopySender {
  /** Sends one part; resolves to Telegram's id of the message it became. */
  send(chatId: number, part: RenderedPart): Promise<number>;
  /** Shows `part` in the chat's message `messageId` (its text, entities, buttons and link preview). */
  edit(chatId: number, messageId: number, part: RenderedPart): Promise<void>;
  delete(chatId: number, messageId: number): Promise<void>;
  /** Asks Telegram who the bot is: an answer proves Telegram answers, and nothing is sent. */
  probe(): Promise<void>;
}

/** The CopySender of the service: grammY's Bot API client on `telegram`. */
export function grammyCopySender(
  telegram: TelegramTarget,
  options: {
    /** A call that has not answered by then fails (and the delivery is retried). */
    timeoutSeconds: number;
    /** Sends with `allow_paid_broadcast` (rates above 30/s). */
    paidBroadcast: boolean;
  },
): CopySender {
  const api = new Api(telegram.token, { apiRoot: telegram.apiRoot, timeoutSeconds: options.timeoutSeconds });
  const paid = options.paidBroadcast ? { allow_paid_broadcast: true } : {};
  /** `call`, with any error it throws cleaned of the token (a Bot API server may echo its path). */
  const scrubbed = async <T>(call: () => Promise<T>): Promise<T> => {
    try {
      return await call();
    } catch (error) {
      throw scrub(error, telegram.token);
    }
  };
  return {
    send: (chatId, { text, ...sendOptions }) =>
      scrubbed(async () => (await api.sendMessage(chatId, text, { ...sendOptions, ...paid })).message_id),
    edit: (chatId, messageId, { text, entities, reply_markup, link_preview_options }) =>
      scrubbed(async () => {
        await api.editMessageText(chatId, messageId, text, {
          entities,
          ...(reply_markup ? { reply_markup } : {}),
          ...(link_preview_options ? { link_preview_options } : {}),
        });
      }),
    delete: (chatId, messageId) =>
      scrubbed(async () => {
        await api.deleteMessage(chatId, messageId);
      }),
    probe: () =>
      scrubbed(async () => {
        await api.getMe();
      }),
  };
}

/**
 * `error` with the token taken out of its texts — message, stack, Telegram's description, and the
 * same for the error it wraps (grammY's HttpError holds fetch's, which may name the request's URL)
 * — keeping its class, which answers.ts reads.
 */
function scrub(error: unknown, token: string): Error {
  if (!(error instanceof Error)) return new Error(scrubToken(String(error), token));
  const errors = [error];
  if (error instanceof HttpError && error.error instanceof Error) errors.push(error.error);
  for (const one of [...errors]) if (one.cause instanceof Error) errors.push(one.cause);
  for (const one of errors) {
    // Own properties over the prototype's (a DOMException's message is a getter there).
    for (const name of ["message", "stack", ...(one instanceof GrammyError ? ["description"] : [])]) {
      const value = (one as unknown as Record<string, unknown>)[name];
      if (typeof value === "string")
        Object.defineProperty(one, name, {
          value: scrubToken(value, token),
          configurable: true,
          writable: true,
        });
    }
  }
  return error;
}
