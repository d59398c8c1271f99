import type { TestContext } from "vitest";
import { describe, expect, it } from "vitest";
import { PgLeadership } from "../../src/store/postgres/leadership.ts";
import { createTestDatabase, hasPostgres } from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

const POSTGRES = await hasPostgres();

/**
 * Two instances' views of one PostgreSQL database of the test's own (the instances of other tests
 * never count there), each given up when the test ends.
 */
async function twoInstances(onTestFinished: TestContext["onTestFinished"]) {
  const database = await createTestDatabase("postgres", { migrated: true });
  const first = new PgLeadership(database.url, "dispatcher", 5000);
  const second = new PgLeadership(database.url, "dispatcher", 5000);
  onTestFinished(async () => {
    for (const instance of [first, second]) {
      await instance.release();
      await instance.leave();
    }
    await database.drop();
  });
  return { database, first, second };
}

/**
 * Issue 40: a lone instance on PostgreSQL uses Telegram's whole limits; places are kept back for
 * other instances' bot replies only while some run (Pacer.othersAlive). Who runs is the server's
 * word: each instance holds a shared advisory lock on a session of its own.
 */
describe.skipIf(!POSTGRES)("instances sharing a PostgreSQL database", () => {
  it("an instance alone sees no other; a second is seen by both, the leader told at once; one that left is no longer seen", async ({
    onTestFinished,
  }) => {
    const { database, first, second } = await twoInstances(onTestFinished);
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

    // An instance of another bot on the same database is not one of them.
    const otherBot = new PgLeadership(database.url, "dispatcher:another-bot", 5000);
    onTestFinished(() => otherBot.leave());
    expect(await otherBot.others(() => {})).toBe(false);

    await second.leave();
    expect(await first.others(() => {})).toBe(false);
    // One that left for good does not come back by asking.
    expect(await second.others(() => {})).toBeUndefined();
  });

  it("membership sessions the server ended (a crash, a network gone) are gone at once; each joins again at its next look, and a leader is not told of its own", async ({
    onTestFinished,
  }) => {
    const { database, first, second } = await twoInstances(onTestFinished);
    let joined = 0;
    const announced: string[] = [];
    expect(await first.others(() => joined++)).toBe(false);
    expect(
      await first.tryAcquire(
        (payload) => announced.push(payload),
        () => {},
      ),
    ).toBe(true);
    expect(await second.others(() => {})).toBe(true);
    await waitFor("the leader told of the second", async () => (joined === 1 ? true : undefined));

    // As a kill -9 would, for both: the server ends every membership session (not the leader's lock).
    const admin = new (await import("pg")).default.Client({ connectionString: database.url });
    await admin.connect();
    onTestFinished(() => admin.end());
    {
      const members =
        "from pg_stat_activity where datname = current_database() and application_name = 'dock-notify member'";
      await admin.query(`select pg_terminate_backend(pid) ${members}`);
      // The server ends them a moment later: wait for it.
      await waitFor("the membership sessions gone", async () =>
        (await admin.query(`select count(*)::int as n ${members}`)).rows[0].n === 0 ? true : undefined,
      );
    }
    // The leader looks: it joins again on a new session (its own NOTIFY is no news to it), alone.
    expect(await first.others(() => joined++)).toBe(false);
    // The second looks and joins again: the leader is told, once. A NOTIFY sent after both has
    // come once the two before it have (they arrive in commit order): then the count is final.
    expect(await second.others(() => {})).toBe(true);
    await admin.query("select pg_notify('dock_notify_accepted', 'after-both')");
    await waitFor("the NOTIFY sent after both", async () =>
      announced.includes("after-both") ? true : undefined,
    );
    expect(joined).toBe(2);
    expect(await first.others(() => joined++)).toBe(true);
  });
});
