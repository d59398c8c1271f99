import type { Kysely } from "kysely";

/**
 * One row that `/readyz` rewrites to learn whether the database still takes writes: a full disk,
 * a read-only file or a PostgreSQL standby after a failover answer reads but refuse writes, and a
 * service that cannot store a message is not ready, whatever `select 1` says.
 */
export function writeProbes() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable("write_probes")
        .addColumn("id", "integer", (c) => c.primaryKey())
        .addColumn("probed_at", "bigint", (c) => c.notNull())
        .execute();
    },
  };
}
