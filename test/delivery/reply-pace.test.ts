import { describe, expect, it } from "vitest";
import { type ChatMessage, People } from "../helpers/bot-harness.ts";
import { deliveryStates, ping, sandboxOf } from "../helpers/delivery-harness.ts";
import { dialects, startService } from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

const DIALECTS = await dialects();

/**
 * The bot's replies and the deliveries go through one pacer (pacer.ts), since Telegram counts them
 * in the same windows: a chat's 3 messages in any 3 seconds, the bot's 30 in any second (the
 * sandbox, limits on, counts as it does).
 *
 * A new subscriber's chat has just had the bot's side of the conversation — the prompt, the menu,
 * the prompt edited into the confirmation — when the Dock's first message goes out.
 */
describe.concurrent.each(DIALECTS)("the first delivery to new subscribers on %s", (dialect) => {
  it("20 people subscribe by deep link and Yes, get the Dock's first message at once: zero 429s", async ({
    onTestFinished,
  }) => {
    const service = await startService(dialect, { AUTH_FAILURES_PER_MINUTE: "0", DOCK_RATE_BURST: "0" });
    onTestFinished(() => service.close());
    // The bot takes the 20 people's updates one after another (grammY's polling), each with a
    // database transaction and up to three Telegram calls: on a machine busy with other work the
    // last person's confirmation comes well after 10 s. What this test checks is that no call gets
    // a 429, not how long the queue of updates takes.
    const people = new People(`${service.url}/sandbox`, { waitMs: 60_000 });
    const sandbox = sandboxOf(service);
    const dock = await service.app.docks.create(1, { name: "Launch", link: null, description: null });

    // All at once: 20 conversations of three messages each, above the bot's 30 a second too.
    const readers = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const id = await people.person(`Reader ${i}`);
        const prompt = await people.botReply(id, await people.start(id, dock.id), "the subscription prompt");
        await people.press(id, prompt, "Yes");
        const confirmed = await people.edited(id, prompt, "the confirmation");
        expect(confirmed.text).toContain("now subscribed to Launch");
        return id;
      }),
    );
    await ping(service.url, dock, "first of many");
    await waitFor("20 deliveries sent", async () => (await deliveryStates(service)).sent === 20, 60_000, 100);

    for (const reader of readers) {
      const texts = (await people.history(reader)).filter((m) => m.from.is_bot).map((m) => m.text);
      expect(texts.at(-1)).toBe("Launch\nfirst of many");
    }
    const stats = await sandbox.stats();
    expect(stats.too_many_requests).toBe(0);
    // Each chat: the prompt, the menu, the delivery (the confirmation is an edit).
    expect(stats.send_message).toBe(60);
  }, 120_000);
});

/**
 * The bot answering a person goes before queued deliveries (but never over the window): counted in
 * the person's own chat, whose history orders every message exactly, however loaded the machine.
 */
describe("the bot's replies during a backlog", () => {
  it("a person with 20 deliveries queued for their chat is answered ahead of them, within the chat's window", async ({
    onTestFinished,
  }) => {
    const service = await startService("sqlite", { AUTH_FAILURES_PER_MINUTE: "0", DOCK_RATE_BURST: "0" });
    onTestFinished(() => service.close());
    const people = new People(`${service.url}/sandbox`);
    const sandbox = sandboxOf(service);
    const busy = await service.app.docks.create(1, { name: "Busy", link: null, description: null });
    const quiet = await service.app.docks.create(1, { name: "Quiet", link: null, description: null });
    const readers: number[] = [];
    for (let i = 0; i < 30; i++) {
      const reader = await sandbox.person(`Reader ${i}`);
      readers.push(reader);
      await service.subscriptions.subscribe(busy.id, reader, "private");
    }
    const reader = readers[0] as number;
    // 30 chats × 20 messages: about 20 s at the bot's 30 a second and each chat's 3 in any 3 seconds.
    for (let n = 1; n <= 20; n++) await ping(service.url, busy, `n${n}`);
    await waitFor(
      "the backlog draining",
      async () => (await sandbox.botTexts(reader)).length >= 2,
      30_000,
      50,
    );

    /**
     * The bot's answer to the person's message `asked` (the first of its messages after it that is
     * not a delivery), and how many deliveries came between: overtook it.
     */
    const answered = async (asked: ChatMessage, what: string) => {
      const since = async () => (await people.history(reader)).filter((m) => m.message_id > asked.message_id);
      const answer = await people.waitFor(
        what,
        async () => (await since()).find((m) => m.from.is_bot && !m.text?.startsWith("Busy\n")),
        since,
      );
      const overtaking = (await since()).filter((m) => m.message_id < answer.message_id).length;
      return { answer, overtaking };
    };
    const start = await people.start(reader, quiet.id);
    const prompt = await answered(start, "the prompt");
    expect(prompt.answer.text).toContain("Subscribe to this Dock?");
    await people.press(reader, prompt.answer, "Yes");
    await people.edited(reader, prompt.answer, "the confirmation");
    const list = await answered(await people.keyboard(reader, "My subscriptions"), "the list");
    expect(list.answer.text).toContain("subscribed to 2 Docks");
    // Only what was on its way, or went while the bot read the database, came first: less than
    // one window of the chat's (3), not its queue.
    expect(prompt.overtaking).toBeLessThan(3);
    expect(list.overtaking).toBeLessThan(3);

    await waitFor(
      "600 deliveries sent",
      async () => (await deliveryStates(service)).sent === 600,
      60_000,
      250,
    );
    // …and the chat's queue went on after them: they did not wait for it to drain.
    const later = (await people.history(reader)).filter(
      (m) => m.message_id > list.answer.message_id && m.text?.startsWith("Busy\n"),
    );
    expect(later.length).toBeGreaterThan(0);
    expect((await sandbox.stats()).too_many_requests).toBe(0);
  }, 120_000);
});
