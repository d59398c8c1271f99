import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LOGIN_TOKEN_TTL_MS, LoginTokenRepository } from "../../src/store/login-tokens.ts";
import { People } from "../helpers/bot-harness.ts";
import { dialects, type RunningService, startService } from "../helpers/harness.ts";

const DIALECTS = await dialects();

describe.each(DIALECTS)("console sign-in confirmed in the bot on %s", (dialect) => {
  let service: RunningService;
  let people: People;

  beforeAll(async () => {
    service = await startService(dialect, {}, { pace: "unpaced" });
    people = new People(`${service.url}/sandbox`);
  });
  afterAll(async () => service.close());

  /** The person follows the console's sign-in link; returns the bot's answer. */
  async function openLogin(person: number, token: string) {
    return people.botReply(person, await people.start(person, `login_${token}`), "the sign-in answer");
  }

  it("Yes confirms the token for the Telegram user who pressed it, once", async () => {
    const alice = await people.person("Alice", "alice_s");
    const { token } = await service.app.loginTokens.create();
    const prompt = await openLogin(alice, token);
    const [question, , warning] = (prompt.text as string).split("\n");
    expect(question).toBe("Sign in to the Dock console as Alice (@alice_s)?");
    // A forwarded sign-in link is an account takeover attempt: the prompt says so.
    expect(warning).toMatch(
      /only if you started this sign-in yourself.*If someone sent you this link, press No/,
    );
    expect(await service.app.loginTokens.state(token)).toBe("pending");

    await people.press(alice, prompt, "Yes");
    // Not signed in yet: the console names who confirmed and waits for Continue.
    // The confirmation names the person's Telegram ID, which the console shows beside the name.
    expect((await people.edited(alice, prompt)).text).toBe(
      `Confirmed. Go back to the Dock console: it shows your Telegram ID, ${alice}. If it does, press Continue there to sign in.`,
    );
    expect(await service.app.loginTokens.state(token)).toBe("confirmed");
    const user = await service.db.kysely
      .selectFrom("users")
      .select(["first_name", "username"])
      .where("telegram_id", "=", alice)
      .executeTakeFirst();
    expect(user).toEqual({ first_name: "Alice", username: "alice_s" });
    expect(await service.app.loginTokens.consume(token)).toBe(alice);

    // The same link again: the console already used it.
    expect((await openLogin(alice, token)).text).toContain("already used");
  });

  it("No declines the sign-in for good: nobody can confirm it afterwards", async () => {
    const bob = await people.person("Bob");
    const { token } = await service.app.loginTokens.create();
    const prompt = await openLogin(bob, token);
    await people.press(bob, prompt, "No");
    expect((await people.edited(bob, prompt)).text).toContain("Sign-in cancelled");
    expect(await service.app.loginTokens.state(token)).toBe("declined");
    expect(await service.app.loginTokens.consume(token)).toBeNull();
    // The same link again asks nothing; it says the sign-in was cancelled.
    expect((await openLogin(bob, token)).text).toContain("Sign-in cancelled");
    expect(await service.app.loginTokens.confirm(token, { id: bob })).toBe("declined");
  });

  it("an expired or unknown token says so and asks for nothing", async () => {
    const carol = await people.person("Carol");
    const past = new LoginTokenRepository(service.db, () => Date.now() - LOGIN_TOKEN_TTL_MS - 1000);
    const { token: expired } = await past.create();
    const reply = await openLogin(carol, expired);
    expect(reply.text).toContain("This sign-in link has expired");
    expect(reply.reply_markup?.inline_keyboard).toBeUndefined();
    expect(await service.app.loginTokens.state(expired)).toBe("expired");

    expect((await openLogin(carol, "NotATokenAtAll")).text).toContain("This sign-in link is not valid");
  });

  it("a Yes from someone else on a link already confirmed says so and changes nothing", async () => {
    const fay = await people.person("Fay");
    const gus = await people.person("Gus");
    const { token } = await service.app.loginTokens.create();
    const fayPrompt = await openLogin(fay, token);
    const gusPrompt = await openLogin(gus, token);
    await people.press(gus, gusPrompt, "Yes");
    await people.edited(gus, gusPrompt);
    // Fay started the sign-in, Gus confirmed it first: Fay must not be told to press Continue.
    await people.press(fay, fayPrompt, "Yes");
    const elsewhere = /Someone else already confirmed this sign-in link.*That's not me/;
    expect((await people.edited(fay, fayPrompt)).text).toMatch(elsewhere);
    expect((await openLogin(fay, token)).text).toMatch(elsewhere);
    // Gus himself is told it is confirmed, as before.
    expect((await openLogin(gus, token)).text).toContain("already confirmed");
    expect(await service.app.loginTokens.consume(token)).toBe(gus);
  });

  it("a No from someone else on a link already confirmed says so and changes nothing", async () => {
    const hal = await people.person("Hal");
    const ivy = await people.person("Ivy");
    const { token } = await service.app.loginTokens.create();
    const halPrompt = await openLogin(hal, token);
    const ivyPrompt = await openLogin(ivy, token);
    await people.press(ivy, ivyPrompt, "Yes");
    await people.edited(ivy, ivyPrompt);
    // Hal started the sign-in and Ivy confirmed it first: No cannot cancel it here, and Hal must
    // be told why (and what to press in the console), never to press Continue.
    await people.press(hal, halPrompt, "No");
    expect((await people.edited(hal, halPrompt)).text).toMatch(
      /Someone else already confirmed this sign-in link.*That's not me/,
    );
    expect(await service.app.loginTokens.consume(token)).toBe(ivy);
  });

  it("a Yes pressed after the console already used the token does not confirm it again", async () => {
    const dan = await people.person("Dan");
    const eve = await people.person("Eve");
    const { token } = await service.app.loginTokens.create();
    const danPrompt = await openLogin(dan, token);
    const evePrompt = await openLogin(eve, token);
    await people.press(dan, danPrompt, "Yes");
    await people.edited(dan, danPrompt);
    expect(await service.app.loginTokens.consume(token)).toBe(dan);
    await people.press(eve, evePrompt, "Yes");
    expect((await people.edited(eve, evePrompt)).text).toContain("already used");
  });
});
