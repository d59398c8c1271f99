import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FairQueue } from "../../src/delivery/fair-queue.ts";

interface D {
  id: number;
  dockId: string;
  chatId: number;
  nextAttemptAt: number;
}

let ids = 0;
const delivery = (dockId: string, chatId: number, nextAttemptAt = 0): D => ({
  id: ++ids,
  dockId,
  chatId,
  nextAttemptAt,
});

/** Takes deliveries one by one as they may go at `now`, nothing busy, until none may. */
function drain(queue: FairQueue<D>, now = 0): D[] {
  const taken: D[] = [];
  for (;;) {
    const next = queue.next(
      now,
      () => false,
      (head) => head.nextAttemptAt,
    );
    if (next.delivery === null) return taken;
    taken.push(next.delivery);
    queue.remove(next.delivery);
  }
}

describe("the fair queue", () => {
  it("serves Docks round-robin: a flood of one Dock does not hold back another's single message", () => {
    const queue = new FairQueue<D>(1000);
    for (let chat = 1; chat <= 100; chat++) queue.hold(delivery("flood", chat));
    const single = delivery("quiet", 500);
    queue.hold(single);
    const order = drain(queue);
    expect(order).toHaveLength(101);
    expect(order.indexOf(single)).toBeLessThanOrEqual(1);
  });

  it("serves a Dock's chats round-robin, and each chat's deliveries in id order", () => {
    const queue = new FairQueue<D>(1000);
    const a1 = delivery("d", 1);
    const a2 = delivery("d", 1);
    const b1 = delivery("d", 2);
    const b2 = delivery("d", 2);
    // Held out of order (a sweep finds an older row again): the chat's order is by id.
    for (const d of [a2, b1, a1, b2]) queue.hold(d);
    expect(drain(queue).map((d) => d.id)).toEqual([a1.id, b1.id, a2.id, b2.id]);
  });

  it("never lets a chat's later delivery overtake its head, however the heads' times fall", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            dock: fc.constantFrom("a", "b", "c"),
            chat: fc.integer({ min: 1, max: 5 }),
            at: fc.integer({ min: 0, max: 50 }),
          }),
          { minLength: 1, maxLength: 60 },
        ),
        (specs) => {
          const queue = new FairQueue<D>(1000);
          const held = specs.map((s) => delivery(s.dock, s.chat, s.at));
          for (const d of held) queue.hold(d);
          const sent: D[] = [];
          // A fake clock: time moves only to when the queue says the next one may go.
          for (let now = 0; ; ) {
            sent.push(...drain(queue, now));
            const next = queue.next(
              now,
              () => false,
              (head) => head.nextAttemptAt,
            );
            if (next.delivery !== null) continue;
            if (!Number.isFinite(next.at)) break;
            now = next.at;
          }
          expect(sent).toHaveLength(held.length);
          for (const chat of new Set(held.map((d) => `${d.dockId}/${d.chatId}`))) {
            const ofChat = sent.filter((d) => `${d.dockId}/${d.chatId}` === chat).map((d) => d.id);
            expect(ofChat).toEqual([...ofChat].sort((x, y) => x - y));
          }
        },
      ),
    );
  });

  it("skips busy chats, and says when the earliest waiting head may go", () => {
    const queue = new FairQueue<D>(1000);
    const busy = delivery("d", 1, 0);
    const later = delivery("d", 2, 700);
    queue.hold(busy);
    queue.hold(later);
    const next = queue.next(
      100,
      (chat) => chat === 1,
      (head) => head.nextAttemptAt,
    );
    expect(next).toEqual({ delivery: null, at: 700 });
    expect(
      queue.next(
        700,
        (chat) => chat === 1,
        (head) => head.nextAttemptAt,
      ),
    ).toEqual({ delivery: later });
    expect(
      new FairQueue<D>(10).next(
        0,
        () => false,
        () => 0,
      ),
    ).toEqual({
      delivery: null,
      at: Number.POSITIVE_INFINITY,
    });
  });

  it("asks for a refill when a Dock with more in the database runs below half its window", () => {
    const queue = new FairQueue<D>(4);
    const held = [1, 2, 3, 4].map((chat) => delivery("d", chat));
    for (const d of held) queue.hold(d);
    expect(queue.setMore("d", true)).toBe(true);
    expect(queue.setMore("none", true)).toBe(false);
    expect(queue.remove(held[0] as D)).toBe(false);
    expect(queue.held("d")).toBe(3);
    expect(queue.remove(held[1] as D)).toBe(false);
    // One below half: refill, once.
    expect(queue.remove(held[2] as D)).toBe(true);
    expect(queue.remove(held[3] as D)).toBe(false);
    expect(queue.empty).toBe(true);
  });

  it("moves a chat to its new id merged in id order, and drops a chat whole", () => {
    const queue = new FairQueue<D>(1000);
    const old1 = delivery("d", -1);
    const new1 = delivery("d", -100);
    const old2 = delivery("d", -1);
    for (const d of [old1, new1, old2]) queue.hold(d);
    queue.moveChat(-1, -100);
    expect(old1.chatId).toBe(-100);
    expect(drain(queue).map((d) => d.id)).toEqual([old1.id, new1.id, old2.id]);

    const kept = delivery("d", 7);
    for (const d of [delivery("d", 5), delivery("e", 5), kept]) queue.hold(d);
    queue.dropChat(5);
    expect([...queue.all()]).toEqual([kept]);
    expect(queue.has(kept.id)).toBe(true);
    queue.clear();
    expect(queue.empty).toBe(true);
    expect(queue.has(kept.id)).toBe(false);
  });
});
