import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/runtime/config.ts";
import type { DockWithSecret } from "../../src/store/docks.ts";
import { basic, type RunningService, startService } from "../helpers/harness.ts";

const run = promisify(execFile);

async function send(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; code?: string }> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  const answer = (await response.json()) as { error?: { code: string } };
  return { status: response.status, ...(answer.error ? { code: answer.error.code } : {}) };
}

const count = (answers: { status: number }[], status: number) =>
  answers.filter((a) => a.status === status).length;

/**
 * Runs `burst` and answers how many attempts the limit of `perMinute` could have refilled while it
 * ran (one every 60/perMinute seconds): a loaded machine may take long enough for one or two.
 */
async function timed<T>(perMinute: number, burst: () => Promise<T>): Promise<{ result: T; refills: number }> {
  const started = performance.now();
  const result = await burst();
  return { result, refills: Math.floor((performance.now() - started) / ((60 / perMinute) * 1000)) };
}

/**
 * The failed-authentication limit (AUTH_FAILURES_PER_MINUTE): counted before the credentials are
 * judged, so concurrent guesses cannot outrun it; counted per client address as the operator's
 * TRUST_PROXY says to read it, so a forged X-Forwarded-For neither escapes it nor turns it against
 * someone else; and never counting a request that carried no credentials at all.
 */
