import { Composer, type Context } from "grammy";
import type { ChatMember } from "grammy/types";
import type { BotDeps } from "./context.ts";
import { mayManage } from "./groups.ts";
import { texts } from "./texts.ts";

/** Whether the bot, with this membership, can still write in the chat. */
function present(member: ChatMember): boolean {
  if (member.status === "restricted") return member.is_member;
  return member.status === "member" || member.status === "administrator" || member.status === "creator";
}

/**
 * The bot's own membership (`my_chat_member`): a person who blocks the bot, or a group that
 * removes it, can no longer receive messages, so the chat's active subscriptions become
 * `blocked` (deliveries stop instead of failing). Unblocking or re-adding the bot resumes exactly
 * those (a group's to private Docks only when an administrator re-added it); subscriptions the
 * chat had left stay removed. A group upgraded to a supergroup keeps its
 * subscriptions under its new chat id. A group's title is kept up to date for the console.
 */
export function membership(deps: BotDeps): Composer<Context> {
  const composer = new Composer<Context>();

  composer.on("my_chat_member", async (ctx) => {
    const update = ctx.myChatMember;
    const chatId = update.chat.id;
    // Every membership update of a group or channel carries its title as it is now: the bot learns
    // it on being added, before anyone subscribes, and catches a rename it missed while away.
    if (update.chat.type !== "private") await deps.subscriptions.nameChat(chatId, update.chat.title);
    const wasPresent = present(update.old_chat_member);
    const isPresent = present(update.new_chat_member);
    if (wasPresent && !isPresent) {
      await deps.subscriptions.transition(chatId, "active", "blocked");
      return;
    }
    if (wasPresent || !isPresent) return;
    if (update.chat.type !== "group" && update.chat.type !== "supergroup") {
      // A private chat comes back with the person's /start, which greets them.
      await deps.subscriptions.transition(chatId, "blocked", "active");
      return;
    }
    // Only a group's administrator may subscribe it to a private Dock: one who added the bot back
    // resumes those subscriptions too; anyone else, only the open Docks' (asked of Telegram, as
    // for subscribing).
    const { resumed, paused } = await deps.subscriptions.resumeGroup(chatId, await mayManage(ctx));
    const hello = texts.groupWelcome(resumed);
    await ctx.reply(paused > 0 ? `${hello}\n${texts.privatePaused(paused)}` : hello, { parse_mode: "HTML" });
  });

  // The group became a supergroup: a new chat with a new id, where the bot keeps its place. Telegram
  // says so in the old group; its subscriptions (and queued messages) follow it to the new id. The
  // dispatcher does the same if a send to the old id is refused first.
  composer.on("message:migrate_to_chat_id", async (ctx) => {
    await deps.subscriptions.moveChat(ctx.chat.id, ctx.message.migrate_to_chat_id);
  });

  // A group renamed: Telegram tells every bot in it (privacy mode or not) with a service message.
  composer.on("message:new_chat_title", async (ctx) => {
    await deps.subscriptions.nameChat(ctx.chat.id, ctx.message.new_chat_title);
  });

  return composer;
}
