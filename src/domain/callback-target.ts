import { BlockList, isIP } from "node:net";

/*
 * Which addresses a Dock's callback URL may reach. The service posts events from inside the
 * operator's network, and a Dock's owner chooses where: without a rule, a callback URL reaches
 * the machine itself, its neighbours and the cloud's metadata service, and the event's last error
 * tells a closed port from an open one (a port scanner). So only public addresses are allowed,
 * and CALLBACK_ALLOWED_NETWORKS names the private ones an operator's receivers live in.
 *
 * The ranges are IANA's special-purpose registries, IPv4 and IPv6, with the reason an owner is
 * told. IPv6 forms that carry an IPv4 address (mapped, NAT64, 6to4) are judged by that address:
 * `::ffff:127.0.0.1` is loopback.
 */

const V4: readonly (readonly [network: string, prefix: number, reason: string])[] = [
  ["0.0.0.0", 8, "unspecified address"],
  ["10.0.0.0", 8, "private network"],
  ["100.64.0.0", 10, "shared address space (carrier-grade NAT)"],
  ["127.0.0.0", 8, "loopback"],
  ["169.254.0.0", 16, "link-local"],
  ["172.16.0.0", 12, "private network"],
  ["192.0.0.0", 24, "reserved"],
  ["192.0.2.0", 24, "documentation range"],
  ["192.88.99.0", 24, "reserved"],
  ["192.168.0.0", 16, "private network"],
  ["198.18.0.0", 15, "benchmarking range"],
  ["198.51.100.0", 24, "documentation range"],
  ["203.0.113.0", 24, "documentation range"],
  ["224.0.0.0", 4, "multicast"],
  ["255.255.255.255", 32, "broadcast"],
  ["240.0.0.0", 4, "reserved"],
];

const V6: readonly (readonly [network: string, prefix: number, reason: string])[] = [
  ["::", 128, "unspecified address"],
  ["::1", 128, "loopback"],
  // IPv4-compatible addresses (deprecated) and everything else below 2000::/3 but the forms
  // that carry an IPv4 address, judged apart.
  ["::", 96, "reserved"],
  ["64:ff9b:1::", 48, "reserved (local-use NAT64)"],
  ["100::", 64, "reserved (discard-only)"],
  ["fc00::", 7, "private network (unique local)"],
  ["fe80::", 10, "link-local"],
  ["fec0::", 10, "private network (site-local)"],
  ["ff00::", 8, "multicast"],
  // Teredo, ORCHID, benchmarking and the other IETF protocol assignments.
  ["2001::", 23, "reserved"],
  ["2001:db8::", 32, "documentation range"],
  ["3fff::", 20, "documentation range"],
];

/** Global unicast IPv6: anything outside it (and not a form carrying IPv4) is reserved. */
const GLOBAL_V6 = ["2000::", 3] as const;

/** IPv6 prefixes whose last or inner 32 bits are an IPv4 address: [network, prefix, words holding it]. */
const EMBEDDING: readonly (readonly [network: string, prefix: number, at: number])[] = [
  ["::ffff:0:0", 96, 6], // IPv4-mapped
  ["::ffff:0:0:0", 96, 6], // IPv4-translated (SIIT)
  ["64:ff9b::", 96, 6], // NAT64
  ["2002::", 16, 1], // 6to4
];

function rangeList(family: "ipv4" | "ipv6", network: string, prefix: number): BlockList {
  const list = new BlockList();
  list.addSubnet(network, prefix, family);
  return list;
}

const V4_RANGES = V4.map(([network, prefix, reason]) => ({
  list: rangeList("ipv4", network, prefix),
  reason,
}));
const V6_RANGES = V6.map(([network, prefix, reason]) => ({
  list: rangeList("ipv6", network, prefix),
  reason,
}));
const GLOBAL = rangeList("ipv6", ...GLOBAL_V6);
const EMBEDDINGS = EMBEDDING.map(([network, prefix, at]) => ({
  list: rangeList("ipv6", network, prefix),
  at,
}));

