import { describe, expect, it } from "vitest";
import { PgLeadership } from "../../src/store/postgres/leadership.ts";
import { createTestDatabase, hasPostgres } from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

const POSTGRES = await hasPostgres();

/**
 * Issue 40: a lone instance on PostgreSQL uses Telegram's whole limits; places are kept back for
 * other instances' bot replies only while some run (Pacer.othersAlive). Who runs is the server's
 * word: each instance holds a shared advisory lock on a session of its own.
 */
describe.skipIf(!POSTGRES)("instances sharing a PostgreSQL database", () => {
  it("an instance alone sees no other; a second is seen by both, the leader told at once; one gone, or killed, is no longer seen", async ({
    onTestFinished,
  }) => {
    const database = await createTestDatabase("postgres", { migrated: true });
    // A database of its own: the instances of other tests never count here.
    const first = new PgLeadership(database.url, "dispatcher", 5000);
    const second = new PgLeadership(database.url, "dispatcher", 5000);
    onTestFinished(async () => {
      for (const instance of [first, second]) {
        await instance.release();
        await instance.leave();
      }
      await database.drop();
    });

    let joined = 0;
    expect(await first.others(() => joined++)).toBe(false);
    expect(
      await first.tryAcquire(
        () => {},
        () => {},
      ),
    ).toBe(true);

    expect(await second.others(() => {})).toBe(true);
    // The leader hears of the newcomer when it joins (a NOTIFY), before its own next look.
    await waitFor("the leader told of the newcomer", async () => (joined > 0 ? true : undefined));
    expect(await first.others(() => joined++)).toBe(true);

    await second.leave();
    expect(await first.others(() => {})).toBe(false);
    // One that left for good does not come back by asking.
    expect(await second.others(() => {})).toBeUndefined();
  });

  it("a member whose session the server ended (a crash, a network gone) is gone at once, and joins again at its next look", async ({
    onTestFinished,
  }) => {
    const database = await createTestDatabase("postgres", { migrated: true });
    const first = new PgLeadership(database.url, "dispatcher", 5000);
    const second = new PgLeadership(database.url, "dispatcher", 5000);
    onTestFinished(async () => {
      await first.leave();
      await second.leave();
      await database.drop();
    });
    expect(await first.others(() => {})).toBe(false);
    expect(await second.others(() => {})).toBe(true);
    // As a kill -9 would: the server drops the second's membership session.
    const admin = new (await import("pg")).default.Client({ connectionString: database.url });
    await admin.connect();
    try {
      const members =
        "from pg_stat_activity where datname = current_database() and application_name = 'dock-notify member'";
      await admin.query(`select pg_terminate_backend(pid) ${members}`);
      // The server ends them a moment later: wait for it.
      await waitFor("the membership sessions gone", async () =>
        (await admin.query(`select count(*)::int as n ${members}`)).rows[0].n === 0 ? true : undefined,
      );
    } finally {
      await admin.end();
    }
    // Both sessions were ended: the first, looking, joins again on a new session and is alone
    // until the second looks again (and joins again too).
    expect(await first.others(() => {})).toBe(false);
    expect(await second.others(() => {})).toBe(true);
    expect(await first.others(() => {})).toBe(true);
  });
});
