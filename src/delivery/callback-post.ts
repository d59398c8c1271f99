import { lookup } from "node:dns/promises";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP, type LookupFunction } from "node:net";
import type { CallbackTargets } from "../domain/callback-target.ts";

/** Resolves a host name to its addresses. */
export type HostResolver = (hostname: string) => Promise<{ address: string; family: number }[]>;

/** The system's resolver (hosts file, DNS), as any other client on the machine would use. */
export const systemResolver: HostResolver = (hostname) => lookup(hostname, { all: true, order: "verbatim" });

/** How a post to a callback URL went. `internal`: it went to a non-public address the operator allows. */
export type PostOutcome =
  | { kind: "answered"; status: number; internal: boolean }
  /** No address of the host may be reached: nothing was connected to. */
  | { kind: "refused"; address: string; reason: string; named: boolean }
  /** The name did not resolve, or no connection (or no HTTP answer) came of it; `code` is Node's. */
  | { kind: "unreachable"; code: string | null; internal: boolean }
  | { kind: "timeout"; internal: boolean }
  /** `stop` was aborted first: nobody knows whether the receiver took it. */
  | { kind: "stopped" };

export interface CallbackPost {
  url: string;
  body: string;
  headers: Record<string, string>;
  /** For the whole post: resolving, connecting and the answer's status line. */
  timeoutMs: number;
  targets: CallbackTargets;
  resolve: HostResolver;
  /** Aborted when the service stops: a receiver that hangs must not hold up a shutdown. */
  stop: AbortSignal;
}

/** A lookup that answers with the addresses already checked, whatever it is asked. */
function pinned(addresses: { address: string; family: number }[]): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all) callback(null, addresses);
    else callback(null, addresses[0]?.address ?? "", addresses[0]?.family ?? 4);
  };
}

function codeOf(error: unknown): string | null {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^[A-Z][A-Z0-9_]{1,39}$/.test(code) ? code : null;
}

/**
 * POSTs one event to a callback URL, connecting only to an address `targets` allows: the host
 * is resolved here, every address judged, and the connection made to the allowed ones (a pinned
 * lookup), so a name cannot answer one address to the check and another to the connection (DNS
 * rebinding). Every post resolves and judges again. A redirect is an answer like any other, not
 * followed; the answer's body is not read.
 */
export async function postCallback(post: CallbackPost): Promise<PostOutcome> {
  const url = new URL(post.url);
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  const deadline = AbortSignal.any([AbortSignal.timeout(post.timeoutMs), post.stop]);
  const ended = (internal: boolean): PostOutcome =>
    post.stop.aborted ? { kind: "stopped" } : { kind: "timeout", internal };
  let addresses: { address: string; family: number }[];
  if (isIP(host) !== 0) {
    addresses = [{ address: host, family: isIP(host) }];
  } else {
    try {
      addresses = await Promise.race([
        post.resolve(host),
        new Promise<never>((_resolve, reject) =>
          deadline.addEventListener("abort", () => reject(deadline.reason), { once: true }),
        ),
      ]);
    } catch (error) {
      if (deadline.aborted) return ended(false);
      return { kind: "unreachable", code: codeOf(error) ?? "ENOTFOUND", internal: false };
    }
    if (addresses.length === 0) return { kind: "unreachable", code: "ENOTFOUND", internal: false };
  }
  const allowed = addresses.filter(({ address }) => post.targets.judge(address).allowed);
  if (allowed.length === 0) {
    const address = (addresses[0] as { address: string }).address;
    const verdict = post.targets.judge(address);
    return {
      kind: "refused",
      address,
      reason: verdict.allowed ? "not allowed" : verdict.reason,
      named: isIP(host) === 0,
    };
  }
  const internal = allowed.some(({ address }) => post.targets.internal(address));
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise<PostOutcome>((resolve) => {
    const request = send(
      url,
      {
        method: "POST",
        headers: { ...post.headers, "content-length": String(Buffer.byteLength(post.body)) },
        // A connection of its own to the address just checked: never a pooled one.
        agent: false,
        // Node tries each of them in turn (autoSelectFamily, its default) as it would a name's.
        lookup: pinned(allowed),
        signal: deadline,
      },
      (response) => {
        resolve({ kind: "answered", status: response.statusCode ?? 0, internal });
        response.destroy();
      },
    );
    request.on("error", (error) => {
      resolve(deadline.aborted ? ended(internal) : { kind: "unreachable", code: codeOf(error), internal });
    });
    request.end(post.body);
  });
}
