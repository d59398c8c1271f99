import type { BrowserContext } from "playwright-core";
import { expect } from "vitest";
import type { TelegramIdentity } from "../../src/domain/telegram-identity.ts";
import type { ChatMessage, People } from "./bot-harness.ts";
import type { RunningService } from "./harness.ts";

/** `name=value` of a Set-Cookie header, or undefined when the answer does not set that cookie. */
export function cookieFrom(response: Response, name: string): { value: string; header: string } | undefined {
  const header = response.headers.getSetCookie().find((c) => c.startsWith(`${name}=`));
  if (!header) return undefined;
  return { value: header.slice(name.length + 1).split(";")[0] ?? "", header };
}

/** Gives a browser context `client`'s console session (its cookie), as signing in there would. */
export async function withSession(context: BrowserContext, client: ConsoleClient): Promise<void> {
  await context.addCookies([
    { name: "dn_session", value: client.session as string, domain: "127.0.0.1", path: "/console/api" },
  ]);
}

/** A console client over real HTTP: carries the session cookie and, unless told not to, the CSRF token. */
export class ConsoleClient {
  readonly url: string;
  session: string | null = null;
  csrf: string | null = null;

  constructor(url: string) {
    this.url = url;
  }

  async call(
    method: string,
    path: string,
    body?: unknown,
    options: { csrf?: string | null; cookie?: string } = {},
    // biome-ignore lint/suspicious/noExplicitAny: tests read answers of many shapes
  ): Promise<{ status: number; body: any; response: Response }> {
    const headers: Record<string, string> = {};
    const cookie = options.cookie ?? (this.session ? `dn_session=${this.session}` : undefined);
    if (cookie) headers.cookie = cookie;
    const csrf = options.csrf === undefined ? this.csrf : options.csrf;
    if (csrf) headers["x-csrf-token"] = csrf;
    if (body !== undefined) headers["content-type"] = "application/json";
    const response = await fetch(`${this.url}/console/api${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
      redirect: "manual",
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : null, response };
  }
}

/**
 * Signs a person in as the console does, over HTTP: start a sign-in, confirm it as the bot would
 * (the bot calls the same `loginTokens.confirm`), see who confirmed, press Continue (which starts
 * the session), read the CSRF token.
 */
export async function signIn(service: RunningService, user: TelegramIdentity): Promise<ConsoleClient> {
  const client = new ConsoleClient(service.url);
  const started = await client.call("POST", "/sign-in");
  expect(started.status).toBe(200);
  const login = cookieFrom(started.response, "dn_login");
  if (!login) throw new Error("no login cookie");
  // The bot confirms the token in the link; the browser holds the secret it was made from.
  const token = (started.body.link as string).split("login_")[1] as string;
  expect(await service.app.loginTokens.confirm(token, user)).toBe("confirmed");
  const cookie = `dn_login=${login.value}`;
  const checked = await client.call("POST", "/sign-in/check", undefined, { cookie });
  expect(checked.body).toEqual({
    ok: true,
    state: "confirmed",
    user: { id: user.id, first_name: user.first_name ?? null, username: user.username ?? null },
    may_sign_in: true,
  });
  const finished = await client.call("POST", "/sign-in/finish", { user_id: user.id }, { cookie });
  expect(finished.body).toEqual({ ok: true, state: "signed_in" });
  const session = cookieFrom(finished.response, "dn_session");
  if (!session) throw new Error("no session cookie");
  client.session = session.value;
  const me = await client.call("GET", "/session");
  expect(me.status).toBe(200);
  client.csrf = me.body.csrf_token;
  return client;
}

/** The payload of a link into the bot (`…?start=<payload>`). */
export function payloadOf(link: string): string {
  const payload = new URL(link).searchParams.get("start");
  if (payload === null) throw new Error(`no start payload in ${link}`);
  return payload;
}

/**
 * A person signs in as they would: the console makes a sign-in link, they open it in the bot and
 * press Yes, the console checks who confirmed and presses Continue. Answers the bot's words, the
 * check and the finish, and the client (signed in when the finish worked).
 */
export async function signInThroughBot(service: RunningService, people: People, person: number) {
  const client = new ConsoleClient(service.url);
  const started = await client.call("POST", "/sign-in");
  expect(started.status).toBe(200);
  const cookie = `dn_login=${cookieFrom(started.response, "dn_login")?.value}`;
  const prompt = await people.botReply(person, await people.start(person, payloadOf(started.body.link)));
  await people.press(person, prompt, "Yes");
  const said = (await people.edited(person, prompt)).text;
  const checked = await client.call("POST", "/sign-in/check", undefined, { cookie });
  const finished = await client.call("POST", "/sign-in/finish", { user_id: person }, { cookie });
  const session = cookieFrom(finished.response, "dn_session");
  if (session) {
    client.session = session.value;
    client.csrf = (await client.call("GET", "/session")).body.csrf_token;
  }
  return { said, checked: checked.body, finished, client };
}

/** The person opens a claim or invitation link and answers the bot's question; answers what the bot says then. */
export async function answerLink(people: People, person: number, link: string, answer: "Yes" | "No") {
  const prompt: ChatMessage = await people.botReply(person, await people.start(person, payloadOf(link)));
  // A link that can no longer be used is answered at once, without a question.
  if (!prompt.reply_markup || !("inline_keyboard" in prompt.reply_markup)) return prompt.text;
  await people.press(person, prompt, answer);
  return (await people.edited(person, prompt)).text;
}
