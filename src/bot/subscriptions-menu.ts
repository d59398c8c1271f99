import { Composer, type Context, InlineKeyboard } from "grammy";
import { dockIdFrom } from "../domain/dock-reference.ts";
import type { ChatSubscription } from "../store/subscriptions.ts";
import { answer, type BotDeps, edit, inGroup, say } from "./context.ts";
import { requireManager } from "./groups.ts";
import { texts } from "./texts.ts";

/** Callback data of an Unsubscribe button, followed by the Dock ID. */
const UNSUBSCRIBE = "unsub:";

/**
 * The list message: one line per Dock, and an Unsubscribe button for each; then the Docks the chat
 * asked to join, waiting for their owner's approval.
 */
function listView(
  subscriptions: ChatSubscription[],
  waiting: { dockName: string }[],
  group: boolean,
): { text: string; buttons?: InlineKeyboard } {
  const header = texts.subscriptionsHeader(subscriptions.length, group);
  const pending =
    waiting.length === 0
      ? []
      : ["", texts.waitingHeader, ...waiting.map((request) => texts.waitingLine(request.dockName))];
  if (subscriptions.length === 0) return { text: [header, ...pending].join("\n") };
  const buttons = InlineKeyboard.from(
    subscriptions.map((subscription) => [
      InlineKeyboard.text(
        texts.buttons.unsubscribe(subscription.dockName),
        `${UNSUBSCRIBE}${subscription.dockId}`,
      ),
    ]),
  );
  const lines = subscriptions.map((subscription) => texts.subscriptionLine(subscription.dockName));
  return { text: [header, ...lines, ...pending].join("\n"), buttons };
}

/** The chat's list as it is now. */
async function currentView(deps: BotDeps, chatId: number, group: boolean) {
  const [subscriptions, waiting] = await Promise.all([
    deps.subscriptions.listActive(chatId),
    deps.audience.requests.pendingOfChat(chatId),
  ]);
  return listView(subscriptions, waiting, group);
}

async function showList(ctx: Context, deps: BotDeps): Promise<void> {
  if (ctx.chat === undefined) return;
  const view = await currentView(deps, ctx.chat.id, inGroup(ctx));
  await say(ctx, view.text, view.buttons ? { reply_markup: view.buttons } : {});
}

/**
 * Seeing and leaving subscriptions: My subscriptions / `/list` (with the requests to join that
 * wait for an owner), the Unsubscribe buttons, and `/unsubscribe [dock_id]`. Unsubscribing marks the subscription removed, so the delivery engine
 * stops queueing (and skips what is queued) for this chat from then on.
 */
export function subscriptionsMenu(deps: BotDeps): Composer<Context> {
  const composer = new Composer<Context>();

  composer.command("list", (ctx) => showList(ctx, deps));
  composer.hears(texts.menu.subscriptions, (ctx) => showList(ctx, deps));

  composer.command("unsubscribe", async (ctx) => {
    const argument = ctx.match.trim();
    if (argument === "") {
      await showList(ctx, deps);
      return;
    }
    if (!(await requireManager(ctx))) return;
    const dockId = dockIdFrom(argument) ?? "";
    const current = (await deps.subscriptions.listActive(ctx.chat.id)).find((s) => s.dockId === dockId);
    const removed =
      current !== undefined &&
      (await deps.subscriptions.transition(ctx.chat.id, "active", "removed", dockId)) > 0;
    await say(ctx, removed && current ? texts.unsubscribedMessage(current.dockName) : texts.notSubscribed);
  });

  composer.callbackQuery(new RegExp(`^${UNSUBSCRIBE}(.+)$`), async (ctx) => {
    const chat = ctx.chat;
    if (chat === undefined) {
      await answer(ctx, { text: texts.staleButton });
      return;
    }
    if (!(await requireManager(ctx))) return;
    const dockId = ctx.match[1] as string;
    const current = (await deps.subscriptions.listActive(chat.id)).find((s) => s.dockId === dockId);
    const removed =
      current !== undefined &&
      (await deps.subscriptions.transition(chat.id, "active", "removed", dockId)) > 0;
    await answer(ctx, {
      text: removed && current ? texts.unsubscribed(current.dockName) : texts.notSubscribed,
    });
    const view = await currentView(deps, chat.id, inGroup(ctx));
    await edit(ctx, view.text, view.buttons ? { reply_markup: view.buttons } : {});
  });

  return composer;
}
