import type { Kysely } from "kysely";

/**
 * GitHub credentials (issue 35): a named credential of scope `github` is the HMAC key of a GitHub
 * webhook's signature (`X-Hub-Signature-256`), and an HMAC needs the key itself. The secrets of a
 * Dock's GitHub credentials (at most three) are kept together on the Dock's own row,
 * `docks.github_sealed`, sealed with the server's key like the secret key: a signature check then
 * reads one row for any Dock, with or without GitHub credentials, known or not (read from a
 * credentials table, each credential found was a row more to read, and a Dock with two answered
 * measurably later: docs/benchmarks.md). Their names, prefixes and last use stay in
 * `dock_credentials`, with a hash like every credential. Null: the Dock has never had one.
 */
export function githubCredentials() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema.alterTable("docks").addColumn("github_sealed", "text").execute();
    },
  };
}
