import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DockWithSecret } from "../../src/store/docks.ts";
import { RECEIVERS_HERE, receiver } from "../helpers/callback-receiver.ts";
import { sandboxOf } from "../helpers/delivery-harness.ts";
import { basic, dialects, type RunningService, startService } from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON the service and sandbox answered.
type Json = any;

const DIALECTS = await dialects();

/*
 * Reminders until someone acknowledges, end to end: the send API, the rounds, the sandbox's chats
 * (where a message that arrives with sound has no `disable_notification`), the buttons pressed as
 * people press them, and the sender's signed events. The service's clock is moved on to reach each
 * round (30 s at the least); nothing is in flight when it moves.
 */
describe.each(DIALECTS)("reminders until acknowledged on %s", (dialect) => {
  let service: RunningService;
  let dock: DockWithSecret;
  let sandbox: ReturnType<typeof sandboxOf>;
  let people: number[];
  let hook: Awaited<ReturnType<typeof receiver>>;
  let shift = 0;

  beforeAll(async () => {
    hook = await receiver();
    service = await startService(
      dialect,
      { AUTH_FAILURES_PER_MINUTE: "0", DOCK_RATE_BURST: "0", ...RECEIVERS_HERE },
      { pace: "unpaced", now: () => Date.now() + shift },
    );
    dock = await service.app.docks.create(1, {
      name: "On call",
      link: null,
      description: null,
      callback_url: hook.url,
    });
    sandbox = sandboxOf(service);
    people = [await sandbox.person("Ada"), await sandbox.person("Bo")];
    for (const person of people) await service.subscriptions.subscribe(dock.id, person, "private");
  });
  afterAll(async () => {
    await service?.close();
    await hook?.close();
  });

  const send = async (body: Record<string, unknown>, query = ""): Promise<string> => {
    const response = await fetch(`${service.url}/webhook${query}`, {
      method: "POST",
      headers: { Authorization: basic(dock.id, dock.secretKey), "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    expect(response.status).toBe(202);
    return ((await response.json()) as Json).message_id;
  };
  const status = async (id: string): Promise<Json> =>
    (
      (await (
        await fetch(`${service.url}/messages/${id}`, {
          headers: { Authorization: basic(dock.id, dock.secretKey) },
        })
      ).json()) as Json
    ).message;
  const copiesOf = (needle: string) =>
    waitFor(`a copy of "${needle}" in every chat`, async () => {
      const found = await Promise.all(
        people.map(async (person) =>
          (await sandbox.botMessages(person)).find((m: Json) => m.text.includes(needle)),
        ),
      );
      return found.every(Boolean) ? found : undefined;
    });
  /** Each chat's reminders of the copy `copies[i]`, as the chat shows them now. */
  const remindersOf = async (copies: Json[]) =>
    Promise.all(
      people.map(async (person, i) =>
        (await sandbox.botMessages(person)).filter(
          (m: Json) => m.reply_to_message?.message_id === copies[i].message_id,
        ),
      ),
    );
  /** Moves the clock on to the next round and waits until every chat shows reminder `round`. */
  const nextRound = async (id: string, copies: Json[], round: number, seconds: number) => {
    shift += seconds * 1000;
    return waitFor(`round ${round} in every chat`, async () => {
      const shown = await remindersOf(copies);
      const latest = shown.map((list) => list.at(-1));
      const { reminders } = await status(id);
      // Settled too (none queued or in flight): the clock may move on.
      return latest.every((m) => m?.text.startsWith(`⏰ Still unacknowledged (${round})`)) &&
        reminders.rounds === round &&
        reminders.reminders.queued === undefined &&
        reminders.reminders.sending === undefined
        ? latest
        : undefined;
    });
  };
  const eventsOf = (id: string, type: string) =>
    hook.posts.map((post) => JSON.parse(post.body)).filter((e) => e.message?.id === id && e.type === type);

  it("reminds every chat with sound, keeps one reminder per chat, and stops when someone acknowledges", async () => {
    const id = await send({
      msg: "API p99 over 2 s for 5 min",
      title: "Latency",
      priority: "urgent",
      ack: { remind_every: "30s", remind_for: "10m" },
    });
    const copies = await copiesOf("API p99");
    const first = await status(id);
    expect(first.options).toMatchObject({ ack: true, remind_every: 30, remind_for: 600 });
    expect(first.reminders).toMatchObject({ every: 30, for: 600, rounds: 0, ended: null });

    const one = await nextRound(id, copies, 1, 30);
    for (const [i, reminder] of one.entries()) {
      expect(reminder.text).toBe("⏰ Still unacknowledged (1): Latency");
      // With sound: the sandbox marks a silent message, as the chat page shows it.
      expect(reminder.disable_notification).toBeUndefined();
      expect(reminder.reply_to_message.message_id).toBe(copies[i].message_id);
      expect(reminder.reply_markup.inline_keyboard[0][0]).toEqual({
        text: "✔ Acknowledge",
        callback_data: `ack:${id}`,
      });
    }
    const two = await nextRound(id, copies, 2, 30);
    // The first round's reminder was deleted: each chat shows one, the latest.
    await waitFor("one reminder per chat", async () =>
      (await remindersOf(copies)).every((list) => list.length === 1) ? true : undefined,
    );

    // Bo acknowledges from his reminder: every copy says so, and the reminders go.
    const press = await sandbox.control("POST", `/chats/${people[1]}/messages/${two[1].message_id}/press`, {
      callback_data: `ack:${id}`,
    });
    await waitFor("the press answered", async () => {
      const query = await sandbox.control("GET", `/callback-queries/${press.callback_query_id}`);
      return query.answered ? true : undefined;
    });
    const done = await waitFor("acknowledged, every copy edited, every reminder gone", async () => {
      const message = await status(id);
      const left = await remindersOf(copies);
      const texts = await Promise.all(people.map((person) => sandbox.botTexts(person)));
      return message.acknowledged?.by.name === "Bo" &&
        left.every((list) => list.length === 0) &&
        texts.every((list) => list.some((text) => /✔ Acknowledged by Bo at/.test(text)))
        ? message
        : undefined;
    });
    expect(done.reminders).toMatchObject({ rounds: 2, next_at: null, ended: "acknowledged" });
    expect(done.reminders.reminders.sent).toBe(4);
    // No round is scheduled after it.
    const row = await service.db.kysely
      .selectFrom("messages")
      .select(["remind_next_at", "remind_rounds"])
      .where("id", "=", id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ remind_next_at: null, remind_rounds: 2 });

    const reminded = await waitFor("both rounds posted", async () => {
      const events = eventsOf(id, "message.reminded");
      return events.length === 2 ? events : undefined;
    });
    expect(reminded.map((e) => [e.reminder.round, e.reminder.copies])).toEqual([
      [1, 2],
      [2, 2],
    ]);
  });

  it("a snooze silences the chat of the person who pressed, and only them", async () => {
    const id = await send({ msg: "queue backlog 10k", title: "Backlog" }, "?remind_every=30s&remind_for=2h");
    const copies = await copiesOf("queue backlog");
    expect((await status(id)).options).toMatchObject({ ack: true, remind_every: 30 });
    const one = await nextRound(id, copies, 1, 30);
    const snooze = one[0].reply_markup.inline_keyboard[1][0];
    expect(snooze).toEqual({ text: "⏰ 1 h", callback_data: `snz:${id}:60` });
    const press = await sandbox.control("POST", `/chats/${people[0]}/messages/${one[0].message_id}/press`, {
      callback_data: snooze.callback_data,
    });
    const answer = await waitFor("the snooze answered", async () => {
      const query = await sandbox.control("GET", `/callback-queries/${press.callback_query_id}`);
      return query.answered ? query.answer.text : undefined;
    });
    expect(answer).toMatch(/^⏰ Snoozed until .* UTC: no reminders of this message for you until then\.$/);
    const snoozed = await status(id);
    expect(snoozed.reminders.snoozes).toEqual([
      expect.objectContaining({ chat_id: people[0], by: { id: people[0], name: "Ada" }, active: true }),
    ]);

    // The next round reaches Bo only.
    shift += 30_000;
    await waitFor("round 2 for Bo", async () => {
      const [, bo] = await remindersOf(copies);
      return bo?.at(-1)?.text.startsWith("⏰ Still unacknowledged (2)") ? true : undefined;
    });
    const [ada] = await remindersOf(copies);
    expect(ada?.map((m: Json) => m.text)).toEqual(["⏰ Still unacknowledged (1): Backlog"]);
    const events = await waitFor("the snooze posted", async () => eventsOf(id, "message.snoozed")[0]);
    expect(events.snoozed).toMatchObject({ by: { id: people[0], name: "Ada" }, chat_id: people[0] });

    // An hour on, Ada is reminded again.
    shift += 3600_000;
    await waitFor("Ada reminded again", async () => {
      const [list] = await remindersOf(copies);
      const text = list?.at(-1)?.text ?? "";
      return /^⏰ Still unacknowledged \((\d+)\)/.test(text) && !text.includes("(1)") ? true : undefined;
    });
    await fetch(`${service.url}/messages/${id}`, {
      method: "DELETE",
      headers: { Authorization: basic(dock.id, dock.secretKey) },
    });
  });

  it("resolving by key ends them and deletes the reminders; running out tells the sender", async () => {
    const id = await send({
      msg: "disk 95% on db-1",
      key: "disk-db-1",
      ack: { remind_every: 60, remind_for: 120 },
    });
    const copies = await copiesOf("disk 95%");
    await nextRound(id, copies, 1, 60);
    await send({ msg: "disk back to 60% on db-1", key: "disk-db-1", final: true });
    const resolved = await waitFor("resolved, reminders gone", async () => {
      const message = await status(id);
      return message.reminders.ended === "resolved" &&
        (await remindersOf(copies)).every((list) => list.length === 0)
        ? message
        : undefined;
    });
    expect(resolved.reminders.next_at).toBeNull();

    // Nobody acknowledges this one: after remind_for, the last reminder stays and the sender hears it.
    const lost = await send({ msg: "backup missing", ack: { remind_every: 60, remind_for: 120 } });
    const lostCopies = await copiesOf("backup missing");
    await nextRound(lost, lostCopies, 1, 60);
    shift += 60_000;
    const event = await waitFor(
      "message.unacknowledged posted",
      async () => eventsOf(lost, "message.unacknowledged")[0],
    );
    // Rounds at 1 and 2 minutes (remind_for included), then the end.
    expect(event.reminders).toMatchObject({ rounds: 2, every: 60, for: 120 });
    const ended = await status(lost);
    expect(ended.reminders).toMatchObject({ rounds: 2, ended: "expired", next_at: null });
    expect((await remindersOf(lostCopies)).map((list) => list.length)).toEqual([1, 1]);
  });

  it("escalates to a second Dock after the delay; an acknowledgement there is shown on every copy everywhere", async () => {
    const backup = await service.app.docks.create(1, {
      name: "Backup on call",
      link: null,
      description: null,
    });
    const cy = await sandbox.person("Cy");
    await service.subscriptions.subscribe(backup.id, cy, "private");
    const id = await send({
      msg: "payments failing",
      title: "Payments",
      priority: "urgent",
      escalate: [{ after: "1m", to: backup.id }],
    });
    const copies = await copiesOf("payments failing");
    expect((await status(id)).escalation).toMatchObject({ step: 0, steps: [{ after: 60, to: backup.id }] });
    shift += 60_000;
    const escalated = await waitFor("the escalated copy in Cy's chat", async () =>
      (await sandbox.botMessages(cy)).find((m: Json) => m.text.includes("payments failing")),
    );
    expect(escalated.text).toContain("⤴ Escalated from On call: unacknowledged for 1 min");
    const origin = await waitFor("the step recorded", async () => {
      const message = await status(id);
      return message.escalation.escalated.length === 1 ? message : undefined;
    });
    expect(origin.escalation).toMatchObject({ step: 1, next_at: null });
    expect(origin.escalation.escalated[0]).toMatchObject({ step: 1, dock_id: backup.id });
    const button = escalated.reply_markup.inline_keyboard[0][0];
    expect(button.text).toBe("✔ Acknowledge");
    await sandbox.control("POST", `/chats/${cy}/messages/${escalated.message_id}/press`, {
      callback_data: button.callback_data,
    });
    // Taken there: the first Dock's copies say so too, and its sender hears of both steps.
    await waitFor("every copy everywhere acknowledged by Cy", async () => {
      const here = await Promise.all(
        people.map(async (person, i) =>
          (await sandbox.botMessages(person)).find((m: Json) => m.message_id === copies[i].message_id),
        ),
      );
      const there = (await sandbox.botMessages(cy)).find((m: Json) => m.message_id === escalated.message_id);
      return [...here, there].every((m) => /✔ Acknowledged by Cy at/.test(m?.text ?? "")) ? true : undefined;
    });
    expect((await status(id)).acknowledged.by.name).toBe("Cy");
    const event = await waitFor("message.escalated posted", async () => eventsOf(id, "message.escalated")[0]);
    expect(event.escalation).toMatchObject({ step: 1, to: backup.id, after: 60, subscribers: 1 });

    // Escalating to a Dock of another owner is refused, and nothing is stored.
    const theirs = await service.app.docks.create(2, { name: "Not ours", link: null, description: null });
    const stored = async () =>
      (await service.db.kysely.selectFrom("messages").select("id").where("dock_id", "=", dock.id).execute())
        .length;
    const before = await stored();
    const refused = await fetch(`${service.url}/webhook`, {
      method: "POST",
      headers: { Authorization: basic(dock.id, dock.secretKey), "Content-Type": "application/json" },
      body: JSON.stringify({ msg: "x", escalate: `5m:${theirs.id}` }),
    });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as Json).error.code).toBe("escalation_forbidden");
    expect(await stored()).toBe(before);
    // Nor to the Dock itself.
    const itself = await fetch(`${service.url}/webhook`, {
      method: "POST",
      headers: { Authorization: basic(dock.id, dock.secretKey), "Content-Type": "application/json" },
      body: JSON.stringify({ msg: "x", escalate: [{ after: "5m", to: dock.id }] }),
    });
    expect(itself.status).toBe(403);
  });

  it("refuses what it cannot keep, with the field named", async () => {
    const refuse = async (body: Record<string, unknown>, query = "") => {
      const response = await fetch(`${service.url}/webhook${query}`, {
        method: "POST",
        headers: { Authorization: basic(dock.id, dock.secretKey), "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      expect(response.status).toBe(400);
      return ((await response.json()) as Json).error;
    };
    expect(JSON.stringify(await refuse({ msg: "x", ack: { remind_every: 10 } }))).toContain(
      "ack.remind_every",
    );
    expect(
      JSON.stringify(await refuse({ msg: "x", ack: { remind_every: "5m", remind_for: "2d" } })),
    ).toContain("ack.remind_for");
    expect(JSON.stringify(await refuse({ msg: "x" }, "?remind_for=1h"))).toContain("remind_for");
  });
});
