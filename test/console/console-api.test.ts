import { execFile } from "node:child_process";
import { createHash, createHmac } from "node:crypto";
import { isDeepStrictEqual, promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyLoginWidget } from "../../src/domain/telegram-login-widget.ts";
import { TEST_MESSAGE } from "../../src/http/console-api.ts";
import { linkTokenFor } from "../../src/store/login-tokens.ts";
import { SessionRepository } from "../../src/store/sessions.ts";
import { TELEGRAM_LIMITS } from "../../src/telegram/pacer.ts";
import { SANDBOX_BOT_TOKEN } from "../../src/telegram/sandbox-bot.ts";
import { ConsoleClient, cookieFrom, signIn } from "../helpers/console-client.ts";
import { sandboxOf } from "../helpers/delivery-harness.ts";
import { asDock, dialects, type RunningService, startService } from "../helpers/harness.ts";
import { startSandbox } from "../helpers/sandbox-harness.ts";
import { waitFor } from "../helpers/wait.ts";

/**
 * Signs widget fields as Telegram does (docs: HMAC-SHA-256 of the sorted `key=value` lines, keyed
 * with SHA-256 of the bot token), written apart from the service's verifier so that it checks it.
 */
function signLoginWidget(fields: Record<string, string>, botToken: string): string {
  const secret = createHash("sha256").update(botToken).digest();
  const checkString = Object.entries(fields)
    .map(([key, value]) => `${key}=${value}`)
    .sort()
    .join("\n");
  return createHmac("sha256", secret).update(checkString).digest("hex");
}

const DIALECTS = await dialects();

// biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON the service answered.
type Json = any;

/** Where the service says it lives; links it makes start with this, whatever port it listens on. */
const PUBLIC_URL = "http://console.test:8080";

async function ping(service: RunningService, dockId: string, secretKey: string, msg = "hello") {
  const response = await fetch(`${service.url}/ping`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ dock_id: dockId, secret_key: secretKey, msg }),
  });
  return response.status;
}

/** Runs a shell command as an owner pasting it would; its output (curl prints the answer's body). */
async function shell(command: string): Promise<string> {
  return (await promisify(execFile)("sh", ["-c", command], { timeout: 20_000 })).stdout;
}

/** curl, to run the card's commands as shown; without it here, those tests are skipped. */
const curlPath = await shell("command -v curl").then(
  (path) => path.trim() || undefined,
  () => undefined,
);

