import type { Kysely } from "kysely";

/**
 * Private Docks (issue 37): `docks.visibility` says who may subscribe (`open`, the default and
 * every existing Dock's: nothing changes for them; `invite`; `approval`).
 */
export function privateDocks() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .alterTable("docks")
        .addColumn("visibility", "text", (c) => c.notNull().defaultTo("open"))
        .execute();
    },
  };
}
