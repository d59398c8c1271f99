import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { MESSAGE_ID_PATTERN } from "../../domain/ids.ts";
import {
  type FormatReader,
  type MessageContent,
  type MessageOptions,
  OptionsError,
  prepareContent,
} from "../../domain/message-options.ts";
import { type CopyChange, changeState } from "../../store/copy-changes.ts";
import type { CurrentMessage } from "../../store/message-changes.ts";
import type { MessageStatus } from "../../store/outbox-views.ts";
import { CURL } from "../api-examples.ts";
import { ApiError, errorAnswer, fieldsRefused } from "../errors.ts";
import { checkMessage, parsePatch } from "./body.ts";
import type { SendDoors } from "./doors.ts";
import { dockOf } from "./state.ts";
import {
  checkedPatchBody,
  deleted,
  deleteErrors,
  editErrors,
  edited,
  keyQuery,
  messageIdParams,
  messageStatus,
  patchBody,
  statusErrors,
} from "./status-schemas.ts";

/*
 * A Dock's messages after they are sent: where each copy stands (GET), edited in place (PATCH),
 * deleted (DELETE). HTTP Basic, by the secret key or a credential that may manage messages.
 */

/**
 * A message's new text and content after a PATCH: `msg` if given, else its text; its options with
 * those given replacing theirs, and those `reset` (given as null, or given as their default) gone.
 */
export async function revisedContent(
  current: CurrentMessage,
  msg: string | undefined,
  given: MessageOptions,
  reset: string[],
  read: FormatReader,
): Promise<{ text: string; content: string | null }> {
  const previous = current.content === null ? {} : (JSON.parse(current.content) as MessageContent).options;
  const options: Record<string, unknown> = { ...previous, ...given };
  for (const name of reset) {
    // `markdown` is another name for the format; the Acknowledge button's label goes with it.
    if (name === "markdown") delete options.format;
    if (name === "ack") {
      delete options.ack_label;
      delete options.remind_every;
      delete options.remind_for;
      delete options.escalate;
    }
    if (!(name in given)) delete options[name];
  }
  const text = msg ?? current.text;
  try {
    const content = await prepareContent(text, options as MessageOptions, read);
    return { text, content: content === null ? null : JSON.stringify(content) };
  } catch (error) {
    if (error instanceof OptionsError) throw fieldsRefused(error.problems);
    throw error;
  }
}

