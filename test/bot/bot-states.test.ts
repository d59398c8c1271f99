import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BotStateRepository } from "../../src/store/bot-states.ts";
import type { Db } from "../../src/store/db.ts";
import { openDb } from "../../src/store/open.ts";
import { createTestDatabase, dialects, type TestDatabase } from "../helpers/harness.ts";

const DIALECTS = await dialects();

// The repository alone, on a database nobody else uses: a running bot prunes conversations by the
// real clock when it starts, which would race this test's own clock (it did, under load in CI).
describe.each(DIALECTS)("bot conversation state on %s", (dialect) => {
  let database: TestDatabase;
  let db: Db;
  let clock = 1_700_000_000_000;
  let states: BotStateRepository;

  beforeAll(async () => {
    database = await createTestDatabase(dialect, { migrated: true });
    db = await openDb(database.url);
    states = new BotStateRepository(db, () => clock);
  });
  afterAll(async () => {
    await db.close();
    await database.drop();
  });

  it("keeps one step per person and chat, replaced by the next, until it expires", async () => {
    await states.set(-100, 7, "awaiting_dock_id", null, 60_000);
    await states.set(-100, 8, "awaiting_dock_id", { tries: 1 }, 60_000);
    await states.set(-100, 8, "awaiting_dock_id", { tries: 2 }, 60_000);
    expect(await states.get(-100, 7)).toEqual({
      state: "awaiting_dock_id",
      data: null,
      expiresAt: clock + 60_000,
    });
    expect((await states.get(-100, 8))?.data).toEqual({ tries: 2 });
    expect(await states.get(8, 8)).toBeUndefined();

    clock += 60_000;
    expect(await states.get(-100, 7)).toBeUndefined();
    expect(await states.clear(-100, 7)).toBe(false);
    expect(await states.prune()).toBe(1);
  });

  it("clear ends a live step and says so", async () => {
    await states.set(5, 5, "awaiting_dock_id", null, 1000);
    expect(await states.clear(5, 5)).toBe(true);
    expect(await states.get(5, 5)).toBeUndefined();
    expect(await states.clear(5, 5)).toBe(false);
  });
});
