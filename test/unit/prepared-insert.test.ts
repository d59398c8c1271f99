import { Kysely, SqliteDialect } from "kysely";
import { describe, expect, it } from "vitest";
import { MAX_BATCH } from "../../src/store/accept-batch.ts";
import { chunkSizes, prepareInsert } from "../../src/store/prepared.ts";

/** Kysely as the SQLite thread compiles with it; compiling never opens the database. */
const kysely = new Kysely<Record<string, Record<string, unknown>>>({
  dialect: new SqliteDialect({ database: {} as never }),
});

describe("a multi-row INSERT's sizes (prepareInsert)", () => {
  const everyBatch = Array.from({ length: MAX_BATCH }, (_, i) => i + 1);

  it("splits every batch into statements whose rows add up to it, largest first, at most five", () => {
    for (const rows of everyBatch) {
      const sizes = chunkSizes(rows);
      expect(sizes.reduce((a, b) => a + b, 0)).toBe(rows);
      expect(sizes).toEqual(sizes.toSorted((a, b) => b - a));
      expect(sizes.length).toBeLessThanOrEqual(5);
    }
    expect(chunkSizes(0)).toEqual([]);
    expect(chunkSizes(16)).toEqual([16]);
    expect(chunkSizes(37)).toEqual([32, 5]);
    expect(chunkSizes(255)).toEqual([128, 64, 32, 16, 15]);
  });

  it("compiles 20 statements per table for every batch size there is, not one per size", () => {
    const sizes = new Set(everyBatch.flatMap(chunkSizes));
    expect([...sizes].sort((a, b) => a - b)).toEqual([
      ...Array.from({ length: 16 }, (_, i) => i + 1),
      32,
      64,
      128,
      256,
    ]);
  });

  it("puts every row's values in its statement, in the order of the rows", () => {
    const insert = prepareInsert(kysely, "fanouts", ["message_id", "dock_id"]);
    const rows = Array.from({ length: 37 }, (_, i) => [`m${i}`, `d${i}`]);
    const queries = insert(rows);
    expect(queries.map((q) => q.parameters.length)).toEqual([64, 10]);
    expect(queries.flatMap((q) => q.parameters)).toEqual(rows.flat());
    expect(queries[1]?.sql).toBe(
      'insert into "fanouts" ("message_id", "dock_id") values (?, ?), (?, ?), (?, ?), (?, ?), (?, ?)',
    );
    // The same size again is the same statement's text (the SQLite thread prepares it once).
    expect(insert(rows.slice(0, 32))[0]?.sql).toBe(queries[0]?.sql);
    expect(insert([])).toEqual([]);
  });

  it("unchunked (PostgreSQL, which keeps no statement): one statement stores the whole batch", () => {
    const insert = prepareInsert(kysely, "fanouts", ["message_id", "dock_id"], false);
    const rows = Array.from({ length: 37 }, (_, i) => [`m${i}`, `d${i}`]);
    const queries = insert(rows);
    expect(queries).toHaveLength(1);
    expect(queries[0]?.parameters).toEqual(rows.flat());
    expect(insert([])).toEqual([]);
  });
});
