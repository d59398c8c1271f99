import { type Kysely, sql } from "kysely";
import { MAX_GITHUB_CREDENTIALS, type Principal } from "../domain/principal.ts";
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
          sql<number>`1`.as("absent"),
        ]),
      )
      .orderBy("absent")
      .limit(1),
  );
}

/**
 * What a signature check reads in one row: the Dock's (`absent` 0) or a stand-in's (`absent` 1:
 * empty id and name), its sealed secret key, and its GitHub credentials by slot,
 * `github<slot>_id` (empty where there is none), `github<slot>_sealed`, `github<slot>_used`.
 */
export interface SigningRow {
  id: string;
  name: string;
  secret_sealed: string;
  watched: number;
  inbound_format: string | null;
  absent: number;
  [github: `github${number}_${"id" | "sealed" | "used"}`]: string | number | null;
}

/**
 * The one row a signature check reads (GitHub's X-Hub-Signature-256, made with one of the Dock's
 * GitHub credentials or, deprecated there, its secret key: an HMAC needs the secrets themselves,
 * sealed). Built from a one-row constant joined to the Dock's row and to each of its
 * MAX_GITHUB_CREDENTIALS credential slots by the ID asked for, so a known Dock, an unknown one and
 * a Dock with any number of GitHub credentials cost the same: the same index lookups, one row, and
 * every secret the Dock lacks (all of them for an unknown Dock) is the sealed `standIn`, unsealed
 * all the same. With a row for a known Dock only, or the credentials read in a query of their own,
 * the answer came measurably later for a known Dock (`npm run bench:timing`).
 */
export function signingQuery(kysely: Kysely<Database>) {
  return prepare((p: Slots<{ id: string; standIn: string }>) => {
    // Typed: PostgreSQL cannot tell a bare parameter's type in a select list.
    const standIn = sql`cast(${p.standIn} as text)`;
    const slots = Array.from({ length: MAX_GITHUB_CREDENTIALS }, (_, slot) => slot);
    const query = sql<SigningRow>`select
      coalesce(d.id, ${sql.lit(ABSENT.id)}) as id,
      coalesce(d.name, ${sql.lit(ABSENT.name)}) as name,
      coalesce(d.secret_sealed, ${standIn}) as secret_sealed,
      case when d.callback_url is null then 0 else 1 end as watched,
      d.inbound_format as inbound_format,
      case when d.id is null then 1 else 0 end as absent,
      ${sql.join(
        slots.map(
          (slot) => sql`coalesce(${sql.raw(`c${slot}`)}.id, '') as ${sql.raw(`github${slot}_id`)},
            coalesce(${sql.raw(`c${slot}`)}.secret_sealed, ${standIn}) as ${sql.raw(`github${slot}_sealed`)},
            ${sql.raw(`c${slot}`)}.last_used_at as ${sql.raw(`github${slot}_used`)}`,
        ),
      )}
      from (select 1 as one) k
      left join docks d on d.id = ${p.id}
      ${sql.join(
        slots.map(
          (slot) =>
            sql`left join dock_credentials ${sql.raw(`c${slot}`)} on ${sql.raw(`c${slot}`)}.dock_id = ${p.id} and ${sql.raw(`c${slot}`)}.github_slot = ${sql.lit(slot)}`,
        ),
        sql` `,
      )}`;
    return { compile: () => query.compile(kysely) };
  });
}
