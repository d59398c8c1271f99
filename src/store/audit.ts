import type { Kysely } from "kysely";
import { type AuditAction, type AuditEntry, type AuditSink, cleanDetail } from "../domain/audit.ts";
import type { Db } from "./db.ts";
import type { Database } from "./schema.ts";

/** Audit entries per page: 50 unless asked, at most 200. */
export const AUDIT_PAGE = { default: 50, max: 200 } as const;

/** One entry as the console and the command line show it. */
export interface AuditLine {
  id: number;
  at: number;
  /** Who did it, with their names as the bot last saw them; null: the command line or the service. */
  actor: { id: number; firstName: string | null; username: string | null } | null;
  action: string;
  detail: Record<string, string | number | boolean | null>;
}

/** A page of a Dock's audit log, newest first; `nextBefore`: the id to ask the next page with. */
export interface AuditPage {
  entries: AuditLine[];
  nextBefore: number | null;
  /**
   * The names, as the bot last saw them, of the people the entries' details name (`user`,
   * `invited_by`, an owner change's `from` and `to`, and the `chat_id` of a subscriber removed,
   * banned or asking, when the chat is a person's), by their Telegram id.
   */
  people: Map<number, { firstName: string | null; username: string | null }>;
  /** The titles, as the bot last saw them, of the groups the entries' `chat_id` name, by chat id. */
  groups: Map<number, string>;
}

/** The detail fields that hold a Telegram user id. */
const PERSON_FIELDS = ["user", "invited_by", "from", "to", "chat_id"];

/**
 * Who makes a change that the Dock's audit log records: a signed-in person (their Telegram id), or
 * `null`, the operator's command line (the only one that changes a Dock without being signed in;
 * its entries say `via: cli`). A store method given one writes the entry in its own transaction.
 */
export interface AuditBy {
  actor: number | null;
}

/** Writes the entry of a change `by` made to Dock `dockId`, in `db` (the change's transaction). */
export function writeAuditBy(
  db: Kysely<Database>,
  dockId: string,
  by: AuditBy,
  action: AuditAction,
  detail: AuditEntry["detail"],
  at: number,
): Promise<void> {
  return writeAudit(
    db,
    { dockId, actor: by.actor, action, detail: { ...detail, ...(by.actor === null ? { via: "cli" } : {}) } },
    at,
  );
}

/**
 * Writes one entry in `db` (a transaction, when the action is one: the entry commits with it).
 * Its detail is cleaned of anything shaped like a secret (domain/audit.ts).
 */
export async function writeAudit(db: Kysely<Database>, entry: AuditEntry, at: number): Promise<void> {
  const detail = cleanDetail(entry.detail);
  await db
    .insertInto("dock_audit")
    .values({
      dock_id: entry.dockId,
      at,
      actor: entry.actor,
      action: entry.action,
      detail: detail === undefined || Object.keys(detail).length === 0 ? null : JSON.stringify(detail),
    })
    .execute();
}

/**
 * Each Dock's audit log (migration 0018): what its owners, co-owners and the operator did to it.
 * Entries are kept as long as RETENTION_DAYS keeps messages (Retention prunes both), and go with
 * the Dock when it is deleted.
 */
export class DockAudit implements AuditSink {
  readonly #db: Db;
  readonly #now: () => number;

  constructor(db: Db, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
  }

  async record(entry: AuditEntry): Promise<void> {
    await writeAudit(this.#db.kysely, entry, this.#now());
  }

  /** A page of the Dock's entries, newest first, older than the entry `before` when given. */
  async page(dockId: string, options: { limit: number; before?: number | undefined }): Promise<AuditPage> {
    let query = this.#db.kysely
      .selectFrom("dock_audit")
      .leftJoin("users", "users.telegram_id", "dock_audit.actor")
      .select([
        "dock_audit.id",
        "dock_audit.at",
        "dock_audit.actor",
        "dock_audit.action",
        "dock_audit.detail",
        "users.first_name",
        "users.username",
      ])
      .where("dock_audit.dock_id", "=", dockId)
      .orderBy("dock_audit.id", "desc")
      .limit(options.limit + 1);
    if (options.before !== undefined) query = query.where("dock_audit.id", "<", options.before);
    const rows = await query.execute();
    const entries = rows.slice(0, options.limit).map(
      (row): AuditLine => ({
        id: Number(row.id),
        at: Number(row.at),
        actor:
          row.actor === null
            ? null
            : { id: Number(row.actor), firstName: row.first_name ?? null, username: row.username ?? null },
        action: row.action,
        detail: row.detail === null ? {} : (JSON.parse(row.detail) as AuditLine["detail"]),
      }),
    );
    const last = entries.at(-1);
    return {
      entries,
      nextBefore: rows.length > options.limit && last ? last.id : null,
      people: await this.#people(entries),
      groups: await this.#groups(entries),
    };
  }

  async #people(entries: AuditLine[]): Promise<AuditPage["people"]> {
    const ids = new Set<number>();
    for (const entry of entries) {
      for (const field of PERSON_FIELDS) {
        const value = entry.detail[field];
        // `from` and `to` of a role change are roles, not people; a group's chat id is below zero.
        if (typeof value === "number" && Number.isSafeInteger(value) && value > 0) ids.add(value);
      }
    }
    if (ids.size === 0) return new Map();
    const rows = await this.#db.kysely
      .selectFrom("users")
      .select(["telegram_id", "first_name", "username"])
      .where("telegram_id", "in", [...ids])
      .execute();
    return new Map(
      rows.map((row) => [Number(row.telegram_id), { firstName: row.first_name, username: row.username }]),
    );
  }

  async #groups(entries: AuditLine[]): Promise<AuditPage["groups"]> {
    // A group's (or channel's) chat id is below zero; a person's is their Telegram id.
    const ids = new Set(
      entries
        .map((entry) => entry.detail.chat_id)
        .filter((id): id is number => typeof id === "number" && Number.isSafeInteger(id) && id < 0),
    );
    if (ids.size === 0) return new Map();
    const rows = await this.#db.kysely
      .selectFrom("chats")
      .select(["chat_id", "title"])
      .where("chat_id", "in", [...ids])
      .execute();
    return new Map(rows.map((row) => [Number(row.chat_id), row.title]));
  }

  /** Deletes the entries written before `olderThan`; returns how many. */
  async prune(olderThan: number): Promise<number> {
    const result = await this.#db.kysely
      .deleteFrom("dock_audit")
      .where("at", "<", olderThan)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
