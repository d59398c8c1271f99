import { Composer, type Context, InlineKeyboard } from "grammy";
import { dockIdFrom, joinTokenFrom } from "../domain/dock-reference.ts";
import type { Dock } from "../store/docks.ts";
import { answer, type BotDeps, edit, inGroup, menuAfterFirst, namesOf, say } from "./context.ts";
import { requireManager } from "./groups.ts";
import { askToJoin, offerInvite, wayIn } from "./join.ts";
import { texts } from "./texts.ts";

/** Callback data of the Yes / No buttons under a subscription prompt, followed by the Dock ID. */
const YES = "sub:y:";
const NO = "sub:n:";

/** The bot_states step "the person pressed Subscribe and the bot waits for a Dock ID". */
const AWAITING_DOCK_ID = "awaiting_dock_id";

/** How long the bot waits for a Dock ID after Subscribe before it forgets it asked. */
const DOCK_ID_WAIT_MS = 15 * 60 * 1000;

/**
 * Subscribes the update's chat (a person, or a group) to the Dock by its ID, or asks its owner to
 * let it in (an `approval` Dock); what to say, and whether it subscribed. A private Dock refuses.
 */
async function subscribeChat(
  ctx: Context,
  deps: BotDeps,
  dock: Dock,
): Promise<{ added: boolean; text: string }> {
  const chat = ctx.chat;
  if (chat === undefined) throw new Error("a subscription needs a chat");
  const way = await wayIn(ctx, deps, dock, null);
  if (way.kind === "told") return { added: false, text: way.text };
  if (way.kind === "ask") return { added: false, text: await askToJoin(ctx, deps, dock, null) };
  const added = await deps.subscriptions.subscribe(dock.id, chat.id, chat.type, namesOf(chat));
  const text = added
    ? texts.subscribed(dock.name, inGroup(ctx))
    : texts.alreadySubscribed(dock.name, inGroup(ctx));
  return { added, text };
}

/**
 * The deep-link flow (`/start <dock_id>`, or a Dock link pasted unprompted): names the Dock and
 * asks Yes / No — to subscribe, or to ask its owner — so nobody is subscribed (or asks) by
 * following a link they did not read. A private Dock says so, without naming itself.
 */
export async function offerSubscription(ctx: Context, deps: BotDeps, dockId: string): Promise<void> {
  const chat = ctx.chat;
  if (chat === undefined) return;
  if (!(await requireManager(ctx))) return;
  const dock = await deps.docks.get(dockId);
  if (dock === undefined) {
    await say(ctx, texts.noSuchDock(dockId));
    return;
  }
  const way = await wayIn(ctx, deps, dock, null);
  if (way.kind === "told") {
    await say(ctx, way.text);
    return;
  }
  const buttons = new InlineKeyboard()
    .text(texts.buttons.yes, `${YES}${dock.id}`)
    .text(texts.buttons.no, `${NO}${dock.id}`);
  const prompt = way.kind === "ask" ? texts.askPrompt : texts.subscribePrompt;
  await say(ctx, prompt(dock, inGroup(ctx)), { reply_markup: buttons });
}

/** Asks for a Dock ID with `force_reply`, and remembers in the database that it asked. */
async function askForDockId(ctx: Context, deps: BotDeps, text: string): Promise<void> {
  const chat = ctx.chat;
  const from = ctx.from;
  if (chat === undefined || from === undefined) return;
  await deps.states.set(chat.id, from.id, AWAITING_DOCK_ID, null, DOCK_ID_WAIT_MS);
  // In a group the prompt answers the admin's message and `selective` shows the reply field to
  // them alone; their reply to the bot is also what a bot in privacy mode gets to see.
  const asked = inGroup(ctx) ? ctx.message?.message_id : undefined;
  await say(ctx, text, {
    reply_markup: { force_reply: true, selective: true, input_field_placeholder: texts.askDockIdPlaceholder },
    ...(asked === undefined ? {} : { reply_parameters: { message_id: asked } }),
  });
}

/** Subscribe (menu button or `/subscribe`) in a private chat or, for its admins, a group. */
async function startManualSubscription(ctx: Context, deps: BotDeps): Promise<void> {
  if (!(await requireManager(ctx))) return;
  await deps.states.prune();
  await askForDockId(ctx, deps, texts.askDockId);
}