describe("the failed-authentication limit", () => {
  let service: RunningService | undefined;
  afterEach(async () => {
    await service?.close();
    service = undefined;
  });

  const start = async (env: Record<string, string>) => {
    service = await startService("sqlite", { AUTH_FAILURES_PER_MINUTE: "20", DOCK_RATE_BURST: "0", ...env });
    const dock = await service.app.docks.create(1, { name: "Guarded", link: null, description: null });
    return { running: service, dock };
  };
  const wrong = (dock: DockWithSecret) => ({ dock_id: dock.id, secret_key: "dnsk_wrong", msg: "guess" });

  it("holds against a burst: of 100 concurrent wrong guesses, 20 are evaluated, the rest refused unjudged", async () => {
    const { running, dock } = await start({});
    const started = performance.now();
    const ping = await Promise.all(
      Array.from({ length: 100 }, () => send(`${running.url}/ping`, wrong(dock))),
    );
    // (A loaded machine may run long enough for the limit to refill an attempt or two: 1 per 3 s.)
    const refills = () => Math.floor((performance.now() - started) / 3000);
    expect(count(ping, 401)).toBeGreaterThanOrEqual(20);
    expect(count(ping, 401)).toBeLessThanOrEqual(20 + refills());
    expect(count(ping, 401) + count(ping, 429)).toBe(100);
    // The allowance is the address's, whichever endpoint: /webhook is refused too.
    const webhook = await send(
      `${running.url}/webhook`,
      { msg: "m" },
      { authorization: basic(dock.id, "dnsk_wrong") },
    );
    if (refills() === 0) expect(webhook).toEqual({ status: 429, code: "too_many_auth_failures" });
  });

  it("holds against a burst on /webhook too", async () => {
    const { running, dock } = await start({});
    const { result: answers, refills } = await timed(20, () =>
      Promise.all(
        Array.from({ length: 60 }, () =>
          send(`${running.url}/webhook`, { msg: "m" }, { authorization: basic(dock.id, "dnsk_wrong") }),
        ),
      ),
    );
    expect(count(answers, 401)).toBeGreaterThanOrEqual(20);
    expect(count(answers, 401)).toBeLessThanOrEqual(20 + refills);
    expect(count(answers, 429) + count(answers, 401)).toBe(60);
  });

  it("holds on the integration doors: hook tokens, GitHub signatures and GitLab tokens count alike", async () => {
    const { running, dock } = await start({});
    const doors: [string, Record<string, string>][] = [
      ["/hook/dnhk_wrong0000000000000000000000000000", {}],
      [
        `/webhook/github/${dock.id}`,
        { "x-github-event": "push", "x-hub-signature-256": `sha256=${"0".repeat(64)}` },
      ],
      [`/webhook/gitlab/${dock.id}`, { "x-gitlab-event": "Push Hook", "x-gitlab-token": "dnsk_wrong" }],
    ];
    const { result: answers, refills } = await timed(20, () =>
      Promise.all(
        Array.from({ length: 60 }, (_, i) => {
          const [path, headers] = doors[i % doors.length] as [string, Record<string, string>];
          return send(`${running.url}${path}`, { ref: "refs/heads/main" }, headers);
        }),
      ),
    );
    expect(count(answers, 401)).toBeGreaterThanOrEqual(20);
    expect(count(answers, 401)).toBeLessThanOrEqual(20 + refills);
    expect(count(answers, 429) + count(answers, 401)).toBe(60);
  });

  it("many right requests at once are never refused for the limit (they wait for each other's verdicts)", async () => {
    const { running, dock } = await start({});
    const webhook = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        send(`${running.url}/webhook`, { msg: `${i}` }, { authorization: basic(dock.id, dock.secretKey) }),
      ),
    );
    expect(count(webhook, 202)).toBe(50);
    const ping = await Promise.all(
      Array.from({ length: 300 }, (_, i) =>
        send(`${running.url}/ping`, { dock_id: dock.id, secret_key: dock.secretKey, msg: `${i}` }),
      ),
    );
    expect(count(ping, 202)).toBe(300);
  });

  it("right credentials give their attempt back: a client that only sends right ones is never limited", async () => {
    const { running, dock } = await start({});
    const answers = [];
    for (let i = 0; i < 30; i++) {
      answers.push(
        await send(`${running.url}/ping`, { dock_id: dock.id, secret_key: dock.secretKey, msg: `${i}` }),
      );
    }
    expect(count(answers, 202)).toBe(30);
  });

  it("clients that send Basic credentials only after the challenge are not locked out", async () => {
    const { running, dock } = await start({});
    // wget and Python's urllib: first without Authorization, then again with it after the 401.
    for (let i = 0; i < 30; i++) {
      const challenge = await fetch(`${running.url}/webhook`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"msg": "m"}',
      });
      expect(challenge.status).toBe(401);
      expect(challenge.headers.get("www-authenticate")).toMatch(/^Basic realm="dock-notify"/);
      await challenge.arrayBuffer();
      expect(
        await send(
          `${running.url}/webhook`,
          { msg: `${i}` },
          { authorization: basic(dock.id, dock.secretKey) },
        ),
      ).toMatchObject({ status: 202 });
    }
  });

  it("Python's urllib, which waits for the challenge, delivers every message", async () => {
    const { running, dock } = await start({});
    const script = `
import sys, urllib.request
url, user, password = sys.argv[1:4]
manager = urllib.request.HTTPPasswordMgrWithDefaultRealm()
manager.add_password(None, url, user, password)
opener = urllib.request.build_opener(urllib.request.HTTPBasicAuthHandler(manager))
for i in range(24):
    request = urllib.request.Request(url, data=('{"msg": "urllib %d"}' % i).encode(), headers={"Content-Type": "application/json"})
    print(opener.open(request).status)
`;
    let output: string;
    try {
      output = (await run("python3", ["-c", script, `${running.url}/webhook`, dock.id, dock.secretKey]))
        .stdout;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") {
        console.warn("python3 not found: the urllib client was not tried");
        return;
      }
      throw error;
    }
    expect(output.trim().split("\n")).toEqual(Array(24).fill("202"));
  });
});

