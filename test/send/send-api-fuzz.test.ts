import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DockWithSecret } from "../../src/store/docks.ts";
import { basic, dialects, type RunningService, startService } from "../helpers/harness.ts";

const DIALECTS = await dialects();

/**
 * Thousands of malformed bodies and headers: whatever a client sends, the answer is never a 5xx,
 * the process stays up, and every refusal is in the documented error format.
 */
describe.each(DIALECTS)("send API under malformed input on %s", (dialect) => {
  let service: RunningService;
  let dock: DockWithSecret;

  beforeAll(async () => {
    service = await startService(dialect, {
      AUTH_FAILURES_PER_MINUTE: "0",
      DOCK_RATE_BURST: "0",
      LOG_LEVEL: "warn",
    });
    dock = await service.app.docks.create(1, { name: "Fuzz", link: null, description: null });
  });
  afterAll(async () => service.close());

  const printable = fc.stringMatching(/^[\x20-\x7e]{0,60}$/);
  const contentType = fc.oneof(
    fc.constantFrom(
      "application/json",
      "application/json; charset=utf-8",
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data",
      "application/problem+json",
      "text/json",
      "",
    ),
    printable,
  );
  const field = fc.oneof(
    fc.string(),
    // NUL: fine for SQLite, an error for PostgreSQL unless refused first.
    fc.string().map((text) => `${text}\u0000${text}`),
    fc.string({ unit: "binary" }),
    fc.constant(""),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(fc.string(), { maxLength: 3 }),
    fc.dictionary(fc.string(), fc.string(), { maxKeys: 2 }),
  );
  const credentialField = fc.oneof(
    field,
    fc.constant("DOCK_ID"),
    fc.constant("SECRET"),
    fc.constant("DOCK_ID\u0000"),
  );
  const objectBody = fc
    .record(
      { dock_id: credentialField, secret_key: credentialField, msg: field, extra: fc.jsonValue() },
      { requiredKeys: [] },
    )
    .map((o) =>
      JSON.stringify(o)
        .replaceAll('"DOCK_ID\\u0000"', JSON.stringify(`${dock.id}\u0000`))
        .replaceAll('"DOCK_ID"', JSON.stringify(dock.id))
        .replaceAll('"SECRET"', JSON.stringify(dock.secretKey)),
    );
  const body = fc.oneof(
    objectBody,
    fc.jsonValue().map((v) => JSON.stringify(v)),
    fc.string({ unit: "binary" }),
    fc.uint8Array({ maxLength: 200 }),
    // Valid JSON text with raw escapes: lone surrogates, control characters.
    fc
      .array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 8 })
      .map(
        (units) =>
          `{"dock_id":"${dock.id}","secret_key":"${dock.secretKey}","msg":"${units.map((u) => `\\u${u.toString(16).padStart(4, "0")}`).join("")}"}`,
      ),
  );
  const authorization = fc.oneof(
    fc.constant(undefined),
    printable,
    printable.map((s) => `Basic ${s}`),
    fc
      .tuple(credentialField, credentialField)
      .map(([u, p]) =>
        basic(
          u === "DOCK_ID" ? dock.id : JSON.stringify(u),
          p === "SECRET" ? dock.secretKey : JSON.stringify(p),
        ),
      ),
  );
  const extraHeaders = fc.record(
    { "idempotency-key": printable, "content-length-ish": printable },
    { requiredKeys: [] },
  );

  it.each(["/ping", "/webhook", "/messages/msg_x%00y"])(
    "%s: never a 5xx, always the error format",
    async (path) => {
      await fc.assert(
        fc.asyncProperty(
          body,
          contentType,
          authorization,
          extraHeaders,
          fc.constantFrom("POST", "POST", "POST", "PUT", "GET"),
          async (payload, type, auth, extra, method) => {
            const headers: Record<string, string> = { ...extra };
            if (type !== "") headers["content-type"] = type;
            if (auth !== undefined) headers.authorization = auth;
            const response = await fetch(`${service.url}${path}`, {
              method,
              headers,
              body: method === "GET" ? undefined : payload,
            });
            const text = await response.text();
            expect(response.status).toBeLessThan(500);
            const parsed = JSON.parse(text);
            if (response.status === 202) {
              expect(parsed).toMatchObject({ ok: true, message_id: expect.any(String) });
            } else if (parsed.error?.code === "invalid_fields") {
              // The documented error format: invalid_fields names each field at fault.
              expect(parsed).toEqual({
                ok: false,
                error: {
                  code: "invalid_fields",
                  message: expect.any(String),
                  fields: expect.arrayContaining([
                    { field: expect.any(String), message: expect.any(String) },
                  ]),
                },
              });
              expect(parsed.error.fields.length).toBeGreaterThan(0);
            } else {
              expect(parsed).toEqual({
                ok: false,
                error: { code: expect.any(String), message: expect.any(String) },
              });
            }
          },
        ),
        { numRuns: 1500 },
      );
      // Still serving after all that.
      expect((await fetch(`${service.url}/healthz`)).status).toBe(200);
    },
    120_000,
  );
});
