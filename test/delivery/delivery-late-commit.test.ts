import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deliveryStates, ping, sandboxOf } from "../helpers/delivery-harness.ts";
import { hasPostgres, type RunningService, startService } from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

const POSTGRES = await hasPostgres();

/**
 * On PostgreSQL ids are handed out when rows are inserted, not when they commit: a transaction
 * (another instance's accept) can commit deliveries with lower ids after later ones were already
 * read and sent. The dispatcher must still find and deliver them.
 */
describe.skipIf(!POSTGRES)("a delivery committed late on PostgreSQL", () => {
  let service: RunningService;
  beforeAll(async () => {
    service = await startService("postgres", { DOCK_RATE_BURST: "0" });
  });
  afterAll(async () => service.close());

  it("is delivered even though a later message was read and sent first", async () => {
    const sandbox = sandboxOf(service);
    const dock = await service.app.docks.create(1, { name: "Late", link: null, description: null });
    const reader = await sandbox.person("Reader");
    await service.subscriptions.subscribe(dock.id, reader, "private");

    // Another instance's transaction: takes its ids now, commits later.
    const slow = new pg.Client({ connectionString: service.config.databaseUrl });
    await slow.connect();
    await slow.query("begin");
    const now = Date.now();
    await slow.query(
      "insert into messages (id, dock_id, text, subscribers, idempotency_key, request_hash, created_at) values ($1, $2, $3, 1, null, null, $4)",
      ["msg_slowslowslowslowslowsl", dock.id, "slow", now],
    );
    await slow.query(
      "insert into deliveries (message_id, dock_id, chat_id, state, attempts, next_attempt_at, created_at, updated_at) values ($1, $2, $3, 'queued', 0, $4, $4, $4)",
      ["msg_slowslowslowslowslowsl", dock.id, reader, now],
    );

    await ping(service.url, dock, "fast");
    await waitFor("the later message delivered", async () =>
      (await sandbox.botTexts(reader)).includes("Late\nfast"),
    );
    await slow.query("commit");
    await slow.end();

    await waitFor(
      "the late-committed message delivered",
      async () => (await sandbox.botTexts(reader)).includes("Late\nslow"),
      15_000,
    );
    // The chat shows it a moment before the outcome is recorded.
    await waitFor("both recorded as sent", async () => (await deliveryStates(service)).sent === 2);
    expect(await deliveryStates(service)).toEqual({ sent: 2 });
  }, 30_000);
});