/** The eight 16-bit words of an IPv6 address (`::` expanded, a dotted tail read), or null. */
function ipv6Words(address: string): number[] | null {
  let canonical: string;
  try {
    // The URL parser writes any IPv6 form canonically, a dotted IPv4 tail as two hex words.
    canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  } catch {
    return null;
  }
  const [head = "", tail] = canonical.split("::");
  const part = (text: string) =>
    text === "" ? [] : text.split(":").map((word) => Number.parseInt(word, 16));
  const left = part(head);
  const right = tail === undefined ? [] : part(tail);
  const words = [...left, ...new Array(8 - left.length - right.length).fill(0), ...right];
  return words.length === 8 ? words : null;
}

/** The IPv4 address an IPv6 address carries (mapped, NAT64, 6to4), or null. */
export function embeddedIpv4(address: string): string | null {
  if (isIP(address) !== 6) return null;
  const embedding = EMBEDDINGS.find(({ list }) => list.check(address, "ipv6"));
  const words = embedding === undefined ? null : ipv6Words(address);
  if (embedding === undefined || words === null) return null;
  const high = words[embedding.at] as number;
  const low = words[embedding.at + 1] as number;
  return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
}

/** Why an address is not a public one, or null when it is. */
export function specialUse(address: string): string | null {
  const family = isIP(address);
  if (family === 4) return V4_RANGES.find(({ list }) => list.check(address, "ipv4"))?.reason ?? null;
  if (family !== 6) return "not an IP address";
  const inner = embeddedIpv4(address);
  if (inner !== null) return specialUse(inner);
  const known = V6_RANGES.find(({ list }) => list.check(address, "ipv6"))?.reason;
  if (known !== undefined) return known;
  return GLOBAL.check(address, "ipv6") ? null : "reserved";
}

export type Verdict = { allowed: true } | { allowed: false; reason: string };

/**
 * The rule for callback addresses: public addresses, and any inside the operator's allowed
 * networks (CALLBACK_ALLOWED_NETWORKS, CIDRs). Judged where it counts — on the address the sender
 * is about to connect to — and, for an address written in the URL, when the URL is set.
 */
export class CallbackTargets {
  readonly #allowed = new BlockList();
  readonly #any: boolean;

  /** `allowedNetworks`: CIDRs (`10.1.2.0/24`, `fd00::/8`) or single addresses, already validated. */
  constructor(allowedNetworks: readonly string[]) {
    for (const entry of allowedNetworks) {
      const [address = "", prefix] = entry.split("/");
      const family = isIP(address) === 6 ? "ipv6" : "ipv4";
      const bits = prefix === undefined ? (family === "ipv6" ? 128 : 32) : Number(prefix);
      this.#allowed.addSubnet(address, bits, family);
    }
    this.#any = allowedNetworks.length > 0;
  }

  /** Whether the sender may connect to this IP address, and if not, why. */
  judge(address: string): Verdict {
    const reason = specialUse(address);
    if (reason === null || this.#inAllowed(address)) return { allowed: true };
    return { allowed: false, reason };
  }

  /**
   * Whether the address, though allowed, is a special-use one the operator let through: what
   * goes wrong posting there is the operator's business (the log), not a Dock owner's to map.
   */
  internal(address: string): boolean {
    return specialUse(address) !== null;
  }

  /**
   * The verdict on a URL's host known without asking DNS: an IP address, or `localhost` (a
   * loopback name everywhere, RFC 6761). Null for any other name: judged on each address it
   * resolves to when an event is posted.
   */
  judgeHost(hostname: string): Verdict | null {
    const host = hostname
      .replace(/^\[(.*)\]$/, "$1")
      .replace(/\.$/, "")
      .toLowerCase();
    if (isIP(host) !== 0) return this.judge(host);
    if (host === "localhost" || host.endsWith(".localhost")) {
      return this.judge("127.0.0.1").allowed ? { allowed: true } : this.judge("::1");
    }
    return null;
  }

  #inAllowed(address: string): boolean {
    if (!this.#any) return false;
    const family = isIP(address) === 6 ? "ipv6" : "ipv4";
    // BlockList matches an IPv4-mapped address against IPv4 networks itself.
    return this.#allowed.check(address, family);
  }
}
