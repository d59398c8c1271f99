import { isIP } from "node:net";
import { isAbsolute, resolve } from "node:path";
import { JOIN_REQUEST_TTL_DAYS } from "../domain/audience.ts";
import type { OwnersSetting } from "../domain/owners.ts";
import { telegramUserId } from "../domain/telegram-identity.ts";
import { SANDBOX_BOT_TOKEN } from "../telegram/sandbox-bot.ts";

/** Every setting of the service, read once from the environment and validated. */
export interface Config {
  port: number;
  host: string;
  /** External base URL, without a trailing slash; used in every link the service produces. */
  publicUrl: string;
  /**
   * Host names the console, the sandbox and the API reference answer to besides PUBLIC_URL's and
   * the loopback names; "any" switches the check off.
   */
  allowedHosts: string[] | "any";
  databaseUrl: string;
  /** PostgreSQL: how long connecting, waiting for a connection and one statement may take before it counts as an outage. */
  databaseTimeoutMs: number;
  /** Where the default SQLite file and the generated encryption key live. */
  dataDir: string;
  /** 32-byte key that encrypts Dock secret keys at rest; null = read or generate `<dataDir>/encryption.key`. */
  encryptionKey: Buffer | null;
  telegramBotToken: string | null;
  telegramApiRoot: string;
  logLevel: "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";
  /**
   * How `serve` and `sandbox` write to standard output: `auto` is for people on a terminal (a
   * start-up banner, one readable line per log entry) and JSON lines otherwise; `json` and `pretty`
   * choose one whatever the output is.
   */
  logFormat: "auto" | "json" | "pretty";
  /** Largest accepted request body in bytes. */
  maxBodyBytes: number;
  /** Largest body the integration doors take (a tool's payload: a GitHub push, an alert group). */
  maxInboundBodyBytes: number;
  /**
   * Bytes of bodies read before their sender is authenticated (GitHub's signed deliveries) that the
   * service holds at once, across all connections; one client address may hold a quarter of it
   * (at least INBOUND_MAX_BODY_BYTES). More waits for a 503.
   */
  unauthenticatedBodiesMaxBytes: number;
  /** Longest accepted `msg`, in UTF-16 code units (the unit Telegram counts in). */
  maxMessageLength: number;
  /** Failed authentications allowed per client address per minute; 0 switches the limit off. */
  authFailuresPerMinute: number;
  /** Messages a Dock may send at once; 0 switches the per-Dock limit off. */
  dockRateBurst: number;
  /** Messages per second that refill a Dock's allowance. */
  dockRatePerSecond: number;
  /**
   * Which `X-Forwarded-For` entries to believe when telling clients apart (Fastify's trustProxy):
   * false (none), a number of proxy hops, a list of proxy addresses/CIDRs, or true (every entry:
   * only when the proxy overwrites the header).
   */
  trustProxy: boolean | number | string[];
  /** How long SIGTERM waits for in-flight work before closing anyway. */
  shutdownTimeoutMs: number;
  /**
   * Networks (CIDRs) a Dock's callback URL may reach though they are private, loopback or
   * otherwise not public: where the operator's own receivers live. Empty: public addresses only.
   */
  callbackAllowedNetworks: string[];
  /** When set, `/metrics` answers only `Authorization: Bearer <this>`. */
  metricsToken: string | null;
  /** A request (headers and body) must have arrived within this long, or the connection is closed. */
  requestTimeoutMs: number;
  /** How long an idle kept-alive connection stays open. */
  keepAliveTimeoutMs: number;
  /** Connections open at once; more are refused until some close. */
  maxConnections: number;
  /** SQLite `synchronous` pragma: `normal` survives process crashes, `full` also power loss. */
  sqliteSynchronous: "normal" | "full";

  // The bot (src/bot/).
  /**
   * Webhook mode when set: the public https URL that reaches `POST /telegram/webhook`, which
   * Telegram posts updates to. Null = long polling (one instance at a time).
   */
  telegramWebhookUrl: string | null;
  /** In webhook mode, how often the bot checks with Telegram that the webhook is still its own. */
  telegramWebhookCheckMs: number;

