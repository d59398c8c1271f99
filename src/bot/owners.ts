import { Composer, type Context, InlineKeyboard } from "grammy";
import type { User } from "grammy/types";
import { personName } from "../domain/telegram-identity.ts";
import type { InviteState } from "../store/owners.ts";
import type { OwnerInviteKind } from "../store/schema.ts";
import { answer, type BotDeps, edit, say } from "./context.ts";
import { texts } from "./texts.ts";

/**
 * Callback data of the claim's and invitations' buttons: `own:<y|n>:<c|i|o>:<token>` (`o`: a
 * co-owner invitation).
 */
const BUTTON = /^own:([yn]):([cio]):([A-Za-z0-9]{1,40})$/;
const KIND_CODE: Record<OwnerInviteKind, string> = { claim: "c", invite: "i", co_owner: "o" };
const KIND_OF: Record<string, OwnerInviteKind> = { c: "claim", i: "invite", o: "co_owner" };

/** What to say about a link that cannot be used (any longer). */
function refusal(state: InviteState, kind: OwnerInviteKind): string {
  if (kind === "co_owner") {
    switch (state) {
      case "used":
        return texts.coOwnerLinkUsed;
      case "revoked":
        return texts.coOwnerLinkRevoked;
      case "expired":
        return texts.coOwnerLinkExpired;
      default:
        return texts.coOwnerLinkUnknown;
    }
  }
  switch (state) {
    case "used":
      return texts.ownerLinkUsed;
    case "revoked":
      return kind === "claim" ? texts.claimReplaced : texts.ownerLinkRevoked;
    case "expired":
      return texts.ownerLinkExpired;
    case "already_claimed":
      return texts.alreadyClaimed;
    case "pending":
    case "unknown":
      return kind === "claim" ? texts.claimLinkUnknown : texts.ownerLinkUnknown;
  }
}

function consoleUrl(deps: BotDeps): string {
  return `${deps.publicUrl}/console/`;
}

/**
 * `/start claim_<token>` (the link `serve` prints while the instance has no administrator),
 * `/start invite_<token>` (an administrator's invitation) and `/start coown_<token>` (a Dock
 * owner's invitation to co-own that Dock with a role): asks before anything changes, so that a
 * link opened by mistake — or sent by someone else — makes nobody an owner unasked. Private chats only.
 */
export async function askOwnerLink(
  ctx: Context,
  deps: BotDeps,
  kind: OwnerInviteKind,
  token: string,
): Promise<void> {
  if (ctx.chat?.type !== "private" || ctx.from === undefined) {
    await say(ctx, texts.ownerLinkPrivateOnly);
    return;
  }
  const { state, createdBy, shares } = await deps.owners.linkState(kind, token);
  if (state !== "pending") {
    await say(ctx, refusal(state, kind));
    return;
  }
  const buttons = new InlineKeyboard()
    .text(texts.buttons.yes, `own:y:${KIND_CODE[kind]}:${token}`)
    .text(texts.buttons.no, `own:n:${KIND_CODE[kind]}:${token}`);
  if (kind === "claim") {
    await say(ctx, texts.claimPrompt(consoleUrl(deps)), { reply_markup: buttons });
    return;
  }
  const inviter = createdBy === null ? null : personName(await deps.owners.namesOf(createdBy), createdBy);
  if (kind === "co_owner" && shares !== null) {
    await say(ctx, texts.coOwnerPrompt(inviter, shares.dockName, shares.role, consoleUrl(deps)), {
      reply_markup: buttons,
    });
    return;
  }
  await say(ctx, texts.invitePrompt(inviter, consoleUrl(deps)), { reply_markup: buttons });
}

/** The Yes and No of the claim and the invitation prompts. */
export function ownerLinks(deps: BotDeps): Composer<Context> {
  const composer = new Composer<Context>();
  composer.callbackQuery(BUTTON, async (ctx) => {
    const [, choice, code, token] = ctx.match as RegExpMatchArray;
    const kind = KIND_OF[code as string] as OwnerInviteKind;
    await answer(ctx);
    if (choice === "n") {
      await edit(ctx, kind === "claim" ? texts.claimDeclined : texts.inviteDeclined);
      return;
    }
    const from: User = ctx.from;
    const outcome = await deps.owners.redeem(kind, token as string, {
      id: from.id,
      first_name: from.first_name,
      username: from.username,
    });
    if (outcome.result === "admin" || outcome.result === "owner") {
      // Who may own Docks changed: the operator's log says so (the link's token never appears).
      deps.log?.info(
        { telegram_id: from.id, role: outcome.result },
        kind === "claim" ? "instance claimed" : "invitation accepted",
      );
    }
    if (outcome.result === "co_owner") {
      deps.log?.info(
        { telegram_id: from.id, dock_id: outcome.dockId, role: outcome.role },
        "co-owner invitation accepted",
      );
    }
    switch (outcome.result) {
      case "admin":
        await edit(ctx, texts.claimed(consoleUrl(deps)));
        return;
      case "owner":
        await edit(ctx, texts.inviteAccepted(consoleUrl(deps)));
        return;
      case "already_owner":
        await edit(ctx, texts.alreadyOwner(outcome.role, consoleUrl(deps)));
        return;
      case "co_owner":
        await edit(ctx, texts.coOwnerAccepted(outcome.dockName, outcome.role, consoleUrl(deps)));
        return;
      case "already_co_owner":
        await edit(ctx, texts.alreadyCoOwner(outcome.dockName, outcome.role, consoleUrl(deps)));
        return;
      default:
        await edit(ctx, refusal(outcome.result, kind));
    }
  });
  return composer;
}
