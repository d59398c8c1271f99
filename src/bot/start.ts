import { Composer, type Context } from "grammy";
import { JOIN_PAYLOAD_PREFIX } from "../domain/audience.ts";
import { CLAIM_PAYLOAD_PREFIX, CO_OWNER_PAYLOAD_PREFIX, INVITE_PAYLOAD_PREFIX } from "../domain/owners.ts";
import { LOGIN_PAYLOAD_PREFIX } from "../store/login-tokens.ts";
import { type BotDeps, say } from "./context.ts";
import { mayManage } from "./groups.ts";
import { offerInvite } from "./join.ts";
import { askLoginConfirmation } from "./login.ts";
import { askOwnerLink } from "./owners.ts";
import { offerSubscription } from "./subscribe.ts";
import { texts } from "./texts.ts";

/**
 * `/start`, what every Telegram link into the bot sends: `/start <dock_id>` offers the Dock,
 * `/start login_<token>` confirms a console sign-in, `/start claim_<token>`,
 * `/start invite_<token>` and `/start coown_<token>` make the instance's administrator, an owner
 * or a Dock's co-owner, `/start join_<token>` is a Dock's invite link, and a plain `/start` greets
 * the person with the menu. Any `/start` in a private chat also resumes the subscriptions a block had paused:
 * unblocking a bot in Telegram is pressing its Restart button, which sends `/start`.
 */
export function start(deps: BotDeps): Composer<Context> {
  const composer = new Composer<Context>();

  composer.command("start", async (ctx) => {
    const payload = ctx.match.trim();
    const resumed =
      ctx.chat.type === "private" ? await deps.subscriptions.transition(ctx.chat.id, "blocked", "active") : 0;
    if (payload.startsWith(LOGIN_PAYLOAD_PREFIX)) {
      await askLoginConfirmation(ctx, deps, payload.slice(LOGIN_PAYLOAD_PREFIX.length));
      return;
    }
    if (payload.startsWith(CLAIM_PAYLOAD_PREFIX)) {
      await askOwnerLink(ctx, deps, "claim", payload.slice(CLAIM_PAYLOAD_PREFIX.length));
      return;
    }
    if (payload.startsWith(INVITE_PAYLOAD_PREFIX)) {
      await askOwnerLink(ctx, deps, "invite", payload.slice(INVITE_PAYLOAD_PREFIX.length));
      return;
    }
    if (payload.startsWith(CO_OWNER_PAYLOAD_PREFIX)) {
      await askOwnerLink(ctx, deps, "co_owner", payload.slice(CO_OWNER_PAYLOAD_PREFIX.length));
      return;
    }
    if (payload.startsWith(JOIN_PAYLOAD_PREFIX)) {
      await offerInvite(ctx, deps, payload.slice(JOIN_PAYLOAD_PREFIX.length));
      return;
    }
    if (payload !== "") {
      await offerSubscription(ctx, deps, payload);
      return;
    }
    if (ctx.chat.type !== "private") {
      // In a group an administrator's /start resumes what stayed paused when someone else added
      // the bot back (its subscriptions to private Docks).
      const back = (await mayManage(ctx))
        ? await deps.subscriptions.transition(ctx.chat.id, "blocked", "active")
        : 0;
      await say(ctx, back > 0 ? `${texts.groupResumed(back)}\n\n${texts.help}` : texts.help);
      return;
    }
    await deps.states.clear(ctx.chat.id, ctx.from?.id ?? ctx.chat.id);
    const welcome = texts.welcome(ctx.me.first_name);
    await say(ctx, resumed > 0 ? `${welcome}\n\n${texts.welcomeBack(resumed)}` : welcome);
  });

  return composer;
}
