/**
 * bench:stamps — what the console's live stream costs the database each second: one read of
 * DockStamps.of() (store/dock-stamps.ts) for every Dock of the people watching, now that a stamp
 * also holds the Dock's latest refused request (issue 38), against the same read without it (the
 * query as it was before, with the audience of issue 37, kept here as the baseline) in the same
 * run, taken in turns.
 *
 *   npm run bench:stamps [-- --owners 50 --docks 20 --rounds 300 --database sqlite|postgres://…]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { sql } from "kysely";
import { loadEncryptionKey } from "../src/runtime/encryption-key.ts";
import { DockStamps } from "../src/store/dock-stamps.ts";
import { DockRepository } from "../src/store/docks.ts";
import { InviteLinkRepository } from "../src/store/invite-links.ts";
import { JoinRequestRepository } from "../src/store/join-requests.ts";
import { migrate, openDb } from "../src/store/open.ts";
import { DAY_MS, dayOf } from "../src/store/rollups.ts";
import { SubscriptionRepository } from "../src/store/subscriptions.ts";

const { values } = parseArgs({
  options: {
    owners: { type: "string", default: "50" },
    docks: { type: "string", default: "20" },
    rounds: { type: "string", default: "300" },
    database: { type: "string", default: "sqlite" },
  },
});
const owners = Array.from({ length: Number(values.owners) }, (_, i) => 1000 + i);
const dataDir = mkdtempSync(join(tmpdir(), "dock-notify-stamps-"));
const db = await openDb(
  values.database === "sqlite" ? `sqlite:${join(dataDir, "bench.db")}` : values.database,
);
await migrate(db);
const key = loadEncryptionKey(null, dataDir).key;
const docks = new DockRepository(db, key);
const invites = new InviteLinkRepository(db, key);
const requests = new JoinRequestRepository(db, { ttlMs: 7 * DAY_MS });
const subscriptions = new SubscriptionRepository(db);

// Each Dock: 5 subscribers, 2 invite links, a request waiting and 2 ended, a ban, 10 refused requests.
let chat = 10_000_000;
for (const owner of owners) {
  for (let d = 0; d < Number(values.docks); d++) {
    const dock = await docks.create(
      owner,
      { name: `Dock ${d}`, link: null, description: null },
      undefined,
      "approval",
    );
    for (let s = 0; s < 5; s++) await subscriptions.subscribe(dock.id, chat++, "private");
    for (let l = 0; l < 2; l++)
      await invites.create(
        dock.id,
        { actor: owner },
        {
          name: `link ${l}`,
          usageLimit: null,
          expiresAt: null,
          approval: false,
        },
      );
    for (let r = 0; r < 3; r++) {
      const asked = await requests.ask(
        {
          dockId: dock.id,
          chatId: chat++,
          chatType: "private",
          userId: chat,
          inviteId: null,
          memberCount: null,
        },
        [owner],
      );
      if (r > 0 && asked.kind === "sent") await requests.decide(dock.id, asked.request.id, "declined", owner);
    }
    await db.kysely
      .insertInto("dock_bans")
      .values({ dock_id: dock.id, chat_id: chat++, banned_by: owner, banned_at: Date.now() })
      .execute();
    await db.kysely
      .insertInto("dock_refusals")
      .values(
        Array.from({ length: 10 }, (_, i) => ({
          dock_id: dock.id,
          first_at: Date.now() - i * 1000,
          last_at: Date.now() - i * 1000,
          count: 1,
          door: "/webhook",
          format: null,
          status: 400,
          code: "invalid_json",
          message: `The request body is not valid JSON (${i}).`,
          credentials: "right",
        })),
      )
      .execute();
  }
}

/** The stamp read as it was before issue 38: settings, subscribers, messages, audit, audience. */
async function before(ownerIds: readonly number[]) {
  const since = dayOf(Date.now() - DAY_MS);
  const people = [...ownerIds];
  const k = db.kysely;
  const watched = k
    .selectFrom("docks")
    .select(["docks.id as dock_id", "docks.owner_id as person"])
    .where("docks.owner_id", "in", people)
    .unionAll(
      k
        .selectFrom("co_owners")
        .select(["co_owners.dock_id as dock_id", "co_owners.telegram_id as person"])
        .where("co_owners.telegram_id", "in", people),
    );
  return k
    .selectFrom(watched.as("w"))
    .innerJoin("docks", "docks.id", "w.dock_id")
    .select((eb) => [
      "docks.id",
      "w.person",
      "docks.updated_at",
      eb
        .selectFrom("subscriptions")
        .select((s) => s.fn.max("subscriptions.updated_at").as("at"))
        .whereRef("subscriptions.dock_id", "=", "docks.id")
        .as("subscribed"),
      eb
        .selectFrom("dock_days")
        .select(sql<number>`sum(accepted + sent + retried + failed + gone + changed)`.as("n"))
        .whereRef("dock_days.dock_id", "=", "docks.id")
        .where("dock_days.day", ">=", since)
        .as("counted"),
      eb
        .selectFrom("dock_audit")
        .select((a) => a.fn.max("dock_audit.id").as("id"))
        .whereRef("dock_audit.dock_id", "=", "docks.id")
        .as("audited"),
      "docks.audience_at",
    ])
    .execute();
}

const stamps = new DockStamps(db);
const after = (ownerIds: readonly number[]) => stamps.of(ownerIds);
const times: Record<"before" | "after", number[]> = { before: [], after: [] };
// Warm both, then take them in turns so the machine's load falls on both alike.
await before(owners);
await after(owners);
for (let round = 0; round < Number(values.rounds); round++) {
  for (const [name, read] of round % 2 === 0
    ? ([
        ["before", before],
        ["after", after],
      ] as const)
    : ([
        ["after", after],
        ["before", before],
      ] as const)) {
    const at = performance.now();
    await read(owners);
    times[name].push(performance.now() - at);
  }
}
const percentile = (list: number[], p: number) => {
  const sorted = [...list].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
};
const total = owners.length * Number(values.docks);
console.log(
  `\nbench:stamps on ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, database ${values.database === "sqlite" ? "sqlite" : "postgres"}, ${owners.length} owners watching ${total} Docks, ${values.rounds} rounds\n`,
);
console.log("| stamp read | p50 ms | p90 ms | p99 ms |");
console.log("|---|---|---|---|");
for (const name of ["before", "after"] as const) {
  const list = times[name];
  console.log(
    `| ${name === "before" ? "before (settings, subscribers, messages, audit, audience)" : "after (… and refused)"} | ${percentile(list, 50).toFixed(2)} | ${percentile(list, 90).toFixed(2)} | ${percentile(list, 99).toFixed(2)} |`,
  );
}
await db.close();
rmSync(dataDir, { recursive: true, force: true });
