import { createHash } from "node:crypto";
import { sql } from "kysely";
import { newMessageId } from "../domain/ids.ts";
import type { Db } from "./db.ts";

/** How long an `Idempotency-Key` protects against a repeated send. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

export type AcceptResult =
  | { kind: "accepted"; messageId: string; subscribers: number }
  | { kind: "replayed"; messageId: string; subscribers: number }
  | { kind: "conflict" };

export interface AcceptInput {
  dockId: string;
  text: string;
  idempotencyKey?: string | undefined;
}

function requestHash(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** Accepted messages and their outbox of deliveries. */
export class MessageRepository {
  readonly #db: Db;
  readonly #now: () => number;

  constructor(db: Db, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
  }

  /**
   * Stores the message and one queued delivery per active subscriber in one transaction. When this
   * resolves the message is committed: a crash afterwards cannot lose it.
   */
  async accept(input: AcceptInput): Promise<AcceptResult> {
    const hash = input.idempotencyKey === undefined ? null : requestHash(input.text);
    try {
      return await this.#acceptOnce(input, hash);
    } catch (error) {
      // Two requests with the same key raced and the other one committed first: answer as a replay.
      if (input.idempotencyKey !== undefined && isUniqueViolation(error))
        return this.#acceptOnce(input, hash);
      throw error;
    }
  }

  async #acceptOnce(input: AcceptInput, hash: string | null): Promise<AcceptResult> {
    const now = this.#now();
    return this.#db.kysely.transaction().execute(async (tx) => {
      if (input.idempotencyKey !== undefined) {
        const earlier = await tx
          .selectFrom("messages")
          .select(["id", "subscribers", "request_hash", "created_at"])
          .where("dock_id", "=", input.dockId)
          .where("idempotency_key", "=", input.idempotencyKey)
          .executeTakeFirst();
        if (earlier && earlier.created_at > now - IDEMPOTENCY_WINDOW_MS) {
          if (earlier.request_hash !== hash) return { kind: "conflict" } as const;
          return { kind: "replayed", messageId: earlier.id, subscribers: earlier.subscribers } as const;
        }
        if (earlier) {
          // The window has passed: the key is free again.
          await tx
            .updateTable("messages")
            .set({ idempotency_key: null })
            .where("id", "=", earlier.id)
            .execute();
        }
      }

      const messageId = newMessageId();
      await tx
        .insertInto("messages")
        .values({
          id: messageId,
          dock_id: input.dockId,
          text: input.text,
          subscribers: 0,
          idempotency_key: input.idempotencyKey ?? null,
          request_hash: hash,
          created_at: now,
        })
        .execute();
      const inserted = await tx
        .insertInto("deliveries")
        .columns(["message_id", "dock_id", "chat_id", "state", "next_attempt_at", "created_at", "updated_at"])
        .expression(
          tx
            .selectFrom("subscriptions")
            .select([
              // Typed casts: PostgreSQL cannot infer a parameter's type from an INSERT … SELECT list.
              sql<string>`cast(${messageId} as text)`.as("message_id"),
              "subscriptions.dock_id",
              "subscriptions.chat_id",
              sql<"queued">`cast(${"queued"} as text)`.as("state"),
              sql<number>`cast(${now} as bigint)`.as("next_attempt_at"),
              sql<number>`cast(${now} as bigint)`.as("created_at"),
              sql<number>`cast(${now} as bigint)`.as("updated_at"),
            ])
            .where("subscriptions.dock_id", "=", input.dockId)
            .where("subscriptions.state", "=", "active")
            .orderBy("subscriptions.id"),
        )
        .executeTakeFirst();
      const subscribers = Number(inserted.numInsertedOrUpdatedRows ?? 0n);
      if (subscribers > 0) {
        await tx.updateTable("messages").set({ subscribers }).where("id", "=", messageId).execute();
      }
      return { kind: "accepted", messageId, subscribers } as const;
    });
  }

  async get(id: string) {
    return this.#db.kysely.selectFrom("messages").selectAll().where("id", "=", id).executeTakeFirst();
  }
}

function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: string; errcode?: number; message?: string };
  // PostgreSQL: SQLSTATE 23505; node:sqlite: SQLITE_CONSTRAINT_UNIQUE (2067).
  return e?.code === "23505" || e?.errcode === 2067 || /UNIQUE constraint failed/.test(e?.message ?? "");
}