  // Telegram sandbox: used when TELEGRAM_BOT_TOKEN is unset, and by `dock-notify sandbox`.
  /** Answer 429 like Telegram when the bot sends too fast; switch off for load tests. */
  sandboxRateLimits: boolean;
  /** Messages the sandbox keeps per chat; older ones are trimmed. */
  sandboxHistoryLimit: number;
  /** People the sandbox holds at most (chats: twice as many). */
  sandboxMaxPeople: number;
  /** How long each of the sandbox's Bot API calls takes to answer, as a real network's round trip. */
  sandboxLatencyMs: number;
  /** SANDBOX_ALLOW_REMOTE: the sandbox answers other machines too (otherwise only this one). */
  sandboxAllowRemote: boolean;

  // Delivery (see src/delivery/).
  /** Messages per second to Telegram for the whole bot. */
  telegramRateLimit: number;
  /** Send with `allow_paid_broadcast`, which lets TELEGRAM_RATE_LIMIT go up to 1000/s (paid by Stars). */
  telegramPaidBroadcast: boolean;
  telegramTimeoutSeconds: number;
  /** A delivery that keeps failing (Telegram or network down) is given up after this long. */
  deliveryMaxAgeMs: number;
  /** The most Telegram calls in flight; below it, as many as the rate needs (delivery/in-flight.ts). */
  deliveryConcurrency: number;
  deliveryLeaseMs: number;
  /** Finished messages and their deliveries are deleted after this long; 0 keeps them forever. */
  retentionMs: number;
  // Control console (the web app at /console/).
  /**
   * OWNERS: who may sign in to the console and own Docks — `anyone` (`*`), these Telegram user ids
   * as administrators, or unset (null): closed until claimed with a real bot, open in the sandbox.
   */
  owners: OwnersSetting;
  /** Docks one owner may create in the console; 0 switches the cap off. */
  maxDocksPerOwner: number;
  /** How long a console session lasts after sign-in, in milliseconds. */
  sessionTtlMs: number;
  /** Sign-in attempts allowed per client address per minute; 0 switches the limit off. */
  signInAttemptsPerMinute: number;
  /** How long a join request to a private Dock waits for a decision before it expires (ms). */
  joinRequestTtlMs: number;
  /**
   * The domain linked to the bot with BotFather's /setdomain. When set, the console also offers the
   * Telegram Login Widget, which only works on that domain.
   */
  telegramLoginDomain: string | null;
}

export class ConfigError extends Error {
  override name = "ConfigError";
}

type Env = Record<string, string | undefined>;

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

function text(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === "" ? undefined : value;
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = text(env, name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
  }
  return Number(raw);
}

function positiveNumber(env: Env, name: string, fallback: number): number {
  const raw = text(env, name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) {
    throw new ConfigError(`${name} must be a number greater than 0, got "${raw}"`);
  }
  return value;
}

