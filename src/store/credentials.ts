import { hash } from "node:crypto";
import { type Kysely, sql } from "kysely";
import { constantTimeEqual } from "../domain/constant-time.ts";
import type { Principal } from "../domain/principal.ts";
import { secretMatches } from "../domain/secrets.ts";
import { prepare, type Slots } from "./prepared.ts";
import type { Database } from "./schema.ts";

/*
 * Authenticating a Dock by its secret key, shared by the Dock repository and the batches that
 * store messages (which check /ping's key in the storing transaction).
 */

/**
 * What the credentials query answers for a Dock that does not exist: a row of the same shape, with
 * a hash no secret produces (64 hex digits, as a real one), so both cases cost the same work.
 */
const ABSENT = { id: "", name: "", secret_hash: "0".repeat(64), watched: 0, inbound_format: null };

/**
 * An authenticated Dock: `watched` when it has a callback URL (its messages' outcomes are
 * reported); `inbound` how a body without `msg` is read (null: detected).
 */
export interface DockCredentials {
  id: string;
  name: string;
  watched: boolean;
  inbound: string | null;
  /** Who is acting (domain/principal.ts); absent: the secret key. */
  principal?: Principal;
}

/**
 * The Dock when the presented secret key is its key, else undefined. A missing Dock and a wrong
 * key take the same path — the query answers one row either way, its hash decoded and compared in
 * constant time — so the time of the answer does not tell whether the Dock exists (`npm run
 * bench:timing` checks it).
 */
export function checkCredentials<
  D extends {
    id: string;
    name: string;
    secret_hash: string;
    watched: number;
    inbound_format?: string | null;
    absent?: number;
  },
>(row: D | undefined, secretKey: string): DockCredentials | undefined {
  const found = row ?? ABSENT;
  const matches = secretMatches(secretKey, Buffer.from(found.secret_hash, "hex"));
  return row !== undefined && row.absent !== 1 && matches
    ? { id: row.id, name: row.name, watched: Number(row.watched) === 1, inbound: row.inbound_format ?? null }
    : undefined;
}

/**
 * The Dock when `token` is its hook token (compared by hash, in constant time), else undefined:
 * how a storing batch checks a hook token a send door took on a hint (VerifiedKeys).
 */
export function checkHookToken<
  D extends {
    id: string;
    name: string;
    watched: number;
    inbound_format?: string | null;
    hook_hash?: string | null;
    absent?: number;
  },
>(row: D | undefined, token: string): DockCredentials | undefined {
  const stored = row?.hook_hash ?? ABSENT.secret_hash;
  const matches = constantTimeEqual(Buffer.from(stored, "hex"), hash("sha256", token, "buffer"));
  return row !== undefined && row.absent !== 1 && row.hook_hash != null && matches
    ? {
        id: row.id,
        name: row.name,
        watched: Number(row.watched) === 1,
        inbound: row.inbound_format ?? null,
        principal: { kind: "hook" },
      }
    : undefined;
}

/**
 * The columns authentication reads: the Dock's row, or else the ABSENT one (`absent` 1), always
 * exactly one row, so that an unknown Dock and a wrong key answer alike in time too.
 */
export function credentialsQuery(kysely: Kysely<Database>) {
  return prepare((p: Slots<{ id: string }>) =>
    kysely
      .selectFrom("docks")
      .select([
        "id",
        "name",
        "secret_hash",
        sql<number>`case when callback_url is null then 0 else 1 end`.as("watched"),
        "inbound_format",
        "hook_hash",
        sql<number>`0`.as("absent"),
      ])
      .where("id", "=", p.id)
      .unionAll(
        kysely.selectNoFrom([
          sql<string>`${sql.lit(ABSENT.id)}`.as("id"),
          sql<string>`${sql.lit(ABSENT.name)}`.as("name"),
          sql<string>`${sql.lit(ABSENT.secret_hash)}`.as("secret_hash"),
          sql<number>`${sql.lit(ABSENT.watched)}`.as("watched"),
          sql<string | null>`null`.as("inbound_format"),
          sql<string | null>`null`.as("hook_hash"),
          sql<number>`1`.as("absent"),
        ]),
      )
      .orderBy("absent")
      .limit(1),
  );
}

/**
 * The one row a signature check reads (GitHub's X-Hub-Signature-256, made with one of the Dock's
 * GitHub credentials or, deprecated there, its secret key: an HMAC needs the secrets themselves,
 * sealed): the Dock's row, or else a stand-in of the same shape (`absent` 1) whose sealed secret
 * key is `standIn` and whose sealed GitHub slots are `standInGithub` (a Dock that never had a
 * GitHub credential gets those too). Always exactly one row to read and the same two sealed values
 * to open, so an unknown Dock costs what a known one does, however many GitHub credentials it
 * has: with a row for a known Dock only, or its credentials read from rows of their own, the
 * answer came measurably later for one (`npm run bench:timing`, docs/benchmarks.md).
 */
export function signingQuery(kysely: Kysely<Database>) {
  return prepare((p: Slots<{ id: string; standIn: string; standInGithub: string }>) =>
    kysely
      .selectFrom("docks")
      .select([
        "id",
        "name",
        "secret_sealed",
        // Typed: PostgreSQL cannot tell a bare parameter's type in a select list.
        sql<string>`coalesce(github_sealed, cast(${p.standInGithub} as text))`.as("github_sealed"),
        sql<number>`case when callback_url is null then 0 else 1 end`.as("watched"),
        "inbound_format",
        sql<number>`0`.as("absent"),
      ])
      .where("id", "=", p.id)
      .unionAll(
        kysely.selectNoFrom([
          sql<string>`${sql.lit(ABSENT.id)}`.as("id"),
          sql<string>`${sql.lit(ABSENT.name)}`.as("name"),
          sql<string>`cast(${p.standIn} as text)`.as("secret_sealed"),
          sql<string>`cast(${p.standInGithub} as text)`.as("github_sealed"),
          sql<number>`${sql.lit(ABSENT.watched)}`.as("watched"),
          sql<string | null>`null`.as("inbound_format"),
          sql<number>`1`.as("absent"),
        ]),
      )
      .orderBy("absent")
      .limit(1),
  );
}
