import type { Kysely } from "kysely";

/**
 * How a message is shown when it is more than its text (title, format, priority, tags, buttons):
 * JSON of domain/message-options.ts's MessageContent, decided when the message was accepted.
 * Null for a plain message, as every message before this migration was.
 */
export function messageContent() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema.alterTable("messages").addColumn("content", "text").execute();
    },
  };
}
