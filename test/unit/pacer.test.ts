import { afterEach, describe, expect, it, vi } from "vitest";
import { type ChatKind, Pacer, pacedSends, TELEGRAM_LIMITS, type Ticket } from "../../src/telegram/pacer.ts";

/**
 * A pacer on a clock the test moves, and a sender that sends whenever the pacer lets it, each
 * send answered `rttMs` after it started. Returns every send's start and answer times.
 */
function pacerAt(globalPerSecond: number) {
  const clock = { now: 1_000_000 };
  const pacer = new Pacer({ ...TELEGRAM_LIMITS, globalPerSecond }, () => clock.now);
  const sends: { chat: number; start: number; end: number }[] = [];
  /** Sends to `chats` chats round-robin for `ms`, answered after `rttMs` (or never, with null). */
  const sendFor = (ms: number, options: { chats?: number; rttMs?: number | null; kind?: ChatKind } = {}) => {
    const { chats = 1_000_000, rttMs = 0, kind = "private" } = options;
    const end = clock.now + ms;
    const inFlight: { at: number; ticket: Ticket; send: (typeof sends)[number] }[] = [];
    let sent = 0;
    for (let chat = 1; ; ) {
      const ready = pacer.readyAt(chat, kind);
      const answer = inFlight.reduce((min, f) => Math.min(min, f.at), Number.POSITIVE_INFINITY);
      const next = Math.min(ready, answer);
      if (next >= end) break;
      clock.now = Math.max(clock.now, next);
      if (answer <= clock.now) {
        const done = inFlight.splice(
          inFlight.findIndex((f) => f.at === answer),
          1,
        )[0] as (typeof inFlight)[number];
        done.send.end = clock.now;
        pacer.release(done.ticket);
        continue;
      }
      const ticket = pacer.take(chat, kind);
      const send = { chat, start: clock.now, end: Number.NaN };
      sends.push(send);
      sent++;
      if (rttMs !== null) inFlight.push({ at: clock.now + rttMs, ticket, send });
      chat = (chat % chats) + 1;
    }
    clock.now = end;
    return sent;
  };
  /** The most sends that started in any window of `windowMs` (a half-open interval). */
  const peak = (windowMs: number, chat?: number) => {
    const starts = sends.filter((s) => chat === undefined || s.chat === chat).map((s) => s.start);
    let most = 0;
    for (let i = 0, j = 0; j < starts.length; j++) {
      while ((starts[j] as number) - (starts[i] as number) >= windowMs) i++;
      most = Math.max(most, j - i + 1);
    }
    return most;
  };
  return { pacer, clock, sendFor, peak, sends };
}

