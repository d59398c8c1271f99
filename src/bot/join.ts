import { Composer, type Context, GrammyError, HttpError, InlineKeyboard } from "grammy";
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

/**
 * How the update's chat may come into the Dock, by its ID (`link` null) or through a link that
 * works: `join` at once, `ask` its deciders (an `approval` Dock, a link that asks), or be `told`
 * why not — already in, banned, or the bare ID of an `invite` Dock (which names nothing of it).
 * Whoever decides the Dock's requests (domain/deciders.ts) always joins.
 */
export async function wayIn(
  ctx: Context,
  deps: BotDeps,
  dock: Dock,
  link: InviteLink | null,
): Promise<{ kind: "join" } | { kind: "ask" } | { kind: "told"; text: string }> {
  const chat = ctx.chat;
  if (chat === undefined) throw new Error("joining needs a chat");
  if ((await deps.subscriptions.state(dock.id, chat.id)) === "active")
    return { kind: "told", text: texts.alreadySubscribed(dock.name, inGroup(ctx)) };
  if (ctx.from !== undefined && (await deps.audience.mayDecide(dock, ctx.from.id))) return { kind: "join" };
  if (link === null && dock.visibility === "invite") return { kind: "told", text: texts.privateDock };
  if (await deps.audience.banned(dock.id, chat.id)) return { kind: "told", text: texts.banned(dock.name) };
  return needsApproval(dock.visibility, link) ? { kind: "ask" } : { kind: "join" };
}

/**
 * The update's chat asks to join the Dock (by its ID, or through `link`): every decider gets the
 * request in the bot. A group's request names the group and how many members it has. What to say.
 */
export async function askToJoin(
  ctx: Context,
  deps: BotDeps,
  dock: Dock,
  link: InviteLink | null,
): Promise<string> {
  const chat = ctx.chat;
  const from = ctx.from;
  if (chat === undefined || from === undefined) throw new Error("asking needs a chat and a person");
  const group = inGroup(ctx);
  // The names the deciders' copies show: the person's, or the group's title and the admin's.
  await deps.subscriptions.rememberNames(chat.id, chat.type, namesOf(chat));
  if (group)
    await deps.subscriptions.rememberNames(from.id, "private", {
      firstName: from.first_name,
      username: from.username,
    });
  // The count is for the deciders' eyes: a request goes without it if Telegram does not say.
  const memberCount = group
    ? await ctx.api.getChatMemberCount(chat.id).catch((error: unknown) => {
        if (error instanceof GrammyError || error instanceof HttpError) return null;
        throw error;
      })
    : null;
  const outcome = await deps.audience.ask(dock, {
    chatId: chat.id,
    chatType: chat.type,
    userId: from.id,
    inviteId: link?.id ?? null,
    memberCount,
  });
  switch (outcome.kind) {
    case "sent":
      return texts.requestSent(dock.name, group);
    case "pending":
      return texts.requestWaiting(dock.name, group);
    case "subscribed":
      return texts.alreadySubscribed(dock.name, group);
    case "banned":
      return texts.banned(dock.name);
    case "link_refused":
      return refusal(link === null ? undefined : await deps.invites.find(link.token));
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
 * asks Yes / No — to subscribe, or to ask its owner when the link (or the Dock) asks — as the Dock
 * ID's link does; only a link that still works gets that far. In a group only an admin may answer.
 */
export async function offerInvite(ctx: Context, deps: BotDeps, token: string): Promise<void> {
  if (ctx.chat === undefined) return;
  if (!(await requireManager(ctx))) return;
  const found = await workingLink(ctx, deps, token);
  if (found === null) return;
  const way = await wayIn(ctx, deps, found.dock, found.link);
  if (way.kind === "told") {
    await say(ctx, way.text);
    return;
  }
  const buttons = new InlineKeyboard()
    .text(texts.buttons.yes, `${YES}${token}`)
    .text(texts.buttons.no, `${NO}${token}`);
  const prompt = way.kind === "ask" ? texts.askPrompt : texts.subscribePrompt;
  await say(ctx, prompt(found.dock, inGroup(ctx)), { reply_markup: buttons });
}

/** The Yes and No of an invite link's prompt: Yes joins (or asks) through the link if it still works. */
export function joinButtons(deps: BotDeps): Composer<Context> {
  const composer = new Composer<Context>();

  composer.callbackQuery(new RegExp(`^${YES}([A-Za-z0-9]{22})$`), async (ctx) => {
    const chat = ctx.chat;
    if (chat === undefined) return answer(ctx, { text: texts.staleButton });
    if (!(await requireManager(ctx))) return;
    const found = await workingLink(ctx, deps, ctx.match[1] as string);
    if (found === null) return;
    const { dock, link } = found;
    const way = await wayIn(ctx, deps, dock, link);
    if (way.kind === "told") return tell(ctx, way.text);
    if (way.kind === "ask") return tell(ctx, await askToJoin(ctx, deps, dock, link));
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
