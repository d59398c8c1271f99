import type { Kysely } from "kysely";

/**
 * GitHub credentials (issue 35): a named credential of scope `github` is the HMAC key of a GitHub
 * webhook's signature (`X-Hub-Signature-256`), and an HMAC needs the key itself, so its secret is
 * kept sealed with the server's key (`secret_sealed`, as the secret key and signing secret are)
 * beside the hash the other credentials keep. `github_slot` (0, 1, 2) numbers a Dock's GitHub
 * credentials: the unique index holds a Dock to as many as there are slots, even when two are
 * created at once, so a signature check always reads and tries the same number of secrets.
 * Both columns are null for `send` and `manage` credentials (NULLs never collide in the index).
 */
export function githubCredentials() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema.alterTable("dock_credentials").addColumn("secret_sealed", "text").execute();
      await db.schema.alterTable("dock_credentials").addColumn("github_slot", "integer").execute();
      await db.schema
        .createIndex("dock_credentials_github_slot")
        .on("dock_credentials")
        .columns(["dock_id", "github_slot"])
        .unique()
        .execute();
    },
  };
}
