import { describe, expect, it } from "vitest";
import { ringOf } from "../../src/store/reminder-schedule.ts";

/** A message's stored content with these options. */
const content = (options: Record<string, unknown>) => JSON.stringify({ options });
const was = (text: string, options: Record<string, unknown>, acked = false) => ({
  text,
  content: content(options),
  acked_at: acked ? 1 : null,
  remind_next_at: null,
  reminded: 0,
  escalate_next_at: null,
  escalate_step: 0,
});
const becomes = (text: string, options: Record<string, unknown>, byKey = true, askAgain = false) => ({
  text,
  content: content(options),
  byKey,
  askAgain,
});

describe("which changes ring (an edit in place makes no sound in Telegram)", () => {
  it("a higher priority rings, by key or by an edit; a lower or the same does not", () => {
    expect(ringOf(was("x", { priority: "high" }), becomes("x", { priority: "urgent" }))).toBe("raised");
    expect(ringOf(was("x", {}), becomes("y", { priority: "high" }, false))).toBe("raised");
    expect(ringOf(was("x", { priority: "low" }), becomes("y", {}))).toBe("raised");
    expect(ringOf(was("x", { priority: "urgent" }), becomes("y", { priority: "high" }))).toBeNull();
    expect(ringOf(was("x", { priority: "high" }), becomes("y", { priority: "high" }))).toBeNull();
  });

  it("the same alert sent again by its key while nobody took it rings; once taken, it does not", () => {
    expect(ringOf(was("disk 95%", { priority: "high" }), becomes("disk 95%", { priority: "high" }))).toBe(
      "repeated",
    );
    expect(
      ringOf(was("disk 95%", { priority: "high" }, true), becomes("disk 95%", { priority: "high" })),
    ).toBeNull();
    // An edit (PATCH) that changes nothing is not a repeat.
    expect(ringOf(was("x", { ack: true }), becomes("x", { ack: true }, false))).toBeNull();
    // A status kept up to date by its key is no alarm: the same text again makes no sound.
    expect(ringOf(was("disk 60%", {}), becomes("disk 60%", {}))).toBeNull();
    expect(ringOf(was("disk 60%", { ack: true }), becomes("disk 60%", { ack: true }))).toBe("repeated");
  });

  it("sent again asking for an acknowledgement after someone took it rings", () => {
    expect(ringOf(was("cpu", { ack: true }, true), becomes("cpu again", { ack: true }, true, true))).toBe(
      "refired",
    );
    expect(
      ringOf(was("cpu", { ack: true }, true), becomes("cpu again", { ack: true }, true, false)),
    ).toBeNull();
  });

  it("never a change that is silent itself", () => {
    expect(ringOf(was("x", { priority: "min" }), becomes("x", { priority: "low" }))).toBeNull();
    expect(ringOf(was("x", {}), becomes("x", { priority: "urgent", silent: true }))).toBeNull();
    expect(ringOf(was("x", { priority: "low" }), becomes("x", { priority: "low" }))).toBeNull();
  });
});
