import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DockWithSecret } from "../src/store/docks.ts";
import { sandboxOf } from "./delivery-harness.ts";
import { basic, dialects, type RunningService, startService } from "./harness.ts";
import { waitFor } from "./wait.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON the service and sandbox answered.
type Json = any;

const DIALECTS = await dialects();

describe.each(DIALECTS)("living notifications on %s", (dialect) => {
  let service: RunningService;
  let dock: DockWithSecret;
  let sandbox: ReturnType<typeof sandboxOf>;
  let people: number[];

  beforeAll(async () => {
    service = await startService(dialect, { AUTH_FAILURES_PER_MINUTE: "0", DOCK_RATE_BURST: "0" });
    dock = await service.app.docks.create(1, { name: "Alerts", link: null, description: null });
    sandbox = sandboxOf(service);
    people = [await sandbox.person("Ada"), await sandbox.person("Bo")];
    for (const person of people) await service.subscriptions.subscribe(dock.id, person, "private");
  });
  afterAll(async () => service?.close());

  const auth = () => ({ Authorization: basic(dock.id, dock.secretKey) });
  const call = async (method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> => {
    const response = await fetch(`${service.url}${path}`, {
      method,
      headers: { ...auth(), ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text === "" ? null : JSON.parse(text) };
  };
  const status = async (id: string) => (await call("GET", `/messages/${id}`)).body.message;
  const settled = (id: string, what: string, done: (message: Json) => boolean) =>
    waitFor(what, async () => {
      const message = await status(id);
      return done(message) ? message : undefined;
    });
  const texts = async (person: number) => (await sandbox.botMessages(person)).map((m: Json) => m.text);

  it("an edit changes every copy in place; the status counts them", async () => {
    const sent = await call("POST", "/webhook", { msg: "deploy started", title: "api" });
    expect(sent.status).toBe(202);
    const id = sent.body.message_id;
    await settled(id, "both copies sent", (m) => m.counts.sent === 2);
    const edit = await call("PATCH", `/messages/${id}`, { msg: "deploy finished", tags: ["white_check_mark"] });
    expect(edit.status).toBe(202);
    expect(edit.body).toMatchObject({ revision: 2, edits: 2, queued: 0 });
    const after = await settled(id, "both copies edited", (m) => m.changes.edits.edited === 2);
    expect(after.deliveries.map((d: Json) => d.revision)).toEqual([2, 2]);
    for (const person of people) {
      const messages = await sandbox.botMessages(person);
      expect(messages.at(-1).text).toBe("Alerts\n✅ api\ndeploy finished");
      expect(messages.at(-1).edit_date).toBeDefined();
    }
  });

  it("three sends with one key leave one message per chat showing the third", async () => {
    const before = await Promise.all(people.map(async (p) => (await texts(p)).length));
    let id = "";
    for (const state of ["firing", "still firing", "resolved"]) {
      const sent = await call("POST", "/webhook", { msg: state, key: "disk-full" });
      expect(sent.status).toBe(202);
      id ||= sent.body.message_id;
      expect(sent.body.message_id).toBe(id);
    }
    const found = await call("GET", "/messages?key=disk-full");
    expect(found.body.message.id).toBe(id);
    await waitFor("the third text in every chat", async () => {
      for (const [i, person] of people.entries()) {
        const now = await texts(person);
        if (now.length !== (before[i] as number) + 1 || now.at(-1) !== "Alerts\nresolved") return undefined;
      }
      return true;
    });
  });

  it("a delete removes every copy and cancels what was queued", async () => {
    const sent = await call("POST", "/webhook", { msg: "oops, wrong chat" });
    const id = sent.body.message_id;
    await settled(id, "both copies sent", (m) => m.counts.sent === 2);
    const deleted = await call("DELETE", `/messages/${id}`);
    expect(deleted.body).toMatchObject({ deleting: 2, already_deleted: false });
    await settled(id, "both copies deleted", (m) => m.changes.deletes.deleted === 2);
    for (const person of people) expect(await texts(person)).not.toContain("Alerts\noops, wrong chat");
    expect((await call("PATCH", `/messages/${id}`, { msg: "again" })).status).toBe(409);
    expect((await call("DELETE", `/messages/${id}`)).body.already_deleted).toBe(true);
  });
});
