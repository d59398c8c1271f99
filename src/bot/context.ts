import type { FastifyBaseLogger } from "fastify";
import { type Context, GrammyError, Keyboard } from "grammy";
import type { Audience } from "../store/audience.ts";
import type { BotStateRepository } from "../store/bot-states.ts";
import type { DockRepository } from "../store/docks.ts";
import type { InviteLinkRepository } from "../store/invite-links.ts";
import type { LoginTokenRepository } from "../store/login-tokens.ts";
import type { MessageChanges } from "../store/message-changes.ts";
import type { OwnerRepository } from "../store/owners.ts";
import type { ChatNames, SubscriptionRepository } from "../store/subscriptions.ts";
import { texts } from "./texts.ts";

/** What the bot's handlers work with: the store, nothing else. Each handler module receives it. */
export interface BotDeps {
  docks: DockRepository;
  subscriptions: SubscriptionRepository;
  /** Docks' invite links, found by the token of `/start join_<token>`. */
  invites: InviteLinkRepository;
  /** Join requests (asked, decided) and the other actions on a Dock's audience, audited. */
  audience: Audience;
  loginTokens: LoginTokenRepository;
  states: BotStateRepository;
  messages: MessageChanges;
  /** Who may own Docks: the claim link, invitations, and whether a sign-in may go on. */
  owners: OwnerRepository;
  /** The console's address, for the bot's "sign in at …" answers. */
  publicUrl: string;
  /** Where changes of who may own Docks are logged (the bot worker's logger). */
  log?: FastifyBaseLogger;
}

/** The persistent main menu of a private chat: Subscribe, My subscriptions, Help. */
export function mainMenu(): Keyboard {
  return new Keyboard()
    .text(texts.menu.subscribe)
    .text(texts.menu.subscriptions)
    .row()
    .text(texts.menu.help)
    .resized()
    .persistent()
    .placeholder(texts.menu.placeholder);
}

/** True in groups and supergroups, where the subscriber is the group, not the person. */
export function inGroup(ctx: Context): boolean {
  return ctx.chat?.type === "group" || ctx.chat?.type === "supergroup";
}

/**
 * Sends a text of the bot. In a private chat it carries the main menu (unless it has buttons of
 * its own), so the menu is there whatever the person did last; groups get no reply keyboard,
 * which every member would see.
 */
export async function say(
  ctx: Context,
  text: string,
  extra: Parameters<Context["reply"]>[1] = {},
): Promise<void> {
  const menu =
    ctx.chat?.type === "private" && extra.reply_markup === undefined ? { reply_markup: mainMenu() } : {};
  await ctx.reply(text, {
    parse_mode: "HTML",
    link_preview_options: { is_disabled: true },
    ...menu,
    ...extra,
  });
}

/**
 * Rewrites the message a button belongs to (its buttons go away unless new ones are given). A
 * button pressed twice, or under a message that is gone, must not fail the update: those two
 * answers from Telegram are expected and ignored.
 */
export async function edit(
  ctx: Context,
  text: string,
  extra: Parameters<Context["editMessageText"]>[1] = {},
): Promise<void> {
  try {
    await ctx.editMessageText(text, {
      parse_mode: "HTML",
      link_preview_options: { is_disabled: true },
      ...extra,
    });
  } catch (error) {
    if (
      error instanceof GrammyError &&
      /message is not modified|message to edit not found|message can't be edited/.test(error.description)
    ) {
      return;
    }
    throw error;
  }
}

/**
 * Answers a button press (Telegram shows a spinner until then). A press handled late, e.g. queued
 * across a restart, may be past Telegram's answer window; that refusal is expected and ignored.
 */
export async function answer(
  ctx: Context,
  options: Parameters<Context["answerCallbackQuery"]>[0] = {},
): Promise<void> {
  try {
    await ctx.answerCallbackQuery(options);
  } catch (error) {
    if (error instanceof GrammyError && /query is too old|query ID is invalid/.test(error.description))
      return;
    throw error;
  }
}

/**
 * After a Yes that subscribed: a deep link's Yes is the one path into the bot that never showed
 * the menu (a prompt with buttons cannot carry it, nor can its edit): it comes with the chat's
 * first subscription, before the prompt turns into the confirmation, so that whoever sees the
 * confirmation has the menu too. Telegram keeps it up after that: later subscriptions do not say
 * it again.
 */
export async function menuAfterFirst(ctx: Context, deps: BotDeps, added: boolean): Promise<void> {
  const chat = ctx.chat;
  if (chat?.type === "private" && added && (await deps.subscriptions.listActive(chat.id)).length === 1) {
    await say(ctx, texts.menuReady);
  }
}

/** What Telegram calls the update's chat: a person's names in private, a group's title. */
export function namesOf(chat: NonNullable<Context["chat"]>): ChatNames {
  return chat.type === "private"
    ? { firstName: chat.first_name, username: chat.username }
    : { title: chat.title };
}
