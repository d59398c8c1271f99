import { type Kysely, sql } from "kysely";

/**
 * Callback events get a signing secret of their own (issue 35, review D1): `signing_sealed`, sealed
 * like the secret key. An upgrade changes no signature: every existing Dock's signing secret is its
 * secret key as it is now (the same sealed value, opened by the same server key), so receivers keep
 * verifying; rotating either one later leaves the other as it is. Nullable only because SQLite adds
 * no NOT NULL column without a default: every row has a value from here on.
 */
export function signingSecrets() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema.alterTable("docks").addColumn("signing_sealed", "text").execute();
      await sql`update docks set signing_sealed = secret_sealed`.execute(db);
    },
  };
}
