/**
 * What a database error means for the service: the database cannot be reached or answer in time
 * (isDatabaseUnavailable: 503 database_unavailable), it cannot store anything (storageFault: 503
 * storage_unavailable), or neither (a fault in a statement: our bug, 500). Both of the first kind
 * are the surroundings' faults: they pass by themselves and are never logged as errors.
 */

/** Network errors meaning the database server cannot be reached (Node's and pg's). */
const UNREACHABLE = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENOTFOUND",
  "EPIPE",
  "EAI_AGAIN",
]);

/**
 * Whether `error` says the database cannot be used right now (down, restarting, refusing
 * connections, dropped ours, locked for too long), as opposed to a fault in a statement: the first
 * is worth a retry later (503), the second is our bug (500).
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  const e = error as { code?: unknown; errcode?: unknown; message?: unknown; statusCode?: unknown } | null;
  // An HTTP error (Fastify's: a client that hung up mid-body is ECONNRESET too) is not the database's.
  if (e?.statusCode !== undefined) return false;
  const code = typeof e?.code === "string" ? e.code : "";
  const message = typeof e?.message === "string" ? e.message : "";
  // PostgreSQL: connection exceptions (class 08, but not 08P01, a protocol violation: a bug),
  // shutdown or restart (57P01–57P03), a session the server ended because it heard nothing for too
  // long in a transaction (57P05: the network fell silent; see store/postgres/adapter.ts), too many
  // connections (53300), a database closed to connections (55000 with that text).
  if (
    (code.startsWith("08") && code !== "08P01") ||
    ["57P01", "57P02", "57P03", "57P05", "53300"].includes(code)
  ) {
    return true;
  }
  if (code === "55000" && message.includes("not currently accepting connections")) return true;
  // A statement cut off by statement_timeout (DATABASE_TIMEOUT_SECONDS): the server is too busy, or
  // waits on a lock, to answer within the bound.
  if (code === "57014" && message.includes("statement timeout")) return true;
  if (UNREACHABLE.has(code)) return true;
  // pg: the connection went away under a query, none could be made in time (by the pool, or by a
  // single client: "timeout expired"), or the server sent nothing back in time (a network that
  // drops packets). (Not "Client was closed and is not queryable": that is our code using a
  // connection it closed.)
  if (
    /^Connection terminated|timeout exceeded when trying to connect|^timeout expired$|Client has encountered a connection error|^Query read timeout/.test(
      message,
    )
  ) {
    return true;
  }
  // SQLite: another process held the write lock past busy_timeout (SQLITE_BUSY).
  return (typeof e?.errcode === "number" && (e.errcode & 0xff) === 5) || /database is locked/.test(message);
}

/** A database fault of the surroundings (down, unreachable, full, read-only): waited out, not a bug. */
export function isOutage(error: unknown): boolean {
  return isDatabaseUnavailable(error) || storageFault(error) !== null;
}

/**
 * The error of a call given up on at its deadline (DATABASE_TIMEOUT_SECONDS after the request that
 * needed it): the database is unavailable, whatever it is doing meanwhile (`ETIMEDOUT`, a 503).
 */
export function deadlinePassed(what: string): Error {
  return Object.assign(new Error(`${what}: no answer from the database within DATABASE_TIMEOUT_SECONDS`), {
    code: "ETIMEDOUT",
  });
}

/** SQLite's primary result codes that mean the storage refuses writes, by name (errcode & 0xff). */
const SQLITE_STORAGE: Record<number, string> = {
  8: "SQLITE_READONLY",
  10: "SQLITE_IOERR",
  13: "SQLITE_FULL",
  14: "SQLITE_CANTOPEN",
};

/** PostgreSQL's SQLSTATEs that mean the server cannot write, by name. */
const POSTGRES_STORAGE: Record<string, string> = {
  "53100": "disk_full",
  "58030": "io_error",
  // A standby after a failover (or default_transaction_read_only): reads work, writes do not.
  "25006": "read_only_sql_transaction",
};

/** File-system errors that mean the disk refuses writes. */
const FILE_SYSTEM_STORAGE = new Set(["ENOSPC", "EDQUOT", "EROFS", "EIO"]);

/**
 * When `error` says the database cannot store anything right now (its disk is full, its file or
 * server is read-only, an I/O error), the cause's name (`SQLITE_FULL`, `disk_full`, `ENOSPC` …);
 * null otherwise. Such a fault is the surroundings', passes when an operator frees space, and is
 * answered `503 storage_unavailable`, never `500`.
 */
export function storageFault(error: unknown): string | null {
  const e = error as { code?: unknown; errcode?: unknown } | null;
  if (typeof e?.errcode === "number") return SQLITE_STORAGE[e.errcode & 0xff] ?? null;
  if (typeof e?.code === "string") {
    return POSTGRES_STORAGE[e.code] ?? (FILE_SYSTEM_STORAGE.has(e.code) ? e.code : null);
  }
  return null;
}

/**
 * Logs a database operation that failed in the background (the dispatcher, retention): an outage
 * as a warn line with its reason (it passes by itself, and comes back every few seconds while it
 * lasts), anything else as an error with its stack (a bug to trace).
 */
export function logDatabaseFailure(
  log: { warn: (fields: object, message: string) => void; error: (fields: object, message: string) => void },
  error: unknown,
  message: string,
  fields: Record<string, unknown> = {},
): void {
  const fault = storageFault(error);
  if (fault !== null) log.warn({ ...fields, cause: fault, reason: (error as Error).message }, message);
  else if (isDatabaseUnavailable(error)) log.warn({ ...fields, reason: (error as Error).message }, message);
  else log.error({ ...fields, err: error }, message);
}
