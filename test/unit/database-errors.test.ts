import { describe, expect, it } from "vitest";
import { isDatabaseUnavailable } from "../../src/store/faults.ts";

/** Which errors the service answers with 503 database_unavailable (retry later) instead of 500. */
describe("isDatabaseUnavailable", () => {
  const error = (message: string, fields: Record<string, unknown> = {}) =>
    Object.assign(new Error(message), fields);

  it.each([
    ["PostgreSQL shut down", error("terminating connection due to administrator command", { code: "57P01" })],
    ["PostgreSQL starting", error("the database system is starting up", { code: "57P03" })],
    ["too many connections", error("sorry, too many clients already", { code: "53300" })],
    ["connection failure", error("connection failure", { code: "08006" })],
    [
      "database closed to connections",
      error('database "x" is not currently accepting connections', { code: "55000" }),
    ],
    ["server refused", error("connect ECONNREFUSED 127.0.0.1:5432", { code: "ECONNREFUSED" })],
    ["connection dropped under a query", error("Connection terminated unexpectedly")],
    ["no connection in time", error("timeout exceeded when trying to connect")],
    ["a single client connecting past its connectionTimeoutMillis", error("timeout expired")],
    ["SQLite locked past busy_timeout", error("database is locked", { errcode: 5 })],
  ])("%s: unavailable", (_what, e) => {
    expect(isDatabaseUnavailable(e)).toBe(true);
  });

  it.each([
    // Fastify's body reader when the client hangs up mid-upload: the client's doing, not ours.
    ["a client that hung up", error("aborted", { code: "ECONNRESET", statusCode: 400 })],
    ["a protocol violation (a bug)", error("protocol violation", { code: "08P01" })],
    ["our code using a closed client", error("Client was closed and is not queryable")],
    ["a syntax error", error('syntax error at or near "selec"', { code: "42601" })],
    ["a unique violation", error("duplicate key value", { code: "23505" })],
    ["another SQLite error", error("UNIQUE constraint failed: messages.id", { errcode: 2067 })],
    ["not an error at all", "nope"],
  ])("%s: not unavailable", (_what, e) => {
    expect(isDatabaseUnavailable(e)).toBe(false);
  });
});
