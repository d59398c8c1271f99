import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { DockRepository } from "../../src/store/docks.ts";
import { basic, dialects, type RunningService, startService } from "../helpers/harness.ts";

const DIALECTS = await dialects();
const FIXTURES = join(import.meta.dirname, "../fixtures/integrations");
const FIRING = readFileSync(join(FIXTURES, "alertmanager/firing.json"), "utf8");
const GITHUB_PING = readFileSync(join(FIXTURES, "github/ping.json"), "utf8");

/**
 * /webhook, /webhook/<format> and the hook URLs let a secret key or hook token this instance found
 * right in the last seconds through before the body is read, and check it where the message is
 * stored (issue 40: no lookup per request outside the batch). The hint must never let a message in: a key rotated, or a Dock
 * deleted, by *another* instance (another DockRepository over the same database, whose changes
 * this instance's hint does not hear of) is refused at once, and nothing is stored.
 */
describe.each(DIALECTS)("a secret key or hook token found right lately, on %s", (dialect) => {
  let service: RunningService;
  /** Another instance's view of the same Docks. */
  let elsewhere: DockRepository;
  beforeAll(async () => {
    service = await startService(dialect, {}, { pace: "unpaced" });
    elsewhere = new DockRepository(service.db, randomBytes(32));
  });
  afterAll(async () => service.close());

  const send = (path: string, dockId: string, key: string, body: string, type = "application/json") =>
    fetch(`${service.url}${path}`, {
      method: "POST",
      headers: { Authorization: basic(dockId, key), "Content-Type": type },
      body,
    });
  /** The Dock's messages and their revisions: a send adds one, a replacement by key moves one. */
  const stored = async (dockId: string) =>
    (
      await service.db.kysely
        .selectFrom("messages")
        .select(["id", "revision"])
        .where("dock_id", "=", dockId)
        .orderBy("id")
        .execute()
    ).map((m) => `${m.id}@${m.revision}`);

  it.each([
    ["/webhook", JSON.stringify({ msg: "disk 91%" })],
    ["/webhook/alertmanager", FIRING],
  ])(
    "%s: a key rotated by another instance is refused at once, with the challenge, and nothing is stored",
    async (path, body) => {
      const dock = await service.app.docks.create(1, { name: "Hinted", link: null, description: null });
      // Twice: the first finds the key by a lookup, the second by the hint. (Alertmanager's second
      // send of the same group replaces the first message: a new revision.)
      for (let i = 0; i < 2; i++) expect((await send(path, dock.id, dock.secretKey, body)).status).toBe(202);
      const before = await stored(dock.id);
      expect(before.length).toBeGreaterThan(0);

      const rotated = (await elsewhere.rotateSecret(dock.id)) as string;
      const refused = await send(path, dock.id, dock.secretKey, body);
      expect(refused.status).toBe(401);
      expect(refused.headers.get("www-authenticate")).toMatch(/^Basic realm="dock-notify"/);
      expect(await refused.json()).toMatchObject({ ok: false, error: { code: "unauthorized" } });
      expect(await stored(dock.id)).toEqual(before);
      // And once more (the hint was forgotten; the lookup refuses it before the body is read).
      expect((await send(path, dock.id, dock.secretKey, body)).status).toBe(401);
      expect(await stored(dock.id)).toEqual(before);

      expect((await send(path, dock.id, rotated, body)).status).toBe(202);
      expect((await send(path, dock.id, rotated, body)).status).toBe(202);
      expect(await stored(dock.id)).not.toEqual(before);
    },
  );

  it.each([
    ["", JSON.stringify({ msg: "backup done" })],
    ["/alertmanager", FIRING],
  ])(
    "/hook/<token>%s: a hook token rotated by another instance is refused at once, and nothing is stored",
    async (suffix, body) => {
      const dock = await service.app.docks.create(1, { name: "Hooked", link: null, description: null });
      const token = (await service.app.docks.rotateHookToken(dock.id)) as string;
      const hook = (t: string) =>
        fetch(`${service.url}/hook/${t}${suffix}`, {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body,
        });
      for (let i = 0; i < 2; i++) expect((await hook(token)).status).toBe(202);
      const before = await stored(dock.id);

      const rotated = (await elsewhere.rotateHookToken(dock.id)) as string;
      const refused = await hook(token);
      expect(refused.status).toBe(401);
      expect(await refused.json()).toMatchObject({
        ok: false,
        error: { code: "unauthorized", message: "Unknown hook token (it may have been rotated or removed)." },
      });
      expect(await stored(dock.id)).toEqual(before);
      expect((await hook(token)).status).toBe(401);

      for (let i = 0; i < 2; i++) expect((await hook(rotated)).status).toBe(202);
      expect(await stored(dock.id)).not.toEqual(before);
      // Removed elsewhere: the same.
      await service.db.kysely
        .updateTable("docks")
        .set({ hook_hash: null })
        .where("id", "=", dock.id)
        .execute();
      expect((await hook(rotated)).status).toBe(401);
    },
  );

  it("the hint spares the lookup: one per key and per token while it is fresh, whatever the number of sends", async ({
    onTestFinished,
  }) => {
    const dock = await service.app.docks.create(1, { name: "Counted", link: null, description: null });
    const token = (await service.app.docks.rotateHookToken(dock.id)) as string;
    const keys = vi.spyOn(service.app.docks, "authenticate");
    const hooks = vi.spyOn(service.app.docks, "authenticateHook");
    onTestFinished(() => {
      keys.mockRestore();
      hooks.mockRestore();
    });
    const body = JSON.stringify({ msg: "counted" });
    for (let i = 0; i < 5; i++) {
      expect((await send("/webhook", dock.id, dock.secretKey, body)).status).toBe(202);
      const hooked = await fetch(`${service.url}/hook/${token}`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body,
      });
      expect(hooked.status).toBe(202);
    }
    expect(await stored(dock.id)).toHaveLength(10);
    // One lookup each (a slow machine may let the hint's 5 s run out once: then a second).
    expect(keys.mock.calls.length).toBeGreaterThanOrEqual(1);
    expect(keys.mock.calls.length).toBeLessThan(5);
    expect(hooks.mock.calls.length).toBeGreaterThanOrEqual(1);
    expect(hooks.mock.calls.length).toBeLessThan(5);
  });

  it("a hook URL taken on the hint still replaces by key only what it sent itself", async () => {
    const dock = await service.app.docks.create(1, { name: "Own keys", link: null, description: null });
    const token = (await service.app.docks.rotateHookToken(dock.id)) as string;
    const hook = (msg: string, key: string) =>
      fetch(`${service.url}/hook/${token}`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ msg, key }),
      });
    // The key's message is the secret key's; the hook's first send (a lookup), then its second (the hint).
    expect(
      (await send("/webhook", dock.id, dock.secretKey, JSON.stringify({ msg: "by the key", key: "k" })))
        .status,
    ).toBe(202);
    expect((await hook("hook's own", "own")).status).toBe(202);
    const refused = await hook("taking it over", "k");
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ ok: false, error: { code: "not_your_message" } });
  });

  it.each(["key", "hook"] as const)(
    'a payload with nothing to store (GitHub\'s ping) on a %s rotated elsewhere is refused, not answered "skipped"',
    async (kind) => {
      const dock = await service.app.docks.create(1, { name: "Pinged", link: null, description: null });
      const token = (await service.app.docks.rotateHookToken(dock.id)) as string;
      const ping = () =>
        kind === "key"
          ? fetch(`${service.url}/webhook/github`, {
              method: "POST",
              headers: {
                Authorization: basic(dock.id, dock.secretKey),
                "Content-Type": "application/json",
                "X-GitHub-Event": "ping",
              },
              body: GITHUB_PING,
            })
          : fetch(`${service.url}/hook/${token}/github`, {
              method: "POST",
              headers: { "Content-Type": "application/json", "X-GitHub-Event": "ping" },
              body: GITHUB_PING,
            });
      // A real send first, so that the secret is on the hint; then a ping, answered skipped.
      const first =
        kind === "key"
          ? await send("/webhook", dock.id, dock.secretKey, JSON.stringify({ msg: "hi" }))
          : await fetch(`${service.url}/hook/${token}`, { method: "POST", body: "hi" });
      expect(first.status).toBe(202);
      const skipped = await ping();
      expect(skipped.status).toBe(200);
      expect(await skipped.json()).toMatchObject({ ok: true, skipped: true });

      if (kind === "key") await elsewhere.rotateSecret(dock.id);
      else await elsewhere.rotateHookToken(dock.id);
      const refused = await ping();
      expect(refused.status).toBe(401);
      if (kind === "key")
        expect(refused.headers.get("www-authenticate")).toMatch(/^Basic realm="dock-notify"/);
      else
        expect(await refused.json()).toMatchObject({
          error: {
            code: "unauthorized",
            message: "Unknown hook token (it may have been rotated or removed).",
          },
        });
    },
  );

  it("a Dock deleted by another instance takes nothing more through the hint", async () => {
    const dock = await service.app.docks.create(1, { name: "Gone", link: null, description: null });
    const body = JSON.stringify({ msg: "still there?" });
    for (let i = 0; i < 2; i++)
      expect((await send("/webhook", dock.id, dock.secretKey, body)).status).toBe(202);
    expect(await elsewhere.delete(dock.id)).toBe(true);
    const refused = await send("/webhook", dock.id, dock.secretKey, body);
    expect(refused.status).toBe(401);
    expect(await stored(dock.id)).toEqual([]);
  });

  it("this instance's own change of the Dock is seen by the next send: a new inbound format reads the body by it", async () => {
    const dock = await service.app.docks.create(1, { name: "Formats", link: null, description: null });
    const form = "application/x-www-form-urlencoded";
    for (let i = 0; i < 2; i++) {
      const answer = await send("/webhook", dock.id, dock.secretKey, "a=b", form);
      expect(answer.status).toBe(202);
      expect(((await answer.json()) as { format?: string }).format).toBeUndefined();
    }
    expect(
      await service.app.docks.updateIntegrations(dock.id, {
        inboundFormat: "template",
        template: { text: "form says {{ a }}" },
      }),
    ).toBe(true);
    const answer = await send("/webhook", dock.id, dock.secretKey, "a=b", form);
    expect(answer.status).toBe(202);
    expect(((await answer.json()) as { format?: string }).format).toBe("template");
  });

  it("a send credential is never taken on a hint: revoked by another instance, refused at once", async () => {
    const dock = await service.app.docks.create(1, { name: "Scoped", link: null, description: null });
    const { credential, secret } = await service.app.docks.credentials.create(dock.id, "ci", "send");
    const body = JSON.stringify({ msg: "from CI" });
    for (let i = 0; i < 2; i++) expect((await send("/webhook", dock.id, secret, body)).status).toBe(202);
    expect(await elsewhere.credentials.revoke(dock.id, credential.id)).toBe(true);
    expect((await send("/webhook", dock.id, secret, body)).status).toBe(401);
    expect(await stored(dock.id)).toHaveLength(2);
  });
});
