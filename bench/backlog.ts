/**
 * bench:backlog — what a /metrics scrape costs when many messages wait to be fanned out (Telegram
 * down for hours): how long OutboxViews.backlog() takes, and how long an accept waits
 * behind it on SQLite's one connection.
 *
 *   npm run bench:backlog [-- --messages 1000000 --database sqlite|postgres://…]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { loadEncryptionKey } from "../src/runtime/encryption-key.ts";
import type { AcceptItem } from "../src/store/accept-batch.ts";
import { DockRepository } from "../src/store/docks.ts";
import { migrate, openDb } from "../src/store/open.ts";
import { OutboxViews } from "../src/store/outbox-views.ts";
import { SubscriptionRepository } from "../src/store/subscriptions.ts";

const { values } = parseArgs({
  options: {
    messages: { type: "string", default: "1000000" },
    database: { type: "string", default: "sqlite" },
  },
});
const total = Number(values.messages);
const dataDir = mkdtempSync(join(tmpdir(), "dock-notify-backlog-"));
const db = await openDb(
  values.database === "sqlite" ? `sqlite:${join(dataDir, "bench.db")}` : values.database,
);
await migrate(db);
const dock = await new DockRepository(db, loadEncryptionKey(null, dataDir).key).create(1, {
  name: "Backlog",
  link: null,
  description: null,
});
for (let chat = 1; chat <= 3; chat++)
  await new SubscriptionRepository(db).subscribe(dock.id, chat, "private");

const item: AcceptItem = {
  dockId: dock.id,
  text: "Deploy finished",
  content: null,
  idempotencyKey: null,
  hash: null,
  secretKey: null,
};
const batch = Array.from({ length: 256 }, () => item);
const started = performance.now();
for (let stored = 0; stored < total; stored += batch.length) {
  await db.acceptBatch({ items: batch, now: Date.now(), dockRate: null });
}
console.log(`${total} waiting messages stored in ${((performance.now() - started) / 1000).toFixed(1)} s`);

const deliveries = new OutboxViews(db);
console.log(
  `\nbench:backlog on ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, database ${values.database}\n`,
);
console.log("| round | backlog() ms | queue depth | accepts meanwhile | slowest accept ms |");
console.log("|---|---|---|---|---|");
for (let round = 1; round <= 3; round++) {
  // One message at a time is accepted while the gauge is read: the wait a client would see.
  let stop = false;
  let accepts = 0;
  let slowest = 0;
  const sender = (async () => {
    while (!stop) {
      const at = performance.now();
      await db.acceptBatch({ items: [item], now: Date.now(), dockRate: null });
      slowest = Math.max(slowest, performance.now() - at);
      accepts++;
    }
  })();
  const at = performance.now();
  const { queued } = await deliveries.backlog();
  const took = performance.now() - at;
  stop = true;
  await sender;
  console.log(`| ${round} | ${took.toFixed(0)} | ${queued} | ${accepts} | ${slowest.toFixed(1)} |`);
}
await db.close();
rmSync(dataDir, { recursive: true, force: true });