/** The state of a copy's edit or delete as the API names it. */
function changeBody(change: CopyChange | null) {
  if (change === null) return null;
  return {
    state: changeState(change.state),
    outcome: change.outcome,
    last_error: change.lastError,
    updated_at: new Date(change.updatedAt).toISOString(),
  };
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** GET /messages/:id's answer. */
function statusBody(status: MessageStatus) {
  const { counts } = status;
  const state: "pending" | "delivered" | "partially_delivered" | "undelivered" | "no_subscribers" =
    status.subscribers === 0
      ? "no_subscribers"
      : counts.queued > 0
        ? "pending"
        : counts.failed + counts.gone === 0
          ? "delivered"
          : counts.sent > 0
            ? "partially_delivered"
            : "undelivered";
  return {
    id: status.id,
    key: status.key,
    revision: status.revision,
    revised_at: iso(status.revisedAt),
    deleted_at: iso(status.deletedAt),
    acknowledged:
      status.acknowledged === null
        ? null
        : { by: status.acknowledged.by, at: new Date(status.acknowledged.at).toISOString() },
    options: status.content?.options ?? {},
    state,
    created_at: new Date(status.createdAt).toISOString(),
    subscribers: status.subscribers,
    counts,
    changes: status.changes,
    deliveries: status.deliveries.map((d) => ({
      chat_id: d.chatId,
      state: d.state === "sending" ? ("queued" as const) : d.state,
      attempts: d.attempts,
      last_error: d.lastError,
      telegram_message_ids: d.telegramMessageIds,
      updated_at: new Date(d.updatedAt).toISOString(),
      revision: d.revision,
      unknown_attempts: d.unknownAttempts,
      stray_telegram_message_ids: d.strayTelegramMessageIds,
      edit: changeBody(d.edit),
      delete: changeBody(d.delete),
    })),
    events: status.events.map((e) => ({
      type: e.type,
      state: e.state,
      attempts: e.attempts,
      last_error: e.lastError,
      updated_at: new Date(e.updatedAt).toISOString(),
    })),
    reminders: reminderBody(status.reminders),
    escalation: escalationBody(status.escalation),
  };
}

/** Where the message's escalation stands, as GET /messages/:id answers it. */
function escalationBody(escalation: MessageStatus["escalation"]) {
  if (escalation === null) return null;
  return {
    steps: escalation.steps,
    step: escalation.step,
    next_at: iso(escalation.nextAt),
    escalated: escalation.escalated.map((made) => ({
      step: made.step,
      dock_id: made.dockId,
      message_id: made.messageId,
      at: new Date(made.at).toISOString(),
    })),
    from: escalation.from && { message_id: escalation.from.messageId, step: escalation.from.step },
  };
}

/** Where the message's reminders stand, as GET /messages/:id answers it. */
function reminderBody(reminders: MessageStatus["reminders"]) {
  if (reminders === null) return null;
  return {
    every: reminders.every,
    for: reminders.for,
    rounds: reminders.rounds,
    next_at: iso(reminders.nextAt),
    until: iso(reminders.until),
    ended: reminders.ended,
    reminders: reminders.reminders,
    snoozes: reminders.snoozes.map((snooze) => ({
      chat_id: snooze.chatId,
      by: { id: snooze.userId, name: snooze.name },
      until: new Date(snooze.until).toISOString(),
      at: new Date(snooze.at).toISOString(),
      active: snooze.active,
    })),
  };
}

/** The messages' routes (a Fastify plugin, registered by sendApi). */
export async function messageRoutes(app: FastifyInstance, { options, auth }: SendDoors): Promise<void> {
  const server = app.withTypeProvider<TypeBoxTypeProvider>();
  /** Also the answer for the commands' `<MESSAGE_ID>` left in: it says what goes there. */
  const noSuchMessage = (messageId?: string) =>
    new ApiError(
      "not_found",
      messageId === "<MESSAGE_ID>"
        ? "<MESSAGE_ID> is a placeholder: put in the message_id a send answered (the console shows each message's ID under Messages)."
        : "No message with this ID for this Dock.",
    );

  /** The Dock's message named in the path (another Dock's is answered exactly like a missing one). */
  const statusOf = async (request: FastifyRequest, messageId: string) => {
    if (!MESSAGE_ID_PATTERN.test(messageId)) throw noSuchMessage(messageId);
    const status = await options.views.status(messageId, dockOf(request).id);
    if (!status) throw noSuchMessage();
    return { ok: true as const, message: statusBody(status) };
  };

  server.get(
    "/messages/:message_id",
    {
      schema: {
        summary: "A message's delivery state (credentials in HTTP Basic authentication, as for /webhook)",
        description:
          "Where each subscriber's copy stands (queued, sent, failed, gone, with Telegram's error), its edits and deletion, its acknowledgement, and the events sent to the Dock's callback URL. A message is kept RETENTION_DAYS.",
        tags: ["Messages"],
        curl: CURL.messageStatus,
        security: [{ basic: [] }],
        params: messageIdParams,
        documented: { response: { 200: messageStatus, ...statusErrors } },
      },
      config: { securityHeaders: "api" },
      onRequest: auth.manageAuth,
    },
    async (request) => statusOf(request, request.params.message_id),
  );

  server.get(
    "/messages",
    {
      schema: {
        summary: "Find the message that holds a key (credentials in HTTP Basic authentication)",
        description:
          "The Dock's message (not deleted) that was sent, or last replaced, with this `key`; answered as `GET /messages/{message_id}`.",
        tags: ["Messages"],
        curl: CURL.messageByKey,
        security: [{ basic: [] }],
        querystring: keyQuery,
        documented: {
          response: {
            200: messageStatus,
            ...statusErrors,
            400: errorAnswer("No key, or one over 128 characters.", "invalid_request"),
            404: errorAnswer("No message of this Dock holds the key.", "not_found"),
          },
        },
      },
      config: { securityHeaders: "api" },
      onRequest: auth.manageAuth,
    },
    async (request) => {
      // PostgreSQL text cannot hold NUL: no message holds such a key.
      const key = request.query.key;
      const id = key.includes("\u0000") ? undefined : await options.changes.byKey(dockOf(request).id, key);
      if (id === undefined) throw new ApiError("not_found", "No message of this Dock holds this key.");
      return statusOf(request, id);
    },
  );

  server.patch(
    "/messages/:message_id",
    {
      schema: {
        summary: "Edit a message: every copy already sent is edited in place",
        description:
          "Credentials as for /webhook. Any of `msg` and the options; those left out keep their values, and null sets one back to its default. Copies already sent are edited (a text that now needs more or fewer parts gains or loses messages), copies not sent yet go out in the new form. A copy Telegram can no longer edit (the person deleted it) is sent anew, and its `edit.outcome` says `resent`.",
        tags: ["Messages"],
        curl: CURL.editMessage,
        security: [{ basic: [] }],
        params: messageIdParams,
        body: checkedPatchBody,
        documented: { body: patchBody },
        response: { 202: edited, ...editErrors },
      },
      config: { securityHeaders: "api" },
      onRequest: auth.manageAuth,
      preValidation: parsePatch,
    },
    async (request, reply) => {
      const messageId = request.params.message_id;
      if (!MESSAGE_ID_PATTERN.test(messageId)) throw noSuchMessage(messageId);
      const given = request.body.msg;
      if (given !== undefined) checkMessage(given, options.maxMessageLength);
      const patchOptions = request.messageOptions ?? {};
      if (
        given === undefined &&
        Object.keys(patchOptions).length === 0 &&
        (request.clearedOptions ?? []).length === 0
      ) {
        throw new ApiError(
          "invalid_request",
          "Nothing to change: give msg, or an option (null sets one back to its default).",
        );
      }
      const steps = patchOptions.escalate;
      if (
        steps !== undefined &&
        !(await options.docks.mayEscalate(
          dockOf(request).id,
          steps.map((step) => step.to),
        ))
      )
        throw new ApiError("escalation_forbidden");
      const result = await options.changes.revise(dockOf(request).id, messageId, async (current) => {
        // A step's message is part of another's escalation: it does not start one of its own.
        if (steps !== undefined && current.escalatedFrom !== null) throw new ApiError("escalation_forbidden");
        return revisedContent(
          current,
          given,
          patchOptions,
          request.clearedOptions ?? [],
          options.payloadThread.read,
        );
      });
      if (result.kind === "missing") throw noSuchMessage();
      if (result.kind === "deleted") throw new ApiError("message_deleted");
      request.logFields = { messageId, dockId: dockOf(request).id, revision: result.revision };
      return reply.code(202).send({
        ok: true as const,
        message_id: messageId,
        revision: result.revision,
        edits: result.edits,
        queued: result.queued,
      });
    },
  );

  server.delete(
    "/messages/:message_id",
    {
      schema: {
        summary: "Delete a message: every copy Telegram still lets the bot delete",
        description:
          "Credentials as for /webhook. Copies sent are deleted (Telegram lets a bot delete only messages under 48 hours old: the status says per copy what could not be deleted and why), copies not sent yet never are. The message's key is free again. Deleting it again answers the same, with nothing more to do.",
        tags: ["Messages"],
        curl: CURL.deleteMessage,
        security: [{ basic: [] }],
        params: messageIdParams,
        response: { 202: deleted, ...deleteErrors },
      },
      config: { securityHeaders: "api" },
      onRequest: auth.manageAuth,
    },
    async (request, reply) => {
      const messageId = request.params.message_id;
      if (!MESSAGE_ID_PATTERN.test(messageId)) throw noSuchMessage(messageId);
      const result = await options.changes.delete(dockOf(request).id, messageId);
      if (result.kind === "missing") throw noSuchMessage();
      request.logFields = { messageId, dockId: dockOf(request).id };
      if (result.kind === "already_deleted") {
        return reply.code(202).send({
          ok: true as const,
          message_id: messageId,
          deleting: 0,
          cancelled: 0,
          already_deleted: true,
        });
      }
      return reply.code(202).send({
        ok: true as const,
        message_id: messageId,
        deleting: result.deleting,
        cancelled: result.cancelled,
        already_deleted: false,
      });
    },
  );
}
