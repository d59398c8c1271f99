import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DockWithSecret } from "../../src/store/docks.ts";
import { basic, dialects, type RunningService, startService } from "../helpers/harness.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON the service answered.
type Json = any;

const DIALECTS = await dialects();

describe.each(DIALECTS)("named credentials of a Dock on %s", (dialect) => {
  let service: RunningService;
  let dock: DockWithSecret;

  beforeAll(async () => {
    service = await startService(dialect, { AUTH_FAILURES_PER_MINUTE: "0", DOCK_RATE_BURST: "0" });
    dock = await service.app.docks.create(1, { name: "Scoped", link: null, description: null });
    await service.subscriptions.subscribe(dock.id, 501, "private");
  });
  afterAll(async () => service?.close());

  const call = async (
    method: string,
    path: string,
    password: string,
    body?: unknown,
    dockId = dock.id,
  ): Promise<{ status: number; body: Json }> => {
    const response = await fetch(`${service.url}${path}`, {
      method,
      headers: {
        Authorization: basic(dockId, password),
        ...(body === undefined ? {} : { "Content-Type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text === "" ? null : JSON.parse(text) };
  };
  const ping = async (dockId: string, secret: string, body: Record<string, unknown> = {}) => {
    const response = await fetch(`${service.url}/ping`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ dock_id: dockId, secret_key: secret, msg: "hello", ...body }),
    });
    return { status: response.status, body: (await response.json()) as Json };
  };
  const credential = (name: string, scope: "send" | "manage") =>
    service.app.docks.credentials.create(dock.id, name, scope);

  it("a send credential sends on /ping and /webhook, and cannot edit, delete or read a message", async () => {
    const { secret } = await credential("ci", "send");
    expect(secret).toMatch(/^dnsc_[A-Za-z0-9]{33}$/);
    const pinged = await ping(dock.id, secret);
    expect(pinged.status).toBe(202);
    const sent = await call("POST", "/webhook", secret, { msg: "from ci" });
    expect(sent.status).toBe(202);
    const id = sent.body.message_id;
    for (const [method, path, body] of [
      ["GET", `/messages/${id}`, undefined],
      ["PATCH", `/messages/${id}`, { msg: "changed" }],
      ["DELETE", `/messages/${id}`, undefined],
      ["GET", "/messages?key=anything", undefined],
    ] as const) {
      const refused = await call(method, path, secret, body);
      expect([method, path, refused.status, refused.body.error.code]).toEqual([
        method,
        path,
        403,
        "insufficient_scope",
      ]);
    }
    // The message is as it was sent: nothing above changed it.
    const status = await call("GET", `/messages/${id}`, dock.secretKey);
    expect(status.body.message.deleted).toBeFalsy();
    expect(status.body.message.revision ?? 1).toBe(1);
  });

  it("a send credential, and the hook URL, replace by key only the messages they sent", async () => {
    const { secret } = await credential("deployer", "send");
    const other = await credential("other", "send");
    const mine = await call("POST", "/webhook", secret, { msg: "deploy 1", key: "deploy" });
    expect(mine.status).toBe(202);
    const again = await call("POST", "/webhook", secret, { msg: "deploy 2", key: "deploy" });
    expect(again.body).toMatchObject({ message_id: mine.body.message_id, replaced: true });
    const stolen = await call("POST", "/webhook", other.secret, { msg: "hijacked", key: "deploy" });
    expect([stolen.status, stolen.body.error.code]).toEqual([403, "not_your_message"]);

    const master = await call("POST", "/webhook", dock.secretKey, { msg: "db down", key: "db" });
    const byCredential = await call("POST", "/webhook", secret, { msg: "db fine", key: "db" });
    expect([byCredential.status, byCredential.body.error.code]).toEqual([403, "not_your_message"]);
    const token = (await service.app.docks.rotateHookToken(dock.id)) as string;
    const hook = (text: string, key: string) =>
      fetch(`${service.url}/hook/${token}`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ msg: text, key }),
      });
    const byHook = await hook("db fine", "db");
    expect([byHook.status, ((await byHook.json()) as Json).error.code]).toEqual([403, "not_your_message"]);
    const hooked = (await (await hook("cron ran", "cron")).json()) as Json;
    const rehooked = (await (await hook("cron ran again", "cron")).json()) as Json;
    expect(rehooked).toMatchObject({ message_id: hooked.message_id, replaced: true });

    // The secret key and a manage credential replace any of them.
    const { secret: manager } = await credential("ops", "manage");
    const managed = await call("POST", "/webhook", manager, { msg: "deploy 3", key: "deploy" });
    expect(managed.body).toMatchObject({ message_id: mine.body.message_id, replaced: true });
    const keyed = await call("POST", "/webhook", dock.secretKey, { msg: "cron checked", key: "cron" });
    expect(keyed.body).toMatchObject({ message_id: hooked.message_id, replaced: true });
    expect(master.status).toBe(202);
  });

  it("a manage credential edits, deletes and reads any message", async () => {
    const { secret } = await credential("ops console", "manage");
    const sent = await call("POST", "/webhook", dock.secretKey, { msg: "sent with the key", key: "managed" });
    const id = sent.body.message_id;
    expect((await call("GET", `/messages/${id}`, secret)).status).toBe(200);
    expect((await call("GET", "/messages?key=managed", secret)).body.message.id).toBe(id);
    expect((await call("PATCH", `/messages/${id}`, secret, { msg: "edited" })).status).toBe(202);
    expect((await call("DELETE", `/messages/${id}`, secret)).status).toBe(202);
  });

  it("revoking stops a credential at once; an unknown Dock and a wrong credential are answered alike", async () => {
    const { credential: made, secret } = await credential("temporary", "send");
    expect((await ping(dock.id, secret)).status).toBe(202);
    expect(await service.app.docks.credentials.revoke(dock.id, made.id)).toBe(true);
    const revoked = await ping(dock.id, secret);
    const unknownDock = await ping("AAAAAAAAAAAAAAAAAAAAAA", secret);
    const wrong = await ping(dock.id, `dnsc_${"A".repeat(33)}`);
    expect(revoked).toEqual(unknownDock);
    expect(wrong).toEqual(unknownDock);
    expect(unknownDock.status).toBe(401);
    expect((await call("POST", "/webhook", secret, { msg: "x" })).status).toBe(401);

    // A credential of one Dock is nothing to another.
    const other = await service.app.docks.create(1, { name: "Other", link: null, description: null });
    const { secret: mine } = await credential("mine", "manage");
    expect(await ping(other.id, mine)).toEqual(unknownDock);
  });

  it("a send credential is GitLab's token too, and Basic auth at the integration doors", async () => {
    const { credential: made, secret } = await credential("gitlab", "send");
    const mergeRequest = {
      object_kind: "merge_request",
      user: { name: "Ada", username: "ada" },
      project: { path_with_namespace: "group/app", web_url: "https://gitlab.example.com/group/app" },
      object_attributes: {
        iid: 7,
        title: "Add credentials",
        action: "open",
        state: "opened",
        url: "https://gitlab.example.com/group/app/-/merge_requests/7",
      },
    };
    const gitlab = (token: string) =>
      fetch(`${service.url}/webhook/gitlab/${dock.id}`, {
        method: "POST",
        headers: {
          "Content-Type": "application/json",
          "X-Gitlab-Event": "Merge Request Hook",
          "X-Gitlab-Token": token,
        },
        body: JSON.stringify(mergeRequest),
      });
    expect((await gitlab(secret)).status).toBe(202);
    const alertmanager = await call("POST", "/webhook/alertmanager", secret, {
      version: "4",
      status: "firing",
      groupKey: '{}:{alertname="Disk"}',
      alerts: [{ status: "firing", labels: { alertname: "Disk" }, annotations: {} }],
    });
    expect(alertmanager.status).toBe(202);
    await service.app.docks.credentials.revoke(dock.id, made.id);
    expect((await gitlab(secret)).status).toBe(401);
  });

  it("last used is written at most once a minute, not on every send", async () => {
    const { credential: made, secret } = await credential("counted", "send");
    expect(made.lastUsedAt).toBeNull();
    expect((await ping(dock.id, secret)).status).toBe(202);
    const first = (await service.app.docks.credentials.list(dock.id)).find((c) => c.id === made.id);
    expect(first?.lastUsedAt).toEqual(expect.any(Number));
    expect((await ping(dock.id, secret)).status).toBe(202);
    const second = (await service.app.docks.credentials.list(dock.id)).find((c) => c.id === made.id);
    // Within the minute (a busy machine takes seconds, not one): unchanged.
    expect(second?.lastUsedAt).toBe(first?.lastUsedAt);
  });
});