describe.each(DIALECTS)("console API on %s", (dialect) => {
  let service: RunningService;
  let alice: ConsoleClient;
  let bob: ConsoleClient;

  beforeAll(async () => {
    // Every sign-in here comes from 127.0.0.1: room for all of them (the limit has its own test).
    // Telegram's pace on: a case below uses up a group's minute of sends (TELEGRAM_LIMITS).
    service = await startService(dialect, { PUBLIC_URL, SIGN_IN_ATTEMPTS_PER_MINUTE: "100" });
    alice = await signIn(service, { id: 1001, first_name: "Alice", username: "alice_owner" });
    bob = await signIn(service, { id: 1002, first_name: "Bob" });
  });
  afterAll(async () => service.close());

  const createDock = async (client: ConsoleClient, name = "Deploys") => {
    const created = await client.call("POST", "/docks", {
      name,
      link: "https://ci.example.com",
      description: "CI results",
    });
    expect(created.status).toBe(201);
    return created.body.dock as { id: string; secret_key: string; signing_secret: string; name: string };
  };

  describe("sign-in through the bot", () => {
    it("makes a single-use link to the bot, pending until confirmed, then a session on Continue", async () => {
      const client = new ConsoleClient(service.url);
      const started = await client.call("POST", "/sign-in");
      expect(started.status).toBe(200);
      expect(started.body.link).toMatch(new RegExp(`^${PUBLIC_URL}/sandbox\\?start=login_[A-Za-z0-9]{22}$`));
      expect(started.body.qr_svg).toMatch(/^<svg[\s\S]*<\/svg>\s*$/);
      const login = cookieFrom(started.response, "dn_login");
      expect(login?.header).toMatch(/HttpOnly/);
      expect(login?.header).toMatch(/SameSite=Lax/);
      expect(login?.header).toMatch(/Path=\/console\/api/);
      expect(login?.header).not.toMatch(/Secure/);
      // The link's token (what the bot confirms) is not the browser's cookie, nor does it give it.
      const token = (started.body.link as string).split("login_")[1] as string;
      expect(token).toBe(linkTokenFor(login?.value as string));
      expect(login?.value).toMatch(/^[A-Za-z0-9]{22}$/);
      expect(login?.value).not.toBe(token);
      const cookie = `dn_login=${login?.value}`;

      expect((await client.call("POST", "/sign-in/check", undefined, { cookie })).body.state).toBe("pending");
      await service.app.loginTokens.confirm(token, { id: 1003, first_name: "Carol" });
      // Someone who saw only the link or its QR code (over a shoulder, on a screenshot) and
      // presents its token as the cookie gets nothing, even once the sign-in is confirmed.
      const onlooker = { cookie: `dn_login=${token}` };
      const looked = await client.call("POST", "/sign-in/check", undefined, onlooker);
      expect(looked.body).toEqual({ ok: true, state: "none" });
      const taken = await client.call("POST", "/sign-in/finish", { user_id: 1003 }, onlooker);
      expect(taken.status).toBe(409);
      expect(cookieFrom(taken.response, "dn_session")).toBeUndefined();
      const checked = await client.call("POST", "/sign-in/check", undefined, { cookie });
      expect(checked.body).toEqual({
        ok: true,
        state: "confirmed",
        user: { id: 1003, first_name: "Carol", username: null },
        may_sign_in: true,
      });
      const finished = await client.call("POST", "/sign-in/finish", { user_id: 1003 }, { cookie });
      expect(finished.body).toEqual({ ok: true, state: "signed_in" });
      const session = cookieFrom(finished.response, "dn_session");
      expect(session?.header).toMatch(/HttpOnly/);
      expect(session?.header).toMatch(/SameSite=Lax/);
      expect(session?.header).toMatch(/Path=\/console\/api/);
      expect(session?.header).toMatch(/Expires=/);
      expect(cookieFrom(finished.response, "dn_login")?.header).toMatch(/Expires=Thu, 01 Jan 1970/);

      const me = await client.call("GET", "/session", undefined, { cookie: `dn_session=${session?.value}` });
      expect(me.body).toMatchObject({ ok: true, user: { id: 1003, first_name: "Carol", username: null } });
      expect(me.body.csrf_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect((await client.call("POST", "/sign-in/check", undefined, { cookie })).body.state).toBe("used");
    });

    it("a confirmed check names who confirmed and starts no session (Continue does)", async () => {
      const client = new ConsoleClient(service.url);
      const login = cookieFrom((await client.call("POST", "/sign-in")).response, "dn_login")?.value as string;
      const cookie = `dn_login=${login}`;
      await service.app.loginTokens.confirm(linkTokenFor(login), {
        id: 1012,
        first_name: "Mallory",
        username: "mallory_m",
      });
      // Asked again and again, as the page does while the person reads the name: still no session.
      for (let i = 0; i < 2; i++) {
        const checked = await client.call("POST", "/sign-in/check", undefined, { cookie });
        expect(checked.body).toEqual({
          ok: true,
          state: "confirmed",
          user: { id: 1012, first_name: "Mallory", username: "mallory_m" },
          may_sign_in: true,
        });
        expect(checked.response.headers.getSetCookie()).toEqual([]);
      }
      expect(await service.app.loginTokens.state(linkTokenFor(login))).toBe("confirmed");
      expect(
        await service.db.kysely
          .selectFrom("sessions")
          .select("token_hash")
          .where("user_id", "=", 1012)
          .execute(),
      ).toEqual([]);
    });

    it("finish starts a session once: a second finish fails and sets no cookie", async () => {
      const client = new ConsoleClient(service.url);
      const login = cookieFrom((await client.call("POST", "/sign-in")).response, "dn_login")?.value as string;
      const cookie = `dn_login=${login}`;
      await service.app.loginTokens.confirm(linkTokenFor(login), { id: 1013, first_name: "Olga" });
      const first = await client.call("POST", "/sign-in/finish", { user_id: 1013 }, { cookie });
      expect(first.body).toEqual({ ok: true, state: "signed_in" });
      expect(cookieFrom(first.response, "dn_session")).toBeDefined();
      const second = await client.call("POST", "/sign-in/finish", { user_id: 1013 }, { cookie });
      expect(second.status).toBe(409);
      expect(second.body).toEqual({
        ok: false,
        error: { code: "sign_in_not_confirmed", message: "The sign-in link was already used; start again." },
      });
      expect(cookieFrom(second.response, "dn_session")).toBeUndefined();
      expect(cookieFrom(second.response, "dn_login")?.header).toMatch(/Expires=Thu, 01 Jan 1970/);
    });

    it("finish starts a session only for the person the page showed", async () => {
      const client = new ConsoleClient(service.url);
      // The page showed Rita; meanwhile another tab started a new sign-in, and someone else (Sam)
      // confirmed that one. Continue on the first tab must not sign in as Sam.
      const first = cookieFrom((await client.call("POST", "/sign-in")).response, "dn_login")?.value as string;
      await service.app.loginTokens.confirm(linkTokenFor(first), { id: 1018, first_name: "Rita" });
      const second = cookieFrom(
        (await client.call("POST", "/sign-in", undefined, { cookie: `dn_login=${first}` })).response,
        "dn_login",
      )?.value as string;
      await service.app.loginTokens.confirm(linkTokenFor(second), { id: 1019, first_name: "Sam" });
      const cookie = `dn_login=${second}`;
      const wrong = await client.call("POST", "/sign-in/finish", { user_id: 1018 }, { cookie });
      expect(wrong.status).toBe(409);
      expect(wrong.body.error).toEqual({
        code: "sign_in_not_confirmed",
        message:
          "Someone other than the person shown confirmed this sign-in; nobody was signed in. Check the name again.",
      });
      expect(wrong.response.headers.getSetCookie()).toEqual([]);
      // Nothing was used up: the page asks again, shows Sam, and Continue for Sam works.
      const checked = await client.call("POST", "/sign-in/check", undefined, { cookie });
      expect(checked.body.user).toEqual({ id: 1019, first_name: "Sam", username: null });
      const finished = await client.call("POST", "/sign-in/finish", { user_id: 1019 }, { cookie });
      expect(finished.body).toEqual({ ok: true, state: "signed_in" });
    });

    it("finish must say whom it is for", async () => {
      const client = new ConsoleClient(service.url);
      const login = cookieFrom((await client.call("POST", "/sign-in")).response, "dn_login")?.value as string;
      const cookie = `dn_login=${login}`;
      await service.app.loginTokens.confirm(linkTokenFor(login), { id: 1020 });
      for (const body of [undefined, {}, { user_id: "1020" }]) {
        const answer = await client.call("POST", "/sign-in/finish", body, { cookie });
        expect(answer.status).toBe(400);
        expect(cookieFrom(answer.response, "dn_session")).toBeUndefined();
      }
      expect(await service.app.loginTokens.state(linkTokenFor(login))).toBe("confirmed");
    });

    it("finish without a confirmation fails: pending, no sign-in, an unknown cookie", async () => {
      const client = new ConsoleClient(service.url);
      const login = cookieFrom((await client.call("POST", "/sign-in")).response, "dn_login")?.value as string;
      const pending = await client.call(
        "POST",
        "/sign-in/finish",
        { user_id: 1014 },
        {
          cookie: `dn_login=${login}`,
        },
      );
      expect(pending.status).toBe(409);
      expect(pending.body.error).toEqual({
        code: "sign_in_not_confirmed",
        message: "The sign-in is not confirmed in Telegram yet.",
      });
      expect(pending.response.headers.getSetCookie()).toEqual([]);
      // Still pending: confirming it afterwards works, and then Continue does.
      await service.app.loginTokens.confirm(linkTokenFor(login), { id: 1014 });
      for (const cookie of [undefined, "dn_login=nope"]) {
        const answer = await client.call(
          "POST",
          "/sign-in/finish",
          { user_id: 1014 },
          cookie ? { cookie } : {},
        );
        expect(answer.status).toBe(409);
        expect(answer.body.error.code).toBe("sign_in_not_confirmed");
        expect(cookieFrom(answer.response, "dn_session")).toBeUndefined();
      }
      const finished = await client.call(
        "POST",
        "/sign-in/finish",
        { user_id: 1014 },
        {
          cookie: `dn_login=${login}`,
        },
      );
      expect(finished.body.state).toBe("signed_in");
    });

    it("That's not me: cancel declines a confirmed sign-in for good, and finish then fails", async () => {
      const client = new ConsoleClient(service.url);
      const login = cookieFrom((await client.call("POST", "/sign-in")).response, "dn_login")?.value as string;
      const cookie = `dn_login=${login}`;
      await service.app.loginTokens.confirm(linkTokenFor(login), { id: 1015, first_name: "Trudy" });
      const cancelled = await client.call("POST", "/sign-in/cancel", undefined, { cookie });
      expect(cancelled.body).toEqual({ ok: true, state: "declined" });
      expect(cookieFrom(cancelled.response, "dn_login")?.header).toMatch(/Expires=Thu, 01 Jan 1970/);
      expect(cookieFrom(cancelled.response, "dn_session")).toBeUndefined();
      // A browser that still sent the old cookie (another tab) cannot finish it either.
      const finished = await client.call("POST", "/sign-in/finish", { user_id: 1015 }, { cookie });
      expect(finished.status).toBe(409);
      expect(finished.body.error).toEqual({
        code: "sign_in_not_confirmed",
        message: "The sign-in was cancelled; start again.",
      });
      expect(cookieFrom(finished.response, "dn_session")).toBeUndefined();
      expect((await client.call("POST", "/sign-in/check", undefined, { cookie })).body).toEqual({
        ok: true,
        state: "declined",
      });
      // Nor can anyone confirm it again in the bot.
      expect(await service.app.loginTokens.confirm(linkTokenFor(login), { id: 1015 })).toBe("declined");
    });

    it("cancel and finish act only on the sign-in of the browser that presents its cookie", async () => {
      const mine = new ConsoleClient(service.url);
      const other = new ConsoleClient(service.url);
      const login = cookieFrom((await mine.call("POST", "/sign-in")).response, "dn_login")?.value as string;
      const otherLogin = cookieFrom((await other.call("POST", "/sign-in")).response, "dn_login")
        ?.value as string;
      await service.app.loginTokens.confirm(linkTokenFor(login), { id: 1016, first_name: "Ivan" });
      // Another browser, with its own sign-in or with the link's token as its cookie: its cancel
      // and finish touch only its own sign-in (or none).
      for (const cookie of [`dn_login=${otherLogin}`, `dn_login=${linkTokenFor(login)}`]) {
        const finished = await other.call("POST", "/sign-in/finish", { user_id: 1016 }, { cookie });
        expect(finished.status).toBe(409);
        expect(cookieFrom(finished.response, "dn_session")).toBeUndefined();
        await other.call("POST", "/sign-in/cancel", undefined, { cookie });
      }
      expect(await service.app.loginTokens.state(linkTokenFor(login))).toBe("confirmed");
      expect(await service.app.loginTokens.state(linkTokenFor(otherLogin))).toBe("declined");
      const finished = await mine.call(
        "POST",
        "/sign-in/finish",
        { user_id: 1016 },
        { cookie: `dn_login=${login}` },
      );
      expect(finished.body.state).toBe("signed_in");
      // Without any cookie, cancel has nothing to cancel.
      expect((await other.call("POST", "/sign-in/cancel")).body).toEqual({ ok: true, state: "none" });
    });

    it("a check without a sign-in in progress, or with an unknown token, signs nobody in", async () => {
      const client = new ConsoleClient(service.url);
      expect((await client.call("POST", "/sign-in/check")).body).toEqual({ ok: true, state: "none" });
      const unknown = await client.call("POST", "/sign-in/check", undefined, { cookie: "dn_login=nope" });
      expect(unknown.body.state).toBe("none");
      expect(cookieFrom(unknown.response, "dn_session")).toBeUndefined();
    });

    it("a sign-in declined in the bot says so, and cannot be confirmed afterwards", async () => {
      const client = new ConsoleClient(service.url);
      const login = cookieFrom((await client.call("POST", "/sign-in")).response, "dn_login")?.value as string;
      const cookie = `dn_login=${login}`;
      expect(await service.app.loginTokens.decline(linkTokenFor(login), 1)).toBe("declined");
      const checked = await client.call("POST", "/sign-in/check", undefined, { cookie });
      expect(checked.body.state).toBe("declined");
      expect(cookieFrom(checked.response, "dn_login")?.header).toMatch(/Expires=Thu, 01 Jan 1970/);
      expect(await service.app.loginTokens.confirm(linkTokenFor(login), { id: 1005 })).toBe("declined");
      const again = await client.call("POST", "/sign-in/check", undefined, { cookie });
      expect(again.body.state).toBe("declined");
      expect(cookieFrom(again.response, "dn_session")).toBeUndefined();
      const finished = await client.call("POST", "/sign-in/finish", { user_id: 1005 }, { cookie });
      expect(finished.body.error.code).toBe("sign_in_not_confirmed");
      expect(cookieFrom(finished.response, "dn_session")).toBeUndefined();
    });

    it("a new sign-in in the same browser cancels the one before (its link would lead nowhere)", async () => {
      const client = new ConsoleClient(service.url);
      const first = await client.call("POST", "/sign-in");
      const firstSecret = cookieFrom(first.response, "dn_login")?.value as string;
      const second = await client.call("POST", "/sign-in", undefined, { cookie: `dn_login=${firstSecret}` });
      const secondSecret = cookieFrom(second.response, "dn_login")?.value as string;
      expect(secondSecret).not.toBe(firstSecret);
      // The browser now holds only the second secret: the first link's Yes could never sign it in,
      // so the bot must not say it did.
      expect(await service.app.loginTokens.confirm(linkTokenFor(firstSecret), { id: 1011 })).toBe("declined");
      expect(await service.app.loginTokens.confirm(linkTokenFor(secondSecret), { id: 1011 })).toBe(
        "confirmed",
      );
      const checked = await client.call("POST", "/sign-in/check", undefined, {
        cookie: `dn_login=${secondSecret}`,
      });
      expect(checked.body.state).toBe("confirmed");
    });

    it("a new sign-in in the same browser also cancels one confirmed but never finished", async () => {
      const client = new ConsoleClient(service.url);
      const first = await client.call("POST", "/sign-in");
      const firstSecret = cookieFrom(first.response, "dn_login")?.value as string;
      await service.app.loginTokens.confirm(linkTokenFor(firstSecret), { id: 1017 });
      await client.call("POST", "/sign-in", undefined, { cookie: `dn_login=${firstSecret}` });
      expect(await service.app.loginTokens.state(linkTokenFor(firstSecret))).toBe("declined");
      const finished = await client.call(
        "POST",
        "/sign-in/finish",
        { user_id: 1017 },
        {
          cookie: `dn_login=${firstSecret}`,
        },
      );
      expect(finished.body.error.code).toBe("sign_in_not_confirmed");
    });

    it("an expired sign-in says so", async () => {
      const client = new ConsoleClient(service.url);
      const login = cookieFrom((await client.call("POST", "/sign-in")).response, "dn_login")?.value as string;
      await service.db.kysely
        .updateTable("login_tokens")
        .set({ expires_at: Date.now() - 1 })
        .where("token_hash", "=", createHash("sha256").update(linkTokenFor(login)).digest("hex"))
        .execute();
      await service.app.loginTokens.confirm(linkTokenFor(login), { id: 1004 });
      const checked = await client.call("POST", "/sign-in/check", undefined, { cookie: `dn_login=${login}` });
      expect(checked.body.state).toBe("expired");
      expect(cookieFrom(checked.response, "dn_session")).toBeUndefined();
      const finished = await client.call(
        "POST",
        "/sign-in/finish",
        { user_id: 1004 },
        {
          cookie: `dn_login=${login}`,
        },
      );
      expect(finished.body.error).toEqual({
        code: "sign_in_not_confirmed",
        message: "The sign-in link expired; start again.",
      });
    });

    it("never logs session or login tokens", async () => {
      expect(alice.session).toBeTruthy();
      expect(service.logs.text).not.toContain(alice.session as string);
      expect(service.logs.text).not.toContain(alice.csrf as string);
    });
  });

  describe("sessions", () => {
    it("every signed-in route answers 401 not_signed_in without a session, or with a made-up one", async () => {
      const anonymous = new ConsoleClient(service.url);
      const forged = new ConsoleClient(service.url);
      forged.session = "A".repeat(33);
      const id = "AAAAAAAAAAAAAAAAAAAAAA";
      for (const client of [anonymous, forged]) {
        for (const [method, path] of [
          ["GET", "/session"],
          ["POST", "/sign-out"],
          ["GET", "/docks"],
          ["POST", "/docks"],
          ["GET", `/docks/${id}`],
          ["PATCH", `/docks/${id}`],
          ["DELETE", `/docks/${id}`],
          ["POST", `/docks/${id}/rotate-secret`],
          ["POST", `/docks/${id}/rotate-signing-secret`],
          ["GET", `/docks/${id}/subscribers`],
          ["DELETE", `/docks/${id}/subscribers/5`],
          ["GET", `/docks/${id}/messages`],
          ["GET", `/docks/${id}/messages/msg_000000000AAAAAAAAAAAAA`],
          ["GET", `/docks/${id}/activity`],
          ["GET", "/stream"],
          ["POST", `/docks/${id}/test-message`],
        ] as const) {
          const body = method === "POST" || method === "PATCH" ? { name: "x" } : undefined;
          const answer = await client.call(method, path, body);
          expect({ method, path, status: answer.status, code: answer.body.error?.code }).toEqual({
            method,
            path,
            status: 401,
            code: "not_signed_in",
          });
        }
      }
    });

    it("an expired session is refused", async () => {
      const client = await signIn(service, { id: 1005 });
      expect((await client.call("GET", "/docks")).status).toBe(200);
      await service.db.kysely
        .updateTable("sessions")
        .set({ expires_at: Date.now() - 1 })
        .where("user_id", "=", 1005)
        .execute();
      const answer = await client.call("GET", "/docks");
      expect(answer.status).toBe(401);
      expect(answer.body.error.code).toBe("not_signed_in");
    });

    it("sign-out ends the session on the server: the old cookie no longer works", async () => {
      const client = await signIn(service, { id: 1006 });
      const cookie = client.session as string;
      const out = await client.call("POST", "/sign-out", {});
      expect(out.status).toBe(200);
      expect(cookieFrom(out.response, "dn_session")?.header).toMatch(/Expires=Thu, 01 Jan 1970/);
      const replayed = await client.call("GET", "/docks", undefined, { cookie: `dn_session=${cookie}` });
      expect(replayed.status).toBe(401);
    });

    it("sign-out needs no body (as the other POSTs), and without a session is 401 like them", async () => {
      expect((await new ConsoleClient(service.url).call("POST", "/sign-out")).status).toBe(401);
      // A session made directly: this suite's sign-ins already use up the address's allowance.
      const client = new ConsoleClient(service.url);
      client.session = (
        await new SessionRepository(service.db, service.app.owners.policy).create({ id: 1010 }, 60_000)
      ).token;
      client.csrf = (await client.call("GET", "/session")).body.csrf_token;
      const out = await client.call("POST", "/sign-out");
      expect(out.status).toBe(200);
      expect((await client.call("GET", "/docks")).status).toBe(401);
    });

    it("sign-out everywhere ends every session of the person, and no one else's", async () => {
      const first = await signIn(service, { id: 1007 });
      const second = await signIn(service, { id: 1007 });
      const other = await signIn(service, { id: 1008 });
      expect((await first.call("POST", "/sign-out", { everywhere: true })).status).toBe(200);
      expect((await first.call("GET", "/docks")).status).toBe(401);
      expect((await second.call("GET", "/docks")).status).toBe(401);
      expect((await other.call("GET", "/docks")).status).toBe(200);
    });

    it("expiry and revocation in the repository, on a controlled clock", async () => {
      let clock = 1_000_000;
      const sessions = new SessionRepository(service.db, service.app.owners.policy, () => clock);
      const { token, expiresAt } = await sessions.create({ id: 1009 }, 60_000);
      expect(expiresAt).toBe(1_060_000);
      expect((await sessions.get(token))?.user.id).toBe(1009);
      clock = 1_059_999;
      expect(await sessions.get(token)).not.toBeNull();
      clock = 1_060_000;
      expect(await sessions.get(token)).toBeNull();
      const other = await sessions.create({ id: 1009 }, 60_000);
      expect(await sessions.revoke(other.token)).toBe(true);
      expect(await sessions.get(other.token)).toBeNull();
      expect(await sessions.revoke(other.token)).toBe(false);
      const stored = await service.db.kysely.selectFrom("sessions").select("token_hash").execute();
      expect(stored.some((row) => row.token_hash.includes(token))).toBe(false);
    });
  });

  describe("CSRF", () => {
    it("every state-changing call without the session's token is refused with 403, and changes nothing", async () => {
      const dock = await createDock(alice, "CSRF target");
      const strangerToken = bob.csrf;
      for (const csrf of [null, "wrong", strangerToken]) {
        for (const [method, path, body] of [
          ["POST", "/docks", { name: "Injected" }],
          ["PATCH", `/docks/${dock.id}`, { name: "Renamed" }],
          ["POST", `/docks/${dock.id}/rotate-secret`, undefined],
          ["POST", `/docks/${dock.id}/test-message`, undefined],
          ["DELETE", `/docks/${dock.id}/subscribers/5`, undefined],
          ["DELETE", `/docks/${dock.id}`, undefined],
          ["POST", "/sign-out", {}],
        ] as const) {
          const answer = await alice.call(method, path, body, { csrf });
          expect({ path, method, status: answer.status, code: answer.body.error?.code }).toEqual({
            path,
            method,
            status: 403,
            code: "csrf_rejected",
          });
        }
      }
      const after = await alice.call("GET", `/docks/${dock.id}`);
      expect(after.body.dock).toMatchObject({ name: "CSRF target", secret_key: dock.secret_key });
      expect((await alice.call("GET", `/docks/${dock.id}/messages`)).body.messages).toEqual([]);
      expect(
        (await alice.call("GET", "/docks")).body.docks.map((d: { name: string }) => d.name),
      ).not.toContain("Injected");
      expect((await alice.call("GET", "/session")).status).toBe(200);
    });
  });

  describe("ownership", () => {
    it("another owner's Dock is a 404 on every route, exactly like a missing one, and is left untouched", async () => {
      const dock = await createDock(alice, "Alice's");
      // One message of Alice's, which Bob asks for by its ID under each Dock ID. Sent before the
      // chat subscribes: a send to that chat (unknown to Telegram) would end its subscription.
      const messageId = (await alice.call("POST", `/docks/${dock.id}/test-message`)).body
        .message_id as string;
      await service.subscriptions.subscribe(dock.id, 555, "private");
      for (const id of [dock.id, "AAAAAAAAAAAAAAAAAAAAAA", "not-a-dock-id"]) {
        for (const [method, path, body] of [
          ["GET", `/docks/${id}`, undefined],
          ["PATCH", `/docks/${id}`, { name: "Stolen" }],
          ["POST", `/docks/${id}/rotate-secret`, undefined],
          ["POST", `/docks/${id}/rotate-signing-secret`, undefined],
          ["GET", `/docks/${id}/credentials`, undefined],
          ["POST", `/docks/${id}/credentials`, { name: "stolen", scope: "manage" }],
          ["DELETE", `/docks/${id}/credentials/crd_AAAAAAAAAAAAAAAA`, undefined],
          ["GET", `/docks/${id}/subscribers`, undefined],
          ["DELETE", `/docks/${id}/subscribers/555`, undefined],
          ["GET", `/docks/${id}/messages`, undefined],
          ["GET", `/docks/${id}/messages/${messageId}`, undefined],
          ["GET", `/docks/${id}/messages?before=${messageId}&q=x&state=failed`, undefined],
          ["GET", `/docks/${id}/activity`, undefined],
          ["GET", `/docks/${id}/activity?days=30`, undefined],
          ["POST", `/docks/${id}/test-message`, undefined],
          ["DELETE", `/docks/${id}`, undefined],
        ] as const) {
          const answer = await bob.call(method, path, body);
          expect({ method, path, status: answer.status, body: answer.body }).toEqual({
            method,
            path,
            status: 404,
            body: { ok: false, error: { code: "not_found", message: "No such Dock." } },
          });
        }
      }
      expect((await bob.call("GET", "/docks")).body.docks.map((d: { id: string }) => d.id)).not.toContain(
        dock.id,
      );
      const mine = await alice.call("GET", `/docks/${dock.id}`);
      expect(mine.body.dock).toMatchObject({ name: "Alice's", secret_key: dock.secret_key, subscribers: 1 });
      const messages = (await alice.call("GET", `/docks/${dock.id}/messages`)).body.messages;
      expect(messages.map((m: { id: string }) => m.id)).toEqual([messageId]);
      expect(await ping(service, dock.id, dock.secret_key)).toBe(202);
    });

    it("a message is found only under its own Dock: under another, the owner's own or not, it is a 404", async () => {
      const first = await createDock(alice, "First");
      const second = await createDock(alice, "Second");
      const theirs = await createDock(bob, "Bob's");
      const messageId = (await alice.call("POST", `/docks/${first.id}/test-message`)).body
        .message_id as string;
      expect(
        (await alice.call("GET", `/docks/${first.id}/messages/${messageId}`)).body.message,
      ).toMatchObject({
        id: messageId,
        text: TEST_MESSAGE,
      });
      for (const [client, dockId] of [
        [alice, second.id],
        [bob, theirs.id],
      ] as const) {
        const answer = await client.call("GET", `/docks/${dockId}/messages/${messageId}`);
        expect({ status: answer.status, body: answer.body }).toEqual({
          status: 404,
          body: { ok: false, error: { code: "not_found", message: "No such message." } },
        });
        // Nor does paging from it or searching find it there.
        const history = await client.call("GET", `/docks/${dockId}/messages?before=${messageId}`);
        expect(history.body).toEqual({ ok: true, messages: [], next_before: null });
        const found = await client.call(
          "GET",
          `/docks/${dockId}/messages?q=${encodeURIComponent("Test message")}`,
        );
        expect(found.body).toEqual({ ok: true, messages: [], next_before: null });
      }
    });
  });

  describe("Docks", () => {
    it("the pages' reads and the sign-in page's checks are no info log lines; a failed read is", async () => {
      // This test's lines only: tests before it made the same requests, refused.
      const before = service.logs.lines.length;
      const dock = await createDock(alice, "Polled");
      const reads = ["", "/messages", "/subscribers", "/activity"].map((path) => `/docks/${dock.id}${path}`);
      for (const path of ["/docks", ...reads]) expect((await alice.call("GET", path)).status).toBe(200);
      expect((await alice.call("POST", "/sign-in/check", {})).status).toBe(200);
      expect((await alice.call("GET", "/docks/NoSuchDock0000000000000/messages")).status).toBe(404);
      const lines = service.logs.lines
        .slice(before)
        .map((line) => JSON.parse(line) as { method?: string; url?: string; msg?: string });
      const infoLines = lines.filter((line) => line.msg === "request").map((l) => `${l.method} ${l.url}`);
      for (const read of [...["/docks", ...reads].map((path) => `GET ${path}`), "POST /sign-in/check"]) {
        expect(infoLines, read).not.toContain(read.replace(" ", " /console/api"));
      }
      expect(infoLines).toContain("GET /console/api/docks/NoSuchDock0000000000000/messages");
      // What changes something is still an info line.
      expect(infoLines).toContain("POST /console/api/docks");
    });

    it("create answers the card: ID, secret, Open in Telegram link and runnable curl commands", async () => {
      const dock = (
        await alice.call("POST", "/docks", { name: "  Backups  ", link: "", description: "nightly" })
      ).body.dock;
      expect(dock).toMatchObject({ name: "Backups", link: null, description: "nightly", subscribers: 0 });
      expect(dock.id).toMatch(/^[A-Za-z0-9]{22}$/);
      expect(dock.secret_key).toMatch(/^dnsk_[A-Za-z0-9]{33}$/);
      expect(dock.open_in_telegram).toBe(`${PUBLIC_URL}/sandbox?start=${dock.id}`);
      expect(dock.examples.ping).toContain(`'${PUBLIC_URL}/ping'`);
      expect(dock.examples.ping).toContain(`"dock_id":"${dock.id}","secret_key":"${dock.secret_key}"`);
      expect(dock.examples.webhook).toContain(`-u '${dock.id}:${dock.secret_key}'`);
      expect(await ping(service, dock.id, dock.secret_key)).toBe(202);
      const listed = (await alice.call("GET", "/docks")).body.docks;
      expect(listed[0].id).toBe(dock.id);
      // The list carries what it shows and no credential: the Dock's own answer has them.
      expect(Object.keys(listed[0]).sort()).toEqual([
        "created_at",
        "description",
        "id",
        "link",
        "name",
        "pending_requests",
        "role",
        "stats",
        "subscribers",
        "updated_at",
        "visibility",
      ]);
      expect(listed[0].role).toBe("owner");
      expect(JSON.stringify(listed)).not.toContain(dock.secret_key);
    });

    it("field errors come back per field", async () => {
      const empty = await alice.call("POST", "/docks", { name: "   ", link: "ftp://files", description: 5 });
      expect(empty.status).toBe(400);
      expect(empty.body.error.code).toBe("invalid_fields");
      expect(empty.body.error.fields).toEqual([
        { field: "name", message: "name is required" },
        { field: "link", message: "link must be an absolute http:// or https:// URL" },
        { field: "description", message: "description must be a string" },
      ]);
      const long = await alice.call("POST", "/docks", { name: "x".repeat(65) });
      expect(long.body.error.fields).toEqual([
        { field: "name", message: "name must be at most 64 characters" },
      ]);
    });

    it("a body that is not a JSON object is a 400, never a 5xx", async () => {
      const array = await alice.call("POST", "/docks", "[1,2]");
      expect(array.status).toBe(400);
      expect(array.body.error.code).toBe("invalid_request");
      const broken = await alice.call("POST", "/docks", "{nope");
      expect(broken.status).toBe(400);
      expect(broken.body.error.code).toBe("invalid_json");
    });

    it("a body that is not UTF-8 is a 400 in the error format, and nothing is stored", async () => {
      const count = async () => (await alice.call("GET", "/docks")).body.docks.length as number;
      const before = await count();
      const headers = {
        cookie: `dn_session=${alice.session}`,
        "x-csrf-token": alice.csrf as string,
      };
      for (const bad of [Buffer.from([0xc3, 0x28]), Buffer.from([0xff])]) {
        for (const contentType of ["application/json", "text/plain"]) {
          const body = Buffer.concat([Buffer.from('{"name":"Bad '), bad, Buffer.from('"}')]);
          const response = await fetch(`${service.url}/console/api/docks`, {
            method: "POST",
            headers: { ...headers, "content-type": contentType },
            body,
          });
          expect(response.status, `${bad.toString("hex")} as ${contentType}`).toBe(400);
          expect(await response.json()).toEqual({
            ok: false,
            error: { code: "invalid_request", message: "The request body is not valid UTF-8." },
          });
        }
      }
      expect(await count()).toBe(before);
    });

    it("edit changes only the fields sent; bad values change nothing", async () => {
      const dock = await createDock(alice, "Editable");
      const edited = await alice.call("PATCH", `/docks/${dock.id}`, { name: "Edited", link: "" });
      expect(edited.body.dock).toMatchObject({ name: "Edited", link: null, description: "CI results" });
      const bad = await alice.call("PATCH", `/docks/${dock.id}`, { link: "javascript:alert(1)" });
      expect(bad.status).toBe(400);
      expect(bad.body.error.fields).toEqual([
        { field: "link", message: "link must be an absolute http:// or https:// URL" },
      ]);
      // Its button goes under every message, and Telegram refuses a button to localhost.
      const local = await alice.call("PATCH", `/docks/${dock.id}`, { link: "http://localhost:3000/builds" });
      expect(local.status).toBe(400);
      expect(local.body.error.fields?.[0]?.message).toMatch(/^link must be a URL Telegram can open/);
      expect((await alice.call("GET", `/docks/${dock.id}`)).body.dock.name).toBe("Edited");
    });

    it("rotating the secret stops the old key at once", async () => {
      const dock = await createDock(alice, "Rotating");
      const rotated = (await alice.call("POST", `/docks/${dock.id}/rotate-secret`)).body.dock;
      expect(rotated.secret_key).not.toBe(dock.secret_key);
      expect(rotated.examples.ping).toContain(rotated.secret_key);
      expect(await ping(service, dock.id, dock.secret_key)).toBe(401);
      expect(await ping(service, dock.id, rotated.secret_key)).toBe(202);
      // The events' signing secret is not the key, and a new key leaves it as it was.
      expect(dock.signing_secret).toMatch(/^dnss_/);
      expect(rotated.signing_secret).toBe(dock.signing_secret);
    });

    it("credentials: made with their secret shown once, listed without it, revoked at once", async () => {
      const dock = await createDock(alice, "Credentials");
      const made = await alice.call("POST", `/docks/${dock.id}/credentials`, { name: " CI ", scope: "send" });
      expect(made.status).toBe(201);
      expect(made.body.secret).toMatch(/^dnsc_[A-Za-z0-9]{33}$/);
      expect(made.body.credential).toMatchObject({
        name: "CI",
        scope: "send",
        prefix: made.body.secret.slice(0, 9),
        last_used_at: null,
      });
      expect(await ping(service, dock.id, made.body.secret)).toBe(202);
      const listed = await alice.call("GET", `/docks/${dock.id}/credentials`);
      expect(listed.body.credentials).toHaveLength(1);
      expect(listed.body.credentials[0].last_used_at).toEqual(expect.any(Number));
      expect(JSON.stringify(listed.body)).not.toContain(made.body.secret);
      expect(JSON.stringify((await alice.call("GET", `/docks/${dock.id}`)).body)).not.toContain(
        made.body.secret,
      );

      const refused = await alice.call("POST", `/docks/${dock.id}/credentials`, { name: "", scope: "all" });
      expect(refused.status).toBe(400);
      expect(refused.body.error.fields.map((f: { field: string }) => f.field)).toEqual(["name", "scope"]);

      const id = made.body.credential.id;
      expect((await alice.call("DELETE", `/docks/${dock.id}/credentials/${id}`)).status).toBe(200);
      expect(await ping(service, dock.id, made.body.secret)).toBe(401);
      expect((await alice.call("DELETE", `/docks/${dock.id}/credentials/${id}`)).status).toBe(404);
      expect((await alice.call("GET", `/docks/${dock.id}/credentials`)).body.credentials).toEqual([]);
    });

    it("a GitHub credential: made with its secret shown once, signs GitHub's deliveries, at most three; the GitHub snippet asks for one", async () => {
      const dock = await createDock(alice, "Repos");
      const github = () =>
        alice.call("POST", `/docks/${dock.id}/credentials`, { name: "octo", scope: "github" });
      const made = await github();
      expect(made.status).toBe(201);
      expect(made.body.secret).toMatch(/^dngh_[A-Za-z0-9]{33}$/);
      expect(made.body.credential).toMatchObject({ scope: "github", prefix: made.body.secret.slice(0, 9) });
      const body = JSON.stringify({
        action: "created",
        repository: { full_name: "octo/app" },
        sender: { login: "o" },
      });
      const delivery = await fetch(`${service.url}/webhook/github/${dock.id}`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-github-event": "star",
          "x-hub-signature-256": `sha256=${createHmac("sha256", made.body.secret).update(body).digest("hex")}`,
        },
        body,
      });
      expect(delivery.status).toBe(202);
      const shown = (await alice.call("GET", `/docks/${dock.id}`)).body.dock;
      expect(JSON.stringify(shown)).not.toContain(made.body.secret);
      const snippet = shown.integrations.find((s: Json) => s.format === "github");
      expect(snippet.text).toContain("Secret: <GITHUB_SECRET>");
      expect(snippet.text).not.toContain(dock.secret_key);
      const listed = (await alice.call("GET", `/docks/${dock.id}/credentials`)).body.credentials;
      expect(listed).toEqual([{ ...made.body.credential, last_used_at: expect.any(Number) }]);

      expect((await github()).status).toBe(201);
      expect((await github()).status).toBe(201);
      const fourth = await github();
      expect([fourth.status, fourth.body.error.code]).toEqual([409, "too_many_github_credentials"]);
      expect(
        (await alice.call("DELETE", `/docks/${dock.id}/credentials/${made.body.credential.id}`)).status,
      ).toBe(200);
      expect((await github()).status).toBe(201);
    });

    it("rotating the signing secret keeps the secret key", async () => {
      const dock = await createDock(alice, "Signing");
      const rotated = (await alice.call("POST", `/docks/${dock.id}/rotate-signing-secret`)).body.dock;
      expect(rotated.signing_secret).toMatch(/^dnss_[A-Za-z0-9]{33}$/);
      expect(rotated.signing_secret).not.toBe(dock.signing_secret);
      expect(rotated.secret_key).toBe(dock.secret_key);
      expect(await ping(service, dock.id, dock.secret_key)).toBe(202);
      expect(await ping(service, dock.id, rotated.signing_secret)).toBe(401);
    });

    it("delete removes the Dock, its subscribers and its key", async () => {
      const dock = await createDock(alice, "Doomed");
      await service.subscriptions.subscribe(dock.id, 556, "private");
      expect((await alice.call("DELETE", `/docks/${dock.id}`)).status).toBe(200);
      expect((await alice.call("GET", `/docks/${dock.id}`)).status).toBe(404);
      expect(await ping(service, dock.id, dock.secret_key)).toBe(401);
      const left = await service.db.kysely
        .selectFrom("subscriptions")
        .selectAll()
        .where("dock_id", "=", dock.id)
        .execute();
      expect(left).toEqual([]);
    });

    it("subscribers are listed and removed; a removed chat's queued messages are not sent", async () => {
      const dock = await createDock(alice, "Team");
      await service.subscriptions.subscribe(dock.id, 1001, "private");
      await service.subscriptions.subscribe(dock.id, -4000000001, "group");
      const listed = (await alice.call("GET", `/docks/${dock.id}/subscribers`)).body.subscribers;
      expect(listed).toMatchObject([
        {
          chat_id: 1001,
          chat_type: "private",
          state: "active",
          first_name: "Alice",
          username: "alice_owner",
        },
        { chat_id: -4000000001, chat_type: "group", state: "active", first_name: null },
      ]);
      expect((await alice.call("GET", `/docks/${dock.id}`)).body.dock.subscribers).toBe(2);

      // Telegram fails every send for now (a 500: retried later), so both deliveries stay queued
      // for as long as this test looks at them. Without it the dispatcher reaches them first and
      // both chats (strangers to the sandbox) are gone before the owner removes anyone.
      const sandbox = sandboxOf(service);
      await sandbox.control("POST", "/faults", { kind: "server_error", methods: ["sendMessage"], rate: 1 });
      try {
        const test = await alice.call("POST", `/docks/${dock.id}/test-message`);
        expect(test.status).toBe(202);
        expect(test.body).toMatchObject({ ok: true, subscribers: 2 });
        const messages = async () => (await alice.call("GET", `/docks/${dock.id}/messages`)).body.messages;
        /** The message's delivery states, once they are `expected` (a timeout names the last ones seen). */
        const statesBecome = (what: string, expected: Record<string, number>) =>
          waitFor(
            what,
            async () => {
              const [message] = await messages();
              if (!isDeepStrictEqual(message?.states, expected))
                throw new Error(JSON.stringify(message?.states));
              return message;
            },
            10_000,
          );
        expect(await messages()).toMatchObject([{ text: TEST_MESSAGE, subscribers: 2 }]);
        // Both waiting: never sent, never given up. A read can also come while a (failing) try is in
        // flight — for either chat, or both — so wait for a moment between tries.
        await statesBecome("both deliveries queued", { queued: 2 });
        const group = () =>
          service.db.kysely
            .selectFrom("deliveries")
            .select(["state", "attempts"])
            .where("dock_id", "=", dock.id)
            .where("chat_id", "=", -4000000001)
            .executeTakeFirst();
        await waitFor(
          "the group's delivery fanned out and tried",
          async () => ((await group())?.attempts ?? 0) >= 1,
        );
        // Removal turns queued deliveries gone, not one in flight: the group's delivery must be
        // queued, and stay so, when it is removed. Its next try cannot be foretold (a backoff, or
        // once Telegram is seen down, a probe every second for either chat), so another sender uses
        // up the group's allowance for the next minute (the bot's replies share the pacer): from
        // the moment it is queued again, the group's delivery waits.
        const { pacer } = service.app;
        for (let i = 0; i < TELEGRAM_LIMITS.groupPerMinute; i++)
          pacer.release(pacer.take(-4000000001, "group"));
        await waitFor("the group's delivery queued", async () => (await group())?.state === "queued");
        expect((await alice.call("DELETE", `/docks/${dock.id}/subscribers/-4000000001`)).status).toBe(200);
        expect((await alice.call("DELETE", `/docks/${dock.id}/subscribers/-4000000001`)).status).toBe(404);
        expect((await alice.call("DELETE", `/docks/${dock.id}/subscribers/abc`)).status).toBe(404);
        const after = (await alice.call("GET", `/docks/${dock.id}/subscribers`)).body.subscribers;
        expect(after.map((s: { chat_id: number }) => s.chat_id)).toEqual([1001]);
        // The chat still subscribed keeps its delivery, still being retried (seen between two tries).
        const message = await statesBecome("one delivery gone, the other still queued", {
          gone: 1,
          queued: 1,
        });
        expect(message.deliveries).toContainEqual(
          expect.objectContaining({
            chat_id: -4000000001,
            state: "gone",
            last_error: "removed by the Dock's owner",
          }),
        );
      } finally {
        await sandbox.control("DELETE", "/faults");
      }
    });

    it('create and edit take a callback URL: set, kept, cleared by "" or null; a bad one is a field error', async () => {
      const created = await alice.call("POST", "/docks", {
        name: "Hooked",
        callback_url: " https://hooks.example.com/dock ",
      });
      expect(created.status).toBe(201);
      const dock = created.body.dock;
      expect(dock.callback_url).toBe("https://hooks.example.com/dock");
      const path = `/docks/${dock.id}`;
      // Another field's edit keeps it.
      const renamed = await alice.call("PATCH", path, { name: "Hooked again" });
      expect(renamed.body.dock).toMatchObject({
        name: "Hooked again",
        callback_url: "https://hooks.example.com/dock",
      });
      // A dotted host name written bare means https://, as for the link.
      const bare = await alice.call("PATCH", path, { callback_url: "hooks.example.com/bare" });
      expect(bare.body.dock.callback_url).toBe("https://hooks.example.com/bare");
      expect(
        (await alice.call("PATCH", path, { callback_url: "https://hooks.example.com/dock" })).status,
      ).toBe(200);
      for (const bad of ["ftp://hooks.example.com/dock", "localhost:3000/dock", 42]) {
        const refused = await alice.call("PATCH", path, { callback_url: bad });
        expect(refused.status).toBe(400);
        expect(refused.body.error.code).toBe("invalid_fields");
        expect(refused.body.error.fields).toEqual([
          {
            field: "callback_url",
            message:
              typeof bad === "string"
                ? "callback_url must be an absolute http:// or https:// URL (https://hooks.example.com/events, say)"
                : "callback_url must be a string",
          },
        ]);
      }
      // A token as user information would be quoted back by fetch's own error: refused.
      const userinfo = await alice.call("PATCH", path, {
        callback_url: "https://user:tok3n@hooks.example.com/dock",
      });
      expect(userinfo.status).toBe(400);
      expect(userinfo.body.error.fields).toEqual([
        {
          field: "callback_url",
          message: "callback_url must not hold a user name or password; put a token in its path or query",
        },
      ]);
      expect((await alice.call("GET", path)).body.dock.callback_url).toBe("https://hooks.example.com/dock");
      for (const cleared of ["", null]) {
        const set = await alice.call("PATCH", path, { callback_url: "http://hooks.example.com:8080/events" });
        expect(set.body.dock.callback_url).toBe("http://hooks.example.com:8080/events");
        const answer = await alice.call("PATCH", path, { callback_url: cleared });
        expect(answer.status).toBe(200);
        expect(answer.body.dock.callback_url).toBeNull();
        expect((await service.app.docks.get(dock.id))?.callback_url).toBeNull();
      }
      // Only the owner: another owner's PATCH is a 404 and sets nothing.
      const theirs = await bob.call("PATCH", path, { callback_url: "https://evil.example.com/" });
      expect(theirs.status).toBe(404);
      expect((await alice.call("GET", path)).body.dock.callback_url).toBeNull();
    });

    it("recent messages tell a message's key, edits, acknowledgement and deletion, copy by copy", async () => {
      const dock = await createDock(alice, "Living");
      const sandbox = sandboxOf(service);
      const reader = await sandbox.person("Ada");
      await service.subscriptions.subscribe(dock.id, reader, "private");
      const api = (method: string, path: string, body?: unknown) =>
        asDock(service.url, dock, method, path, body);
      /** The message on the card, once `done` says it is as awaited (a timeout names the last seen). */
      const report = (id: string, what: string, done: (m: Json) => boolean): Promise<Json> =>
        waitFor(what, async () => {
          const messages = (await alice.call("GET", `/docks/${dock.id}/messages`)).body.messages;
          const message = messages.find((m: Json) => m.id === id);
          if (!message || !done(message)) throw new Error(JSON.stringify(message));
          return message;
        });

      const sent = await api("POST", "/webhook", { msg: "Deploy started", key: "deploy", ack: true });
      expect(sent.status).toBe(202);
      const id = sent.body.message_id as string;
      const fresh = await report(id, "the copy sent", (m) => m.states.sent === 1);
      expect(fresh).toMatchObject({
        key: "deploy",
        revision: 1,
        revised_at: null,
        deleted_at: null,
        acknowledged: null,
        reminders: null,
        changes: {
          edits: { pending: 0, edited: 0, unchanged: 0, resent: 0, failed: 0, gone: 0 },
          deletes: { pending: 0, deleted: 0, already_deleted: 0, not_deleted: 0, gone: 0 },
        },
        deliveries: [{ chat_id: reader, state: "sent", last_error: null, edit: null, delete: null }],
      });

      expect((await api("PATCH", `/messages/${id}`, { msg: "Deploy finished" })).status).toBe(202);
      const edited = await report(
        id,
        "the copy edited",
        (m) => m.revision === 2 && m.changes.edits.edited === 1,
      );
      expect(edited.text).toBe("Deploy finished");
      expect(edited.revised_at).toBeGreaterThanOrEqual(edited.created_at);
      expect(edited.changes.edits).toEqual({
        pending: 0,
        edited: 1,
        unchanged: 0,
        resent: 0,
        failed: 0,
        gone: 0,
      });
      expect(edited.deliveries[0].edit).toEqual({
        state: "done",
        outcome: "edited",
        last_error: null,
        updated_at: expect.any(Number),
      });

      // Ada presses the copy's Acknowledge button.
      const copy = await waitFor("the edited copy in Ada's chat", async () =>
        (await sandbox.botMessages(reader)).find((m: Json) => m.text.endsWith("Deploy finished")),
      );
      expect(copy.reply_markup.inline_keyboard[0][0]).toEqual({
        text: "✔ Acknowledge",
        callback_data: `ack:${id}`,
      });
      await sandbox.control("POST", `/chats/${reader}/messages/${copy.message_id}/press`, {
        callback_data: `ack:${id}`,
      });
      const acknowledged = await report(
        id,
        "the acknowledgement on every copy",
        (m) => m.acknowledged !== null && m.revision === 3 && m.changes.edits.pending === 0,
      );
      expect(acknowledged.acknowledged).toEqual({ name: "Ada", at: expect.any(Number) });
      expect(acknowledged.acknowledged.at).toBeGreaterThanOrEqual(edited.revised_at);
      expect(acknowledged.changes.edits.edited).toBe(1);

      // One with reminders says where they stand, and why they ended.
      const reminding = await api("POST", "/webhook", { msg: "Disk full", ack: { remind_every: "5m" } });
      const remindingId = reminding.body.message_id as string;
      const waiting = await report(remindingId, "the reminding copy sent", (m) => m.states.sent === 1);
      expect(waiting.reminders).toEqual({ rounds: 0, next_at: waiting.created_at + 300_000, ended: null });
      expect((await api("DELETE", `/messages/${remindingId}`)).status).toBe(202);
      expect(
        (await report(remindingId, "its reminders ended", (m) => m.reminders?.ended === "deleted")).reminders,
      ).toEqual({ rounds: 0, next_at: null, ended: "deleted" });

      expect((await api("DELETE", `/messages/${id}`)).status).toBe(202);
      const deleted = await report(id, "the copy deleted", (m) => m.changes.deletes.deleted === 1);
      expect(deleted.deleted_at).toBeGreaterThanOrEqual(acknowledged.acknowledged.at);
      expect(deleted.changes.deletes).toEqual({
        pending: 0,
        deleted: 1,
        already_deleted: 0,
        not_deleted: 0,
        gone: 0,
      });
      expect(deleted.deliveries).toEqual([
        {
          chat_id: reader,
          state: "sent",
          last_error: null,
          updated_at: expect.any(Number),
          edit: expect.objectContaining({ state: "done", outcome: "edited" }),
          delete: { state: "done", outcome: "deleted", last_error: null, updated_at: expect.any(Number) },
          // Subscribed here without a name; nobody knows Ada's chat by one.
          name: null,
        },
      ]);
      // What the card shows stays: the key, the revision, who acknowledged.
      expect(deleted).toMatchObject({ key: "deploy", revision: 3, acknowledged: { name: "Ada" } });
    });

    it.skipIf(!curlPath)(
      "the card's commands run as shown: send with a key twice, edit, acknowledge, delete",
      async () => {
        const dock = await createDock(alice, "Commands");
        const { examples } = (await alice.call("GET", `/docks/${dock.id}`)).body.dock;
        for (const name of ["webhook", "replace", "edit", "delete", "ack"]) {
          expect(examples[name]).toContain(`-u '${dock.id}:${dock.secret_key}'`);
        }
        expect(examples.replace).toContain(`'${PUBLIC_URL}/webhook'`);
        expect(examples.replace).toContain(`-d '{"msg":"Deploy started","key":"deploy"}'`);
        expect(examples.edit).toMatch(
          /^curl -X PATCH 'http:\/\/console\.test:8080\/messages\/<MESSAGE_ID>' \\\n/,
        );
        expect(examples.edit).toContain(`-d '{"msg":"Deploy finished"}'`);
        expect(examples.delete).toMatch(
          /^curl -X DELETE 'http:\/\/console\.test:8080\/messages\/<MESSAGE_ID>' \\\n/,
        );
        expect(examples.ack).toContain('"ack":true');
        // Pasted as shown, aimed at this service instead of PUBLIC_URL, with -s for a quiet terminal.
        const run = async (command: string, messageId = "") =>
          JSON.parse(
            await shell(
              command
                .replace("curl ", "curl -s ")
                .replaceAll(`'${PUBLIC_URL}/`, `'${service.url}/`)
                .replace("<MESSAGE_ID>", messageId),
            ),
          );
        const first = await run(examples.replace);
        expect(first).toMatchObject({ ok: true, message_id: expect.any(String) });
        const again = await run(examples.replace);
        expect(again).toMatchObject({ ok: true, message_id: first.message_id, replaced: true });
        expect(await run(examples.edit, first.message_id)).toMatchObject({ ok: true, revision: 3 });
        const ack = await run(examples.ack);
        expect(ack.message_id).not.toBe(first.message_id);
        expect(await run(examples.delete, first.message_id)).toMatchObject({ ok: true });
        const messages = (await alice.call("GET", `/docks/${dock.id}/messages`)).body.messages;
        expect(messages).toMatchObject([
          { id: ack.message_id, text: "Disk almost full on db-1", options: { ack: true }, key: null },
          { id: first.message_id, text: "Deploy finished", key: "deploy", revision: 3 },
        ]);
        expect(messages[1].deleted_at).toEqual(expect.any(Number));
      },
    );

    it("recent messages come newest first with their delivery states", async () => {
      const dock = await createDock(alice, "History");
      // Someone who opened the bot, so the messages reach them: a chat Telegram refused would lose
      // its subscription at the first send, and a message fanned out after that has no delivery.
      const reader = await sandboxOf(service).person("Historian");
      await service.subscriptions.subscribe(dock.id, reader, "private");
      expect(await ping(service, dock.id, dock.secret_key, "first")).toBe(202);
      expect(await ping(service, dock.id, dock.secret_key, "second")).toBe(202);
      const fannedOut = () =>
        service.db.kysely.selectFrom("deliveries").select("id").where("dock_id", "=", dock.id).execute();
      // Shorter than the test's own time limit, so that a failure says what it waited for.
      await waitFor("both messages fanned out", async () => (await fannedOut()).length === 2, 20_000);
      await service.db.kysely
        .updateTable("deliveries")
        .set({ state: "failed", last_error: "Bad Request: chat not found" })
        .where("dock_id", "=", dock.id)
        .execute();
      const messages = (await alice.call("GET", `/docks/${dock.id}/messages`)).body.messages;
      expect(messages.map((m: { text: string }) => m.text)).toEqual(["second", "first"]);
      expect(messages[0]).toMatchObject({
        states: { failed: 1 },
        deliveries: [{ chat_id: reader, state: "failed", last_error: "Bad Request: chat not found" }],
      });
    });
  });

  describe("integrations", () => {
    /** Sends a text with the hook URL, as a tool that can only be given a URL does; the status. */
    const hook = async (token: string, text: string) =>
      (
        await fetch(`${service.url}/hook/${token}`, {
          method: "POST",
          headers: { "content-type": "text/plain" },
          body: text,
        })
      ).status;
    const snippet = (dock: Json, format: string) => dock.integrations.find((s: Json) => s.format === format);

    it("a hook token is created, rotated and removed: the old one stops working at once, the secret key never", async () => {
      const dock = await createDock(alice, "Hooked");
      const fresh = (await alice.call("GET", `/docks/${dock.id}`)).body.dock;
      expect(fresh).toMatchObject({ hook_token: null, inbound_format: null, template: null });
      expect(snippet(fresh, "slack")).toMatchObject({
        text: `${PUBLIC_URL}/hook/<HOOK_TOKEN>/slack`,
        needs_hook_token: true,
      });

      const created = await alice.call("POST", `/docks/${dock.id}/hook-token`);
      expect(created.status).toBe(200);
      const token = created.body.dock.hook_token as string;
      expect(token).toMatch(/^dnhk_/);
      expect(snippet(created.body.dock, "slack")).toMatchObject({
        text: `${PUBLIC_URL}/hook/${token}/slack`,
        needs_hook_token: false,
      });
      expect(await hook(token, "Backup finished")).toBe(202);

      const rotated = await alice.call("POST", `/docks/${dock.id}/hook-token`);
      expect(rotated.status).toBe(200);
      const next = rotated.body.dock.hook_token as string;
      expect(next).toMatch(/^dnhk_/);
      expect(next).not.toBe(token);
      expect(await hook(token, "old hook")).toBe(401);
      expect(await hook(next, "new hook")).toBe(202);

      const removed = await alice.call("DELETE", `/docks/${dock.id}/hook-token`);
      expect(removed.status).toBe(200);
      expect(removed.body.dock.hook_token).toBeNull();
      expect(snippet(removed.body.dock, "slack").needs_hook_token).toBe(true);
      expect(await hook(next, "removed hook")).toBe(401);
      // The secret key is another credential: untouched by all of this.
      expect(removed.body.dock.secret_key).toBe(dock.secret_key);
      expect(await ping(service, dock.id, dock.secret_key)).toBe(202);
      const texts = (await alice.call("GET", `/docks/${dock.id}/messages`)).body.messages.map(
        (m: Json) => m.text,
      );
      expect(texts).toEqual(["hello", "new hook", "Backup finished"]);
    });

    it("PUT integrations saves a template and the default format; bad ones are field errors that change nothing", async () => {
      const dock = await createDock(alice, "Templated");
      const template = {
        text: "{{ payload.name | upcase }} is {{ status }}",
        title: "{{ name }}",
        key: "{{ name }}",
        priority: "{% if status == 'firing' %}high{% endif %}",
      };
      // Without a template, the Dock cannot read bodies as one.
      const early = await alice.call("PUT", `/docks/${dock.id}/integrations`, { inbound_format: "template" });
      expect(early.status).toBe(400);
      expect(early.body.error.code).toBe("invalid_fields");
      expect(early.body.error.fields).toEqual([{ field: "inbound_format", message: expect.any(String) }]);

      const saved = await alice.call("PUT", `/docks/${dock.id}/integrations`, { template });
      expect(saved.status).toBe(200);
      expect(saved.body.dock).toMatchObject({ template, inbound_format: null });

      // A Liquid syntax error names the field, with the line and column.
      const broken = await alice.call("PUT", `/docks/${dock.id}/integrations`, {
        template: { ...template, text: "{{ name }}\n{% if status %}open" },
      });
      expect(broken.status).toBe(400);
      expect(broken.body.error.code).toBe("invalid_fields");
      expect(broken.body.error.fields).toEqual([
        { field: "template.text", message: expect.stringMatching(/^line 2, column 1: .*not closed/) },
      ]);
      const unknown = await alice.call("PUT", `/docks/${dock.id}/integrations`, { inbound_format: "nagios" });
      expect(unknown.status).toBe(400);
      expect(unknown.body.error.fields).toEqual([
        { field: "inbound_format", message: expect.stringContaining("alertmanager") },
      ]);
      expect((await alice.call("GET", `/docks/${dock.id}`)).body.dock).toMatchObject({
        template,
        inbound_format: null,
      });

      const reading = await alice.call("PUT", `/docks/${dock.id}/integrations`, {
        inbound_format: "template",
      });
      expect(reading.status).toBe(200);
      expect(reading.body.dock).toMatchObject({ template, inbound_format: "template" });
      const back = await alice.call("PUT", `/docks/${dock.id}/integrations`, { inbound_format: null });
      expect(back.body.dock).toMatchObject({ template, inbound_format: null });
      const none = await alice.call("PUT", `/docks/${dock.id}/integrations`, { template: null });
      expect(none.body.dock.template).toBeNull();
    });

    it("preview shows the message a sample makes, or what is wrong with it", async () => {
      const dock = await createDock(alice, "Previewed");
      const preview = (body: Json) => alice.call("POST", `/docks/${dock.id}/integrations/preview`, body);
      const sample = JSON.stringify({ status: "firing", name: "disk", value: 97 });
      const template = {
        text: "{{ payload.name | upcase }} is {{ status }}",
        key: "{{ name }}",
        tags: "warning",
      };

      const shown = await preview({ format: "template", sample, template });
      expect(shown.status).toBe(200);
      expect(shown.body).toMatchObject({
        ok: true,
        format: "template",
        result: { kind: "message", key: "disk", final: false, options: { tags: ["warning"] } },
      });
      expect(shown.body.result.shown.text).toContain("DISK is firing");

      // A sample that is not JSON, a template that fails on the sample, one that does not parse.
      const broken = await preview({ format: "template", sample: '{"status": "fir', template });
      expect(broken.status).toBe(400);
      expect(broken.body).toMatchObject({ ok: false, error: { code: "invalid_json" } });
      const failing = await preview({
        format: "template",
        sample,
        template: { ...template, final: "{{ status }}" },
      });
      expect(failing.status).toBe(422);
      expect(failing.body.error.code).toBe("template_failed");
      expect(failing.body.error.fields).toEqual([
        { field: "template.final", message: expect.stringContaining('"firing"') },
      ]);
      const unparsed = await preview({ format: "template", sample, template: { text: "{{ name | nope }}" } });
      expect(unparsed.status).toBe(400);
      expect(unparsed.body.error.fields).toEqual([
        { field: "template.text", message: "line 1, column 1: undefined filter: nope." },
      ]);

      // A built-in format, with the header its tool sends.
      const ping = await preview({
        format: "github",
        sample: JSON.stringify({ zen: "Keep it logically awesome.", hook_id: 1 }),
        headers: { "X-GitHub-Event": "ping" },
      });
      expect(ping.body).toMatchObject({ ok: true, format: "github", result: { kind: "skip" } });

      // Another owner's Dock: 404, as on every route, for all four.
      for (const [method, path, body] of [
        ["POST", "/integrations/preview", { format: "template", sample, template }],
        ["PUT", "/integrations", { template }],
        ["POST", "/hook-token", undefined],
        ["DELETE", "/hook-token", undefined],
      ] as const) {
        const answer = await bob.call(method, `/docks/${dock.id}${path}`, body);
        expect({ path, status: answer.status, code: answer.body.error?.code }).toEqual({
          path,
          status: 404,
          code: "not_found",
        });
      }
      expect((await alice.call("GET", `/docks/${dock.id}`)).body.dock).toMatchObject({
        hook_token: null,
        template: null,
      });
    });

    it("the Alertmanager snippet carries the Dock ID and the secret key", async () => {
      const dock = (await alice.call("GET", `/docks/${(await createDock(alice, "Alerts")).id}`)).body.dock;
      const alertmanager = snippet(dock, "alertmanager");
      expect(alertmanager).toMatchObject({ tool: "Prometheus Alertmanager", needs_hook_token: false });
      expect(alertmanager.where).toContain("alertmanager.yml");
      expect(alertmanager.text).toContain(`url: "${PUBLIC_URL}/webhook/alertmanager"`);
      expect(alertmanager.text).toContain(`username: "${dock.id}"`);
      expect(alertmanager.text).toContain(`password: "${dock.secret_key}"`);
    });

    it.skipIf(!curlPath)(
      "the template's curl snippet runs as shown once the Dock has a template",
      async () => {
        const dock = await createDock(alice, "Own payload");
        const run = async () => {
          const { text } = snippet((await alice.call("GET", `/docks/${dock.id}`)).body.dock, "template");
          expect(text).toContain(`-u '${dock.id}:${dock.secret_key}'`);
          // Pasted as shown, aimed at this service instead of PUBLIC_URL, quiet, its status on a last line.
          const output = await shell(
            `${text.replace("curl ", "curl -s ").replaceAll(`'${PUBLIC_URL}/`, `'${service.url}/`)} -w '\\n%{http_code}'`,
          );
          const lines = output.trimEnd().split("\n");
          return { status: Number(lines.pop()), body: JSON.parse(lines.join("\n")) };
        };
        const before = await run();
        expect(before.status).toBeGreaterThanOrEqual(400);
        expect(before.body.ok).toBe(false);
        const saved = await alice.call("PUT", `/docks/${dock.id}/integrations`, {
          template: { text: "{{ name | upcase }} is {{ status }} ({{ value }}%)" },
        });
        expect(saved.status).toBe(200);
        const after = await run();
        expect(after).toMatchObject({ status: 202, body: { ok: true, message_id: expect.any(String) } });
        const messages = (await alice.call("GET", `/docks/${dock.id}/messages`)).body.messages;
        expect(messages.map((m: Json) => m.text)).toEqual(["DISK is firing (97%)"]);
      },
    );
  });

  it("console API answers are never cached", async () => {
    const response = (await alice.call("GET", "/docks")).response;
    expect(response.headers.get("cache-control")).toBe("no-store");
  });
});

