import { Composer, type Context, InlineKeyboard } from "grammy";
import type { User } from "grammy/types";
import type { LoginTokenStateFor } from "../store/login-tokens.ts";
import { answer, type BotDeps, edit, say } from "./context.ts";
import { texts } from "./texts.ts";

/** Callback data of the sign-in's Yes and No buttons, each followed by the token. */
const YES = "login:y:";
const NO = "login:n";

/** How the person is named in "Sign in … as <name>?": what they will see in the console. */
function displayName(user: User): string {
  const name = [user.first_name, user.last_name].filter(Boolean).join(" ");
  return user.username ? `${name} (@${user.username})` : name;
}

/** What to say about a token that cannot be confirmed (any longer). */
function refusal(state: LoginTokenStateFor): string {
  switch (state) {
    case "confirmed":
      return texts.loginAlreadyConfirmed;
    case "confirmed_elsewhere":
      return texts.loginConfirmedElsewhere;
    case "declined":
      return texts.loginDeclined;
    case "expired":
      return texts.loginExpired;
    case "used":
      return texts.loginUsed;
    case "pending":
    case "unknown":
      return texts.loginUnknown;
  }
}

/**
 * `/start login_<token>` from the console's sign-in link: asks the person to confirm, so that
 * opening a link someone else sent cannot sign that someone in as them. Private chats only.
 */
export async function askLoginConfirmation(ctx: Context, deps: BotDeps, token: string): Promise<void> {
  if (ctx.chat?.type !== "private" || ctx.from === undefined) {
    await say(ctx, texts.privateOnly);
    return;
  }
  const state = await deps.loginTokens.stateFor(token, ctx.from.id);
  if (state !== "pending") {
    await say(ctx, refusal(state));
    return;
  }
  const buttons = new InlineKeyboard()
    .text(texts.buttons.yes, `${YES}${token}`)
    .text(texts.buttons.no, `${NO}:${token}`);
  await say(ctx, texts.loginPrompt(displayName(ctx.from)), { reply_markup: buttons });
}

/**
 * The sign-in confirmation buttons: Yes marks the console's login token confirmed for the Telegram
 * user who pressed it (the console then names them and starts the session once the person presses
 * Continue there); No declines it for good (the console that waits for it says so).
 */
export function login(deps: BotDeps): Composer<Context> {
  const composer = new Composer<Context>();

  composer.callbackQuery(new RegExp(`^${YES}(.+)$`), async (ctx) => {
    const { id, first_name, username } = ctx.from;
    const state = await deps.loginTokens.confirm(ctx.match[1] as string, { id, first_name, username });
    await answer(ctx);
    if (state !== "confirmed") {
      await edit(ctx, refusal(state));
      return;
    }
    // Confirmed all the same: the console shows who confirmed and says why it cannot go on.
    const mayOwn = (await deps.owners.roleOf(id)) !== null;
    await edit(
      ctx,
      mayOwn ? texts.loginConfirmed(id) : texts.loginNotOwner(id, await deps.owners.awaitsClaim()),
    );
  });

  composer.callbackQuery(new RegExp(`^${NO}(?::(.+))?$`), async (ctx) => {
    const token = ctx.match[1];
    await answer(ctx);
    // A prompt sent before No carried its token (`login:n` alone) cannot decline anything: it
    // must not claim a cancellation.
    if (token === undefined) {
      await edit(ctx, texts.loginOutdated);
      return;
    }
    const state = await deps.loginTokens.decline(token, ctx.from.id);
    await edit(ctx, state === "declined" ? texts.loginDeclined : refusal(state));
  });

  return composer;
}
