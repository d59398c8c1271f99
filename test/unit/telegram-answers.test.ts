import { GrammyError, HttpError } from "grammy";
import { describe, expect, it } from "vitest";
import { classify } from "../../src/telegram/answers.ts";

const CHAT = -1001234;

/** The error grammY throws for a Bot API answer with `ok: false`. */
function telegram(error_code: number, description: string, parameters: Record<string, number> = {}) {
  return new GrammyError(
    `Call to 'sendMessage' failed! (${error_code}: ${description})`,
    { ok: false, error_code, description, parameters },
    "sendMessage",
    { chat_id: CHAT },
  );
}

describe("what a failed send leads to", () => {
  it("waits as long as Telegram asks on 429", () => {
    expect(classify(telegram(429, "Too Many Requests: retry after 7", { retry_after: 7 }), CHAT)).toEqual({
      kind: "rate_limited",
      retryAfter: 7,
      reason: "429 Too Many Requests: retry after 7",
    });
  });

  it("follows a group that became a supergroup", () => {
    const outcome = classify(
      telegram(400, "Bad Request: group chat was upgraded to a supergroup chat", {
        migrate_to_chat_id: -1009,
      }),
      -42,
    );
    expect(outcome).toMatchObject({ kind: "moved", to: -1009 });
  });

  it("backs off instead of following a move to the chat it was sent to (it would loop at once)", () => {
    const outcome = classify(
      telegram(400, "Bad Request: group chat was upgraded to a supergroup chat", {
        migrate_to_chat_id: CHAT,
      }),
      CHAT,
    );
    expect(outcome.kind).toBe("transient");
  });

  it("stops sending to chats that are gone", () => {
    expect(classify(telegram(403, "Forbidden: bot was blocked by the user"), CHAT).kind).toBe("gone");
    expect(classify(telegram(400, "Bad Request: chat not found"), CHAT).kind).toBe("gone");
  });

  it("retries Telegram's and the network's failures, and an operator's wrong token", () => {
    expect(classify(telegram(502, "Bad Gateway"), CHAT).kind).toBe("transient");
    expect(classify(telegram(401, "Unauthorized"), CHAT).kind).toBe("transient");
    expect(
      classify(new HttpError("Network request for 'sendMessage' failed!", new Error("ECONNRESET")), CHAT),
    ).toEqual({
      kind: "transient",
      reason: "network: Network request for 'sendMessage' failed!",
    });
  });

  it("gives up on a message Telegram refuses", () => {
    expect(classify(telegram(400, "Bad Request: message is too long"), CHAT).kind).toBe("permanent");
  });
});
