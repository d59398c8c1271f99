import type { Context } from "grammy";
import { answer, inGroup } from "./context.ts";
import { texts } from "./texts.ts";

/**
 * Whether the person behind this update may change the chat's subscriptions: anyone in their own
 * private chat; in a group only its creator and administrators, asked of Telegram each time (admin
 * lists change, and a stale copy would let a demoted admin keep control). An anonymous admin
 * writes as the group itself, which only admins can do.
 */
export async function mayManage(ctx: Context): Promise<boolean> {
  if (!inGroup(ctx)) return true;
  const chat = ctx.chat;
  if (chat === undefined) return false;
  if (ctx.msg?.sender_chat?.id === chat.id) return true;
  const from = ctx.from;
  if (from === undefined) return false;
  const member = await ctx.api.getChatMember(chat.id, from.id);
  return member.status === "creator" || member.status === "administrator";
}

/**
 * Checks `mayManage` and, when refused, tells the person why: an alert on a button, a reply to a
 * message. Returns whether to go on.
 */
export async function requireManager(ctx: Context): Promise<boolean> {
  if (await mayManage(ctx)) return true;
  if (ctx.callbackQuery) {
    await answer(ctx, { text: texts.adminsOnly, show_alert: true });
  } else {
    const asked = ctx.message?.message_id;
    await ctx.reply(texts.adminsOnly, asked === undefined ? {} : { reply_parameters: { message_id: asked } });
  }
  return false;
}
