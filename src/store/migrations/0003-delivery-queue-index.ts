import type { Kysely } from "kysely";

/** The dispatcher reads each Dock's queue in id order from a cursor: one index serves it. */
export function deliveryQueueIndex() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createIndex("deliveries_dock_queue")
        .on("deliveries")
        .columns(["state", "dock_id", "id"])
        .execute();
    },
  };
}
