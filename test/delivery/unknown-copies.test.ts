import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { describe, expect, it, type TestContext } from "vitest";
import { openDb } from "../../src/store/open.ts";
import { startChildService } from "../helpers/child-service.ts";
import { childEnv, seedDock } from "../helpers/fault-harness.ts";
import { basic, createTestDatabase, type DialectName, hasPostgres } from "../helpers/harness.ts";
import { type BeforeAnswer, startSandbox } from "../helpers/sandbox-harness.ts";
import { waitFor } from "../helpers/wait.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON the service and sandbox answered.
type Json = any;

const POSTGRES = await hasPostgres();
const DIALECTS: DialectName[] = POSTGRES ? ["sqlite", "postgres"] : ["sqlite"];

/**
 * A crash between "Telegram answered" and "the outcome is recorded" (issue 36, D1). The fault
 * point is the sandbox's: it has put the copy in the chat and holds its answer while the test
 * kills the service (`kill -9` of the child process) — for the service, the same as dying with the
 * answer in hand before writing it: the database holds no trace of the copy either way.
 */
describe.each(DIALECTS)("a copy whose first attempt's outcome is unknown (%s)", (dialect) => {
  /** A Dock with three readers, its service in a child process, and the sandbox with a fault point. */
  async function scene(onTestFinished: TestContext["onTestFinished"], readers = 3) {
    let fault: BeforeAnswer | null = null;
    const sandbox = await startSandbox({
      rateLimits: true,
      beforeAnswer: (method, body) => fault?.(method, body),
    });
    const database = await createTestDatabase(dialect);
    let child: ChildProcess | undefined;
    onTestFinished(async () => {
      child?.kill("SIGKILL");
      await sandbox.close();
      await database.drop();
    });
    const key = randomBytes(32);
    const { dock, chats } = await seedDock(database.url, key, sandbox, "Pager", readers);
    const env = childEnv(database, key, sandbox);
    const start = async () => {
      const started = await startChildService(env);
      child = started.child;
      return started.url;
    };
    let url = await start();
    const call = async (method: string, path: string, body?: unknown): Promise<Json> => {
      const response = await fetch(`${url}${path}`, {
        method,
        headers: {
          Authorization: basic(dock.id, dock.secretKey),
          ...(body === undefined ? {} : { "Content-Type": "application/json" }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      expect(response.status).toBeLessThan(300);
      return response.json();
    };
    /** The bot's notifications in a chat as the sandbox holds them (the app's view). */
    const shown = async (chat: number): Promise<Json[]> => {
      const { body } = await sandbox.control("GET", `/chats/${chat}/messages?limit=1000`);
      return (body as Json[]).filter((m) => m.from?.is_bot && m.text.startsWith("Pager\n"));
    };
    const status = async (id: string): Promise<Json> => (await call("GET", `/messages/${id}`)).message;
    const copyOf = async (id: string, chat: number): Promise<Json> =>
      (await status(id)).deliveries.find((d: Json) => d.chat_id === chat);
    /** Every Acknowledge button of message `id` still on a message in any chat. */
    const liveButtons = async (id: string) => {
      const buttons: { chat: number; message: number }[] = [];
      for (const chat of chats) {
        for (const m of await shown(chat)) {
          const pressable = (m.reply_markup?.inline_keyboard ?? [])
            .flat()
            .some((b: Json) => b.callback_data === `ack:${id}`);
          if (pressable) buttons.push({ chat, message: m.message_id });
        }
      }
      return buttons;
    };
    return {
      sandbox,
      chats,
      database,
      send: (body: Record<string, unknown>) => call("POST", "/webhook", body),
      call,
      shown,
      status,
      copyOf,
      liveButtons,
      /**
       * Sends `body`; the first copy Telegram takes for `chat` is in the chat when the service is
       * killed, before it hears the answer — once the other chats' copies are on record, so that
       * this is the only send in flight. Returns the message's ID and the orphaned copy.
       */
      async sendKilledAt(chat: number, body: Record<string, unknown>): Promise<{ id: string; orphan: Json }> {
        let orphan: Json;
        const others = chats.filter((other) => other !== chat);
        const killed = new Promise<void>((resolve) => {
          fault = async (method, answer: Json) => {
            if (method !== "sendmessage" || answer.result?.chat?.id !== chat || orphan !== undefined) return;
            if (!answer.result.text.startsWith("Pager\n")) return;
            orphan = answer.result;
            fault = null;
            const db = await openDb(database.url);
            try {
              await waitFor("the other chats' copies on record", async () => {
                const sent = await db.kysely
                  .selectFrom("deliveries")
                  .select("id")
                  .where("chat_id", "in", others)
                  .where("state", "=", "sent")
                  .execute();
                return sent.length === others.length ? true : undefined;
              });
            } finally {
              await db.close();
            }
            const dead = child as ChildProcess;
            dead.kill("SIGKILL");
            await once(dead, "exit");
            resolve();
          };
        });
        const { message_id: id } = await call("POST", "/webhook", body);
        await killed;
        return { id, orphan };
      },
      /** A person in `chat` presses the Acknowledge button of message `id` under Telegram message `telegramId`: the answer's text. */
      async pressAck(chat: number, telegramId: number, id: string): Promise<string> {
        const press = await sandbox.control("POST", `/chats/${chat}/messages/${telegramId}/press`, {
          callback_data: `ack:${id}`,
        });
        return waitFor("the press answered", async () => {
          const query = await sandbox.control("GET", `/callback-queries/${press.body.callback_query_id}`);
          return query.body.answer?.text as string | undefined;
        });
      },
      /**
       * Holds Telegram's answer to the first copy sent to `chat` (the copy is in the chat already)
       * until `release` is called: the window between "Telegram answered" and "outcome recorded".
       */
      holdAnswer(
        chat: number,
        which: (text: string) => boolean = (text) => text.startsWith("Pager\n"),
      ): { held: Promise<Json>; release: () => void } {
        let release = () => {};
        const released = new Promise<void>((resolve) => {
          release = resolve;
        });
        const held = new Promise<Json>((resolve) => {
          fault = async (method, answer: Json) => {
            if (method !== "sendmessage" || answer.result?.chat?.id !== chat) return;
            if (!which(answer.result.text)) return;
            fault = null;
            resolve(answer.result);
            await released;
          };
        });
        return { held, release };
      },
      async restart(): Promise<void> {
        url = await start();
      },
      async kill(): Promise<void> {
        const dead = child as ChildProcess;
        dead.kill("SIGKILL");
        await once(dead, "exit");
      },
      /** The copy's row as the crash left it. */
      async row(id: string, chat: number) {
        const db = await openDb(database.url);
        try {
          return await db.kysely
            .selectFrom("deliveries")
            .select(["state", "telegram_message_ids", "attempts", "unknown_attempts"])
            .where("message_id", "=", id)
            .where("chat_id", "=", chat)
            .where("kind", "=", "send")
            .executeTakeFirstOrThrow();
        } finally {
          await db.close();
        }
      },
    };
  }

  it("kill -9 as Telegram answers: the status says the first attempt's outcome is unknown, the copy is sent again, a press on the orphan acknowledges and removes it, edits and the delete reach every copy the bot knows", async ({
    onTestFinished,
  }) => {
    const s = await scene(onTestFinished);
    const [ann, bo, cy] = s.chats as [number, number, number];
    const { id, orphan } = await s.sendKilledAt(ann, {
      msg: "disk 91% on db-1",
      key: "disk-db-1",
      ack: true,
    });

    // Telegram has the copy; the database has no trace of it: an attempt claimed, nothing recorded.
    expect((await s.shown(ann)).map((m) => m.message_id)).toEqual([orphan.message_id]);
    expect(await s.row(id, ann)).toMatchObject({
      state: "sending",
      telegram_message_ids: null,
      attempts: 1,
      unknown_attempts: 0,
    });

    await s.restart();
    const resent = await waitFor("Ann's copy sent again", async () => {
      const copy = await s.copyOf(id, ann);
      return copy?.state === "sent" ? copy : undefined;
    });
    expect(resent).toMatchObject({ attempts: 2, unknown_attempts: 1, stray_telegram_message_ids: [] });
    expect(resent.telegram_message_ids).toHaveLength(1);
    expect(resent.telegram_message_ids[0]).not.toBe(orphan.message_id);
    // Ann sees two copies, both with a live button; the others one each, known to the service.
    expect((await s.shown(ann)).map((m) => m.message_id)).toEqual([
      orphan.message_id,
      resent.telegram_message_ids[0],
    ]);
    await waitFor("Bo's and Cy's copies", async () => {
      const copies = (await s.status(id)).deliveries.filter((d: Json) => d.chat_id !== ann);
      return copies.every((d: Json) => d.state === "sent") ? true : undefined;
    });
    for (const chat of [bo, cy]) {
      expect(await s.shown(chat)).toHaveLength(1);
      expect(await s.copyOf(id, chat)).toMatchObject({ unknown_attempts: 0, attempts: 1 });
    }
    expect(await s.liveButtons(id)).toHaveLength(4);

    // Ann presses the orphan's button: Telegram names the message in the press, so the
    // acknowledgement counts, and the orphan goes while every copy shows who acknowledged.
    const answered = await s.pressAck(ann, orphan.message_id, id);
    expect(answered).toContain("Acknowledged");
    await waitFor("no Acknowledge button left anywhere, the orphan gone", async () =>
      (await s.liveButtons(id)).length === 0 && (await s.shown(ann)).length === 1 ? true : undefined,
    );
    const acknowledged = await s.status(id);
    expect(acknowledged.acknowledged.by.name).toBe("Pager reader 0");
    for (const chat of s.chats) {
      const [copy] = await s.shown(chat);
      expect(copy.text).toContain("✔ Acknowledged by Pager reader 0");
    }
    await waitFor("the stray off the record", async () =>
      (await s.copyOf(id, ann)).stray_telegram_message_ids.length === 0 ? true : undefined,
    );
    expect(await s.copyOf(id, ann)).toMatchObject({ unknown_attempts: 1, state: "sent" });

    // The alert resolves (a replacement by its key): every copy shows it, nothing else appears.
    await s.call("POST", "/webhook", { msg: "disk 40% on db-1", key: "disk-db-1" });
    await waitFor("every copy resolved", async () => {
      for (const chat of s.chats) {
        const copies = await s.shown(chat);
        if (copies.length !== 1 || !copies[0].text.includes("disk 40%")) return undefined;
      }
      return true;
    });

    // The delete reaches every copy.
    await s.call("DELETE", `/messages/${id}`);
    await waitFor("every copy deleted", async () => {
      for (const chat of s.chats) if ((await s.shown(chat)).length > 0) return undefined;
      return true;
    });
  }, 120_000);

  it("a press on a copy whose answer is still on its way: the copy is the one on record, edited to say who acknowledged, never removed as a stray", async ({
    onTestFinished,
  }) => {
    const s = await scene(onTestFinished, 1);
    const [ann] = s.chats as [number];
    const { held, release } = s.holdAnswer(ann);
    onTestFinished(release);
    const { message_id: id } = await s.send({ msg: "disk 97% on db-2", ack: true });
    const copy = await held;
    // Ann presses at once: the copy is in her chat, its outcome not yet recorded.
    const answered = await s.pressAck(ann, copy.message_id, id);
    expect(answered).toContain("Acknowledged");
    release();
    await waitFor("the copy edited to say who acknowledged", async () =>
      (await s.liveButtons(id)).length === 0 ? true : undefined,
    );
    const record = await waitFor("the copy settled, no stray on record", async () => {
      const now = await s.copyOf(id, ann);
      return now.state === "sent" && now.stray_telegram_message_ids.length === 0 && now.revision === 2
        ? now
        : undefined;
    });
    expect(record).toMatchObject({
      telegram_message_ids: [copy.message_id],
      attempts: 1,
      unknown_attempts: 0,
    });
    const shown = await s.shown(ann);
    expect(shown.map((m) => m.message_id)).toEqual([copy.message_id]);
    expect(shown[0].text).toContain("✔ Acknowledged by Pager reader 0");
  }, 120_000);

  it("a press on a part an edit added, before the edit is recorded: the part stays the copy's, never a stray", async ({
    onTestFinished,
  }) => {
    const s = await scene(onTestFinished, 1);
    const [ann] = s.chats as [number];
    const { message_id: id } = await s.send({ msg: "backup running", ack: true });
    await waitFor("the copy sent", async () =>
      (await s.copyOf(id, ann))?.state === "sent" ? true : undefined,
    );
    // The edit makes the text two parts: the second, with the button, is sent, and its answer held.
    const { held, release } = s.holdAnswer(ann, (text) => !text.startsWith("Pager\n"));
    onTestFinished(release);
    await s.call("PATCH", `/messages/${id}`, { msg: `backup failed: ${"disk error ".repeat(500)}` });
    const part = await held;
    const answered = await s.pressAck(ann, part.message_id, id);
    expect(answered).toContain("Acknowledged");
    release();
    const record = await waitFor("the acknowledgement shown, no stray on record", async () => {
      const now = await s.copyOf(id, ann);
      return now.revision === 3 && now.state === "sent" && (await s.liveButtons(id)).length === 0
        ? now
        : undefined;
    });
    expect(record.telegram_message_ids).toContain(part.message_id);
    expect(record.stray_telegram_message_ids).toEqual([]);
    const shown = (await s.sandbox.control("GET", `/chats/${ann}/messages?limit=1000`)).body as Json[];
    expect(shown.map((m: Json) => m.message_id)).toContain(part.message_id);
  }, 120_000);

  it("a press on the copy sent again acknowledges; the orphan's button, pressed later, only says who was first, and the orphan goes", async ({
    onTestFinished,
  }) => {
    const s = await scene(onTestFinished);
    const [ann] = s.chats as [number];
    const { id, orphan } = await s.sendKilledAt(ann, { msg: "queue stuck", ack: true });
    await s.restart();
    const resent = await waitFor("Ann's copy sent again", async () => {
      const copy = await s.copyOf(id, ann);
      return copy?.state === "sent" ? copy : undefined;
    });
    await s.sandbox.control("POST", `/chats/${ann}/messages/${resent.telegram_message_ids[0]}/press`, {
      callback_data: `ack:${id}`,
    });
    // Every copy the service knows loses its button; the orphan, unknown to it, keeps its own.
    await waitFor("the known copies acknowledged", async () => {
      const live = await s.liveButtons(id);
      return live.length === 1 && live[0]?.message === orphan.message_id ? true : undefined;
    });
    const answered = await s.pressAck(ann, orphan.message_id, id);
    expect(answered).toMatch(/^Already acknowledged by Pager reader 0/);
    await waitFor("the orphan gone, no button left", async () =>
      (await s.liveButtons(id)).length === 0 && (await s.shown(ann)).length === 1 ? true : undefined,
    );
    expect((await s.shown(ann))[0].message_id).toBe(resent.telegram_message_ids[0]);
  }, 120_000);

  it("an orphan nobody presses stays: edits and the delete reach the copies on record, and the status keeps saying a copy may be unknown", async ({
    onTestFinished,
  }) => {
    const s = await scene(onTestFinished);
    const [ann] = s.chats as [number];
    const { id, orphan } = await s.sendKilledAt(ann, { msg: "deploy started" });
    await s.restart();
    await waitFor("Ann's copy sent again", async () =>
      (await s.copyOf(id, ann))?.state === "sent" ? true : undefined,
    );
    await s.call("PATCH", `/messages/${id}`, { msg: "deploy finished" });
    const edited = await waitFor("the copy on record edited", async () => {
      const copies = await s.shown(ann);
      return copies.some((m) => m.text.includes("finished")) ? copies : undefined;
    });
    // Telegram has no way to find the orphan for the bot (see docs/deployment.md, Failure modes).
    expect(edited.map((m) => [m.message_id, m.text.split("\n")[1]])).toEqual([
      [orphan.message_id, "deploy started"],
      [expect.any(Number), "deploy finished"],
    ]);
    await s.call("DELETE", `/messages/${id}`);
    await waitFor("the copy on record deleted", async () =>
      (await s.shown(ann)).length === 1 ? true : undefined,
    );
    expect((await s.shown(ann))[0].message_id).toBe(orphan.message_id);
    expect(await s.copyOf(id, ann)).toMatchObject({ unknown_attempts: 1, attempts: 2 });
  }, 120_000);

  it("a crash after Telegram's ids were recorded but before the outcome: nothing is sent again, and the outcome is known", async ({
    onTestFinished,
  }) => {
    const s = await scene(onTestFinished);
    const [ann] = s.chats as [number];
    const { message_id: id } = await s.call("POST", "/webhook", { msg: "backup done" });
    const sent = await waitFor("Ann's copy sent", async () => {
      const copy = await s.copyOf(id, ann);
      return copy?.state === "sent" ? copy : undefined;
    });
    await s.kill();
    // The row as such a crash leaves it: claimed (a lease, the attempt counted), Telegram's ids and
    // the revision they show written by Outbox.recordParts, the outcome not.
    const db = await openDb(s.database.url);
    try {
      await db.kysely
        .updateTable("deliveries")
        .set({ state: "sending", lease_until: Date.now() + 60_000 })
        .where("message_id", "=", id)
        .where("chat_id", "=", ann)
        .execute();
    } finally {
      await db.close();
    }
    await s.restart();
    await waitFor("the copy settled again", async () => {
      const copy = await s.copyOf(id, ann);
      return copy?.state === "sent" && copy.attempts === 2 ? true : undefined;
    });
    expect(await s.copyOf(id, ann)).toMatchObject({
      unknown_attempts: 0,
      telegram_message_ids: sent.telegram_message_ids,
      revision: 1,
    });
    expect((await s.shown(ann)).map((m) => m.message_id)).toEqual(sent.telegram_message_ids);
  }, 120_000);

  it("an edit storm with three kills: every extra copy in a chat is one whose status says an attempt's outcome is unknown, at most one per chat per kill", async ({
    onTestFinished,
  }) => {
    const s = await scene(onTestFinished, 10);
    const keys = ["api", "web", "db", "queue"];
    let round = 0;
    const storm = async (rounds: number) => {
      for (const end = round + rounds; round < end; ) {
        round++;
        for (const key of keys) await s.send({ msg: `${key} r${round}`, key });
        // New copies keep going out while the keyed ones are edited: sends are in flight at a kill.
        await s.send({ msg: `news ${round}` });
      }
    };
    for (let kill = 0; kill < 3; kill++) {
      await storm(5);
      const sends = (await s.sandbox.control("GET", "/stats")).body.send_message;
      await waitFor("copies going out", async () =>
        (await s.sandbox.control("GET", "/stats")).body.send_message >= sends + 5 ? true : undefined,
      );
      await s.kill();
      await s.restart();
    }
    await storm(2);
    // Every copy on record ends showing its message's last revision, nothing left to do.
    const db = await openDb(s.database.url);
    onTestFinished(() => db.close());
    await waitFor(
      "every copy settled in its message's final form",
      async () => {
        const open = await db.kysely
          .selectFrom("deliveries")
          .select("id")
          .where("state", "in", ["queued", "sending"])
          .execute();
        const stale = await db.kysely
          .selectFrom("deliveries")
          .innerJoin("messages", "messages.id", "deliveries.message_id")
          .select("deliveries.id")
          .where("deliveries.kind", "=", "send")
          .whereRef("deliveries.revision", "<", "messages.revision")
          .execute();
        const fanouts = await db.kysely.selectFrom("fanouts").select("id").execute();
        return open.length + stale.length + fanouts.length === 0 ? true : undefined;
      },
      90_000,
      250,
    );
    const copies = await db.kysely
      .selectFrom("deliveries")
      .select(["chat_id", "state", "telegram_message_ids", "unknown_attempts"])
      .where("kind", "=", "send")
      .execute();
    let extra = 0;
    for (const chat of s.chats) {
      const mine = copies.filter((copy) => copy.chat_id === chat);
      const onRecord = mine.flatMap((copy) => (copy.telegram_message_ids ?? "").split(",").filter(Boolean));
      const inChat = (await s.shown(chat)).map((m) => String(m.message_id));
      // Every copy on record is in the chat; what else is there is accounted for by its copy's status.
      expect(inChat).toEqual(expect.arrayContaining(onRecord));
      const unknown = mine.reduce((sum, copy) => sum + copy.unknown_attempts, 0);
      expect(inChat.length - onRecord.length).toBeLessThanOrEqual(unknown);
      extra += inChat.length - onRecord.length;
    }
    // At most the sends in flight at each kill: one per chat.
    expect(extra).toBeLessThanOrEqual(3 * s.chats.length);
    expect((await s.sandbox.control("GET", "/stats")).body.too_many_requests).toBe(0);
  }, 240_000);
});
