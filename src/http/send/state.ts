import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { MessageOptions } from "../../domain/message-options.ts";
import type { DockCredentials } from "../../store/credentials.ts";
import type { InboundSkip } from "../inbound.ts";

/*
 * What a send request carries from its hooks to its handler: who sent it (the authentication
 * hooks), and the message read from its body (the body hooks). A leaf module: the send doors'
 * files all read and write these fields, and none imports another for them.
 */

declare module "fastify" {
  interface FastifyRequest {
    /** The Dock the credentials opened (null until an authentication hook has judged them). */
    dock: DockCredentials | null;
    /**
     * The secret key or hook token, when `dock` came from a recent check of it
     * (DockRepository.recentlyVerified): checked again in the transaction that stores the message.
     * Null: `dock` was judged now.
     */
    deferred: { kind: "key" | "hook"; secret: string } | null;
    /** The message's options, read from the body (and for /webhook the headers and query). */
    messageOptions: MessageOptions | null;
    /** The message's key, if the sender gave one (body, then X-Key header, then ?key=). */
    messageKey: string | null;
    /** PATCH: the options the sender set to null (back to their defaults). */
    clearedOptions: string[] | null;
    /** The message is its key's last (an integration's resolved alert, see AcceptItem.final). */
    messageFinal: boolean;
    /** An integration's payload with nothing to show: answered without storing anything. */
    inboundSkip: InboundSkip | null;
    /** The integration format the body was read as, if any. */
    inboundFormat: string | null;
    /**
     * SHA-256 (hex) of a body whose X-Hub-Signature-256 matched: such a delivery is accepted once
     * (see signedDeliveryKey), null for any other request.
     */
    signedBody: string | null;
  }
}

/** Gives every request the fields above, empty (Fastify keeps one request shape: no field added later). */
export function decorateSendState(app: FastifyInstance): void {
  app.decorateRequest("dock", null);
  app.decorateRequest("deferred", null);
  app.decorateRequest("messageOptions", null);
  app.decorateRequest("messageKey", null);
  app.decorateRequest("clearedOptions", null);
  app.decorateRequest("messageFinal", false);
  app.decorateRequest("inboundSkip", null);
  app.decorateRequest("inboundFormat", null);
  app.decorateRequest("signedBody", null);
}

/**
 * The Dock of a request its route's authentication hook let through. Only handlers and hooks that
 * run after one call it: a request without a Dock here is a route wired wrongly, never a client's
 * mistake.
 */
export function dockOf(request: FastifyRequest): DockCredentials {
  const dock = request.dock;
  if (dock === null)
    throw new Error(`${request.routeOptions.url ?? "a send route"} ran before its authentication`);
  return dock;
}

/**
 * A hook in callback style: /ping runs its hooks thousands of times a second, and an async hook
 * costs a promise and a trip through the microtask queue each time.
 */
export type CallbackHook = (
  request: FastifyRequest,
  reply: FastifyReply,
  done: (error?: Error) => void,
) => void;
