import { Composer, type Context, InlineKeyboard } from "grammy";
import { JOIN_TOKEN_PATTERN, needsApproval } from "../domain/audience.ts";
import type { Dock } from "../store/docks.ts";
import type { InviteLink } from "../store/invite-links.ts";
import { answer, type BotDeps, edit, inGroup, menuAfterFirst, namesOf, say } from "./context.ts";
import { requireManager } from "./groups.ts";
import { texts } from "./texts.ts";

/** Callback data of the Yes / No under an invite link's prompt, followed by the link's token. */
const YES = "join:y:";
const NO = "join:n:";

/** Says `text` where the update came from: the prompt's edit after a button, a message otherwise. */
async function tell(ctx: Context, text: string): Promise<void> {
  if (ctx.callbackQuery) {
    await answer(ctx);
    await edit(ctx, text);
  } else await say(ctx, text);
}

/** Why an invite link cannot be used, as its opener is told. */
function refusal(link: InviteLink | undefined): string {
  switch (link?.state) {
    case "revoked":
      return texts.inviteRevoked;
    case "expired":
      return texts.inviteExpired;
    case "used_up":
      return texts.inviteUsedUp;
    default:
      return texts.inviteUnknown;
  }
}

/** The link of this token and its Dock while the link works; otherwise tells why not, and null. */
async function workingLink(
  ctx: Context,
  deps: BotDeps,
  token: string,
): Promise<{ link: InviteLink; dock: Dock } | null> {
  const link = JOIN_TOKEN_PATTERN.test(token) ? await deps.invites.find(token) : undefined;
  const dock = link === undefined ? undefined : await deps.docks.get(link.dockId);
  if (link === undefined || dock === undefined || link.state !== "active") {
    await tell(ctx, refusal(dock === undefined ? undefined : link));
    return null;
  }
  return { link, dock };
}

/**
 * `/start join_<token>` (a Dock's invite link, opened in Telegram or pasted): names the Dock and
 * asks Yes / No, as the Dock ID's link does; only a link that still works gets that far. In a
 * group only an admin may answer.
 */
export async function offerInvite(ctx: Context, deps: BotDeps, token: string): Promise<void> {
  const chat = ctx.chat;
  if (chat === undefined) return;
  if (!(await requireManager(ctx))) return;
  const found = await workingLink(ctx, deps, token);
  if (found === null) return;
  const { dock, link } = found;
  if ((await deps.subscriptions.state(dock.id, chat.id)) === "active") {
    await say(ctx, texts.alreadySubscribed(dock.name, inGroup(ctx)));
    return;
  }
  if (needsApproval(dock.visibility, link)) {
    await say(ctx, texts.privateDock);
    return;
  }
  const buttons = new InlineKeyboard()
    .text(texts.buttons.yes, `${YES}${token}`)
    .text(texts.buttons.no, `${NO}${token}`);
  await say(ctx, texts.subscribePrompt(dock, inGroup(ctx)), { reply_markup: buttons });
}

/** The Yes and No of an invite link's prompt: Yes joins through the link if it still works. */
export function joinButtons(deps: BotDeps): Composer<Context> {
  const composer = new Composer<Context>();

  composer.callbackQuery(new RegExp(`^${YES}([A-Za-z0-9]{22})$`), async (ctx) => {
    const chat = ctx.chat;
    if (chat === undefined) return answer(ctx, { text: texts.staleButton });
    if (!(await requireManager(ctx))) return;
    const found = await workingLink(ctx, deps, ctx.match[1] as string);
    if (found === null) return;
    const { dock, link } = found;
    if (needsApproval(dock.visibility, link)) return tell(ctx, texts.privateDock);
    await deps.subscriptions.rememberNames(chat.id, chat.type, namesOf(chat));
    const outcome = await deps.subscriptions.joinThrough({
      dockId: dock.id,
      chatId: chat.id,
      chatType: chat.type,
      inviteId: link.id,
    });
    if (outcome === "refused") {
      // Taken, revoked or expired between the read above and the use: said as it is now.
      return tell(ctx, refusal(await deps.invites.find(link.token)));
    }
    await menuAfterFirst(ctx, deps, outcome === "joined");
    await tell(
      ctx,
      outcome === "joined"
        ? texts.subscribed(dock.name, inGroup(ctx))
        : texts.alreadySubscribed(dock.name, inGroup(ctx)),
    );
  });

  composer.callbackQuery(new RegExp(`^${NO}([A-Za-z0-9]{22})$`), async (ctx) => {
    if (!(await requireManager(ctx))) return;
    const link = await deps.invites.find(ctx.match[1] as string);
    const dock = link === undefined ? undefined : await deps.docks.get(link.dockId);
    await tell(ctx, dock === undefined ? texts.dockGone : texts.declined(dock.name));
  });

  return composer;
}