describe("console sign-in limits, cookies and the Login Widget", () => {
  const TOKEN = "123456789:AAE-test-token-for-the-login-widget-check";
  let services: RunningService[] = [];
  afterAll(async () => {
    await Promise.all(services.map((s) => s.close()));
    services = [];
  });
  const start = async (env: Record<string, string>) => {
    const service = await startService("sqlite", env);
    services.push(service);
    return service;
  };

  it("too many sign-in attempts from one address get 429 with Retry-After", async () => {
    const service = await start({ SIGN_IN_ATTEMPTS_PER_MINUTE: "3" });
    const client = new ConsoleClient(service.url);
    for (let i = 0; i < 3; i++) expect((await client.call("POST", "/sign-in")).status).toBe(200);
    const refused = await client.call("POST", "/sign-in");
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe("too_many_sign_in_attempts");
    expect(Number(refused.response.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  it("cookies are Secure when PUBLIC_URL is https", async () => {
    const service = await start({ PUBLIC_URL: "https://notify.example.com" });
    const started = await new ConsoleClient(service.url).call("POST", "/sign-in");
    expect(started.body.link).toMatch(/^https:\/\/notify\.example\.com\/sandbox\?start=login_/);
    expect(cookieFrom(started.response, "dn_login")?.header).toMatch(/; Secure/);
  });

  it("the widget route does not exist without TELEGRAM_LOGIN_DOMAIN", async () => {
    const service = await start({});
    const answer = await new ConsoleClient(service.url).call("GET", "/sign-in/telegram-widget?id=1&hash=00");
    expect(answer.status).toBe(404);
  });

  it("verified widget data signs in; forged, stale or cross-site data does not", async () => {
    // A sandbox plays Telegram (with its token) so the bot starts and the console knows its name.
    const telegram = await startSandbox();
    const service = await start({
      TELEGRAM_BOT_TOKEN: SANDBOX_BOT_TOKEN,
      TELEGRAM_API_ROOT: telegram.root,
      PUBLIC_URL: "http://127.0.0.1:8080",
      TELEGRAM_LOGIN_DOMAIN: "127.0.0.1",
      // A real bot's instance is closed: Wendy is let in by name.
      OWNERS: "4242",
    });
    try {
      const client = new ConsoleClient(service.url);
      // The console page asks for its widget settings: the auth URL carries a state, and the
      // browser gets the matching cookie.
      const info = await client.call("GET", "/info");
      const authUrl = new URL(info.body.login_widget.auth_url as string);
      const state = authUrl.searchParams.get("state") as string;
      expect(state).toMatch(/^[A-Za-z0-9]{22}$/);
      const widgetCookie = `dn_widget=${cookieFrom(info.response, "dn_widget")?.value}`;

      const now = Math.floor(Date.now() / 1000);
      const fields = { id: "4242", first_name: "Wendy", username: "wendy_w", auth_date: String(now) };
      const query = (f: Record<string, string>, s = state) =>
        `/sign-in/telegram-widget?${new URLSearchParams({ state: s, ...f })}`;
      const signed = { ...fields, hash: signLoginWidget(fields, SANDBOX_BOT_TOKEN) };

      const good = await client.call("GET", query(signed), undefined, { cookie: widgetCookie });
      expect(good.status).toBe(303);
      expect(good.response.headers.get("location")).toBe("http://127.0.0.1:8080/console/");
      const session = cookieFrom(good.response, "dn_session")?.value;
      const me = await client.call("GET", "/session", undefined, { cookie: `dn_session=${session}` });
      expect(me.body.user).toEqual({ id: 4242, first_name: "Wendy", username: "wendy_w" });

      const forged = { ...fields, id: "1" };
      const stale = { ...fields, auth_date: String(now - 3600) };
      const refused: [Record<string, string>, string | undefined][] = [
        [{ ...forged, hash: signLoginWidget(fields, SANDBOX_BOT_TOKEN) }, widgetCookie],
        [{ ...stale, hash: signLoginWidget(stale, SANDBOX_BOT_TOKEN) }, widgetCookie],
        [
          { ...fields, hash: signLoginWidget(fields, "987654321:AAE-some-other-bots-token-entirely-x") },
          widgetCookie,
        ],
        [{ ...fields }, widgetCookie],
        // Login CSRF: valid data (e.g. the attacker's own) sent by another site, without this
        // browser's state cookie, or with a state that is not this browser's.
        [signed, undefined],
        [signed, "dn_widget=AAAAAAAAAAAAAAAAAAAAAA"],
      ];
      // Genuine data of someone OWNERS does not name: told so, and no session.
      const stranger = { ...fields, id: "4343" };
      const notOwner = await client.call(
        "GET",
        query({ ...stranger, hash: signLoginWidget(stranger, SANDBOX_BOT_TOKEN) }),
        undefined,
        { cookie: widgetCookie },
      );
      expect(notOwner.response.headers.get("location")).toBe(
        "http://127.0.0.1:8080/console/?sign_in=not_owner",
      );
      expect(cookieFrom(notOwner.response, "dn_session")).toBeUndefined();

      for (const [f, cookie] of refused) {
        const bad = await client.call("GET", query(f), undefined, cookie === undefined ? {} : { cookie });
        expect(bad.status).toBe(303);
        expect(bad.response.headers.get("location")).toBe("http://127.0.0.1:8080/console/?sign_in=failed");
        expect(cookieFrom(bad.response, "dn_session")).toBeUndefined();
      }
      // A state of as many characters as the cookie's but more bytes (é is two in UTF-8), and a
      // long one beside a cookie of its length: refused like any other, not a 500.
      for (const [s, cookie] of [
        ["é".repeat(state.length), widgetCookie],
        ["é".repeat(128), `dn_widget=${"A".repeat(128)}`],
      ] as const) {
        const bad = await client.call("GET", query(signed, s), undefined, { cookie });
        expect(bad.status).toBe(303);
        expect(bad.response.headers.get("location")).toBe("http://127.0.0.1:8080/console/?sign_in=failed");
      }
    } finally {
      services = services.filter((s) => s !== service);
      await service.close();
      await telegram.close();
    }
  });

  it("the widget check follows Telegram's recipe: HMAC-SHA-256 keyed with SHA-256 of the token", () => {
    const fields = { auth_date: "1700000000", first_name: "Ann", id: "7" };
    const key = createHash("sha256").update(TOKEN).digest();
    const hash = createHmac("sha256", key).update("auth_date=1700000000\nfirst_name=Ann\nid=7").digest("hex");
    expect(verifyLoginWidget({ ...fields, hash }, TOKEN, 1_700_000_060_000)).toEqual({
      id: 7,
      first_name: "Ann",
      username: undefined,
    });
    expect(verifyLoginWidget({ ...fields, hash }, TOKEN, 1_700_000_000_000 + 11 * 60_000)).toBeNull();
  });
});

describe("the console's test message", () => {
  it("enters like any message: the Dock's rate limit applies and it is counted", async () => {
    const service = await startService("sqlite", {
      PUBLIC_URL,
      DOCK_RATE_BURST: "2",
      DOCK_RATE_PER_SECOND: "0.01",
    });
    try {
      const owner = await signIn(service, { id: 3001, first_name: "Tess" });
      const created = await owner.call("POST", "/docks", { name: "Limited" });
      const id = created.body.dock.id as string;
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++)
        statuses.push((await owner.call("POST", `/docks/${id}/test-message`)).status);
      expect(statuses).toEqual([202, 202, 429]);
      const metrics = await (await fetch(`${service.url}/metrics`)).text();
      expect(metrics).toMatch(/dock_notify_messages_accepted_total\{endpoint="console"\} 2/);
    } finally {
      await service.close();
    }
  });
});
