import pino from "pino";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Campaign } from "../../src/delivery/campaign.ts";
import type { Leadership } from "../../src/store/db.ts";

/** A leadership whose answers the test scripts: who wins, and nothing else. */
class ScriptedLeadership implements Leadership {
  isLeader = false;
  acquired = 0;
  released = 0;
  readonly contended: boolean;
  constructor(contended: boolean) {
    this.contended = contended;
  }
  async tryAcquire(): Promise<boolean> {
    this.acquired++;
    this.isLeader = true;
    return true;
  }
  async heartbeat(): Promise<void> {}
  async release(): Promise<void> {
    this.released++;
    this.isLeader = false;
  }

  async others(): Promise<boolean> {
    return false;
  }

  async leave(): Promise<void> {}
}

function campaignOver(leadership: ScriptedLeadership, failTimes: number) {
  const lines: { msg: string; retryInMs?: number }[] = [];
  const log = pino({ level: "debug" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  let attempts = 0;
  let leads = 0;
  const campaign = new Campaign({
    leadership,
    log,
    lead: async () => {
      attempts++;
      if (attempts <= failTimes)
        throw Object.assign(new Error("database is locked"), { code: "SQLITE_BUSY" });
      leads++;
    },
    lost: () => {},
    announced: () => {},
  });
  return { campaign, lines, attempts: () => attempts, leads: () => leads };
}

describe("the leadership campaign", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("alone on its database, retries a failed take-over with backoff, not leading meanwhile", async () => {
    const leadership = new ScriptedLeadership(false);
    const run = campaignOver(leadership, 5);
    await run.campaign.start();
    expect(run.attempts()).toBe(1);
    expect(leadership.isLeader).toBe(false);
    expect(run.campaign.leading).toBe(false);
    // 0.5 s, 1 s, 2 s, 4 s, 8 s after each failure: the interval's campaign (every 5 s) adds none.
    await vi.advanceTimersByTimeAsync(499);
    expect(run.attempts()).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(run.attempts()).toBe(2);
    await vi.advanceTimersByTimeAsync(1000);
    expect(run.attempts()).toBe(3);
    await vi.advanceTimersByTimeAsync(2000);
    expect(run.attempts()).toBe(4);
    await vi.advanceTimersByTimeAsync(4000);
    expect(run.attempts()).toBe(5);
    await vi.advanceTimersByTimeAsync(7999);
    expect(run.attempts()).toBe(5);
    expect(run.campaign.leading).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(run.attempts()).toBe(6);
    expect(run.leads()).toBe(1);
    expect(run.campaign.leading).toBe(true);
    expect(run.lines.filter((l) => l.msg.startsWith("could not take up")).map((l) => l.retryInMs)).toEqual([
      500, 1000, 2000, 4000, 8000,
    ]);
    // Leading: the interval only checks the session.
    await vi.advanceTimersByTimeAsync(60_000);
    expect(run.attempts()).toBe(6);
    await run.campaign.stop();
    await run.campaign.release();
    expect(leadership.isLeader).toBe(false);
  });

  it("among contenders, gives way after a failed take-over and tries again at the next campaign", async () => {
    const leadership = new ScriptedLeadership(true);
    const run = campaignOver(leadership, 1);
    await run.campaign.start();
    expect(leadership.released).toBe(1);
    await vi.advanceTimersByTimeAsync(4999);
    expect(run.attempts()).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(run.attempts()).toBe(2);
    expect(run.campaign.leading).toBe(true);
    await run.campaign.stop();
  });

  it("stopped, never campaigns again: no retry fires after stop", async () => {
    const leadership = new ScriptedLeadership(false);
    const run = campaignOver(leadership, 100);
    await run.campaign.start();
    await run.campaign.stop();
    await vi.advanceTimersByTimeAsync(120_000);
    expect(run.attempts()).toBe(1);
    expect(vi.getTimerCount()).toBe(0);
  });
});
