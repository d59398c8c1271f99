import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { constantTimeEqual } from "../../src/domain/constant-time.ts";

describe("constantTimeEqual", () => {
  it("tells equal from different for any strings, whatever their lengths in bytes (property)", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme" }), fc.string({ unit: "grapheme" }), (a, b) => {
        expect(constantTimeEqual(a, b)).toBe(a === b);
        expect(constantTimeEqual(a, a)).toBe(true);
      }),
    );
  });

  it("takes strings whose lengths agree in characters but not in bytes", () => {
    expect(constantTimeEqual("é".repeat(22), "A".repeat(22))).toBe(false);
    expect(constantTimeEqual("é".repeat(128), "é".repeat(128))).toBe(true);
  });

  it("compares bytes as bytes", () => {
    expect(constantTimeEqual(Buffer.from("00ff", "hex"), Buffer.from("00ff", "hex"))).toBe(true);
    expect(constantTimeEqual(Buffer.from("00ff", "hex"), Buffer.from("00fe", "hex"))).toBe(false);
    expect(constantTimeEqual(Buffer.alloc(32), Buffer.alloc(31))).toBe(false);
  });
});