describe("the pacer", () => {
  it("never lets more than the rate into any second, and keeps the rate up for as long as it sends", () => {
    const { sendFor, peak } = pacerAt(30);
    // Answered at once: 30 at the start of each second.
    expect(sendFor(10_000)).toBe(300);
    expect(peak(1000)).toBe(30);
  });

  it("holds each place until a second after Telegram's answer, so a message held up on its way cannot crowd a later second", () => {
    const { sendFor, peak, sends } = pacerAt(30);
    // 50 ms round trips: 30 per 1.05 s.
    expect(sendFor(10_500, { rttMs: 50 })).toBe(300);
    expect(peak(1000)).toBe(30);
    // Each send of a "second" starts a full second after the answer to the send 30 places back.
    for (let i = 30; i < sends.length; i++) {
      expect((sends[i] as (typeof sends)[number]).start).toBeGreaterThanOrEqual(
        (sends[i - 30] as (typeof sends)[number]).end + 1000,
      );
    }
  });

  it("a send on its way holds its place until its answer however late, and only its own place", () => {
    const { pacer, sendFor } = pacerAt(30);
    // 30 sends that hang: the window is full until one of them is answered.
    expect(sendFor(100, { rttMs: null })).toBe(30);
    expect(pacer.readyAt(999_999, "private")).toBe(Number.POSITIVE_INFINITY);
    // The bot's own window says so for every chat at once.
    expect(pacer.botReadyAt()).toBe(Number.POSITIVE_INFINITY);
    expect(sendFor(60_000, { rttMs: null })).toBe(0);
    // One that hangs takes one place: the other 29 go on at the rate.
    const one = pacerAt(30);
    expect(one.pacer.botReadyAt()).toBeLessThanOrEqual(one.pacer.readyAt(1, "private"));
    one.pacer.take(1, "private");
    expect(one.sendFor(10_000, { chats: 1000 })).toBe(290);
  });

  it("a send held up on its way arrives late, yet no window of Telegram's holds more than the limit", () => {
    // The case a bound on arrival times got wrong (a starved sandbox): the first send is held for
    // 2.9 s, then arrives with the next two of its chat just behind it.
    const { pacer, clock } = pacerAt(30);
    const start = clock.now;
    const held = pacer.take(1, "private");
    clock.now = start + 2900; // it arrives now, and is answered
    pacer.release(held);
    pacer.release(pacer.take(1, "private"));
    pacer.release(pacer.take(1, "private"));
    // Three arrivals at 2.9 s: the fourth may go only once the first left Telegram's window.
    expect(pacer.readyAt(1, "private")).toBe(start + 2900 + 3000);
  });

  it("whatever the delays on the way, Telegram never counts more than the limit in a window (seeded random delays)", () => {
    let seed = 36;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const { pacer, clock } = pacerAt(30);
    const arrivals: { chat: number; at: number }[] = [];
    const onTheirWay: { answer: number; ticket: Ticket }[] = [];
    // Each turn the sender has a message for one of 4 chats (their windows bind) and one for one of
    // 200 (the bot's binds), and sends whichever may go first, several to a chat at once; most
    // arrive within 50 ms, one in ten up to 5 s late, each answered up to 100 ms after it arrived.
    const ready = (chat: number) => pacer.readyAt(chat, "private");
    const pick = () => {
      const few = 1 + Math.floor(random() * 4);
      const many = 100 + Math.floor(random() * 200);
      return ready(few) <= ready(many) ? few : many;
    };
    const end = clock.now + 60_000;
    for (let chat = pick(); ; ) {
      const answer = Math.min(...onTheirWay.map((s) => s.answer));
      const next = Math.min(ready(chat), answer);
      if (next > end) break;
      clock.now = Math.max(clock.now, next);
      if (answer <= clock.now) {
        const [done] = onTheirWay.splice(
          onTheirWay.findIndex((s) => s.answer === answer),
          1,
        );
        pacer.release((done as (typeof onTheirWay)[number]).ticket);
        chat = pick();
        continue;
      }
      const ticket = pacer.take(chat, "private");
      const at = clock.now + Math.floor(random() < 0.1 ? random() * 5000 : random() * 50);
      arrivals.push({ chat, at });
      onTheirWay.push({ answer: at + Math.floor(random() * 100), ticket });
      chat = pick();
    }
    expect(arrivals.length).toBeGreaterThan(1000);
    // Counted as the sandbox counts (limits.ts): the arrivals in (t - window, t].
    const most = (times: number[], windowMs: number) => {
      times.sort((a, b) => a - b);
      let peak = 0;
      for (let i = 0, j = 0; j < times.length; j++) {
        while ((times[i] as number) <= (times[j] as number) - windowMs) i++;
        peak = Math.max(peak, j - i + 1);
      }
      return peak;
    };
    expect(
      most(
        arrivals.map((a) => a.at),
        1000,
      ),
    ).toBeLessThanOrEqual(30);
    for (let chat = 1; chat <= 4; chat++) {
      expect(
        most(
          arrivals.filter((a) => a.chat === chat).map((a) => a.at),
          3000,
        ),
      ).toBeLessThanOrEqual(3);
    }
  });

  it("counts a slow send that fell behind later ones until it is answered", () => {
    const { pacer, clock } = pacerAt(2);
    const start = clock.now;
    const slow = pacer.take(1, "private"); // on its way, no answer yet
    pacer.release(pacer.take(2, "private"));
    // The answered one leaves the window a second after its answer; the slow one stays.
    expect(pacer.readyAt(3, "private")).toBe(start + 1000);
    clock.now = start + 1000;
    const other = pacer.take(3, "private");
    expect(pacer.readyAt(4, "private")).toBe(Number.POSITIVE_INFINITY);
    clock.now = start + 4000;
    pacer.release(slow);
    pacer.release(other);
    expect(pacer.readyAt(4, "private")).toBe(start + 5000);
  });

  it("a place given back (nothing went to Telegram) is as if never taken", () => {
    const { pacer, clock } = pacerAt(30);
    const tickets = Array.from({ length: 30 }, (_, i) => pacer.take(i + 1, "private"));
    for (const ticket of tickets.slice(0, 29)) pacer.release(ticket);
    expect(pacer.readyAt(100, "private")).toBe(clock.now + 1000);
    pacer.cancel(tickets[29] as (typeof tickets)[number]);
    expect(pacer.readyAt(100, "private")).toBe(clock.now);
  });

  it("a cold start with sends in flight still counts them", () => {
    const { pacer, clock } = pacerAt(2);
    const hung = pacer.take(1, "private");
    clock.now += 500;
    pacer.coldStart();
    clock.now += 1000;
    // The window assumed full at the cold start is free a second later, but the hung send still
    // holds its place until it is answered, and then for a second.
    expect(pacer.readyAt(2, "private")).toBe(clock.now);
    const other = pacer.take(2, "private");
    expect(pacer.readyAt(3, "private")).toBe(Number.POSITIVE_INFINITY);
    clock.now += 5000;
    pacer.release(hung);
    pacer.release(other);
    expect(pacer.readyAt(3, "private")).toBe(clock.now + 1000);
  });

  it("a second cold start replaces the first one's guess; the pacer's own sends stay counted", () => {
    const { pacer, clock } = pacerAt(30);
    pacer.coldStart();
    const first = clock.now;
    expect(pacer.readyAt(1, "private")).toBe(first + 1000);
    expect(pacer.readyAt(2, "private")).toBe(first + 1000);
    clock.now += 1000;
    pacer.release(pacer.take(1, "private"));
    const sent = clock.now;
    clock.now += 500;
    // Leadership lost and taken back: the previous leader's steady stream is assumed again, once.
    pacer.coldStart();
    const second = clock.now;
    // The chat: the guess (3 messages over the 3 s before, the first 2 s ago) and our own message,
    // 0.5 s ago: 4 in the window, so two must leave it first (the guess's second, at 2 s).
    expect(sent).toBe(second - 500);
    expect(pacer.readyAt(1, "private")).toBe(second + 2000);
    // A chat with nothing of ours: the second guess only (both would have made it 1.5 s).
    expect(pacer.readyAt(2, "private")).toBe(second + 1000);
  });

  it("paid broadcast: 1,000 in any second", () => {
    const { sendFor, peak } = pacerAt(1000);
    expect(sendFor(3000, { rttMs: 0 })).toBe(3000);
    expect(peak(1000)).toBe(1000);
  });

  it("a private chat: 3 in any 3 seconds; a group: 20 in any minute", () => {
    const { sendFor, peak } = pacerAt(30);
    expect(sendFor(9000, { chats: 1 })).toBe(9);
    expect(peak(3000, 1)).toBe(3);
    const groups = pacerAt(30);
    expect(groups.sendFor(120_000, { chats: 1, kind: "group" })).toBe(40);
    expect(groups.peak(60_000, 1)).toBe(20);
  });

  it("after a cold start (a restart, a takeover), sends nothing for a second, then the rate; chats ramp up", () => {
    const { pacer, clock, sendFor, peak, sends } = pacerAt(30);
    const start = clock.now;
    pacer.coldStart();
    expect(pacer.readyAt(1, "private")).toBe(start + 1000);
    expect(sendFor(3000)).toBe(60);
    expect(Math.min(...sends.map((s) => s.start))).toBe(start + 1000);
    expect(peak(1000)).toBe(30);
    // One private chat: one message a second at first (as if it had had a steady stream), then bursts.
    const chats = pacerAt(30);
    chats.pacer.coldStart();
    expect(chats.sendFor(5000, { chats: 1 })).toBe(4);
    expect(chats.sends.map((s) => s.start - start)).toEqual([1000, 2000, 3000, 4000]);
  });

  it("a freeze lets the queue pile up, but what follows is still at most the rate in any second", () => {
    const { sendFor, clock, peak } = pacerAt(30);
    sendFor(2000);
    clock.now += 10_000; // nothing sent: the event loop or the database was frozen
    sendFor(3000);
    expect(peak(1000)).toBe(30);
  });

  it("stops everything for Telegram's retry_after, then resumes", () => {
    const { pacer, clock, sendFor } = pacerAt(30);
    pacer.pause(7, 5);
    expect(pacer.readyAt(8, "private")).toBe(clock.now + 5000);
    expect(sendFor(4999)).toBe(0);
    expect(sendFor(10)).toBeGreaterThan(0);
  });

  it("with other instances sending for the same bot, keeps places back for them: 27 a second, 2 in a private chat's 3 s", () => {
    const clock = { now: 1_000_000 };
    const pacer = new Pacer({ ...TELEGRAM_LIMITS, globalPerSecond: 30, othersSend: true }, () => clock.now);
    let sent = 0;
    for (let chat = 1; pacer.readyAt(chat, "private") <= clock.now; chat++, sent++) {
      pacer.release(pacer.take(chat, "private"));
    }
    expect(sent).toBe(27);
    clock.now += 1000;
    pacer.release(pacer.take(100, "private"));
    pacer.release(pacer.take(100, "private"));
    expect(pacer.readyAt(100, "private")).toBe(clock.now + 3000);
  });

  it("alone on a shared database (told no other instance runs): Telegram's whole limits, 30 a second and 3 in a private chat's 3 s", () => {
    const clock = { now: 1_000_000 };
    const pacer = new Pacer({ ...TELEGRAM_LIMITS, globalPerSecond: 30, othersSend: true }, () => clock.now);
    pacer.othersAlive(false);
    let sent = 0;
    for (let chat = 1; pacer.readyAt(chat, "private") <= clock.now; chat++, sent++) {
      pacer.release(pacer.take(chat, "private"));
    }
    expect(sent).toBe(30);
    clock.now += 1000;
    for (let i = 0; i < 3; i++) pacer.release(pacer.take(100, "private"));
    expect(pacer.readyAt(100, "private")).toBe(clock.now + 3000);
  });

  it("another instance comes: places kept back at once; it goes: kept a group's window (60 s) longer, then the whole limits again", () => {
    const clock = { now: 1_000_000 };
    const pacer = new Pacer({ ...TELEGRAM_LIMITS, globalPerSecond: 30, othersSend: true }, () => clock.now);
    pacer.othersAlive(false);
    pacer.release(pacer.take(100, "private"));
    pacer.release(pacer.take(100, "private"));
    expect(pacer.readyAt(100, "private")).toBe(clock.now);
    pacer.othersAlive(true);
    // Two in the window already: the third place is the other instance's.
    expect(pacer.readyAt(100, "private")).toBe(clock.now + 3000);
    clock.now += 10_000;
    pacer.othersAlive(false);
    pacer.release(pacer.take(100, "private"));
    pacer.release(pacer.take(100, "private"));
    expect(pacer.readyAt(100, "private")).toBe(clock.now + 3000);
    clock.now += 59_999;
    pacer.release(pacer.take(101, "private"));
    pacer.release(pacer.take(101, "private"));
    expect(pacer.readyAt(101, "private")).toBe(clock.now + 3000);
    clock.now += 1;
    expect(pacer.readyAt(101, "private")).toBe(clock.now);
  });

  it("on a database nobody shares (othersSend off), word of other instances changes nothing", () => {
    const clock = { now: 1_000_000 };
    const pacer = new Pacer({ ...TELEGRAM_LIMITS, globalPerSecond: 30 }, () => clock.now);
    pacer.othersAlive(true);
    for (let i = 0; i < 3; i++) {
      expect(pacer.readyAt(100, "private")).toBe(clock.now);
      pacer.release(pacer.take(100, "private"));
    }
  });

  describe("the bot's replies before deliveries", () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    /** A pacer on the fake timers' clock, with the bot's window full of sends answered just now. */
    function busy() {
      vi.useFakeTimers({ now: 1_000_000 });
      const pacer = new Pacer({ ...TELEGRAM_LIMITS, globalPerSecond: 30 });
      for (let chat = 1; chat <= 30; chat++) pacer.release(pacer.take(chat, "private"));
      return pacer;
    }

    it("a reply waiting for a place keeps it from deliveries, then takes it", async () => {
      const pacer = busy();
      let ticket: Ticket | null | undefined;
      void pacer.acquire(100, "private", { priority: "reply" }).then((t) => (ticket = t));
      await vi.advanceTimersByTimeAsync(0);
      expect(ticket).toBeUndefined();
      // The second is over: 30 places free, but a delivery sees 29 of them.
      vi.setSystemTime(1_001_000);
      let deliveries = 0;
      while (pacer.readyAt(200 + deliveries, "private") <= Date.now())
        pacer.take(200 + deliveries++, "private");
      expect(deliveries).toBe(29);
      await vi.advanceTimersByTimeAsync(1000);
      expect(ticket).not.toBeNull();
      expect(ticket).toBeDefined();
      // Nothing more this second, for anyone.
      expect(pacer.readyAt(300, "private")).toBeGreaterThan(Date.now());
      expect(pacer.readyAt(301, "private", "reply")).toBeGreaterThan(Date.now());
    });

    it("a reply goes before the deliveries of its own chat, and still keeps the chat's window", async () => {
      vi.useFakeTimers({ now: 1_000_000 });
      const start = Date.now();
      const pacer = new Pacer({ ...TELEGRAM_LIMITS, globalPerSecond: 30 });
      // The chat's 3 in any 3 seconds, one a second.
      for (let i = 0; i < 3; i++) {
        if (i > 0) await vi.advanceTimersByTimeAsync(1000);
        pacer.release(pacer.take(7, "private"));
      }
      let ticket: Ticket | null | undefined;
      void pacer.acquire(7, "private", { priority: "reply" }).then((t) => (ticket = t));
      await vi.advanceTimersByTimeAsync(0);
      // The first place to come free (at 3 s) is the reply's; the chat's next delivery waits for
      // the second (at 4 s).
      expect(pacer.readyAt(7, "private")).toBe(start + 4000);
      await vi.advanceTimersByTimeAsync(999);
      expect(ticket).toBeUndefined();
      await vi.advanceTimersByTimeAsync(1);
      expect(ticket).toBeDefined();
      pacer.release(ticket as Ticket);
      expect(pacer.readyAt(7, "private")).toBe(start + 4000);
    });

    it("the bot's sends, edits and deletes take places in the chat's window; answering a button does not", async () => {
      vi.useFakeTimers({ now: 1_000_000 });
      const pacer = new Pacer({ ...TELEGRAM_LIMITS, globalPerSecond: 30 });
      const paced = pacedSends(pacer);
      const called: string[] = [];
      // biome-ignore lint/suspicious/noExplicitAny: a Bot API stand-in answering every call.
      const telegram: any = async (method: string) => {
        called.push(method);
        return { ok: true, result: true };
      };
      const call = (method: string, payload: object) =>
        (paced as (...args: unknown[]) => Promise<unknown>)(telegram, method, payload);
      await call("answerCallbackQuery", { callback_query_id: "1" });
      await call("sendMessage", { chat_id: 7, text: "Subscribe?" });
      await call("editMessageText", { chat_id: 7, message_id: 1, text: "Subscribed" });
      await call("answerCallbackQuery", { callback_query_id: "2" });
      await call("deleteMessage", { chat_id: 7, message_id: 1 });
      expect(called).toHaveLength(5);
      // Three in the chat's window: its next message waits 3 s.
      expect(pacer.readyAt(7, "private")).toBe(Date.now() + 3000);
      let sent = false;
      void call("editMessageReplyMarkup", { chat_id: 7, message_id: 2 }).then(() => (sent = true));
      await vi.advanceTimersByTimeAsync(2999);
      expect(sent).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect(sent).toBe(true);
    });

    it("a sender stopping gives up its calls that wait for a turn, never sends them, and lets a call under way finish", async () => {
      vi.useFakeTimers({ now: 1_000_000 });
      const pacer = new Pacer({ ...TELEGRAM_LIMITS, globalPerSecond: 30 });
      const stopping = new AbortController();
      const paced = pacedSends(pacer, stopping.signal);
      const called: string[] = [];
      let answer: (() => void) | undefined;
      // biome-ignore lint/suspicious/noExplicitAny: a Bot API stand-in; sendMessage answers when told.
      const telegram: any = (method: string) => {
        called.push(method);
        return new Promise((resolve) => (answer = () => resolve({ ok: true, result: true })));
      };
      const call = (method: string, payload: object) =>
        (paced as (...args: unknown[]) => Promise<unknown>)(telegram, method, payload);
      const underWay = call("sendMessage", { chat_id: 7, text: "first" });
      await vi.advanceTimersByTimeAsync(0);
      pacer.pause(8, 3600);
      const waiting = call("sendMessage", { chat_id: 8, text: "held an hour" });
      const outcome = waiting.then(
        () => "sent",
        (error: Error) => error.name,
      );
      await vi.advanceTimersByTimeAsync(0);
      stopping.abort();
      expect(await outcome).toBe("PaceWaitAborted");
      expect(called).toEqual(["sendMessage"]);
      answer?.();
      expect(await underWay).toEqual({ ok: true, result: true });
    });

    it("a reply that stops waiting (its call aborted) leaves the place to deliveries", async () => {
      const pacer = busy();
      const abort = new AbortController();
      const reply = pacer.acquire(100, "private", { priority: "reply", signal: abort.signal });
      await vi.advanceTimersByTimeAsync(0);
      vi.setSystemTime(1_001_000);
      expect(pacer.readyAt(200, "private")).toBe(Date.now());
      for (let chat = 200; chat < 229; chat++) pacer.take(chat, "private");
      expect(pacer.readyAt(229, "private")).toBe(Number.POSITIVE_INFINITY);
      let told = 0;
      pacer.onRelease(() => told++);
      abort.abort();
      expect(await reply).toBeNull();
      expect(told).toBe(1);
      expect(pacer.readyAt(229, "private")).toBe(Date.now());
    });
  });

  it("tells listeners when a send is answered (a place may have come free)", () => {
    const { pacer } = pacerAt(30);
    let told = 0;
    const stop = pacer.onRelease(() => told++);
    pacer.release(pacer.take(1, "private"));
    stop();
    pacer.release(pacer.take(2, "private"));
    expect(told).toBe(1);
  });
});
