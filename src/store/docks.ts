import type { ExpressionBuilder, Kysely, Updateable } from "kysely";
import type { Visibility } from "../domain/audience.ts";
import type { AuditAction } from "../domain/audit.ts";
import type { DockFields } from "../domain/dock.ts";
import type { DockRole } from "../domain/dock-roles.ts";
import { DOCK_ID_PATTERN, newDockId } from "../domain/ids.ts";
import {
  CREDENTIAL_PREFIX,
  decryptSecret,
  encryptSecret,
  HOOK_TOKEN_PREFIX,
  hashSecret,
  newHookToken,
  newSecretKey,
  newSigningSecret,
  sha256Hex,
} from "../domain/secrets.ts";
import { type AuditBy, writeAuditBy } from "./audit.ts";
import { checkCredentials, credentialsQuery, type DockCredentials, signingQuery } from "./credentials.ts";
import type { Db } from "./db.ts";
import {
  DockCredentialRepository,
  emptyGithubSlots,
  openGithubSlots,
  sealGithubSlots,
} from "./dock-credentials.ts";
import { mayEscalate } from "./escalations.ts";
import { queueNoticeToSubscribers } from "./notices.ts";
import type { Database, DocksTable } from "./schema.ts";
import { knowUser } from "./users.ts";
import { VerifiedKeys } from "./verified-keys.ts";

export interface Dock extends DockFields {
  id: string;
  ownerId: number;
  /** Who may subscribe (domain/audience.ts). */
  visibility: Visibility;
  createdAt: number;
  updatedAt: number;
  activeSubscribers: number;
  /** Join requests waiting for a decision (not expired). */
  pendingRequests: number;
}

export interface DockWithSecret extends Dock {
  secretKey: string;
  /** The key of the signatures on the Dock's callback events (`dnss_…`), apart from the secret key. */
  signingSecret: string;
  /** The hook token (`/hook/<token>`), null when the Dock has none. */
  hookToken: string | null;
  /** How a body without `msg` is read: a format's name, or `template`; null: detected. */
  inboundFormat: string | null;
  /** The Dock's template as stored (checked when it was saved); null: none. */
  template: unknown;
}

/** What a Dock's integrations are set to (docs/integrations.md). */
export interface IntegrationSettings {
  inboundFormat: string | null;
  template: unknown;
}

/**
 * What a signed delivery's signature is checked with (GitHub's X-Hub-Signature-256): always
 * 1 + MAX_GITHUB_CREDENTIALS secrets, whichever Dock is named and however many GitHub credentials
 * it has, so that the work (and so the time) of a refusal tells neither.
 */
export interface Signers {
  /** The Dock; undefined when there is no such Dock. */
  dock: DockCredentials | undefined;
  /**
   * The Dock's GitHub credentials' secrets in slot order, then its secret key (deprecated for
   * GitHub); a stand-in no one knows wherever there is none.
   */
  secrets: string[];
  /** `secrets[i]`'s GitHub credential; null for the secret key and the stand-ins. */
  credentials: ({ id: string } | null)[];
}

/** Whether the Dock has a callback URL, as the credential lookups read it (1 or 0). */
const watched = (eb: ExpressionBuilder<Database, "docks">) =>
  eb.case().when("callback_url", "is", null).then(0).else(1).end().as("watched");

/**
 * Makes sure a Dock's owner is known (a row of `users`, whose names the bot fills in later) and
 * may use the console (a row of `owners`, unless they have one). `db` is the Dock's transaction.
 * `sandbox`: the sandbox plays Telegram, so the owner is one of its people and a new row is marked
 * as theirs (it lets nobody in on a real bot); on a real bot a marked row becomes a real one.
 */
async function ensureOwner(
  db: Kysely<Database>,
  ownerId: number,
  now: number,
  sandbox: boolean,
): Promise<void> {
  await knowUser(db, ownerId, now);
  await db
    .insertInto("owners")
    .values({ telegram_id: ownerId, role: "owner", added_by: null, added_at: now, sandbox: sandbox ? 1 : 0 })
    .onConflict((oc) =>
      sandbox
        ? oc.column("telegram_id").doNothing()
        : oc.column("telegram_id").doUpdateSet({ sandbox: 0 }).where("owners.sandbox", "=", 1),
    )
    .execute();
}

/**
 * Makes `to` the owner of Docks `ids`, all owned by `from`, in `tx`: `to` becomes an owner if they
 * were not one (a real one, see ensureOwner) and loses any co-owner row on them (owning gives the
 * role owner). Subscribers, credentials and history stay. The caller writes the audit entries.
 */
