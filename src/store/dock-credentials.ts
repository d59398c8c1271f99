import { randomBase62 } from "../domain/ids.ts";
import type { Principal, Scope } from "../domain/principal.ts";
import { CREDENTIAL_PREFIX, newCredentialSecret, sha256Hex } from "../domain/secrets.ts";
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
 * A Dock's named credentials (send or manage, domain/principal.ts): created with a secret shown
 * once, listed without it, revoked (deleted: the next request with it is refused), and looked up
 * by the SHA-256 of the secret presented.
 */
export class DockCredentialRepository {
  readonly #db: Db;
  readonly #now: () => number;

  constructor(db: Db, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
  }

  /** A new credential and its secret, which is never shown again. */
  async create(
    dockId: string,
    name: string,
    scope: Scope,
  ): Promise<{ credential: DockCredential; secret: string }> {
    const secret = newCredentialSecret();
    const credential: DockCredential = {
      id: `crd_${randomBase62(96)}`,
      dockId,
      name,
      scope,
      prefix: secret.slice(0, SHOWN_PREFIX),
      createdAt: this.#now(),
      lastUsedAt: null,
    };
    await this.#db.kysely
      .insertInto("dock_credentials")
      .values({
        id: credential.id,
        dock_id: dockId,
        name,
        scope,
        secret_hash: sha256Hex(secret),
        prefix: credential.prefix,
        created_at: credential.createdAt,
        last_used_at: null,
      })
      .execute();
    return { credential, secret };
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
   * finds nothing. `last_used_at` is written only when it is a minute old or more.
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
    if (row === undefined || row.dock_id !== dockId) return undefined;
    const now = this.#now();
    if (row.last_used_at === null || now - Number(row.last_used_at) >= LAST_USED_RESOLUTION_MS) {
      await this.#db.kysely
        .updateTable("dock_credentials")
        .set({ last_used_at: now })
        .where("id", "=", row.id)
        // Requests that read the same stale time at once (or on other instances) write it once.
        .where((eb) =>
          eb.or([eb("last_used_at", "is", null), eb("last_used_at", "<=", now - LAST_USED_RESOLUTION_MS)]),
        )
        .execute();
    }
    const principal: Principal = { kind: "credential", id: row.id, scope: row.scope as Scope };
    return {
      id: row.dock_id,
      name: row.name,
      watched: row.callback_url !== null,
      inbound: row.inbound_format,
      principal,
    };
  }
}
