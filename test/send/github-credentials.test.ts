import { createHmac, randomBytes } from "node:crypto";
import { sql } from "kysely";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { MAX_GITHUB_CREDENTIALS } from "../../src/domain/principal.ts";
import { encryptSecret, newSecretKey, sha256Hex } from "../../src/domain/secrets.ts";
import {
  emptyGithubSlots,
  openGithubSlots,
  TooManyGithubCredentials,
} from "../../src/store/dock-credentials.ts";
import { DockRepository, type DockWithSecret } from "../../src/store/docks.ts";
import { migrate } from "../../src/store/open.ts";
import { sandboxOf } from "../helpers/delivery-harness.ts";
import {
  basic,
  databaseAt,
  dialects,
  OLD_DOCK,
  type RunningService,
  startService,
} from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON the service and sandbox answered.
type Json = any;

const DIALECTS = await dialects();

const sign = (body: string, secret: string) =>
  `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;

/** A GitHub event of a kind with no message of its own (one line), made unique by `n`. */
const starred = (n: string) =>
  JSON.stringify({
    action: "created",
    starred_at: n,
    repository: { full_name: "octo/app", html_url: "https://github.com/octo/app" },
    sender: { login: `octocat-${n}` },
  });

/**
 * An Alertmanager group's payload: its group key is the message's key, so a later one replaces it.
 * `receiver` tells apart bodies that are otherwise the same (a signed body is taken once).
 */
const alertGroup = (group: string, status: "firing" | "resolved", receiver = "dock-notify") =>
  JSON.stringify({
    version: "4",
    receiver,
    groupKey: `{}:{alertname="Disk",group="${group}"}`,
    status,
    alerts: [
      { status, labels: { alertname: "Disk", group }, annotations: { summary: `${group} ${status}` } },
    ],
  });

describe.each(DIALECTS)("GitHub credentials on %s", (dialect) => {
  let service: RunningService;
  let dock: DockWithSecret;
  let sandbox: ReturnType<typeof sandboxOf>;
  let person: number;
  /** Every GitHub credential's secret made here: none may reach the log. */
  const secrets: string[] = [];

  beforeAll(async () => {
    service = await startService(dialect, { AUTH_FAILURES_PER_MINUTE: "0", DOCK_RATE_BURST: "0" });
    dock = await service.app.docks.create(1, { name: "Repos", link: null, description: null });
    sandbox = sandboxOf(service);
    person = await sandbox.person("Grace");
    await service.subscriptions.subscribe(dock.id, person, "private");
  });
  afterAll(async () => service?.close());
  // Each test starts with no GitHub credential on the Dock (a Dock has only so many).
  afterEach(async () => {
    for (const c of await service.app.docks.credentials.list(dock.id))
      if (c.scope === "github") await service.app.docks.credentials.revoke(dock.id, c.id);
  });

  const github = async (name: string, dockId = dock.id) => {
    const made = await service.app.docks.credentials.create(dockId, name, "github");
    secrets.push(made.secret);
    return made;
  };
  const deliver = async (
    body: string,
    secret: string,
    { dockId = dock.id, format = "github", event = "star" } = {},
  ): Promise<{ status: number; body: Json }> => {
    const response = await fetch(`${service.url}/webhook/${format}/${dockId}`, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        "X-GitHub-Event": event,
        "X-Hub-Signature-256": sign(body, secret),
      },
      body,
    });
    return { status: response.status, body: (await response.json()) as Json };
  };
  const withBasic = async (method: string, path: string, password: string, body?: unknown) => {
    const response = await fetch(`${service.url}${path}`, {
      method,
      headers: {
        Authorization: basic(dock.id, password),
        ...(body === undefined ? {} : { "Content-Type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text === "" ? null : (JSON.parse(text) as Json) };
  };
  const senderOf = async (messageId: string) =>
    (
      await service.db.kysely
        .selectFrom("messages")
        .select("sender")
        .where("id", "=", messageId)
        .executeTakeFirstOrThrow()
    ).sender;

  it("a delivery signed with a GitHub credential is delivered, sent as that credential, and its last use shown", async () => {
    const { credential, secret } = await github("octo org");
    expect(secret).toMatch(/^dngh_[A-Za-z0-9]{33}$/);
    expect(credential).toMatchObject({ scope: "github", prefix: secret.slice(0, 9), lastUsedAt: null });
    const sent = await deliver(starred("delivered"), secret);
    expect(sent.status).toBe(202);
    await waitFor("the star delivered", async () =>
      (await sandbox.botTexts(person)).find((text) => text.includes("octocat-delivered")),
    );
    expect(await senderOf(sent.body.message_id)).toBe(credential.id);
    const listed = (await service.app.docks.credentials.list(dock.id)).find((c) => c.id === credential.id);
    expect(listed?.lastUsedAt).toEqual(expect.any(Number));
  });

  it("two live GitHub credentials both verify (a rotation refuses nothing); a revoked one is refused 401", async () => {
    const old = await github("before rotation");
    const next = await github("after rotation");
    expect((await deliver(starred("old-1"), old.secret)).status).toBe(202);
    expect((await deliver(starred("next-1"), next.secret)).status).toBe(202);
    expect(await service.app.docks.credentials.revoke(dock.id, old.credential.id)).toBe(true);
    const revoked = await deliver(starred("old-2"), old.secret);
    expect([revoked.status, revoked.body.error.code]).toEqual([401, "unauthorized"]);
    expect(revoked.body.error.message).toMatch(/GitHub credential/);
    expect((await deliver(starred("next-2"), next.secret)).status).toBe(202);
  });

  it("the secret key still verifies (deprecated there), said once per Dock in the log without the key", async () => {
    const warnings = () =>
      service.logs.lines.filter((line) => line.includes(dock.id) && line.includes("deprecated"));
    const first = await deliver(starred("master-1"), dock.secretKey);
    expect(first.status).toBe(202);
    expect((await deliver(starred("master-2"), dock.secretKey)).status).toBe(202);
    // The key's principal as before: it may replace any message's key, and is recorded as no credential.
    expect(await senderOf(first.body.message_id)).toBeNull();
    expect(warnings()).toHaveLength(1);
    expect(JSON.parse(warnings()[0] as string)).toMatchObject({ level: 40, dockId: dock.id });
    expect(service.logs.text).not.toContain(dock.secretKey);
  });

  it("a send credential's secret, the signing secret, another Dock's GitHub credential are no signing key; an unknown Dock is answered alike", async () => {
    const { secret: send } = await service.app.docks.credentials.create(dock.id, "ci", "send");
    const other = await service.app.docks.create(1, { name: "Other", link: null, description: null });
    const { secret: othersGithub } = await github("other's", other.id);
    const { secret: mine } = await github("mine");
    const refusals = [
      await deliver(starred("send-credential"), send),
      await deliver(starred("signing-secret"), dock.signingSecret),
      await deliver(starred("other-dock"), othersGithub),
      await deliver(starred("unknown-dock"), mine, { dockId: "AAAAAAAAAAAAAAAAAAAAAA" }),
      await deliver(starred("not-an-id"), mine, { dockId: "not-a-dock" }),
    ];
    for (const refused of refusals) expect(refused).toEqual(refusals[0]);
    expect(refusals[0]?.status).toBe(401);
    expect((await deliver(starred("mine"), mine)).status).toBe(202);
  });

  it("a GitHub credential only signs: refused where the secret key goes, and it replaces by key only what it sent", async () => {
    const { credential, secret } = await github("signer");
    const { secret: another } = await github("another signer");
    const sent = await withBasic("POST", "/webhook", dock.secretKey, { msg: "with the key", key: "kept" });
    const id = sent.body.message_id;
    for (const [method, path, body] of [
      ["GET", `/messages/${id}`, undefined],
      ["PATCH", `/messages/${id}`, { msg: "changed" }],
      ["DELETE", `/messages/${id}`, undefined],
      ["GET", "/messages?key=kept", undefined],
      ["POST", "/webhook", { msg: "as a password" }],
    ] as const) {
      const refused = await withBasic(method, path, secret, body);
      expect([method, path, refused.status]).toEqual([method, path, 401]);
    }
    const pinged = await fetch(`${service.url}/ping`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ dock_id: dock.id, secret_key: secret, msg: "as a key" }),
    });
    expect(pinged.status).toBe(401);
    const asGitlabToken = await fetch(`${service.url}/webhook/gitlab/${dock.id}`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Gitlab-Token": secret },
      body: JSON.stringify({ object_kind: "push", project: { path_with_namespace: "g/app" } }),
    });
    expect(asGitlabToken.status).toBe(401);
    const status = await withBasic("GET", `/messages/${id}`, dock.secretKey);
    expect([status.body.message.revision, status.body.message.deleted_at]).toEqual([1, null]);

    // Signed deliveries of another format carry keys: the secret key's alert is not the credential's.
    const byKey = await deliver(alertGroup("db", "firing"), dock.secretKey, { format: "alertmanager" });
    expect(byKey.status).toBe(202);
    const stolen = await deliver(alertGroup("db", "resolved"), secret, { format: "alertmanager" });
    expect([stolen.status, stolen.body.error.code]).toEqual([403, "not_your_message"]);
    const own = await deliver(alertGroup("web", "firing"), secret, { format: "alertmanager" });
    expect(own.status).toBe(202);
    expect(await senderOf(own.body.message_id)).toBe(credential.id);
    const byAnother = await deliver(alertGroup("web", "firing", "another"), another, {
      format: "alertmanager",
    });
    expect([byAnother.status, byAnother.body.error.code]).toEqual([403, "not_your_message"]);
    const resolved = await deliver(alertGroup("web", "resolved"), secret, { format: "alertmanager" });
    expect(resolved.body).toMatchObject({ message_id: own.body.message_id, replaced: true });
  });

  it(`a Dock has at most ${MAX_GITHUB_CREDENTIALS} GitHub credentials, even made at once; revoking one frees a place`, async () => {
    const full = await service.app.docks.create(1, { name: "Full", link: null, description: null });
    const made = await Promise.allSettled(
      Array.from({ length: MAX_GITHUB_CREDENTIALS + 2 }, (_, i) => github(`at once ${i}`, full.id)),
    );
    const fulfilled = made.filter((m) => m.status === "fulfilled");
    const rejected = made.filter((m) => m.status === "rejected");
    expect(fulfilled).toHaveLength(MAX_GITHUB_CREDENTIALS);
    for (const r of rejected) expect(r.reason).toBeInstanceOf(TooManyGithubCredentials);
    const listed = await service.app.docks.credentials.list(full.id);
    expect(listed.filter((c) => c.scope === "github")).toHaveLength(MAX_GITHUB_CREDENTIALS);
    // Send credentials are not counted.
    await service.app.docks.credentials.create(full.id, "ci", "send");
    await expect(github("one more", full.id)).rejects.toBeInstanceOf(TooManyGithubCredentials);
    const signers = await service.app.docks.signersOf(full.id);
    expect(signers.credentials.filter((c) => c !== null)).toHaveLength(MAX_GITHUB_CREDENTIALS);

    const [first] = listed;
    await service.app.docks.credentials.revoke(full.id, first?.id as string);
    const replacement = await github("replacement", full.id);
    expect((await deliver(starred("replacement"), replacement.secret, { dockId: full.id })).status).toBe(202);
  });

  it("no GitHub credential's secret, and no secret pasted into a Payload URL, reaches the log", async () => {
    const { secret } = await github("pasted");
    // Someone pasted the secret where the Dock ID goes.
    const pasted = await deliver(starred("pasted"), secret, { dockId: secret });
    expect(pasted.status).toBe(401);
    await waitFor(
      "the request's log line",
      async () => service.logs.text.includes("/webhook/github/<redacted>") || undefined,
    );
    expect(secrets.length).toBeGreaterThan(5);
    for (const made of [...secrets, dock.secretKey, dock.signingSecret])
      expect(service.logs.text).not.toContain(made);
  });
});

describe.each(DIALECTS)("GitHub credentials across the upgrade on %s", (dialect) => {
  it("credentials made before it keep working; a Dock then gets GitHub credentials", async () => {
    const old = await databaseAt(dialect, "0015-dock-credentials");
    try {
      const key = randomBytes(32);
      await sql`update docks set secret_sealed = ${encryptSecret(newSecretKey(), key)}`.execute(
        old.db.kysely,
      );
      const send = `dnsc_${"S".repeat(33)}`;
      await sql`insert into dock_credentials (id, dock_id, name, scope, secret_hash, prefix, created_at)
        values ('crd_old', ${OLD_DOCK}, 'ci', 'send', ${sha256Hex(send)}, 'dnsc_SSSS', ${old.now})`.execute(
        old.db.kysely,
      );
      await migrate(old.db);
      const docks = new DockRepository(old.db, key);
      expect(await docks.credentials.authenticate(OLD_DOCK, send)).toMatchObject({
        id: OLD_DOCK,
        principal: { kind: "credential", id: "crd_old", scope: "send" },
      });
      const sealedOf = async () =>
        (await old.db.kysely.selectFrom("docks").select("github_sealed").executeTakeFirstOrThrow())
          .github_sealed;
      expect(await sealedOf()).toBeNull();
      const made = await docks.credentials.create(OLD_DOCK, "org", "github");
      // Sealed on the Dock's row, not stored as it is: only the server's key opens it.
      const sealed = (await sealedOf()) as string;
      expect(sealed).not.toContain(made.secret);
      expect(openGithubSlots(sealed, key)).toEqual([
        [made.credential.id, made.secret],
        ...emptyGithubSlots().slice(1),
      ]);
      const stored = await old.db.kysely
        .selectFrom("dock_credentials")
        .select(["id", "secret_hash"])
        .execute();
      expect(stored).toEqual(
        expect.arrayContaining([{ id: made.credential.id, secret_hash: sha256Hex(made.secret) }]),
      );
      expect(JSON.stringify(stored)).not.toContain(made.secret);
      // Revoked, it leaves its slot.
      await docks.credentials.revoke(OLD_DOCK, made.credential.id);
      expect(openGithubSlots(await sealedOf(), key)).toEqual(emptyGithubSlots());
      // Never a secret presented where the key goes.
      expect(await docks.credentials.authenticate(OLD_DOCK, made.secret)).toBeUndefined();
    } finally {
      await old.close();
    }
  });
});
