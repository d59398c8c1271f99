import { type Kysely, sql } from "kysely";

/**
 * Urgent messages go ahead of everything else waiting (the dispatcher's urgent lane): their
 * fan-out rows and their copies say so (`urgent` 1: a message sent with priority `urgent`; 0: any
 * other, and every edit and delete), so that the dispatcher finds them without reading the
 * backlog in front of them. Partial indexes: only the few urgent rows are in them.
 */
export function urgentLane() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .alterTable("fanouts")
        .addColumn("urgent", "integer", (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .alterTable("deliveries")
        .addColumn("urgent", "integer", (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .createIndex("fanouts_urgent")
        .on("fanouts")
        .columns(["dock_id", "id"])
        .where(sql.ref("urgent"), "=", 1)
        .execute();
      await db.schema
        .createIndex("deliveries_urgent_queue")
        .on("deliveries")
        .columns(["dock_id", "id"])
        .where((eb) => eb.and([eb(sql.ref("state"), "=", "queued"), eb(sql.ref("urgent"), "=", 1)]))
        .execute();
    },
  };
}
