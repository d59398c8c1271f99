import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { ApiError } from "./errors.ts";

/**
 * Errors that happen before a request reaches a route, answered like every other error: in the
 * catalogue's format, with the headers every JSON answer gets (`apiHeaders`), instead of Fastify's
 * and Node's own bodies.
 */

/** What Node reports on the connection (the request could not even be read), as the client sees it. */
function clientError(error: Error & { code?: string }): ApiError | null {
  switch (error.code) {
    case "ECONNRESET":
      return null;
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return new ApiError("request_timeout");
    case "HPE_HEADER_OVERFLOW":
      return new ApiError("headers_too_large");
    default:
      return new ApiError("invalid_request", "The request is not valid HTTP.");
  }
}

/**
 * Fastify's `clientErrorHandler`: the request could not be read at all (it took longer than
 * REQUEST_TIMEOUT_SECONDS to arrive, its headers are too large, it is not HTTP). The answer is
 * written on the socket by hand — no request exists to reply through — and the connection closed.
 */
export function clientErrorHandler(headers: Record<string, string>, onRefused: (code: string) => void) {
  return (error: Error & { code?: string }, socket: Socket): void => {
    const refusal = clientError(error);
    if (refusal === null || socket.destroyed) return;
    onRefused(refusal.code);
    if (socket.writable) {
      const body = JSON.stringify(refusal.body);
      const lines = [
        `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status] ?? ""}`,
        "content-type: application/json; charset=utf-8",
        `content-length: ${Buffer.byteLength(body)}`,
        "connection: close",
        ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
      ];
      socket.end(`${lines.join("\r\n")}\r\n\r\n${body}`);
    }
    socket.destroy();
  };
}

/**
 * Fastify's `frameworkErrors`: a URL it cannot decode (`/%`), a parameter too long. Answered as a
 * client's mistake, in the catalogue's format.
 */
export function frameworkErrors(headers: Record<string, string>) {
  return (_error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void => {
    const refusal = new ApiError("invalid_request", "The URL is not valid.");
    void reply.code(refusal.status).headers(headers).send(refusal.body);
  };
}
