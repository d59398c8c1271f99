import { describe, expect, it } from "vitest";
import { AttemptLimiter, addressKey } from "../../src/domain/attempts.ts";
import { TokenBuckets } from "../../src/domain/token-bucket.ts";

const limiter = (capacity: number) => {
  const clock = { now: 1_000_000 };
  const buckets = new TokenBuckets({ capacity, refillPerSecond: capacity / 60, now: () => clock.now });
  return { clock, attempts: new AttemptLimiter(buckets) };
};

describe("the attempt limiter", () => {
  it("judges only the allowance of concurrent wrong attempts; the rest are refused once those are judged", async () => {
    const { attempts } = limiter(3);
    const begun = await Promise.all([1, 2, 3].map(() => attempts.begin("a")));
    expect(begun.every((attempt) => "wrong" in attempt)).toBe(true);
    // A fourth waits while the three are being judged…
    let fourth: Awaited<ReturnType<AttemptLimiter["begin"]>> | undefined;
    const waiting = attempts.begin("a").then((result) => {
      fourth = result;
    });
    await Promise.resolve();
    expect(fourth).toBeUndefined();
    // …and is refused once all three turned out wrong.
    for (const attempt of begun) if ("wrong" in attempt) attempt.wrong();
    await waiting;
    expect(fourth).toEqual({ waitSeconds: expect.any(Number) });
    expect(attempts.refusedFor("a")).toBeGreaterThan(0);
    // Another address has its own allowance.
    expect("right" in (await attempts.begin("b"))).toBe(true);
  });

  it("an attempt that was right gives its place to one that waited", async () => {
    const { attempts } = limiter(1);
    const first = await attempts.begin("a");
    const second = attempts.begin("a");
    if (!("right" in first)) throw new Error("refused");
    first.right();
    const settled = await second;
    expect("right" in settled).toBe(true);
    // Settling twice changes nothing.
    first.right();
    first.wrong();
  });

  it("a wait for attempts still being judged ends at its deadline; the others keep waiting", async () => {
    const { attempts } = limiter(1);
    const judged = await attempts.begin("a");
    if (!("right" in judged)) throw new Error("refused");
    // The attempt being judged hangs (the database does not answer): one waiter gives up at its
    // deadline, one without a deadline is still there when the attempt is settled.
    const patient = attempts.begin("a");
    expect(await attempts.begin("a", performance.now() + 20)).toEqual({ late: true });
    judged.right();
    expect("right" in (await patient)).toBe(true);
  });
});

describe("client address keys", () => {
  it("an IPv4 address (also written as IPv6) is its own key", () => {
    expect(addressKey("203.0.113.7")).toBe("203.0.113.7");
    expect(addressKey("::ffff:203.0.113.7")).toBe("203.0.113.7");
  });

  it("an IPv6 address is keyed by its /64, however it is written", () => {
    const key = "2001:db8:1:2::/64";
    expect(addressKey("2001:db8:1:2::1")).toBe(key);
    expect(addressKey("2001:0db8:0001:0002:aaaa:bbbb:cccc:dddd")).toBe(key);
    expect(addressKey("2001:DB8:1:2:ffff::9")).toBe(key);
    expect(addressKey("2001:db8:1:3::1")).not.toBe(key);
    expect(addressKey("::1")).toBe("0:0:0:0::/64");
  });
});
