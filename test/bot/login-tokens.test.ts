import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LOGIN_TOKEN_TTL_MS, LoginTokenRepository, linkTokenFor } from "../../src/store/login-tokens.ts";
import { dialects, type RunningService, startService } from "../helpers/harness.ts";

const DIALECTS = await dialects();

describe.each(DIALECTS)("console sign-in tokens on %s", (dialect) => {
  let service: RunningService;
  let clock = Date.now();
  let tokens: LoginTokenRepository;

  beforeAll(async () => {
    service = await startService(dialect);
    tokens = new LoginTokenRepository(service.db, () => clock);
  });
  afterAll(async () => service.close());

  it("pending → confirmed in the bot → exchanged once for the user", async () => {
    const { token } = await tokens.create();
    expect(token).toMatch(/^[A-Za-z0-9]{22}$/);
    expect(await tokens.state(token)).toBe("pending");
    expect(await tokens.consume(token)).toBeNull();
    expect(await tokens.confirm(token, { id: 777, first_name: "Ada", username: "ada" })).toBe("confirmed");
    expect(await tokens.state(token)).toBe("confirmed");
    expect(await tokens.consume(token)).toBe(777);
    expect(await tokens.consume(token)).toBeNull();
    expect(await tokens.state(token)).toBe("used");
    expect(await tokens.confirm(token, { id: 778 })).toBe("used");
    const user = await service.db.kysely
      .selectFrom("users")
      .selectAll()
      .where("telegram_id", "=", 777)
      .executeTakeFirst();
    expect(user).toMatchObject({ first_name: "Ada", username: "ada" });
  });

  it("a second confirmation does not change who confirmed", async () => {
    const { token } = await tokens.create();
    await tokens.confirm(token, { id: 1 });
    // The second person learns someone else was first; the first, pressing again, that it is theirs.
    expect(await tokens.confirm(token, { id: 2 })).toBe("confirmed_elsewhere");
    expect(await tokens.confirm(token, { id: 1 })).toBe("confirmed");
    expect(await tokens.stateFor(token, 2)).toBe("confirmed_elsewhere");
    expect(await tokens.state(token)).toBe("confirmed");
    expect(await tokens.consume(token)).toBe(1);
  });

  it("expired and unknown tokens are refused", async () => {
    const { token } = await tokens.create();
    clock += LOGIN_TOKEN_TTL_MS + 1;
    expect(await tokens.state(token)).toBe("expired");
    expect(await tokens.confirm(token, { id: 5 })).toBe("expired");
    expect(await tokens.consume(token)).toBeNull();
    expect(await tokens.state("nope")).toBe("unknown");
    expect(await tokens.confirm("nope", { id: 5 })).toBe("unknown");
  });

  it("the link's token is worked out from the browser's secret, which it does not reveal", async () => {
    const { token, browserSecret } = await tokens.create();
    expect(browserSecret).toMatch(/^[A-Za-z0-9]{22}$/);
    expect(token).toBe(linkTokenFor(browserSecret));
    expect(token).not.toBe(browserSecret);
    expect(linkTokenFor(`${browserSecret}x`)).not.toBe(token);
    // Every character of the alphabet turns up: no character is left out by the encoding.
    const seen = new Set([...Array.from({ length: 200 }, (_, i) => linkTokenFor(String(i))).join("")]);
    expect(seen.size).toBe(62);
  });

  it("a declined token is never confirmed nor exchanged", async () => {
    const { token } = await tokens.create();
    expect(await tokens.decline(token, 9)).toBe("declined");
    expect(await tokens.state(token)).toBe("declined");
    expect(await tokens.confirm(token, { id: 9 })).toBe("declined");
    expect(await tokens.consume(token)).toBeNull();
    // Declining a confirmed one changes nothing; whoever did not confirm it learns that someone
    // else did.
    const other = await tokens.create();
    await tokens.confirm(other.token, { id: 10 });
    expect(await tokens.decline(other.token, 10)).toBe("confirmed");
    expect(await tokens.decline(other.token, 11)).toBe("confirmed_elsewhere");
    expect(await tokens.consume(other.token)).toBe(10);
  });

  it("cancel declines a token for good, pending or confirmed, but not one already exchanged", async () => {
    const pending = await tokens.create();
    expect(await tokens.cancel(pending.token)).toBe("declined");
    expect(await tokens.confirm(pending.token, { id: 11 })).toBe("declined");

    const confirmed = await tokens.create();
    await tokens.confirm(confirmed.token, { id: 12 });
    expect(await tokens.cancel(confirmed.token)).toBe("declined");
    expect(await tokens.state(confirmed.token)).toBe("declined");
    expect(await tokens.consume(confirmed.token)).toBeNull();
    expect(await tokens.confirm(confirmed.token, { id: 13 })).toBe("declined");
    expect(await tokens.cancel(confirmed.token)).toBe("declined");

    const used = await tokens.create();
    await tokens.confirm(used.token, { id: 14 });
    expect(await tokens.consume(used.token)).toBe(14);
    expect(await tokens.cancel(used.token)).toBe("used");

    const expired = await tokens.create();
    await tokens.confirm(expired.token, { id: 15 });
    clock += LOGIN_TOKEN_TTL_MS + 1;
    expect(await tokens.cancel(expired.token)).toBe("expired");
    expect(await tokens.cancel("nope")).toBe("unknown");
  });

  it("confirmation names who confirmed, only while the token is confirmed", async () => {
    const { token } = await tokens.create();
    expect(await tokens.confirmation(token)).toEqual({ state: "pending", confirmer: null });
    await tokens.confirm(token, { id: 16, first_name: "Grace", username: "grace_h" });
    expect(await tokens.confirmation(token)).toEqual({
      state: "confirmed",
      confirmer: { id: 16, firstName: "Grace", username: "grace_h" },
    });
    // Exchanged only for the person who confirmed it, when the caller names one.
    expect(await tokens.consume(token, 17)).toBeNull();
    expect(await tokens.confirmation(token)).toMatchObject({ state: "confirmed" });
    expect(await tokens.consume(token, 16)).toBe(16);
    expect(await tokens.confirmation(token)).toEqual({ state: "used", confirmer: null });
    expect(await tokens.confirmation("nope")).toEqual({ state: "unknown", confirmer: null });
  });

  it("only the token's hash is stored", async () => {
    const { token, browserSecret } = await tokens.create();
    const rows = await service.db.kysely.selectFrom("login_tokens").select("token_hash").execute();
    expect(rows.some((r) => r.token_hash.includes(token) || r.token_hash.includes(browserSecret))).toBe(
      false,
    );
  });
});
