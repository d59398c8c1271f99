import { Composer, type Context, InlineKeyboard } from "grammy";
import type { JoinRequest } from "../store/join-requests.ts";
import { answer, type BotDeps } from "./context.ts";
import { texts } from "./texts.ts";

/** Callback data of a request copy's buttons: `jr:<a|d>:<request id>`. */
const DECISION = /^jr:([ad]):(jr_[A-Za-z0-9]{11})$/;

/** How a join request's copy reads, and its buttons while it waits (none once it ended). */
export function requestCopy(request: JoinRequest): { text: string; buttons: InlineKeyboard | null } {
  const group = request.chatType !== "private";
  const chat = request.chatName ?? (group ? `chat ${request.chatId}` : `Telegram user ${request.chatId}`);
  const text = texts.requestCopy({
    dock: request.dockName,
    chat,
    group,
    members: request.memberCount,
    requester: request.requester.name ?? `Telegram user ${request.requester.id}`,
    link: request.invite?.name ?? null,
    state: request.state,
    decidedBy:
      request.decidedBy === null ? null : (request.decidedBy.name ?? `Telegram user ${request.decidedBy.id}`),
  });
  if (request.state !== "pending") return { text, buttons: null };
  const buttons = new InlineKeyboard()
    .text(texts.requestButtons.approve, `jr:a:${request.id}`)
    .text(texts.requestButtons.decline, `jr:d:${request.id}`);
  return { text, buttons };
}

/**
 * Approve and Decline under a join request's copy: only someone who may decide the Dock's
 * requests (domain/deciders.ts) decides; the first decision wins, every copy then shows it (the
 * notice sender edits them, this one included), and whoever presses later is told who was first.
 */
export function requestDecisions(deps: BotDeps): Composer<Context> {
  const composer = new Composer<Context>();
  composer.callbackQuery(DECISION, async (ctx) => {
    const [, choice, requestId] = ctx.match as RegExpMatchArray;
    const request = await deps.audience.requests.get(requestId as string);
    const dock = request === undefined ? undefined : await deps.docks.get(request.dockId);
    if (request === undefined || dock === undefined) return answer(ctx, { text: texts.requestGone });
    if (!(await deps.audience.mayDecide(dock, ctx.from.id)))
      return answer(ctx, { text: texts.notDecider, show_alert: true });
    // The decider's name as Telegram shows it now: every copy names who decided.
    await deps.subscriptions.rememberNames(ctx.from.id, "private", {
      firstName: ctx.from.first_name,
      username: ctx.from.username,
    });
    const outcome = await deps.audience.decide(
      dock.id,
      request.id,
      choice === "a" ? "approved" : "declined",
      ctx.from.id,
    );
    if (outcome.kind === "not_found") return answer(ctx, { text: texts.requestGone });
    if (outcome.kind === "ended") {
      const ended = outcome.request;
      return answer(ctx, { text: texts.requestEnded(ended.state, ended.decidedBy?.name ?? null) });
    }
    return answer(ctx, { text: choice === "a" ? texts.approvedAnswer : texts.declinedAnswer });
  });
  return composer;
}
