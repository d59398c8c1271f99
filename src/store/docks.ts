import type { DockFields } from "../domain/dock.ts";
import { DOCK_ID_PATTERN, newDockId } from "../domain/ids.ts";
import { decryptSecret, encryptSecret, hashSecret, newSecretKey } from "../domain/secrets.ts";
import { checkCredentials, credentialsQuery, type DockCredentials } from "./credentials.ts";
import type { Db } from "./db.ts";

export interface Dock extends DockFields {
  id: string;
  ownerId: number;
  createdAt: number;
  updatedAt: number;
  activeSubscribers: number;
}

export interface DockWithSecret extends Dock {
  secretKey: string;
}

/** Docks: creation, lookup, authentication, rotation and deletion. Dialect-neutral. */
export class DockRepository {
  readonly #db: Db;
  readonly #key: Buffer;
  readonly #now: () => number;
  /** Runs for every message sent: compiled once. */
  readonly #credentialsOf;

  constructor(db: Db, encryptionKey: Buffer, now: () => number = Date.now) {
    this.#db = db;
    this.#key = encryptionKey;
    this.#now = now;
    this.#credentialsOf = credentialsQuery(db.kysely);
  }

  async create(ownerId: number, fields: DockFields): Promise<DockWithSecret> {
    const now = this.#now();
    const id = newDockId();
    const secretKey = newSecretKey();
    await this.#db.kysely.transaction().execute(async (tx) => {
      await tx
        .insertInto("users")
        .values({ telegram_id: ownerId, first_name: null, username: null, created_at: now })
        .onConflict((oc) => oc.column("telegram_id").doNothing())
        .execute();
      await tx
        .insertInto("docks")
        .values({
          id,
          owner_id: ownerId,
          ...fields,
          secret_hash: hashSecret(secretKey).toString("hex"),
          secret_sealed: encryptSecret(secretKey, this.#key),
          created_at: now,
          updated_at: now,
        })
        .execute();
    });
    return { id, ownerId, ...fields, createdAt: now, updatedAt: now, activeSubscribers: 0, secretKey };
  }

  #select() {
    return this.#db.kysely.selectFrom("docks").select((eb) => [
      "docks.id",
      "docks.owner_id",
      "docks.name",
      "docks.link",
      "docks.description",
      "docks.callback_url",
      "docks.secret_sealed",
      "docks.created_at",
      "docks.updated_at",
      eb
        .selectFrom("subscriptions")
        .whereRef("subscriptions.dock_id", "=", "docks.id")
        .where("subscriptions.state", "=", "active")
        .select((s) => s.fn.countAll<number>().as("n"))
        .as("active_subscribers"),
    ]);
  }

  #toDock(row: {
    id: string;
    owner_id: number;
    name: string;
    link: string | null;
    description: string | null;
    callback_url: string | null;
    secret_sealed: string;
    created_at: number;
    updated_at: number;
    active_subscribers: number | null;
  }): DockWithSecret {
    return {
      id: row.id,
      ownerId: row.owner_id,
      name: row.name,
      link: row.link,
      description: row.description,
      callback_url: row.callback_url,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
      activeSubscribers: Number(row.active_subscribers ?? 0),
      secretKey: decryptSecret(row.secret_sealed, this.#key),
    };
  }

  /**
   * Whether this repository's encryption key opens the secret keys stored in the database (tried
   * on the newest Dock; true when there is none). With another key every page that shows a secret
   * key would fail, while sending still worked: the service checks at start instead.
   */
  async keyOpensSecrets(): Promise<boolean> {
    const row = await this.#db.kysely
      .selectFrom("docks")
      .select("secret_sealed")
      .orderBy("created_at", "desc")
      .limit(1)
      .executeTakeFirst();
    if (row === undefined) return true;
    try {
      decryptSecret(row.secret_sealed, this.#key);
      return true;
    } catch {
      return false;
    }
  }

  async get(id: string): Promise<DockWithSecret | undefined> {
    const row = await this.#select().where("docks.id", "=", id).executeTakeFirst();
    return row && this.#toDock(row);
  }

  /** All Docks, or one owner's, newest first. */
  async list(ownerId?: number): Promise<DockWithSecret[]> {
    let query = this.#select().orderBy("docks.created_at", "desc").orderBy("docks.id");
    if (ownerId !== undefined) query = query.where("docks.owner_id", "=", ownerId);
    return (await query.execute()).map((row) => this.#toDock(row));
  }

  /**
   * The Dock whose ID and secret key both match, or undefined. Unknown Docks and wrong keys take
   * the same path, so neither the answer nor its timing tells whether a Dock exists.
   */
  async authenticate(id: string, secretKey: string): Promise<DockCredentials | undefined> {
    // Anything that cannot be a Dock ID never reaches the database (PostgreSQL refuses some
    // characters, such as NUL, with an error rather than "no row").
    const row = DOCK_ID_PATTERN.test(id)
      ? (await this.#db.kysely.executeQuery(this.#credentialsOf({ id }))).rows[0]
      : undefined;
    return checkCredentials(row, secretKey);
  }

  /** Replaces the secret key; the old one stops working with this commit. */
  async rotateSecret(id: string): Promise<string | undefined> {
    const secretKey = newSecretKey();
    const result = await this.#db.kysely
      .updateTable("docks")
      .set({
        secret_hash: hashSecret(secretKey).toString("hex"),
        secret_sealed: encryptSecret(secretKey, this.#key),
        updated_at: this.#now(),
      })
      .where("id", "=", id)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n ? secretKey : undefined;
  }

  async update(id: string, fields: DockFields): Promise<boolean> {
    const result = await this.#db.kysely
      .updateTable("docks")
      .set({ ...fields, updated_at: this.#now() })
      .where("id", "=", id)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** Deletes the Dock with its subscriptions, messages and pending deliveries. */
  async delete(id: string): Promise<boolean> {
    const result = await this.#db.kysely.deleteFrom("docks").where("id", "=", id).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }
}
