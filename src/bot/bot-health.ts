/**
 * The bot's states as an operator reads them, in one place: the banner, the repeated warnings,
 * `/readyz`, the console's error page and `dock-notify doctor` all say the same thing, with the
 * same fix.
 *
 * - `starting`: not yet heard from Telegram.
 * - `running`: polling, or its webhook registered.
 * - `unauthorized`: Telegram refused the bot token (`401`, or `404` for a token it does not know
 *   the shape of). Nothing can be sent until the token is replaced: `/readyz` answers 503.
 * - `conflict`: someone else polls with the token (`409 Conflict`): another instance, a script.
 * - `unreachable`: Telegram does not answer, or fails (network, timeout, `5xx`). An outage of
 *   Telegram, not of this instance: `/readyz` stays 200 (messages are still accepted, and sent once
 *   it is back), so a load balancer does not pull every instance at once.
 * - `reconnecting`: stopped for another reason (a handler failed, a webhook someone replaced, a
 *   request Telegram refused); the reason says which.
 * - `stopped`: the service is stopping.
 */
export type BotState =
  | "starting"
  | "running"
  | "unauthorized"
  | "conflict"
  | "unreachable"
  | "reconnecting"
  | "stopped";

/** The states in which the bot does not take updates, and is being relaunched. */
export const DOWN_STATES: ReadonlySet<BotState> = new Set([
  "unauthorized",
  "conflict",
  "unreachable",
  "reconnecting",
]);

/** What is wrong, in one sentence, and what to do about it. */
export interface BotProblem {
  /** e.g. "Telegram refused the bot token (401)". */
  what: string;
  /** e.g. "set TELEGRAM_BOT_TOKEN to the token @BotFather gave you, then restart Dock Notify". */
  fix: string;
}

/** The fix for a refused token, as every place that reports it says it. */
export const TOKEN_FIX =
  "set TELEGRAM_BOT_TOKEN to the token @BotFather gave you (send /token to @BotFather to see it again), then restart Dock Notify";

/**
 * The state a failed Bot API call puts the bot in: by the Bot API's error code when Telegram
 * answered, `unreachable` when it did not (`code` undefined) or failed on its side.
 */
export function stateForFailure(code: number | undefined): BotState {
  if (code === undefined || code >= 500) return "unreachable";
  if (code === 401 || code === 404) return "unauthorized";
  if (code === 409) return "conflict";
  return "reconnecting";
}

/**
 * What is wrong with the bot in `state`, and the fix; null while it runs (or starts, or stops).
 * `apiRoot` names where Telegram is looked for (TELEGRAM_API_ROOT), without a path or token.
 */
export function botProblem(
  state: BotState,
  reason: string | undefined,
  options: { apiRoot: string; mode: "polling" | "webhook" },
): BotProblem | null {
  const why = reason === undefined ? "" : ` (${reason})`;
  switch (state) {
    case "unauthorized":
      return {
        what: `Telegram refused the bot token (${/\b40[14]\b/.exec(reason ?? "")?.[0] ?? "401"})`,
        fix: TOKEN_FIX,
      };
    case "conflict":
      return {
        what: "another program polls Telegram with this bot token (409 Conflict)",
        fix:
          options.mode === "polling"
            ? "stop the other program or Dock Notify instance that uses the token, or give each its own bot; several instances of one Dock Notify need TELEGRAM_WEBHOOK_URL"
            : "stop the other program that polls with the token (getUpdates)",
      };
    case "unreachable":
      return {
        what: `Telegram cannot be reached${why}`,
        fix: `check that this machine reaches ${hostOf(options.apiRoot)} (network, firewall, proxy, DNS, TELEGRAM_API_ROOT); messages are accepted meanwhile and sent once Telegram answers`,
      };
    case "reconnecting":
      return {
        what: `the bot stopped${why}`,
        fix: "Dock Notify relaunches it by itself; if this persists, the reason says what to change",
      };
    default:
      return null;
  }
}

/** The origin of a Bot API root, for a message: never its path (a token could follow it). */
function hostOf(apiRoot: string): string {
  try {
    return new URL(apiRoot).host;
  } catch {
    return "TELEGRAM_API_ROOT";
  }
}

/**
 * The banner's "Bot" row: the state, and what to do when the bot is not running. `username` once
 * known (getMe answered).
 */
export function bannerBotLine(
  state: BotState,
  reason: string | undefined,
  options: { apiRoot: string; mode: "polling" | "webhook"; username: string | null },
): string[] {
  const name = options.username === null ? "" : ` @${options.username}`;
  if (state === "running") return [`running${name} (${options.mode})`];
  if (state === "starting") return ["starting: Telegram has not answered yet; Dock Notify keeps trying"];
  const problem = botProblem(state, reason, options);
  if (problem === null) return [state];
  return [`${state}: ${problem.what}`, `fix: ${problem.fix}`];
}
