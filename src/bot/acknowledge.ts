import { Composer, type Context } from "grammy";
import { ACK_PREFIX, ackTime, SNOOZE_PREFIX } from "../domain/render.ts";
import { answer, type BotDeps } from "./context.ts";
import { texts } from "./texts.ts";

/** The Acknowledge button's callback data: the prefix and a message ID. */
const ACK = new RegExp(`^${ACK_PREFIX}(msg_[A-Za-z0-9]{22})$`);

/** A snooze button's callback data: the prefix, a message ID, and minutes or `am` (till 08:00 UTC). */
const SNOOZE = new RegExp(`^${SNOOZE_PREFIX}(msg_[A-Za-z0-9]{22}):(15|60|am)$`);

/** How the person who pressed is named on every copy: their name as Telegram has it, else @username. */
function displayName(from: NonNullable<Context["from"]>): string {
  const name = [from.first_name, from.last_name].filter((part) => part && part.trim() !== "").join(" ");
  return name !== "" ? name : from.username ? `@${from.username}` : `user ${from.id}`;
}

/**
 * The Acknowledge button under a notification: the first press anywhere is recorded (store
 * message-changes.ts: every copy is then edited to say who, and the sender is told); every press
 * is answered, a later one with who was first.
 */
export function acknowledge(deps: BotDeps): Composer<Context> {
  const composer = new Composer<Context>();
  composer.callbackQuery(ACK, async (ctx) => {
    const from = ctx.from;
    const chatId = ctx.chat?.id;
    const pressed = ctx.callbackQuery.message;
    const telegramMessageId = pressed?.message_id;
    if (chatId === undefined || telegramMessageId === undefined)
      return answer(ctx, { text: texts.staleButton });
    // Telegram's own copy of the pressed message (not the client's word): the bot's, with this very
    // button. It lets a copy the service lost track of (a crash as it was sent) be pressed too.
    const named =
      pressed !== undefined &&
      "from" in pressed &&
      pressed.from?.id === ctx.me.id &&
      (pressed.reply_markup?.inline_keyboard ?? []).some((row) =>
        row.some((button) => "callback_data" in button && button.callback_data === ctx.callbackQuery.data),
      );
    const result = await deps.messages.acknowledge(
      ctx.match[1] as string,
      { id: from.id, name: displayName(from), username: from.username ?? null },
      { chatId, telegramMessageId, named },
    );
    switch (result.kind) {
      case "first":
        return answer(ctx, { text: texts.acknowledged });
      case "already":
        return answer(ctx, { text: texts.alreadyAcknowledged(result.name, ackTime(result.at)) });
      case "deleted":
        return answer(ctx, { text: texts.acknowledgedDeleted });
      default:
        return answer(ctx, { text: texts.staleButton });
    }
  });
  // A reminder's snooze: answered to the person alone (answerCallbackQuery), nothing in the chat.
  composer.callbackQuery(SNOOZE, async (ctx) => {
    const chatId = ctx.chat?.id;
    const telegramMessageId = ctx.callbackQuery.message?.message_id;
    if (chatId === undefined || telegramMessageId === undefined)
      return answer(ctx, { text: texts.staleButton });
    const from = ctx.from;
    const result = await deps.messages.snooze(
      ctx.match[1] as string,
      { id: from.id, name: displayName(from), username: from.username ?? null },
      { chatId, telegramMessageId },
      ctx.match[2] as string,
    );
    switch (result.kind) {
      case "snoozed":
        return answer(ctx, { text: texts.snoozed(ackTime(result.until), chatId < 0) });
      case "already":
        return answer(ctx, { text: texts.alreadyAcknowledged(result.name, ackTime(result.at)) });
      case "deleted":
        return answer(ctx, { text: texts.acknowledgedDeleted });
      case "over":
        return answer(ctx, { text: texts.remindersOver });
      default:
        return answer(ctx, { text: texts.staleButton });
    }
  });
  return composer;
}