describe("the client address behind a proxy (TRUST_PROXY)", () => {
  let service: RunningService | undefined;
  afterEach(async () => {
    await service?.close();
    service = undefined;
  });

  // The test plays the proxy: it connects from 127.0.0.1 and appends the client's address to
  // whatever X-Forwarded-For the client sent, as nginx's $proxy_add_x_forwarded_for does.
  const through = (client: string, forged?: string) => ({
    "x-forwarded-for": forged === undefined ? client : `${forged}, ${client}`,
  });

  for (const trustProxy of ["1", "127.0.0.1", "loopback"]) {
    it(`TRUST_PROXY=${trustProxy}: a forged X-Forwarded-For neither escapes the limit nor spends a victim's`, async () => {
      service = await startService("sqlite", {
        TRUST_PROXY: trustProxy,
        AUTH_FAILURES_PER_MINUTE: "20",
        DOCK_RATE_BURST: "0",
      });
      const running = service;
      const dock = await running.app.docks.create(1, { name: "Proxied", link: null, description: null });
      const attacker = "203.0.113.66";
      const victim = "198.51.100.9";
      // Every guess claims another address, and the last ones the victim's: all counted as the attacker's.
      const answers: { status: number }[] = [];
      const started = performance.now();
      for (let i = 0; i < 25; i++) {
        const forged = i < 20 ? `192.0.2.${i + 1}` : victim;
        answers.push(
          await send(
            `${running.url}/ping`,
            { dock_id: dock.id, secret_key: "dnsk_wrong", msg: "x" },
            through(attacker, forged),
          ),
        );
      }
      const refills = Math.floor((performance.now() - started) / 3000);
      expect(count(answers, 401)).toBeGreaterThanOrEqual(20);
      expect(count(answers, 401)).toBeLessThanOrEqual(20 + refills);
      expect(count(answers, 429)).toBeGreaterThanOrEqual(5 - refills);
      // The victim, behind the same proxy, is untouched.
      expect(
        await send(
          `${running.url}/ping`,
          { dock_id: dock.id, secret_key: dock.secretKey, msg: "mine" },
          through(victim),
        ),
      ).toMatchObject({ status: 202 });
      // The log says who really sent them.
      const addresses = running.logs.lines
        .map((line) => JSON.parse(line) as { msg: string; url?: string; ip?: string })
        .filter((entry) => entry.msg === "request" && entry.url === "/ping")
        .map((entry) => entry.ip);
      expect(new Set(addresses)).toEqual(new Set([attacker, victim]));
    });
  }

  it("TRUST_PROXY takes false, true, a hop count or a list of addresses, and says what is wrong otherwise", () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: "true" }).trustProxy).toBe(true);
    expect(loadConfig({ TRUST_PROXY: "2" }).trustProxy).toBe(2);
    expect(loadConfig({ TRUST_PROXY: "10.0.0.0/8, 192.168.1.10,loopback" }).trustProxy).toEqual([
      "10.0.0.0/8",
      "192.168.1.10",
      "loopback",
    ]);
    expect(() => loadConfig({ TRUST_PROXY: "nginx" })).toThrow(ConfigError);
    // Addresses and prefixes that cannot be: refused at once, naming the variable (one such value
    // used to leave the service running without listening).
    for (const value of ["300.1.1.1", "127.0.0.1/33", "::1/129", ":", "10.0.0.0/8/1"]) {
      expect(() => loadConfig({ TRUST_PROXY: value })).toThrow(/^TRUST_PROXY must be/);
    }
    expect(() => loadConfig({ ALLOWED_HOSTS: "notify.internal:8080" })).toThrow(
      /^ALLOWED_HOSTS must be host names/,
    );
    expect(loadConfig({ ALLOWED_HOSTS: "[::1], Notify.Internal" }).allowedHosts).toEqual([
      "::1",
      "notify.internal",
    ]);
    expect(() => loadConfig({ HOST: "300.1.1.1" })).toThrow(/^HOST must be an IP address or a host name/);
    expect(() => loadConfig({ TRUST_PROXY: "nginx" })).toThrow(
      /TRUST_PROXY must be false, true, a number of proxy hops/,
    );
  });
});
