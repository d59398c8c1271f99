import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { MESSAGE_ID_PATTERN } from "../../domain/ids.ts";
import type { FormatReader } from "../../domain/message-options.ts";
import type { CoOwnerRepository } from "../../store/co-owners.ts";
import type { DockRepository } from "../../store/docks.ts";
import type { MessageChanges } from "../../store/message-changes.ts";
import type { SessionRepository } from "../../store/sessions.ts";
import { ApiError } from "../errors.ts";
import { checkMessage } from "../send/body.ts";
import { revisedContent } from "../send/messages.ts";
import { requireSession } from "../session.ts";
import { dockAccess } from "./dock-access.ts";
import {
  type MessageDeletedAnswer,
  type MessageEditedAnswer,
  messageEditBody,
  messageParams,
} from "./schemas.ts";

export interface MessageChangeRoutesOptions {
  docks: DockRepository;
  coOwners: CoOwnerRepository;
  sessions: SessionRepository;
  /** Edits and deletions of messages: the send API's PATCH and DELETE go through it too. */
  changes: MessageChanges;
  /** Reads a message's format (Markdown, HTML) off the event loop, as the send API's edit does. */
  readFormat: FormatReader;
  maxMessageLength: number;
}

const noSuchMessage = () => new ApiError("not_found", "No such message.");

/**
 * A sent message edited or deleted from the console's message history (issue 37), by a role that
 * may send (owners and editors): the same change the send API's PATCH and DELETE make — every copy
 * edited or deleted in its chat, paced with everything the bot sends — and written to the Dock's
 * audit log in the change's transaction, with the message's id and not its text.
 */
export async function messageChanges(
  app: FastifyInstance,
  options: MessageChangeRoutesOptions,
): Promise<void> {
  const routes = app.withTypeProvider<TypeBoxTypeProvider>();
  app.addHook("preHandler", async (request) => {
    request.signedIn = await requireSession(request, options.sessions);
  });
  const dockFor = dockAccess(options.docks, options.coOwners);

  routes.patch(
    "/docks/:id/messages/:messageId",
    { schema: { params: messageParams, body: messageEditBody } },
    async (request, reply) => {
      const { dock } = await dockFor(request, request.params.id, "send");
      const { messageId } = request.params;
      if (!MESSAGE_ID_PATTERN.test(messageId)) throw noSuchMessage();
      const { text } = request.body;
      checkMessage(text, options.maxMessageLength);
      const by = { actor: (request.signedIn as NonNullable<typeof request.signedIn>).user.id };
      // Only the text changes: its options (title, buttons, format…) stay as the sender set them.
      const result = await options.changes.revise(
        dock.id,
        messageId,
        (current) => revisedContent(current, text, {}, [], options.readFormat),
        by,
      );
      if (result.kind === "missing") throw noSuchMessage();
      if (result.kind === "deleted") throw new ApiError("message_deleted");
      return reply.code(202).send({
        ok: true,
        message_id: messageId,
        revision: result.revision,
        edits: result.edits,
        queued: result.queued,
      } satisfies MessageEditedAnswer);
    },
  );

  routes.delete(
    "/docks/:id/messages/:messageId",
    { schema: { params: messageParams } },
    async (request, reply) => {
      const { dock } = await dockFor(request, request.params.id, "send");
      const { messageId } = request.params;
      if (!MESSAGE_ID_PATTERN.test(messageId)) throw noSuchMessage();
      const by = { actor: (request.signedIn as NonNullable<typeof request.signedIn>).user.id };
      const result = await options.changes.delete(dock.id, messageId, by);
      if (result.kind === "missing") throw noSuchMessage();
      return reply.code(202).send({
        ok: true,
        message_id: messageId,
        deleting: result.kind === "deleted" ? result.deleting : 0,
        cancelled: result.kind === "deleted" ? result.cancelled : 0,
        already_deleted: result.kind === "already_deleted",
      } satisfies MessageDeletedAnswer);
    },
  );
}
