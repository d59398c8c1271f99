import { describe, expect, it } from "vitest";
import { GroupCommit } from "../../src/store/group-commit.ts";

/** A GroupCommit whose transactions are held until the test lets each go. */
function held() {
  const transactions: { items: number[]; commit: () => void; fail: (error: unknown) => void }[] = [];
  const alone: number[] = [];
  const group = new GroupCommit<number, string>({
    together: (items) =>
      new Promise((resolve, reject) => {
        transactions.push({
          items,
          commit: () => resolve(items.map((item) => `together ${item}`)),
          fail: reject,
        });
      }),
    alone: async (item) => {
      alone.push(item);
      if (item === 13) throw new Error("row 13 is bad");
      return `alone ${item}`;
    },
    most: 3,
  });
  return { group, transactions, alone };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("group commit", () => {
  it("the first write of a quiet moment goes alone; those that come meanwhile go together, at most `most` at once", async () => {
    const { group, transactions, alone } = held();
    const first = group.add(1);
    const rest = [2, 3, 4, 5].map((item) => group.add(item));
    expect(await first).toBe("alone 1");
    expect(alone).toEqual([1]);
    await settle();
    expect(transactions.map((t) => t.items)).toEqual([[2, 3, 4]]);
    transactions[0]?.commit();
    // 5 was left for the next one: a batch of one goes alone.
    expect(await Promise.all(rest)).toEqual(["together 2", "together 3", "together 4", "alone 5"]);
  });

  it("the database unavailable: every write of the batch fails with it", async () => {
    const { group, transactions } = held();
    const first = group.add(1);
    const batch = [2, 3].map((item) => group.add(item).catch((error: unknown) => error));
    await first;
    await settle();
    // What pg says when the server ends the connection under a query.
    const outage = new Error("Connection terminated unexpectedly");
    transactions[0]?.fail(outage);
    expect(await Promise.all(batch)).toEqual([outage, outage]);
  });

  it("a row's own fault: each write of the batch is tried alone, and only that one fails", async () => {
    const { group, transactions, alone } = held();
    const first = group.add(1);
    const batch = [12, 13, 14].map((item) =>
      group.add(item).catch((error: unknown) => (error as Error).message),
    );
    await first;
    await settle();
    transactions[0]?.fail(new Error("constraint failed"));
    expect(await Promise.all(batch)).toEqual(["alone 12", "row 13 is bad", "alone 14"]);
    expect(alone).toEqual([1, 12, 13, 14]);
  });
});

describe("group commit, several at once", () => {
  it("with atOnce 2, two writes go at once, alone; those that come while both are under way go together next", async () => {
    const running: { items: number[]; commit: () => void }[] = [];
    const group = new GroupCommit<number, number>({
      together: (items) => new Promise((resolve) => running.push({ items, commit: () => resolve(items) })),
      alone: (item) => new Promise((resolve) => running.push({ items: [item], commit: () => resolve(item) })),
      most: 10,
      atOnce: 2,
    });
    const all = [1, 2, 3, 4, 5].map((item) => group.add(item));
    await new Promise((resolve) => setImmediate(resolve));
    expect(running.map((r) => r.items)).toEqual([[1], [2]]);
    running[0]?.commit();
    await new Promise((resolve) => setImmediate(resolve));
    expect(running.map((r) => r.items)).toEqual([[1], [2], [3, 4, 5]]);
    running[1]?.commit();
    running[2]?.commit();
    expect(await Promise.all(all)).toEqual([1, 2, 3, 4, 5]);
  });
});
