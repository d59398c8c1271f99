import { describe, expect, it } from "vitest";
import { bannerBotLine, botProblem, stateForFailure } from "../../src/bot/bot-health.ts";

const telegram = { apiRoot: "https://api.telegram.org", mode: "polling" as const };

describe("the bot's states as an operator reads them", () => {
  it("a failed Bot API call names the state: 401/404 unauthorized, 409 conflict, no answer or 5xx unreachable", () => {
    expect(stateForFailure(401)).toBe("unauthorized");
    expect(stateForFailure(404)).toBe("unauthorized");
    expect(stateForFailure(409)).toBe("conflict");
    expect(stateForFailure(undefined)).toBe("unreachable");
    expect(stateForFailure(502)).toBe("unreachable");
    expect(stateForFailure(400)).toBe("reconnecting");
  });

  it("each state that is down says what is wrong and what to do; running, starting and stopped need nothing", () => {
    expect(botProblem("unauthorized", "getMe: 401 Unauthorized", telegram)).toEqual({
      what: "Telegram refused the bot token (401)",
      fix: "set TELEGRAM_BOT_TOKEN to the token @BotFather gave you (send /token to @BotFather to see it again), then restart Dock Notify",
    });
    expect(botProblem("unauthorized", "getMe: 404 Not Found", telegram)?.what).toBe(
      "Telegram refused the bot token (404)",
    );
    expect(botProblem("conflict", "getUpdates: 409 Conflict", telegram)?.fix).toMatch(/TELEGRAM_WEBHOOK_URL/);
    const unreachable = botProblem("unreachable", "ECONNREFUSED", {
      apiRoot: "http://127.0.0.1:9/sandbox",
      mode: "polling",
    });
    expect(unreachable?.what).toBe("Telegram cannot be reached (ECONNREFUSED)");
    // The host only: a Bot API root's path is never printed.
    expect(unreachable?.fix).toMatch(/^check that this machine reaches 127\.0\.0\.1:9 \(/);
    expect(unreachable?.fix).not.toContain("/sandbox");
    for (const state of ["running", "starting", "stopped"] as const) {
      expect(botProblem(state, undefined, telegram)).toBeNull();
    }
  });

  it("the banner's Bot row: the state, the bot's name when known, and the fix on a line of its own", () => {
    expect(bannerBotLine("running", undefined, { ...telegram, username: "OpsBot" })).toEqual([
      "running @OpsBot (polling)",
    ]);
    expect(bannerBotLine("starting", undefined, { ...telegram, username: null })).toEqual([
      "starting: Telegram has not answered yet; Dock Notify keeps trying",
    ]);
    expect(bannerBotLine("unauthorized", "getMe: 401 Unauthorized", { ...telegram, username: null })).toEqual(
      [
        "unauthorized: Telegram refused the bot token (401)",
        "fix: set TELEGRAM_BOT_TOKEN to the token @BotFather gave you (send /token to @BotFather to see it again), then restart Dock Notify",
      ],
    );
    expect(bannerBotLine("unreachable", "ETIMEDOUT", { ...telegram, username: null })[0]).toBe(
      "unreachable: Telegram cannot be reached (ETIMEDOUT)",
    );
  });
});
