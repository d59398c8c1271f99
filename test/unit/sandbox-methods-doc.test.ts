import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { BOT_METHODS } from "../../src/sandbox/bot-methods.ts";

/** The methods docs/sandbox.md's "Methods" table names, as written (`getMe`, …). */
function documentedMethods(): string[] {
  const text = readFileSync(join(import.meta.dirname, "..", "..", "docs", "sandbox.md"), "utf8");
  const section = text.split(/^### Methods$/m)[1]?.split(/^#{2,3} /m)[0] ?? "";
  const table = section.split("\n\n").find((block) => block.trim().startsWith("| Method |")) ?? "";
  return table
    .split("\n")
    .slice(2) // the header and its rule
    .flatMap((row) => [...(row.split("|")[1] ?? "").matchAll(/`(\w+)`/g)].map((match) => match[1] ?? ""));
}

describe("docs/sandbox.md's method table", () => {
  it("names exactly the methods the sandbox implements, each once", () => {
    const documented = documentedMethods();
    expect(documented.length).toBeGreaterThan(0);
    expect(new Set(documented).size).toBe(documented.length);
    // Telegram ignores a method name's case, and so does the sandbox's table of handlers.
    expect(documented.map((name) => name.toLowerCase()).sort()).toEqual(Object.keys(BOT_METHODS).sort());
  });
});
