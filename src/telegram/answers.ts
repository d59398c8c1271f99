import { GrammyError, HttpError } from "grammy";

/**
 * Telegram's answers, read: what a failed call means for the one who made it (a delivery, the
 * bot's notices). Part of the Telegram port (src/telegram/): only this folder and src/bot/ know
 * grammY's errors.
 */

/** What to do after a failed send, decided from Telegram's answer. */
export type Outcome =
  /** `429`: wait `retryAfter` seconds; not a failure. */
  | { kind: "rate_limited"; retryAfter: number; reason: string }
  /** The chat is unreachable for good (blocked, kicked, deleted): stop sending to it. */
  | { kind: "gone"; reason: string }
  /** Telegram or the network failed: try again later, until the maximum age. */
  | { kind: "transient"; reason: string }
  /** The group became a supergroup with a new chat id: follow it there and send again. */
  | { kind: "moved"; to: number; reason: string }
  /** Telegram refused this message (other `400`s): retrying would not help. */
  | { kind: "permanent"; reason: string };

const GONE =
  /chat not found|user is deactivated|bot was kicked|bot was blocked|PEER_ID_INVALID|group chat was deactivated|bot is not a member|have no rights to send/i;

/** Sorts a failure from grammY, sending to `chatId`, into what the dispatcher does next. */
export function classify(error: unknown, chatId: number): Outcome {
  if (error instanceof GrammyError) {
    const reason = `${error.error_code} ${error.description}`;
    if (error.error_code === 429)
      return { kind: "rate_limited", retryAfter: error.parameters.retry_after ?? 1, reason };
    const to = error.parameters.migrate_to_chat_id;
    if (error.error_code === 400 && typeof to === "number") {
      // "Moved" to where it already is would send it round at once, for ever: back off instead.
      if (to === chatId || !Number.isSafeInteger(to)) return { kind: "transient", reason };
      return { kind: "moved", to, reason };
    }
    if (error.error_code === 403) return { kind: "gone", reason };
    if (error.error_code === 400 && GONE.test(error.description)) return { kind: "gone", reason };
    if (error.error_code >= 500) return { kind: "transient", reason };
    // 401/404 mean a wrong token or API root: an operator's fix, after which sending should resume.
    if (error.error_code === 401 || error.error_code === 404) return { kind: "transient", reason };
    return { kind: "permanent", reason };
  }
  if (error instanceof HttpError) return { kind: "transient", reason: `network: ${error.message}` };
  return { kind: "transient", reason: error instanceof Error ? error.message : String(error) };
}

/** How Telegram answered an edit or a delete of a message that need not be retried. */
export type ChangeAnswer =
  /** Telegram already shows exactly this: the edit is done. */
  | "not_modified"
  /** The message is no longer there (the person deleted it): an edit sends the message anew. */
  | "not_found"
  /** Telegram will not edit this message: an edit sends it anew. */
  | "cannot_edit"
  /** Telegram will not delete this message (older than 48 hours, or not the bot's to delete). */
  | "cannot_delete";

/** Whether a failed editMessageText/deleteMessage is one of Telegram's answers about the message itself. */
export function changeAnswer(error: unknown): ChangeAnswer | null {
  if (!(error instanceof GrammyError) || error.error_code !== 400) return null;
  const text = error.description;
  if (/message is not modified/i.test(text)) return "not_modified";
  if (/message to (edit|delete) not found|MESSAGE_ID_INVALID/i.test(text)) return "not_found";
  if (/message can't be edited/i.test(text)) return "cannot_edit";
  if (/message can't be deleted/i.test(text)) return "cannot_delete";
  return null;
}

/** Telegram's own words for a failed call (its `description`), or the error's message. */
export function answerText(error: unknown): string {
  if (error instanceof GrammyError) return error.description;
  return error instanceof Error ? error.message : String(error);
}
