import { randomBase62 } from "../domain/ids.ts";
import { MAX_GITHUB_CREDENTIALS, PRESENTED_SCOPES, type Principal, type Scope } from "../domain/principal.ts";
import {
  CREDENTIAL_PREFIX,
  encryptSecret,
  newCredentialSecret,
  newGithubSecret,
  sha256Hex,
} from "../domain/secrets.ts";
import { isUniqueViolation } from "./accept-batch.ts";
import type { DockCredentials } from "./credentials.ts";
import type { Db } from "./db.ts";

/** How often, at most, a credential's `last_used_at` is written: sends stay reads only. */
export const LAST_USED_RESOLUTION_MS = 60_000;

/** Characters of a credential's secret kept to tell it apart in a list (prefix and 4 more). */
const SHOWN_PREFIX = CREDENTIAL_PREFIX.length + 4;

/** A credential as its Dock's owner sees it: never its secret. */
export interface DockCredential {
  id: string;
  dockId: string;
  name: string;
  scope: Scope;
  /** The secret's first characters (`dnsc_AbCd`). */
  prefix: string;
  createdAt: number;
  lastUsedAt: number | null;
}

/**
 * A GitHub credential as a signature check reads it (signingQuery): its sealed secret, and when it
 * was last used.
 */
export interface SealedGithubCredential {
  id: string;
  secretSealed: string;
  lastUsedAt: number | null;
}

/** The Dock has MAX_GITHUB_CREDENTIALS GitHub credentials already: one must be revoked first. */
export class TooManyGithubCredentials extends Error {
  constructor() {
    super(`A Dock has at most ${MAX_GITHUB_CREDENTIALS} GitHub credentials: revoke one first.`);
  }
}

/**
 * A Dock's named credentials (send, manage or github, domain/principal.ts): created with a secret
 * shown once, listed without it, revoked (deleted: the next request with it is refused). `send`
 * and `manage` are looked up by the SHA-256 of the secret presented; a `github` one is never
 * presented, only used as the key of a signature, so its secret is kept sealed too (migration 0016).
 */
export class DockCredentialRepository {
  readonly #db: Db;
  readonly #key: Buffer;
  readonly #now: () => number;

  constructor(db: Db, encryptionKey: Buffer, now: () => number = Date.now) {
    this.#db = db;
    this.#key = encryptionKey;
    this.#now = now;
  }

  /**
   * A new credential and its secret, which is never shown again. A `github` one takes a free slot
   * of the Dock's; TooManyGithubCredentials when there is none.
   */
  async create(
    dockId: string,
    name: string,
    scope: Scope,
  ): Promise<{ credential: DockCredential; secret: string }> {
    if (scope === "github") return this.#createGithub(dockId, name);
    const secret = newCredentialSecret();
    const credential = this.#made(dockId, name, scope, secret);
    await this.#insert(credential, secret, null);
    return { credential, secret };
  }

