import type { FastifyReply, FastifyRequest, RequestPayload } from "fastify";
import { ApiError } from "./errors.ts";

/*
 * Bodies the service must read before it knows who sent them: GitHub's signed deliveries
 * (X-Hub-Signature-256 signs the body, so the body comes first). Each may be INBOUND_MAX_BODY_BYTES
 * (1 MiB), and 300 connections holding such a body unfinished took the service from 217 to 417 MB.
 * So their bytes are held against one budget across all connections, and a client address may hold
 * only a share of it: a request whose body does not fit is answered 503 `busy` (with Retry-After,
 * and the connection closed) before a byte of its body is read. Requests that authenticate first
 * (HTTP Basic, a hook URL, GitLab's token) never count here.
 */

/** How long a refused sender is asked to wait: bodies in flight finish, or time out, meanwhile. */
const RETRY_AFTER_SECONDS = 5;

export interface BodyBudgetOptions {
  /** Bytes held at once across every connection (UNAUTHENTICATED_BODIES_MAX_BYTES). */
  totalBytes: number;
  /** Bytes one client address may hold at once. */
  perAddressBytes: number;
}

/** Bytes of not-yet-authenticated bodies held at once, in total and per client address. */
export class BodyBudget {
  readonly #options: BodyBudgetOptions;
  #held = 0;
  readonly #byAddress = new Map<string, number>();

  constructor(options: BodyBudgetOptions) {
    this.#options = options;
  }

  /** Bytes held now, across every connection. */
  get held(): number {
    return this.#held;
  }

  /** Holds `bytes` for `address` if both the budget and the address's share have room. */
  reserve(address: string, bytes: number): boolean {
    const mine = this.#byAddress.get(address) ?? 0;
    if (this.#held + bytes > this.#options.totalBytes || mine + bytes > this.#options.perAddressBytes) {
      return false;
    }
    this.#held += bytes;
    this.#byAddress.set(address, mine + bytes);
    return true;
  }

  release(address: string, bytes: number): void {
    this.#held -= bytes;
    const left = (this.#byAddress.get(address) ?? 0) - bytes;
    if (left > 0) this.#byAddress.set(address, left);
    else this.#byAddress.delete(address);
  }

  /**
   * A preParsing hook: for the requests `unauthenticated` picks, the body's declared length (the
   * route's body limit when none is declared, as in a chunked body) is held from before the body
   * is read until the answer is sent or the connection closes.
   */
  hook(unauthenticated: (request: FastifyRequest) => boolean) {
    return (
      request: FastifyRequest,
      reply: FastifyReply,
      payload: RequestPayload,
      done: (error: Error | null, payload?: RequestPayload) => void,
    ): void => {
      if (!unauthenticated(request)) {
        done(null, payload);
        return;
      }
      // A body over the route's limit is refused (413) as it is read: it holds no more than the limit.
      const limit = request.routeOptions.bodyLimit ?? 0;
      const declared = Number(request.headers["content-length"]);
      const bytes = Number.isSafeInteger(declared) && declared >= 0 ? Math.min(declared, limit) : limit;
      const address = request.ip;
      if (!this.reserve(address, bytes)) {
        done(
          new ApiError(
            "busy",
            "The service is reading as many unauthenticated bodies as it holds at once (signed deliveries); try again after Retry-After seconds.",
            { "Retry-After": String(RETRY_AFTER_SECONDS), Connection: "close" },
          ),
        );
        return;
      }
      reply.raw.once("close", () => this.release(address, bytes));
      done(null, payload);
    };
  }
}