/** The pasted answer to "send me the Dock ID": subscribes at once, or says what is wrong and asks again. */
async function receiveDockId(ctx: Context, deps: BotDeps, text: string): Promise<void> {
  const chat = ctx.chat;
  const from = ctx.from;
  if (chat === undefined || from === undefined) return;
  const token = joinTokenFrom(text);
  if (token !== null) {
    // An invite link where the Dock ID was asked for: it is offered like the link itself.
    await deps.states.clear(chat.id, from.id);
    await offerInvite(ctx, deps, token);
    return;
  }
  const id = dockIdFrom(text);
  if (id === null) {
    await askForDockId(ctx, deps, texts.notADockId);
    return;
  }
  const dock = await deps.docks.get(id);
  if (dock === undefined) {
    await askForDockId(ctx, deps, texts.unknownDockId(id));
    return;
  }
  await deps.states.clear(chat.id, from.id);
  if (!(await requireManager(ctx))) return;
  await say(ctx, (await subscribeChat(ctx, deps, dock)).text);
}

/**
 * Subscribing by deep link (the Yes / No buttons) and by hand (Subscribe, then the Dock ID).
 * `commands` holds the commands and buttons; `replies` the handler of pasted IDs and other free
 * text, which must run after every other handler so that menu buttons and commands win.
 */
export function subscribe(deps: BotDeps): { commands: Composer<Context>; replies: Composer<Context> } {
  const commands = new Composer<Context>();

  commands.callbackQuery(new RegExp(`^${YES}(.+)$`), async (ctx) => {
    if (!(await requireManager(ctx))) return;
    const dock = await deps.docks.get(ctx.match[1] as string);
    if (dock === undefined) {
      await answer(ctx, { text: texts.dockGone });
      await edit(ctx, texts.dockGone);
      return;
    }
    const result = await subscribeChat(ctx, deps, dock);
    await menuAfterFirst(ctx, deps, result.added);
    await answer(ctx);
    await edit(ctx, result.text);
  });

  commands.callbackQuery(new RegExp(`^${NO}(.+)$`), async (ctx) => {
    if (!(await requireManager(ctx))) return;
    const dock = await deps.docks.get(ctx.match[1] as string);
    await answer(ctx);
    await edit(ctx, dock === undefined ? texts.dockGone : texts.declined(dock.name));
  });

  commands.command("subscribe", async (ctx) => {
    const argument = ctx.match.trim();
    if (argument === "") {
      await startManualSubscription(ctx, deps);
      return;
    }
    if (!(await requireManager(ctx))) return;
    const dock = await deps.docks.get(dockIdFrom(argument) ?? "");
    await say(
      ctx,
      dock === undefined ? texts.noSuchDock(argument) : (await subscribeChat(ctx, deps, dock)).text,
    );
  });
  commands.hears(texts.menu.subscribe, (ctx) => startManualSubscription(ctx, deps));

  commands.command("cancel", async (ctx) => {
    const cancelled = ctx.from !== undefined && (await deps.states.clear(ctx.chat.id, ctx.from.id));
    await say(ctx, cancelled ? texts.cancelled : texts.nothingToCancel);
  });

  const replies = new Composer<Context>();
  replies.on("message:text", async (ctx, next) => {
    const waiting = await deps.states.get(ctx.chat.id, ctx.from.id);
    // In a group only a reply to the bot counts: the admin may be talking to the others meanwhile.
    const addressed = !inGroup(ctx) || ctx.message.reply_to_message?.from?.id === ctx.me.id;
    if (waiting?.state === AWAITING_DOCK_ID && addressed) {
      await receiveDockId(ctx, deps, ctx.message.text);
      return;
    }
    if (ctx.chat.type !== "private") return next();
    const token = joinTokenFrom(ctx.message.text);
    if (token !== null) return offerInvite(ctx, deps, token);
    const id = dockIdFrom(ctx.message.text);
    if (id !== null) await offerSubscription(ctx, deps, id);
    else await say(ctx, texts.unknownText);
  });

  return { commands, replies };
}
