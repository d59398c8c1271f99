import type { FastifyReply, FastifyRequest } from "fastify";
import { type MessageContent, OptionsError, prepareContent } from "../../domain/message-options.ts";
import { replacesOnlyOwn, senderOf } from "../../domain/principal.ts";
import { ApiError, fieldsRefused } from "../errors.ts";
import type { Intake } from "../intake.ts";
import type { Authentication } from "./auth.ts";
import { deferredRefusal, placeholderRefusal } from "./auth.ts";
import { checkMessage, idempotencyKeyOf } from "./body.ts";
import type { SendApiOptions } from "./options.ts";
import { signedDeliveryKey } from "./signatures.ts";
import { dockOf } from "./state.ts";

/*
 * The end of every send door: the message its hooks read, stored durably (or refused) within the
 * database's timeout, and the answer — 202 with its ID, or 200 for a tool's payload with nothing
 * to show.
 */

export type Endpoint = "ping" | "webhook" | "hook";

/**
 * The Dock a message is for, and what to check in the storing transaction: /ping's secret key, or
 * a key or hook token a door took on a hint (request.deferred); neither when the door checked.
 */
type Credentials = { dockId: string; secretKey?: string; hookToken?: string };

export interface Acceptance {
  /** Stores the message (checking the secret key too when given) and answers 202. */
  accept(
    request: FastifyRequest,
    reply: FastifyReply,
    credentials: Credentials,
    msg: string,
    endpoint: Endpoint,
  ): Promise<FastifyReply>;
  /** The integration doors' answer, and /webhook's: the message stored, or a payload skipped. */
  sendWebhook(
    request: FastifyRequest,
    reply: FastifyReply,
    endpoint: "webhook" | "hook",
  ): Promise<FastifyReply>;
}

export function acceptance(options: SendApiOptions, auth: Authentication): Acceptance {
  const accept = async (
    request: FastifyRequest,
    reply: FastifyReply,
    credentials: Credentials,
    msg: string,
    endpoint: Endpoint,
  ) => {
    // The body is in: from here the sender is answered within the database's timeout, whatever
    // the database does (waiting for attempts being judged, for earlier batches, for the commit).
    const deadline = performance.now() + options.databaseTimeoutMs;
    const placeholder =
      credentials.secretKey !== undefined && placeholderRefusal(credentials.dockId, credentials.secretKey);
    if (placeholder) throw placeholder;
    // /ping's key (and a secret taken on a hint) is checked with the message, in the storing
    // transaction: its attempt is taken now.
    const attempt =
      credentials.secretKey === undefined && credentials.hookToken === undefined
        ? { right: () => {}, wrong: () => {} }
        : await auth.beginAttempt(request, deadline);
    let content: MessageContent | null = null;
    const given = request.messageOptions;
    // Most messages have no options: they skip the await (the send path runs this per request).
    try {
      if (given !== null && Object.keys(given).length > 0)
        content = await prepareContent(msg, given, options.payloadThread.read);
    } catch (error) {
      // Not a guess at the key: the key was not looked at.
      attempt.right();
      if (error instanceof OptionsError) throw fieldsRefused(error.problems);
      throw error;
    }
    const escalate = content?.options.escalate;
    if (escalate !== undefined && escalate.length > 0) {
      // Only where the Dock's owner may send: checked once the sender is known to be the Dock's (a
      // wrong key goes on to be refused as one, telling nothing of other Docks).
      const known =
        credentials.secretKey !== undefined
          ? (await options.docks.authenticate(credentials.dockId, credentials.secretKey)) !== undefined
          : credentials.hookToken !== undefined
            ? (await options.docks.authenticateHook(credentials.hookToken))?.id === credentials.dockId
            : true;
      if (
        known &&
        !(await options.docks.mayEscalate(
          credentials.dockId,
          escalate.map((step) => step.to),
        ))
      ) {
        attempt.right();
        throw new ApiError("escalation_forbidden");
      }
    }
    let result: Awaited<ReturnType<Intake["accept"]>>;
    try {
      result = await options.intake.accept({
        ...credentials,
        text: msg,
        content,
        ...(request.signedBody === null
          ? { idempotencyKey: idempotencyKeyOf(request) }
          : { idempotencyKey: signedDeliveryKey(request.signedBody), requestHash: request.signedBody }),
        key: request.messageKey,
        final: request.messageFinal,
        ...(request.dock ? { watched: request.dock.watched } : {}),
        ...(request.dock?.principal
          ? { sender: senderOf(request.dock.principal), ownKeysOnly: replacesOnlyOwn(request.dock.principal) }
          : {}),
        deadline,
        source: endpoint,
      });
    } catch (error) {
      // Refused for another reason (the Dock's rate, an outage): the key was right, or never judged.
      attempt.right();
      throw error;
    }
    if (result.kind === "unauthorized") {
      attempt.wrong();
      if (request.deferred === null) throw new ApiError("unauthorized");
      // A secret found right lately, refused now (rotated, or the Dock deleted, maybe by another
      // instance): answered as a wrong one is before its body is read.
      options.docks.forgetVerified(credentials.dockId);
      throw deferredRefusal(request.deferred);
    }
    attempt.right();
    if (result.kind === "replayed") reply.header("Idempotent-Replayed", "true");
    // A send that replaced a message by its key (or a replay of one) says so, with its revision.
    const replaced =
      result.kind === "replaced"
        ? { revision: result.revision, edits: result.edits }
        : result.kind === "replayed"
          ? result.replaced
          : undefined;
    // Context for the request's one log line, written when the response is sent.
    request.logFields = {
      messageId: result.messageId,
      dockId: credentials.dockId,
      subscribers: result.subscribers,
      ...(replaced ? { replaced: true } : {}),
      ...(request.inboundFormat ? { format: request.inboundFormat } : {}),
    };
    return reply.code(202).send({
      ok: true,
      message_id: result.messageId,
      subscribers: result.subscribers,
      ...(replaced ? { replaced: true, ...replaced } : {}),
      ...(request.inboundFormat ? { format: request.inboundFormat } : {}),
    });
  };

  const sendWebhook = async (request: FastifyRequest, reply: FastifyReply, endpoint: "webhook" | "hook") => {
    const skip = request.inboundSkip;
    if (skip !== null) {
      // Nothing to store, so no batch to check a secret taken on a hint: it is checked now, so
      // that a rotated key or token is refused here too ("the hook works" would be a lie).
      const deferred = request.deferred;
      if (deferred !== null) {
        const dockId = dockOf(request).id;
        request.deferred = null;
        await auth.judge(
          request,
          async () => {
            const dock =
              deferred.kind === "key"
                ? await options.docks.authenticate(dockId, deferred.secret)
                : await options.docks.authenticateHook(deferred.secret);
            if (dock === undefined) options.docks.forgetVerified(dockId);
            return dock;
          },
          () => deferredRefusal(deferred),
        );
      }
      request.logFields = {
        dockId: dockOf(request).id,
        format: skip.format,
        skipped: true,
      };
      return reply.code(200).send({ ok: true, skipped: true, format: skip.format, reason: skip.reason });
    }
    const { msg } = request.body as { msg: string };
    checkMessage(msg, options.maxMessageLength);
    const dockId = dockOf(request).id;
    const deferred = request.deferred;
    const credentials: Credentials =
      deferred === null
        ? { dockId }
        : deferred.kind === "key"
          ? { dockId, secretKey: deferred.secret }
          : { dockId, hookToken: deferred.secret };
    return accept(request, reply, credentials, msg, endpoint);
  };

  return { accept, sendWebhook };
}
