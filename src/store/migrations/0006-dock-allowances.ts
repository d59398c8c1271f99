import type { Kysely } from "kysely";

/**
 * Each Dock's rate allowance, kept in the database so that every instance on one PostgreSQL spends
 * the same one (in memory, N instances allowed a Dock N times its rate). Used on PostgreSQL only:
 * SQLite runs one instance, which keeps allowances in memory. A row holds the tokens left at `at`
 * (milliseconds); the refill since then is worked out when the row is next read.
 */
export function dockAllowances() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable("dock_allowances")
        .addColumn("dock_id", "text", (c) => c.primaryKey().references("docks.id").onDelete("cascade"))
        .addColumn("tokens", "double precision", (c) => c.notNull())
        .addColumn("at", "bigint", (c) => c.notNull())
        .execute();
    },
  };
}
