import { type Kysely, sql } from "kysely";
import type { SchemaSpelling } from "../db.ts";

/**
 * A Dock's recent refused requests (issue 38, "why didn't it arrive?"): what its integrations sent
 * that a send door turned down, for its console. A bounded ring, not a history: RefusedRequests
 * keeps the newest REFUSED_PER_DOCK rows of each Dock (pruned as it writes), and a repeat of the
 * same refusal within a minute adds to `count` instead of making a row, so a flood of refusals is
 * a few writes a second, not one per request.
 *
 * - `first_at`, `last_at`: the first and the latest refusal the row counts (ms).
 * - `door`: the route, as its pattern (`/ping`, `/hook/{token}`: never a token).
 * - `format`: the integration format the body was read as (or named), if known.
 * - `code`, `message`: the catalogue's code and the message answered (cleaned of anything shaped
 *   like a secret).
 * - `credentials`: `right` (the request proved it was the Dock's), `wrong` (it named the Dock with
 *   a wrong key, credential or signature), `unverified` (refused before or apart from the check of
 *   its key: anyone who knows the Dock ID can cause it).
 *
 * `dock_refusals_dock` prunes a Dock's oldest rows. `docks.refused_at` is the live stream's
 * `refused` part, moved forward by each write of a Dock's refusals: read from `dock_refusals` (the
 * newest `last_at`, a correlated subquery) it made the stream's read a third slower
 * (docs/benchmarks.md, bench:stamps), for one column here.
 *
 * No foreign key, like `dock_audit` (0018): rows are written in batches off the request's path, and
 * a Dock's rows are deleted with it (DockRepository.delete).
 */
export function refusedRequests(spelling: SchemaSpelling) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable("dock_refusals")
        .addColumn("id", sql`${spelling.increasingKey}`)
        .addColumn("dock_id", "text", (c) => c.notNull())
        .addColumn("first_at", "bigint", (c) => c.notNull())
        .addColumn("last_at", "bigint", (c) => c.notNull())
        .addColumn("count", "integer", (c) => c.notNull())
        .addColumn("door", "text", (c) => c.notNull())
        .addColumn("format", "text")
        .addColumn("status", "integer", (c) => c.notNull())
        .addColumn("code", "text", (c) => c.notNull())
        .addColumn("message", "text", (c) => c.notNull())
        .addColumn("credentials", "text", (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex("dock_refusals_dock")
        .on("dock_refusals")
        .columns(["dock_id", "id"])
        .execute();
      await db.schema
        .alterTable("docks")
        .addColumn("refused_at", "bigint", (c) => c.notNull().defaultTo(0))
        .execute();
    },
  };
}
