import { describe, expect, it } from "vitest";
import { ringOf } from "../../src/store/reminder-schedule.ts";

/** A message's stored content with these options. */
const content = (options: Record<string, unknown>) => JSON.stringify({ options });
const before = (text: string, options: Record<string, unknown>, acked = false) => ({
  text,
  content: content(options),
  acked_at: acked ? 1 : null,
  remind_next_at: null,
  reminded: 0,
  escalate_next_at: null,
  escalate_step: 0,
});
const after = (text: string, options: Record<string, unknown>, byKey = true, askAgain = false) => ({
  text,
  content: content(options),
  byKey,
  askAgain,
});

describe("which changes ring (an edit in place makes no sound in Telegram)", () => {
  it("a higher priority rings, by key or by an edit; a lower or the same does not", () => {
    expect(ringOf(before("x", { priority: "high" }), after("x", { priority: "urgent" }))).toBe("raised");
    expect(ringOf(before("x", {}), after("y", { priority: "high" }, false))).toBe("raised");
    expect(ringOf(before("x", { priority: "low" }), after("y", {}))).toBe("raised");
    expect(ringOf(before("x", { priority: "urgent" }), after("y", { priority: "high" }))).toBeNull();
    expect(ringOf(before("x", { priority: "high" }), after("y", { priority: "high" }))).toBeNull();
  });

  it("the same alert sent again by its key while nobody took it rings; once taken, it does not", () => {
    expect(ringOf(before("disk 95%", { priority: "high" }), after("disk 95%", { priority: "high" }))).toBe(
      "repeated",
    );
    expect(
      ringOf(before("disk 95%", { priority: "high" }, true), after("disk 95%", { priority: "high" })),
    ).toBeNull();
    // An edit (PATCH) that changes nothing is not a repeat.
    expect(ringOf(before("x", { ack: true }), after("x", { ack: true }, false))).toBeNull();
    // A status kept up to date by its key is no alarm: the same text again makes no sound.
    expect(ringOf(before("disk 60%", {}), after("disk 60%", {}))).toBeNull();
    expect(ringOf(before("disk 60%", { ack: true }), after("disk 60%", { ack: true }))).toBe("repeated");
  });

  it("sent again asking for an acknowledgement after someone took it rings", () => {
    expect(ringOf(before("cpu", { ack: true }, true), after("cpu again", { ack: true }, true, true))).toBe(
      "refired",
    );
    expect(
      ringOf(before("cpu", { ack: true }, true), after("cpu again", { ack: true }, true, false)),
    ).toBeNull();
  });

  it("never a change that is silent itself", () => {
    expect(ringOf(before("x", { priority: "min" }), after("x", { priority: "low" }))).toBeNull();
    expect(ringOf(before("x", {}), after("x", { priority: "urgent", silent: true }))).toBeNull();
    expect(ringOf(before("x", { priority: "low" }), after("x", { priority: "low" }))).toBeNull();
  });
});
