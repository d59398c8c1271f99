import { type Kysely, sql } from "kysely";

/**
 * Who may own Docks (issue 35). `owners` holds the people allowed into the console beside those
 * OWNERS names: the administrator who claimed the instance, the owners they invited, and whoever
 * the operator added with `dock-notify owners add`. `owner_invites` holds single-use links into the
 * bot (the claim link and invitations), by the hash of their token. `instance` is one row: when
 * the instance was claimed (null: nobody has yet; a claim is a conditional update of this row, so
 * exactly one person wins it however many press Yes at once).
 *
 * An upgrade locks nobody out: everyone who owns a Dock becomes an owner, and an instance that has
 * Docks counts as claimed (its operator names an administrator with OWNERS or the CLI).
 */
export function owners() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable("owners")
        .addColumn("telegram_id", "bigint", (c) => c.primaryKey())
        .addColumn("role", "text", (c) => c.notNull())
        .addColumn("added_by", "bigint")
        .addColumn("added_at", "bigint", (c) => c.notNull())
        .execute();
      await db.schema
        .createTable("owner_invites")
        .addColumn("id", "text", (c) => c.primaryKey())
        .addColumn("token_hash", "text", (c) => c.notNull().unique())
        .addColumn("kind", "text", (c) => c.notNull())
        .addColumn("created_by", "bigint")
        .addColumn("created_at", "bigint", (c) => c.notNull())
        .addColumn("expires_at", "bigint", (c) => c.notNull())
        .addColumn("used_by", "bigint")
        .addColumn("used_at", "bigint")
        .addColumn("revoked_at", "bigint")
        .execute();
      await db.schema
        .createTable("instance")
        .addColumn("id", "integer", (c) => c.primaryKey())
        .addColumn("claimed_at", "bigint")
        .addColumn("claimed_by", "bigint")
        .execute();

      const now = Date.now();
      await sql`insert into owners (telegram_id, role, added_by, added_at)
        select distinct owner_id, 'owner', cast(null as bigint), cast(${now} as bigint) from docks`.execute(
        db,
      );
      await sql`insert into instance (id, claimed_at, claimed_by)
        select 1, case when exists (select 1 from docks) then cast(${now} as bigint) end, cast(null as bigint)`.execute(
        db,
      );
    },
  };
}