  /**
   * A GitHub credential in the Dock's lowest free slot. Two made at once may pick the same slot:
   * the unique index refuses the second, which tries the next one.
   */
  async #createGithub(dockId: string, name: string): Promise<{ credential: DockCredential; secret: string }> {
    const secret = newGithubSecret();
    for (;;) {
      const taken = await this.#db.kysely
        .selectFrom("dock_credentials")
        .select("github_slot")
        .where("dock_id", "=", dockId)
        .where("github_slot", "is not", null)
        .execute();
      const used = new Set(taken.map((row) => Number(row.github_slot)));
      const slot = [...Array(MAX_GITHUB_CREDENTIALS).keys()].find((n) => !used.has(n));
      if (slot === undefined) throw new TooManyGithubCredentials();
      const credential = this.#made(dockId, name, "github", secret);
      try {
        await this.#insert(credential, secret, slot);
        return { credential, secret };
      } catch (error) {
        if (!isUniqueViolation(error)) throw error;
      }
    }
  }

  #made(dockId: string, name: string, scope: Scope, secret: string): DockCredential {
    return {
      id: `crd_${randomBase62(96)}`,
      dockId,
      name,
      scope,
      prefix: secret.slice(0, SHOWN_PREFIX),
      createdAt: this.#now(),
      lastUsedAt: null,
    };
  }

  /** Stores a credential: its secret's hash, and for a GitHub one (`slot`) the secret sealed. */
  async #insert(credential: DockCredential, secret: string, slot: number | null): Promise<void> {
    await this.#db.kysely
      .insertInto("dock_credentials")
      .values({
        id: credential.id,
        dock_id: credential.dockId,
        name: credential.name,
        scope: credential.scope,
        secret_hash: sha256Hex(secret),
        prefix: credential.prefix,
        created_at: credential.createdAt,
        last_used_at: null,
        secret_sealed: slot === null ? null : encryptSecret(secret, this.#key),
        github_slot: slot,
      })
      .execute();
  }

  /** The Dock's credentials, oldest first. */
  async list(dockId: string): Promise<DockCredential[]> {
    const rows = await this.#db.kysely
      .selectFrom("dock_credentials")
      .selectAll()
      .where("dock_id", "=", dockId)
      .orderBy("created_at")
      .orderBy("id")
      .execute();
    return rows.map((row) => ({
      id: row.id,
      dockId: row.dock_id,
      name: row.name,
      scope: row.scope as Scope,
      prefix: row.prefix,
      createdAt: Number(row.created_at),
      lastUsedAt: row.last_used_at === null ? null : Number(row.last_used_at),
    }));
  }

  /** Revokes the credential: from this commit on it authenticates nothing. False: no such credential of the Dock. */
  async revoke(dockId: string, id: string): Promise<boolean> {
    const result = await this.#db.kysely
      .deleteFrom("dock_credentials")
      .where("dock_id", "=", dockId)
      .where("id", "=", id)
      .executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  /**
   * The Dock, acting as the credential, when `secret` is a credential of the Dock `dockId`; else
   * undefined. Found by the secret's hash alone (192 random bits: nothing to learn from the time a
   * lookup takes), so an unknown Dock and a wrong secret take the same path: one index lookup that
   * finds nothing. A GitHub credential is not presented: its secret authenticates nothing here.
   */
  async authenticate(dockId: string, secret: string): Promise<DockCredentials | undefined> {
    if (!secret.startsWith(CREDENTIAL_PREFIX) || secret.length > 64) return undefined;
    const row = await this.#db.kysely
      .selectFrom("dock_credentials as c")
      .innerJoin("docks as d", "d.id", "c.dock_id")
      .select([
        "c.id",
        "c.scope",
        "c.last_used_at",
        "d.id as dock_id",
        "d.name",
        "d.inbound_format",
        "d.callback_url",
      ])
      .where("c.secret_hash", "=", sha256Hex(secret))
      .executeTakeFirst();
    if (row === undefined || row.dock_id !== dockId || !PRESENTED_SCOPES.includes(row.scope as Scope))
      return undefined;
    await this.markUsed(row.id, row.last_used_at === null ? null : Number(row.last_used_at));
    const principal: Principal = { kind: "credential", id: row.id, scope: row.scope as Scope };
    return {
      id: row.dock_id,
      name: row.name,
      watched: row.callback_url !== null,
      inbound: row.inbound_format,
      principal,
    };
  }

  /**
   * Records that the credential authenticated a request now, if `lastUsedAt` (as the request read
   * it) is a minute old or more: sends stay reads only.
   */
  async markUsed(id: string, lastUsedAt: number | null): Promise<void> {
    const now = this.#now();
    if (lastUsedAt !== null && now - lastUsedAt < LAST_USED_RESOLUTION_MS) return;
    await this.#db.kysely
      .updateTable("dock_credentials")
      .set({ last_used_at: now })
      .where("id", "=", id)
      // Requests that read the same stale time at once (or on other instances) write it once.
      .where((eb) =>
        eb.or([eb("last_used_at", "is", null), eb("last_used_at", "<=", now - LAST_USED_RESOLUTION_MS)]),
      )
      .execute();
  }
}