export async function moveDocks(
  tx: Kysely<Database>,
  ids: readonly string[],
  from: number,
  to: number,
  now: number,
): Promise<void> {
  // Whoever is given Docks is a real person, even while the sandbox plays Telegram: a row of the
  // sandbox's made for them before becomes a real one.
  await ensureOwner(tx, to, now, false);
  await tx
    .updateTable("docks")
    .set({ owner_id: to, updated_at: now })
    .where("id", "in", ids)
    .where("owner_id", "=", from)
    .execute();
  await tx.deleteFrom("co_owners").where("dock_id", "in", ids).where("telegram_id", "=", to).execute();
}

/** An authenticated Dock from the columns the credential lookups read. */
function credentialsOf(row: {
  id: string;
  name: string;
  watched: number | string;
  inbound_format: string | null;
}): DockCredentials {
  return { id: row.id, name: row.name, watched: Number(row.watched) === 1, inbound: row.inbound_format };
}

/** Docks: creation, lookup, authentication, rotation and deletion. Dialect-neutral. */
export class DockRepository {
  readonly #db: Db;
  readonly #key: Buffer;
  readonly #now: () => number;
  /** Runs for every message sent: compiled once. */
  readonly #credentialsOf;
  readonly #signingOf;
  /** A sealed secret no Dock has, read and unsealed where a Dock has none (see signersOf). */
  readonly #standIn: string;
  /** The stand-in, open: what a free GitHub slot's signature is checked with. */
  readonly #standInSecret: string;
  /** Sealed GitHub slots, all free: read and opened for a Dock without any (see signersOf). */
  readonly #standInGithub: string;
  /** The Dock's named credentials (send, manage), presented where the secret key is. */
  readonly credentials: DockCredentialRepository;

  /** The built-in sandbox plays Telegram: owners made for new people are its people (ensureOwner). */
  readonly #sandbox: boolean;
  /** Secret keys found right lately: a hint for the send doors (see VerifiedKeys). */
  readonly #verified = new VerifiedKeys();

  constructor(
    db: Db,
    encryptionKey: Buffer,
    now: () => number = Date.now,
    options: { sandbox?: boolean } = {},
  ) {
    this.#db = db;
    this.#sandbox = options.sandbox ?? false;
    this.#key = encryptionKey;
    this.#now = now;
    this.#credentialsOf = credentialsQuery(db.kysely);
    this.#signingOf = signingQuery(db.kysely);
    this.#standInSecret = newSecretKey();
    this.#standIn = encryptSecret(this.#standInSecret, encryptionKey);
    this.#standInGithub = sealGithubSlots(emptyGithubSlots(), encryptionKey);
    this.credentials = new DockCredentialRepository(db, encryptionKey, now);
  }

