import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { migrate, openDb } from "../../src/store/open.ts";
import { createTestDatabase, dialects } from "../helpers/harness.ts";

const DIALECTS = await dialects();

/** The harness's databases: the template copies must be exactly what migrating from empty gives. */
describe.each(DIALECTS)("test databases on %s", (dialect) => {
  it("a migrated one has every migration applied and nothing else; an empty one has none", async () => {
    const empty = await createTestDatabase(dialect);
    const migrated = await createTestDatabase(dialect, { migrated: true });
    const fresh = await openDb(empty.url);
    const copy = await openDb(migrated.url);
    try {
      const all = await migrate(fresh);
      expect(all.length).toBeGreaterThan(0);
      const recorded = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(
        copy.kysely,
      );
      expect(recorded.rows.map((row) => row.name)).toEqual(all);
      expect(await migrate(copy)).toEqual([]);
      // A copy, not the template itself: what one test writes, the next one does not see.
      await sql`insert into users (telegram_id, created_at) values (1, 0)`.execute(copy.kysely);
      const next = await createTestDatabase(dialect, { migrated: true });
      const other = await openDb(next.url);
      try {
        const users = await sql`select telegram_id from users`.execute(other.kysely);
        expect(users.rows).toEqual([]);
      } finally {
        await other.close();
        await next.drop();
      }
    } finally {
      await fresh.close();
      await copy.close();
      await empty.drop();
      await migrated.drop();
    }
  });
});