function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = text(env, name)?.toLowerCase();
  if (raw === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(`${name} must be one of ${allowed.join(", ")}, got "${raw}"`);
  }
  return raw as T;
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = text(env, name)?.toLowerCase();
  if (raw === undefined) return fallback;
  if (["1", "true", "yes", "on"].includes(raw)) return true;
  if (["0", "false", "no", "off"].includes(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

function httpUrl(name: string, raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be an absolute http(s) URL, got "${raw}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ConfigError(`${name} must be an absolute http(s) URL, got "${raw}"`);
  }
  return url.toString().replace(/\/+$/, "");
}

function databaseUrl(raw: string | undefined, dataDir: string): string {
  if (raw === undefined) return `sqlite:${resolve(dataDir, "dock-notify.db")}`;
  if (raw.startsWith("sqlite:")) {
    const path = raw.slice("sqlite:".length).replace(/^\/\/(?=\/)/, "");
    if (path === "") throw new ConfigError(`DATABASE_URL must name a file after "sqlite:"`);
    return `sqlite:${path === ":memory:" || isAbsolute(path) ? path : resolve(path)}`;
  }
  if (raw.startsWith("postgres://") || raw.startsWith("postgresql://")) return raw;
  throw new ConfigError(
    `DATABASE_URL must start with "sqlite:" or "postgres://" (got a value of another kind)`,
  );
}

function encryptionKey(raw: string | undefined): Buffer | null {
  if (raw === undefined) return null;
  const key = Buffer.from(raw, "base64");
  if (key.length !== 32 || !/^[A-Za-z0-9+/=_-]+$/.test(raw)) {
    throw new ConfigError(
      "ENCRYPTION_KEY must be 32 bytes in base64 (generate one with `openssl rand -base64 32`)",
    );
  }
  return key;
}

/** proxy-addr's names for ranges of addresses. */
const PROXY_RANGES = new Set(["loopback", "linklocal", "uniquelocal"]);

/** An IPv4 or IPv6 address, optionally with a /prefix that fits it (what proxy-addr and BlockList take). */
function addressOrNetwork(entry: string): boolean {
  const [address = "", prefix, extra] = entry.split("/");
  if (extra !== undefined) return false;
  const family = isIP(address);
  if (family === 0) return false;
  if (prefix === undefined) return true;
  if (!/^\d{1,3}$/.test(prefix)) return false;
  return Number(prefix) <= (family === 4 ? 32 : 128);
}

/** METRICS_TOKEN: a bearer token for /metrics; long enough not to be guessed. */
function metricsToken(raw: string | undefined): string | null {
  if (raw === undefined) return null;
  if (raw.length < 16 || !/^[\x21-\x7e]+$/.test(raw)) {
    // Never echo the value: it is a secret even when unusable.
    throw new ConfigError(
      "METRICS_TOKEN must be at least 16 printable characters without spaces (e.g. `openssl rand -hex 24`)",
    );
  }
  return raw;
}

/** ALLOWED_HOSTS: comma-separated host names (no scheme, no port), or `*` for any. */
function allowedHosts(raw: string | undefined): string[] | "any" {
  if (raw === undefined) return [];
  if (raw === "*") return "any";
  const names = raw.split(",").map((name) =>
    name
      .trim()
      .toLowerCase()
      .replace(/^\[(.*)\]$/, "$1"),
  );
  for (const name of names) {
    // A colon only in an IPv6 address: "example.com:443" would never match (ports are not compared).
    if (!/^[a-z0-9._-]+$/.test(name) && isIP(name) !== 6) {
      throw new ConfigError(
        `ALLOWED_HOSTS must be host names separated by commas (no scheme, no port), or *; "${name}" is not one`,
      );
    }
  }
  return names;
}

/** CALLBACK_ALLOWED_NETWORKS: comma-separated CIDRs (or single addresses); unset, none. */
function callbackAllowedNetworks(raw: string | undefined): string[] {
  if (raw === undefined) return [];
  const entries = raw
    .split(",")
    .map((entry) => entry.trim().toLowerCase())
    .filter((entry) => entry !== "");
  for (const entry of entries) {
    if (!addressOrNetwork(entry)) {
      throw new ConfigError(
        `CALLBACK_ALLOWED_NETWORKS must be IP networks in CIDR notation separated by commas (10.1.2.0/24,fd00::/8); "${entry}" is not one`,
      );
    }
  }
  return entries;
}

/**
 * TRUST_PROXY: `false`/unset, a hop count (`1`: one proxy in front, its entry is the client), a
 * comma-separated list of the proxies' addresses, CIDRs or `loopback`/`linklocal`/`uniquelocal`,
 * or `true` (every entry believed).
 */
function trustProxy(raw: string | undefined): boolean | number | string[] {
  if (raw === undefined) return false;
  const lower = raw.toLowerCase();
  if (["0", "false", "no", "off"].includes(lower)) return false;
  if (["true", "yes", "on"].includes(lower)) return true;
  if (/^\d+$/.test(raw)) {
    const hops = Number(raw);
    if (hops > 100) throw new ConfigError(`TRUST_PROXY as a hop count must be at most 100, got "${raw}"`);
    return hops;
  }
  const entries = raw.split(",").map((entry) => entry.trim().toLowerCase());
  for (const entry of entries) {
    if (!PROXY_RANGES.has(entry) && !addressOrNetwork(entry)) {
      throw new ConfigError(
        `TRUST_PROXY must be false, true, a number of proxy hops, or a comma-separated list of proxy addresses or CIDRs; "${entry}" is none of those`,
      );
    }
  }
  return entries;
}

/**
 * TRUST_PROXY as Fastify takes it. A hop count becomes "believe the last N addresses of the chain"
 * (the socket's peer and the entries the proxies appended): Fastify refuses numbers, since a client
 * that reaches the service directly can then write the entries itself — so a hop count is only
 * for a service that nothing but its proxies can reach (docs/deployment.md#security-model).
 */
export function trustProxyOption(
  value: boolean | number | string[],
): boolean | string[] | ((address: string, hop: number) => boolean) {
  if (typeof value !== "number") return value;
  return value === 0 ? false : (_address, hop) => hop < value;
}

const BOT_TOKEN = /^\d{1,20}:[A-Za-z0-9_-]{30,}$/;

function webhookUrl(raw: string | undefined, sandbox: boolean): string | null {
  if (raw === undefined) return null;
  const url = httpUrl("TELEGRAM_WEBHOOK_URL", raw);
  // Telegram posts only to https; the sandbox (built in, or shared) also to http, so it can be
  // tried locally.
  if (!sandbox && !url.startsWith("https:")) {
    throw new ConfigError(
      `TELEGRAM_WEBHOOK_URL must be an https URL (Telegram posts only to https), got "${raw}"`,
    );
  }
  return url;
}

/** OWNERS: `*`, or Telegram user ids separated by commas (spaces allowed). */
function owners(raw: string | undefined): OwnersSetting {
  if (raw === undefined) return null;
  if (raw === "*") return "anyone";
  const ids = raw.split(",").map((part) => part.trim());
  if (ids.some((id) => telegramUserId(id) === null)) {
    throw new ConfigError(
      `OWNERS must be * alone or Telegram user ids separated by commas (e.g. 123456789,987654321), got "${raw}"`,
    );
  }
  return [...new Set(ids.map(Number))];
}

/** TELEGRAM_LOGIN_DOMAIN must be PUBLIC_URL's host: Telegram shows the widget only on the bot's domain. */
function telegramLoginDomain(
  raw: string | undefined,
  publicUrl: string,
  token: string | null,
): string | null {
  if (raw === undefined) return null;
  const domain = raw.toLowerCase();
  if (token === null) {
    throw new ConfigError("TELEGRAM_LOGIN_DOMAIN needs TELEGRAM_BOT_TOKEN (the sandbox has no login widget)");
  }
  const host = new URL(publicUrl).hostname;
  if (domain !== host) {
    throw new ConfigError(`TELEGRAM_LOGIN_DOMAIN must be the host of PUBLIC_URL (${host}), got "${raw}"`);
  }
  return domain;
}

/**
 * UNAUTHENTICATED_BODIES_MAX_BYTES: 8 MiB, or INBOUND_MAX_BODY_BYTES when that is larger (one
 * delivery of the largest size must always fit).
 */
function unauthenticatedBodies(env: Env, maxInboundBodyBytes: number): number {
  const fallback = Math.max(8 * 1024 * 1024, maxInboundBodyBytes);
  const value = integer(env, "UNAUTHENTICATED_BODIES_MAX_BYTES", fallback, 1024, 2 ** 30);
  if (value < maxInboundBodyBytes) {
    throw new ConfigError(
      `UNAUTHENTICATED_BODIES_MAX_BYTES must be at least INBOUND_MAX_BODY_BYTES (${maxInboundBodyBytes}): a signed delivery of that size could never be read, got "${value}"`,
    );
  }
  return value;
}

/** Reads and validates the configuration; throws a ConfigError naming the bad variable. */
export function loadConfig(env: Env = process.env): Config {
  const port = integer(env, "PORT", 8080, 0, 65535);
  const host = text(env, "HOST") ?? "127.0.0.1";
  const name = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/i;
  if (isIP(host) === 0 && (!name.test(host) || /^[\d.]+$/.test(host))) {
    throw new ConfigError(`HOST must be an IP address or a host name to listen on, got "${host}"`);
  }
  const dataDir = resolve(text(env, "DATA_DIR") ?? "data");
  const publicHost =
    host === "0.0.0.0" || host === "::" ? "localhost" : host.includes(":") ? `[${host}]` : host;
  const publicUrl = httpUrl("PUBLIC_URL", text(env, "PUBLIC_URL") ?? `http://${publicHost}:${port}`);
  const token = text(env, "TELEGRAM_BOT_TOKEN") ?? null;
  if (token !== null && !BOT_TOKEN.test(token)) {
    // Never echo the token itself: it is a secret even when malformed.
    throw new ConfigError(
      "TELEGRAM_BOT_TOKEN does not look like a bot token (<digits>:<letters, digits, _ or ->)",
    );
  }
  const loopback = host === "127.0.0.1" || host === "::1" || host === "localhost";
  // Read (and checked) whatever HOST is: a typo here must not wait for the day HOST changes.
  const sandboxAllowRemote = boolean(env, "SANDBOX_ALLOW_REMOTE", false);
  if (token === null && !loopback && !sandboxAllowRemote) {
    throw new ConfigError(
      `HOST is ${host} but TELEGRAM_BOT_TOKEN is not set: the sandbox would let anyone who reaches this address act as any simulated person (and so sign in to the console). Set TELEGRAM_BOT_TOKEN, listen on 127.0.0.1, or set SANDBOX_ALLOW_REMOTE=true to accept that.`,
    );
  }
  const maxInboundBodyBytes = integer(env, "INBOUND_MAX_BODY_BYTES", 1024 * 1024, 1024, 16 * 1024 * 1024);
  return {
    port,
    host,
    publicUrl,
    allowedHosts: allowedHosts(text(env, "ALLOWED_HOSTS")),
    databaseUrl: databaseUrl(text(env, "DATABASE_URL"), dataDir),
    databaseTimeoutMs: integer(env, "DATABASE_TIMEOUT_SECONDS", 5, 1, 600) * 1000,
    dataDir,
    encryptionKey: encryptionKey(text(env, "ENCRYPTION_KEY")),
    telegramBotToken: token,
    telegramApiRoot: httpUrl(
      "TELEGRAM_API_ROOT",
      text(env, "TELEGRAM_API_ROOT") ?? "https://api.telegram.org",
    ),
    logLevel: oneOf(env, "LOG_LEVEL", LOG_LEVELS, "info"),
    logFormat: oneOf(env, "LOG_FORMAT", ["auto", "json", "pretty"] as const, "auto"),
    maxBodyBytes: integer(env, "MAX_BODY_BYTES", 64 * 1024, 1024, 16 * 1024 * 1024),
    maxInboundBodyBytes,
    unauthenticatedBodiesMaxBytes: unauthenticatedBodies(env, maxInboundBodyBytes),
    maxMessageLength: integer(env, "MAX_MESSAGE_LENGTH", 16_384, 1, 1_000_000),
    authFailuresPerMinute: integer(env, "AUTH_FAILURES_PER_MINUTE", 20, 0, 1_000_000),
    dockRateBurst: integer(env, "DOCK_RATE_BURST", 60, 0, 1_000_000),
    dockRatePerSecond: positiveNumber(env, "DOCK_RATE_PER_SECOND", 1),
    trustProxy: trustProxy(text(env, "TRUST_PROXY")),
    shutdownTimeoutMs: integer(env, "SHUTDOWN_TIMEOUT_MS", 10_000, 0, 600_000),
    callbackAllowedNetworks: callbackAllowedNetworks(text(env, "CALLBACK_ALLOWED_NETWORKS")),
    metricsToken: metricsToken(text(env, "METRICS_TOKEN")),
    requestTimeoutMs: integer(env, "REQUEST_TIMEOUT_SECONDS", 30, 1, 3600) * 1000,
    keepAliveTimeoutMs: integer(env, "KEEP_ALIVE_TIMEOUT_SECONDS", 72, 1, 3600) * 1000,
    maxConnections: integer(env, "MAX_CONNECTIONS", 1024, 1, 1_000_000),
    sqliteSynchronous: oneOf(env, "SQLITE_SYNCHRONOUS", ["normal", "full"] as const, "normal"),

    // The sandbox's bot: the built-in sandbox (no token), or a shared one (`dock-notify sandbox`).
    telegramWebhookUrl: webhookUrl(
      text(env, "TELEGRAM_WEBHOOK_URL"),
      token === null || token === SANDBOX_BOT_TOKEN,
    ),

    telegramWebhookCheckMs: integer(env, "TELEGRAM_WEBHOOK_CHECK_SECONDS", 60, 1, 86_400) * 1000,

    sandboxRateLimits: boolean(env, "SANDBOX_RATE_LIMITS", true),
    sandboxHistoryLimit: integer(env, "SANDBOX_HISTORY_LIMIT", 1000, 10, 100_000),
    sandboxMaxPeople: integer(env, "SANDBOX_MAX_PEOPLE", 10_000, 1, 1_000_000),
    sandboxLatencyMs: integer(env, "SANDBOX_LATENCY_MS", 0, 0, 10_000),
    sandboxAllowRemote,

    owners: owners(text(env, "OWNERS")),
    maxDocksPerOwner: integer(env, "MAX_DOCKS_PER_OWNER", 100, 0, 1_000_000),
    sessionTtlMs: integer(env, "SESSION_TTL_HOURS", 168, 1, 8760) * 60 * 60 * 1000,
    signInAttemptsPerMinute: integer(env, "SIGN_IN_ATTEMPTS_PER_MINUTE", 10, 0, 1_000_000),
    joinRequestTtlMs: integer(env, "JOIN_REQUEST_TTL_DAYS", JOIN_REQUEST_TTL_DAYS, 1, 365) * 24 * HOUR_MS,
    telegramLoginDomain: telegramLoginDomain(text(env, "TELEGRAM_LOGIN_DOMAIN"), publicUrl, token),
    ...deliveryConfig(env),
  };
}

const HOUR_MS = 60 * 60 * 1000;

function deliveryConfig(env: Env) {
  const telegramPaidBroadcast = boolean(env, "TELEGRAM_PAID_BROADCAST", false);
  const maxRate = telegramPaidBroadcast ? 1000 : 30;
  const telegramRateLimit = positiveNumber(env, "TELEGRAM_RATE_LIMIT", 30);
  if (telegramRateLimit > maxRate) {
    throw new ConfigError(
      `TELEGRAM_RATE_LIMIT must be at most ${maxRate} messages per second${telegramPaidBroadcast ? "" : " (set TELEGRAM_PAID_BROADCAST=true for up to 1000)"}, got "${telegramRateLimit}"`,
    );
  }
  const telegramTimeoutSeconds = integer(env, "TELEGRAM_TIMEOUT_SECONDS", 15, 1, 600);
  const deliveryLeaseMs = integer(env, "DELIVERY_LEASE_SECONDS", 60, 1, 3600) * 1000;
  if (deliveryLeaseMs <= telegramTimeoutSeconds * 1000) {
    throw new ConfigError("DELIVERY_LEASE_SECONDS must be longer than TELEGRAM_TIMEOUT_SECONDS");
  }
  return {
    telegramRateLimit,
    telegramPaidBroadcast,
    telegramTimeoutSeconds,
    deliveryMaxAgeMs: positiveNumber(env, "DELIVERY_MAX_AGE_HOURS", 24) * HOUR_MS,
    deliveryConcurrency: integer(env, "DELIVERY_CONCURRENCY", 500, 1, 1000),
    deliveryLeaseMs,
    retentionMs: integer(env, "RETENTION_DAYS", 30, 0, 36_500) * 24 * HOUR_MS,
  };
}
