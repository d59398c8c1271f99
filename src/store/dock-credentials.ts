import { type Kysely, sql } from "kysely";
import { randomBase62 } from "../domain/ids.ts";
import { MAX_GITHUB_CREDENTIALS, PRESENTED_SCOPES, type Principal, type Scope } from "../domain/principal.ts";
import {
  CREDENTIAL_PREFIX,
  decryptSecret,
  encryptSecret,
  newCredentialSecret,
  newGithubSecret,
  sha256Hex,
} from "../domain/secrets.ts";
import { type AuditBy, writeAuditBy } from "./audit.ts";
import type { DockCredentials } from "./credentials.ts";
import type { Db } from "./db.ts";
import type { Database } from "./schema.ts";

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
 * A Dock's GitHub credentials' secrets, by slot: `[credential id, secret]`, `["", ""]` for a free
 * slot. Always MAX_GITHUB_CREDENTIALS slots, sealed together on the Dock's row
 * (`docks.github_sealed`, migration 0016), so a signature check reads and unseals the same for
 * every Dock.
 */
export type GithubSlots = [id: string, secret: string][];

export function emptyGithubSlots(): GithubSlots {
  return Array.from({ length: MAX_GITHUB_CREDENTIALS }, () => ["", ""]);
}

/**
 * Widths every slot's id and secret are padded to when sealed (a credential's id is 21 characters,
 * a GitHub secret 38): sealed slots are as long, and as much work to open, however many are free.
 */
const SLOT_WIDTHS = [24, 48] as const;

export function sealGithubSlots(slots: GithubSlots, key: Buffer): string {
  const padded = slots.map((slot) =>
    slot.map((value, i) => {
      const width = SLOT_WIDTHS[i] as number;
      if (value.length > width) throw new Error(`a GitHub slot's value is over ${width} characters`);
      return value.padEnd(width);
    }),
  );
  return encryptSecret(JSON.stringify(padded), key);
}

/** The slots sealed in `sealed`; null (a Dock that never had a GitHub credential): all free. */
export function openGithubSlots(sealed: string | null, key: Buffer): GithubSlots {
  if (sealed === null) return emptyGithubSlots();
  const padded = JSON.parse(decryptSecret(sealed, key)) as GithubSlots;
  return padded.map(([id, secret]) => [id.trimEnd(), secret.trimEnd()]);
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
 * presented, only used as the key of a signature, so its secret is kept sealed too, in its Dock's
 * slots (GithubSlots).
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
    by?: AuditBy,
  ): Promise<{ credential: DockCredential; secret: string }> {
    if (scope === "github") return this.#createGithub(dockId, name, by);
    const secret = newCredentialSecret();
    const credential = this.#made(dockId, name, scope, secret);
    await this.#db.kysely.transaction().execute(async (tx) => {
      await this.#insert(tx, credential, secret);
      await this.#audit(tx, credential, "credential_created", by);
    });
    return { credential, secret };
  }

  /** Records a credential made or revoked in its Dock's audit log (its id, name and scope: never its secret). */
  async #audit(
    tx: Kysely<Database>,
    credential: Pick<DockCredential, "id" | "dockId" | "name" | "scope">,
    action: "credential_created" | "credential_revoked",
    by: AuditBy | undefined,
  ): Promise<void> {
    if (!by) return;
    const detail = { credential: credential.id, name: credential.name, scope: credential.scope };
    await writeAuditBy(tx, credential.dockId, by, action, detail, this.#now());
  }

  /** A GitHub credential in the Dock's first free slot, its secret sealed there with the others. */
  async #createGithub(
    dockId: string,
    name: string,
    by: AuditBy | undefined,
  ): Promise<{ credential: DockCredential; secret: string }> {
    const secret = newGithubSecret();
    return this.#db.kysely.transaction().execute(async (tx) => {
      const slots = await this.#slotsHeld(tx, dockId);
      const free = slots.findIndex(([id]) => id === "");
      if (free === -1) throw new TooManyGithubCredentials();
      const credential = this.#made(dockId, name, "github", secret);
      slots[free] = [credential.id, secret];
      await this.#insert(tx, credential, secret);
      await this.#writeSlots(tx, dockId, slots);
      await this.#audit(tx, credential, "credential_created", by);
      return { credential, secret };
    });
  }

  /**
   * The Dock's GitHub slots, its row held until the transaction ends (PostgreSQL; SQLite runs one
   * transaction at a time): two changes at once take turns, and neither loses the other's.
   */
  async #slotsHeld(tx: Kysely<Database>, dockId: string): Promise<GithubSlots> {
    await tx.updateTable("docks").set({ updated_at: sql`updated_at` }).where("id", "=", dockId).execute();
    const row = await tx
      .selectFrom("docks")
      .select("github_sealed")
      .where("id", "=", dockId)
      .executeTakeFirst();
    return openGithubSlots(row?.github_sealed ?? null, this.#key);
  }

  async #writeSlots(tx: Kysely<Database>, dockId: string, slots: GithubSlots): Promise<void> {
    await tx
      .updateTable("docks")
      .set({ github_sealed: sealGithubSlots(slots, this.#key) })
      .where("id", "=", dockId)
      .execute();
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

  /** Stores a credential: its secret's hash (a GitHub one's secret is in its Dock's slots too). */
  async #insert(db: Kysely<Database>, credential: DockCredential, secret: string): Promise<void> {
    await db
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

  /**
   * Revokes the credential: from this commit on it authenticates nothing (a GitHub one leaves its
   * Dock's slots). False: no such credential of the Dock.
   */
  async revoke(dockId: string, id: string, by?: AuditBy): Promise<boolean> {
    return this.#db.kysely.transaction().execute(async (tx) => {
      const slots = await this.#slotsHeld(tx, dockId);
      const revoked = await tx
        .deleteFrom("dock_credentials")
        .where("dock_id", "=", dockId)
        .where("id", "=", id)
        .returning(["name", "scope"])
        .executeTakeFirst();
      if (revoked === undefined) return false;
      await this.#audit(
        tx,
        { id, dockId, name: revoked.name, scope: revoked.scope as Scope },
        "credential_revoked",
        by,
      );
      const slot = slots.findIndex(([held]) => held === id);
      if (slot !== -1) {
        slots[slot] = ["", ""];
        await this.#writeSlots(tx, dockId, slots);
      }
      return true;
    });
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

  /** Records that the credential authenticated a request now (see markUsed), reading when it last did. */
  async recordUse(id: string): Promise<void> {
    const row = await this.#db.kysely
      .selectFrom("dock_credentials")
      .select("last_used_at")
      .where("id", "=", id)
      .executeTakeFirst();
    if (row) await this.markUsed(id, row.last_used_at === null ? null : Number(row.last_used_at));
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
