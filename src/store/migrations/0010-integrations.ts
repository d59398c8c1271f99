import type { Kysely } from "kysely";

/**
 * Integrations: what a Dock needs to take the payloads other tools send (docs/integrations.md).
 *
 * - `hook_hash` / `hook_sealed`: the Dock's hook token, a credential that fits in a URL
 *   (`/hook/<token>`) for tools that cannot send an Authorization header. Separate from the
 *   secret key and rotated on its own; found by its SHA-256 (unique), kept sealed like the secret
 *   key so the console can show it again. Null: the Dock has none.
 * - `inbound_format`: how a body without `msg` is read on `/webhook` and `/hook/<token>` (a format's
 *   name, or `template`); null: detected.
 * - `template`: the Dock's own template (JSON of the fields, see integrations/template.ts).
 */
export function integrations() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema.alterTable("docks").addColumn("hook_hash", "text").execute();
      await db.schema.alterTable("docks").addColumn("hook_sealed", "text").execute();
      await db.schema.alterTable("docks").addColumn("inbound_format", "text").execute();
      await db.schema.alterTable("docks").addColumn("template", "text").execute();
      await db.schema.createIndex("docks_hook_hash").on("docks").column("hook_hash").unique().execute();
    },
  };
}