  /**
   * A new Dock of `ownerId`; `by`: who made it, for its audit log (none: nothing is recorded);
   * `visibility`: who may subscribe (open unless said).
   */
  async create(
    ownerId: number,
    fields: DockFields,
    by?: AuditBy,
    visibility: Visibility = "open",
  ): Promise<DockWithSecret> {
    const now = this.#now();
    const id = newDockId();
    const secretKey = newSecretKey();
    const signingSecret = newSigningSecret();
    await this.#db.kysely.transaction().execute(async (tx) => {
      // Whoever owns a Dock may sign in to see it, whatever OWNERS says of strangers (a Dock made
      // by the CLI for someone new, or under OWNERS=* before the instance was closed). It does not
      // claim the instance: that takes an administrator.
      await ensureOwner(tx, ownerId, now, this.#sandbox);
      await tx
        .insertInto("docks")
        .values({
          id,
          owner_id: ownerId,
          ...fields,
          visibility,
          secret_hash: hashSecret(secretKey).toString("hex"),
          secret_sealed: encryptSecret(secretKey, this.#key),
          signing_sealed: encryptSecret(signingSecret, this.#key),
          created_at: now,
          updated_at: now,
        })
        .execute();
      if (by) await writeAuditBy(tx, id, by, "dock_created", { name: fields.name, visibility }, now);
    });
    return {
      id,
      ownerId,
      visibility,
      ...fields,
      createdAt: now,
      updatedAt: now,
      activeSubscribers: 0,
      pendingRequests: 0,
      secretKey,
      signingSecret,
      hookToken: null,
      inboundFormat: null,
      template: null,
    };
  }

  #select() {
    const now = this.#now();
    return this.#db.kysely.selectFrom("docks").select((eb) => [
      "docks.id",
      "docks.owner_id",
      "docks.name",
      "docks.link",
      "docks.description",
      "docks.callback_url",
      "docks.secret_sealed",
      "docks.signing_sealed",
      "docks.hook_sealed",
      "docks.inbound_format",
      "docks.template",
      "docks.visibility",
      "docks.created_at",
      "docks.updated_at",
      eb
        .selectFrom("subscriptions")
        .whereRef("subscriptions.dock_id", "=", "docks.id")
        .where("subscriptions.state", "=", "active")
        .select((s) => s.fn.countAll<number>().as("n"))
        .as("active_subscribers"),
      eb
        .selectFrom("join_requests")
        .whereRef("join_requests.dock_id", "=", "docks.id")
        .where("join_requests.state", "=", "pending")
        .where("join_requests.expires_at", ">", now)
        .select((s) => s.fn.countAll<number>().as("n"))
        .as("pending_requests"),
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
    signing_sealed: string;
    hook_sealed: string | null;
    inbound_format: string | null;
    template: string | null;
    visibility: Visibility;
    created_at: number;
    updated_at: number;
    active_subscribers: number | null;
    pending_requests: number | null;
  }): DockWithSecret {
    return {
      id: row.id,
      ownerId: row.owner_id,
      visibility: row.visibility,
      name: row.name,
      link: row.link,
      description: row.description,
      callback_url: row.callback_url,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
      activeSubscribers: Number(row.active_subscribers ?? 0),
      pendingRequests: Number(row.pending_requests ?? 0),
      secretKey: decryptSecret(row.secret_sealed, this.#key),
      signingSecret: decryptSecret(row.signing_sealed, this.#key),
      hookToken: row.hook_sealed === null ? null : decryptSecret(row.hook_sealed, this.#key),
      inboundFormat: row.inbound_format,
      template: row.template === null ? null : (JSON.parse(row.template) as unknown),
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

  /**
   * Gives the Dock to another owner (the operator's `docks update --owner`, e.g. once its owner
   * left), who may then sign in to see it; false when there is no such Dock.
   */
  async transfer(id: string, ownerId: number, by?: AuditBy): Promise<boolean> {
    const now = this.#now();
    return this.#db.kysely.transaction().execute(async (tx) => {
      // The operator names a real person: never one of the sandbox's (see moveDocks).
      await ensureOwner(tx, ownerId, now, false);
      const before = await tx.selectFrom("docks").select("owner_id").where("id", "=", id).executeTakeFirst();
      if (before === undefined) return false;
      await tx
        .updateTable("docks")
        .set({ owner_id: ownerId, updated_at: now })
        .where("id", "=", id)
        .execute();
      // Whoever was given the Dock holds the role owner by owning it: a co-owner row would be a second.
      await tx.deleteFrom("co_owners").where("dock_id", "=", id).where("telegram_id", "=", ownerId).execute();
      if (by && Number(before.owner_id) !== ownerId)
        await writeAuditBy(tx, id, by, "owner_changed", { from: Number(before.owner_id), to: ownerId }, now);
      return true;
    });
  }

  /**
   * Gives Docks of `from` to `to` in one transaction (the operator's `docks transfer`): those of
   * `ids`, or all of `from`'s when `ids` is null. Only Docks that `from` owns at that moment move;
   * their subscribers, credentials, co-owners and history stay as they are. `to` becomes an owner
   * (may sign in to see them) if they were not one, and each Dock's audit log records the change.
   * Answers the Docks moved, oldest first.
   */
  async handOver(from: number, to: number, ids: readonly string[] | null, by: AuditBy): Promise<string[]> {
    if (ids !== null && ids.length === 0) return [];
    const now = this.#now();
    return this.#db.kysely.transaction().execute(async (tx) => {
      let query = tx.selectFrom("docks").select("id").where("owner_id", "=", from);
      if (ids !== null) query = query.where("id", "in", ids);
      const moved = (await query.orderBy("created_at").orderBy("id").execute()).map((row) => row.id);
      if (moved.length === 0 || from === to) return [];
      await moveDocks(tx, moved, from, to, now);
      for (const id of moved) await writeAuditBy(tx, id, by, "owner_changed", { from, to }, now);
      return moved;
    });
  }

  /** How many Docks `ownerId` owns (MAX_DOCKS_PER_OWNER). */
  async countOwnedBy(ownerId: number): Promise<number> {
    const row = await this.#db.kysely
      .selectFrom("docks")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("owner_id", "=", ownerId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /**
   * The Docks a person sees in the console, newest first: those they own and those shared with
   * them (issue 37), each with their role on it.
   */
  async listFor(userId: number): Promise<(DockWithSecret & { role: DockRole })[]> {
    const rows = await this.#select()
      .leftJoin("co_owners", (join) =>
        join.onRef("co_owners.dock_id", "=", "docks.id").on("co_owners.telegram_id", "=", userId),
      )
      .select("co_owners.role")
      .where((eb) => eb.or([eb("docks.owner_id", "=", userId), eb("co_owners.telegram_id", "=", userId)]))
      .orderBy("docks.created_at", "desc")
      .orderBy("docks.id")
      .execute();
    return rows.map((row) => ({
      ...this.#toDock(row),
      role: Number(row.owner_id) === userId ? "owner" : (row.role ?? "viewer"),
    }));
  }

  /** All Docks, or one owner's, newest first. */
  async list(ownerId?: number): Promise<DockWithSecret[]> {
    let query = this.#select().orderBy("docks.created_at", "desc").orderBy("docks.id");
    if (ownerId !== undefined) query = query.where("docks.owner_id", "=", ownerId);
    return (await query.execute()).map((row) => this.#toDock(row));
  }

  /**
   * Whether messages of the Dock `from` may escalate to each Dock of `to` (escalations.ts
   * mayEscalate).
   */
  mayEscalate(from: string, to: readonly string[]): Promise<boolean> {
    return mayEscalate(this.#db.kysely, from, to);
  }

  /**
   * The Dock whose ID and secret key both match, or undefined. Unknown Docks and wrong keys take
   * the same path, so neither the answer nor its timing tells whether a Dock exists.
   */
  async authenticate(id: string, secretKey: string): Promise<DockCredentials | undefined> {
    // A named credential (its prefix says so, whatever the Dock): looked up by its hash instead.
    if (secretKey.startsWith(CREDENTIAL_PREFIX)) return this.credentials.authenticate(id, secretKey);
    // Anything that cannot be a Dock ID never reaches the database (PostgreSQL refuses some
    // characters, such as NUL, with an error rather than "no row").
    const generation = this.#verified.generation;
    const row = DOCK_ID_PATTERN.test(id)
      ? (await this.#db.kysely.executeQuery(this.#credentialsOf({ id }))).rows[0]
      : undefined;
    const dock = checkCredentials(row, secretKey);
    if (dock !== undefined) this.#verified.rememberKey(secretKey, dock, generation);
    return dock;
  }

  /**
   * The Dock when this secret key opened it in the last few seconds (authenticate): a hint that
   * spares a send door its lookup before the body is read, never proof — the door has the key
   * checked again where the message is stored (AcceptItem.secretKey).
   */
  recentlyVerified(id: string, secretKey: string): DockCredentials | undefined {
    return this.#verified.key(id, secretKey);
  }

  /** As recentlyVerified, for a hook token (authenticateHook). */
  recentlyVerifiedHook(token: string): DockCredentials | undefined {
    return this.#verified.hook(token);
  }

  /** Forgets the secrets found right for the Dock: where the message was stored, one was refused. */
  forgetVerified(id: string): void {
    this.#verified.forget(id);
  }

  /**
   * Replaces the signing secret: events posted from now on are signed with the new one (an event
   * being posted at this moment may still carry the old). The secret key stays as it is.
   */
  async rotateSigningSecret(id: string, by?: AuditBy): Promise<string | undefined> {
    const signingSecret = newSigningSecret();
    const done = await this.#changeRow(id, by, "signing_secret_rotated", {
      signing_sealed: encryptSecret(signingSecret, this.#key),
    });
    return done ? signingSecret : undefined;
  }

  /** Replaces the secret key; the old one stops working with this commit. The signing secret stays. */
  async rotateSecret(id: string, by?: AuditBy): Promise<string | undefined> {
    const secretKey = newSecretKey();
    const done = await this.#changeRow(id, by, "secret_key_rotated", {
      secret_hash: hashSecret(secretKey).toString("hex"),
      secret_sealed: encryptSecret(secretKey, this.#key),
    });
    return done ? secretKey : undefined;
  }

  /**
   * Sets columns of the Dock's row (and `updated_at`); with `by`, the Dock's audit log records
   * `action` in the same transaction. False when there is no such Dock.
   */
  async #changeRow(
    id: string,
    by: AuditBy | undefined,
    action: AuditAction,
    values: Updateable<DocksTable>,
  ): Promise<boolean> {
    const now = this.#now();
    try {
      return await this.#db.kysely.transaction().execute(async (tx) => {
        const result = await tx
          .updateTable("docks")
          .set({ ...values, updated_at: now })
          .where("id", "=", id)
          .executeTakeFirst();
        if (result.numUpdatedRows === 0n) return false;
        if (by) await writeAuditBy(tx, id, by, action, {}, now);
        return true;
      });
    } finally {
      // Once committed (or its answer lost): a lookup meanwhile may have remembered the row as it was.
      this.#verified.forget(id);
    }
  }

  /**
   * The Dock whose hook token this is, or undefined. Found by the token's hash (the token is 192
   * random bits: there is nothing to learn from the time a lookup takes).
   */
  async authenticateHook(token: string): Promise<DockCredentials | undefined> {
    if (!token.startsWith(HOOK_TOKEN_PREFIX) || token.length > 64) return undefined;
    const generation = this.#verified.generation;
    const row = await this.#db.kysely
      .selectFrom("docks")
      .select(["id", "name", "inbound_format", watched])
      .where("hook_hash", "=", sha256Hex(token))
      .executeTakeFirst();
    if (row === undefined) return undefined;
    const dock: DockCredentials = { ...credentialsOf(row), principal: { kind: "hook" } };
    this.#verified.rememberHook(token, dock, generation);
    return dock;
  }

  /**
   * The secrets a signed delivery to Dock `id` may be signed with (see Signers); never shown or
   * logged. The same work for every Dock ID of the right shape, known or not, with any number of
   * GitHub credentials: one row read (signingQuery) and two sealed values opened (its secret key,
   * its GitHub slots; the stand-ins' where there are none). Anything that cannot be a Dock ID
   * never reaches the database (as for /ping), and opens the stand-ins.
   */
  async signersOf(id: string): Promise<Signers> {
    const row = DOCK_ID_PATTERN.test(id)
      ? (
          await this.#db.kysely.executeQuery(
            this.#signingOf({ id, standIn: this.#standIn, standInGithub: this.#standInGithub }),
          )
        ).rows[0]
      : undefined;
    const slots = openGithubSlots(row?.github_sealed ?? this.#standInGithub, this.#key);
    const secretKey = decryptSecret(row?.secret_sealed ?? this.#standIn, this.#key);
    return {
      dock: row === undefined || row.absent === 1 ? undefined : credentialsOf(row),
      secrets: [...slots.map(([held, secret]) => (held === "" ? this.#standInSecret : secret)), secretKey],
      credentials: [...slots.map(([held]) => (held === "" ? null : { id: held })), null],
    };
  }

  /** A new hook token for the Dock (the old one, if any, stops working with this commit). */
  async rotateHookToken(id: string, by?: AuditBy): Promise<string | undefined> {
    const token = newHookToken();
    const done = await this.#changeRow(id, by, "hook_token_rotated", {
      hook_hash: sha256Hex(token),
      hook_sealed: encryptSecret(token, this.#key),
    });
    return done ? token : undefined;
  }

  /**
   * The Dock no longer has a hook token: its hook URLs stop working. Its audit log records it
   * only when it had one.
   */
  async revokeHookToken(id: string, by?: AuditBy): Promise<boolean> {
    const now = this.#now();
    try {
      return await this.#db.kysely.transaction().execute(async (tx) => {
        const before = await tx
          .selectFrom("docks")
          .select("hook_hash")
          .where("id", "=", id)
          .executeTakeFirst();
        if (before === undefined) return false;
        await tx
          .updateTable("docks")
          .set({ hook_hash: null, hook_sealed: null, updated_at: now })
          .where("id", "=", id)
          .execute();
        if (by && before.hook_hash !== null) await writeAuditBy(tx, id, by, "hook_token_revoked", {}, now);
        return true;
      });
    } finally {
      // Even when the commit's answer was lost: the row may have changed.
      this.#verified.forget(id);
    }
  }

  /** The Dock's inbound format and template (read when a template is used). */
  async integrationSettings(id: string): Promise<IntegrationSettings | undefined> {
    const row = await this.#db.kysely
      .selectFrom("docks")
      .select(["inbound_format", "template"])
      .where("id", "=", id)
      .executeTakeFirst();
    return (
      row && {
        inboundFormat: row.inbound_format,
        template: row.template === null ? null : (JSON.parse(row.template) as unknown),
      }
    );
  }

  /**
   * Sets what is given of the Dock's integration settings (checked by the caller); with `by`, the
   * audit log names the ones that changed.
   */
  async updateIntegrations(
    id: string,
    settings: Partial<IntegrationSettings>,
    by?: AuditBy,
  ): Promise<boolean> {
    const values = {
      ...(settings.inboundFormat !== undefined ? { inbound_format: settings.inboundFormat } : {}),
      ...(settings.template !== undefined
        ? { template: settings.template === null ? null : JSON.stringify(settings.template) }
        : {}),
    };
    return this.#update(id, values, by);
  }

  /** Sets the Dock's fields; with `by`, the audit log names the ones that changed (never their values). */
  async update(id: string, fields: DockFields, by?: AuditBy): Promise<boolean> {
    return this.#update(id, fields, by);
  }

  /**
   * Sets columns of the Dock's row and, with `by`, records `settings_changed` naming the columns
   * whose value is not what it was, in the same transaction (nothing when none changed).
   */
  async #update(
    id: string,
    values: Pick<
      Updateable<DocksTable>,
      "name" | "link" | "description" | "callback_url" | "inbound_format" | "template"
    >,
    by: AuditBy | undefined,
  ): Promise<boolean> {
    const now = this.#now();
    const columns = Object.keys(values) as (keyof typeof values)[];
    try {
      return await this.#db.kysely.transaction().execute(async (tx) => {
        const before =
          columns.length === 0
            ? await tx.selectFrom("docks").select("id").where("id", "=", id).executeTakeFirst()
            : await tx.selectFrom("docks").select(columns).where("id", "=", id).executeTakeFirst();
        if (before === undefined) return false;
        await tx
          .updateTable("docks")
          .set({ ...values, updated_at: now })
          .where("id", "=", id)
          .execute();
        const was = before as Record<string, string | null>;
        const changed = columns.filter((column) => (was[column] ?? null) !== (values[column] ?? null));
        if (by && changed.length > 0)
          await writeAuditBy(tx, id, by, "settings_changed", { fields: changed.join(",") }, now);
        return true;
      });
    } finally {
      // Its inbound format may have changed (even if the commit's answer was lost): the send doors
      // read a body by it.
      this.#verified.forget(id);
    }
  }

  /**
   * Sets who may subscribe to the Dock; its subscribers stay whatever it becomes. The visibility
   * it had, or null when it already was this (or there is no such Dock): nothing changed. A change
   * is written to the audit log, as `by`'s, in its transaction.
   */
  async setVisibility(id: string, visibility: Visibility, by: AuditBy): Promise<Visibility | null> {
    const now = this.#now();
    return this.#db.kysely.transaction().execute(async (tx) => {
      const row = await tx.selectFrom("docks").select("visibility").where("id", "=", id).executeTakeFirst();
      if (row === undefined || row.visibility === visibility) return null;
      const changed = await tx
        .updateTable("docks")
        .set({ visibility, updated_at: now })
        .where("id", "=", id)
        .where("visibility", "=", row.visibility)
        .executeTakeFirst();
      if (changed.numUpdatedRows === 0n) return null;
      await writeAuditBy(tx, id, by, "visibility_changed", { from: row.visibility, to: visibility }, now);
      return row.visibility;
    });
  }

  /**
   * Deletes the Dock with its subscriptions, messages, pending deliveries, activity counts,
   * co-owners, audit log, invite links and join requests. Its active subscribers are told (bot
   * notices queued with the deletion: whatever face deleted it, the service that runs tells them).
   */
  async delete(id: string): Promise<boolean> {
    const now = this.#now();
    try {
      return await this.#db.kysely.transaction().execute(async (tx) => {
        const dock = await tx.selectFrom("docks").select("name").where("id", "=", id).executeTakeFirst();
        if (dock === undefined) return false;
        await queueNoticeToSubscribers(tx, id, { kind: "dock_deleted", dockName: dock.name }, now);
        const result = await tx.deleteFrom("docks").where("id", "=", id).executeTakeFirst();
        // Not by a foreign key's cascade (migrations 0011, 0018 and 0021 say why).
        await tx.deleteFrom("dock_days").where("dock_id", "=", id).execute();
        await tx.deleteFrom("dock_audit").where("dock_id", "=", id).execute();
        await tx.deleteFrom("dock_refusals").where("dock_id", "=", id).execute();
        return result.numDeletedRows > 0n;
      });
    } finally {
      // Even when the commit's answer was lost: the row may have changed.
      this.#verified.forget(id);
    }
  }
}
