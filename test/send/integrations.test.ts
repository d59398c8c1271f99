import { createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DockWithSecret } from "../../src/store/docks.ts";
import { sandboxOf } from "../helpers/delivery-harness.ts";
import { basic, dialects, type RunningService, startService } from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON the service and sandbox answered.
type Json = any;

const DIALECTS = await dialects();

/** An Alertmanager webhook (version 4) for one group, as Alertmanager posts it. */
function alertGroup(status: "firing" | "resolved", group = "disk") {
  return {
    version: "4",
    groupKey: `{}:{alertname="DiskFull",group="${group}"}`,
    truncatedAlerts: 0,
    status,
    receiver: "dock-notify",
    groupLabels: { alertname: "DiskFull" },
    commonLabels: { alertname: "DiskFull", severity: "critical", instance: "db-1.example.com" },
    commonAnnotations: { summary: "Disk almost full on db-1" },
    externalURL: "https://alertmanager.example.com",
    alerts: [
      {
        status,
        labels: { alertname: "DiskFull", severity: "critical", instance: "db-1.example.com" },
        annotations: { summary: "Disk almost full on db-1", description: "97% used on /var" },
        startsAt: "2026-11-24T10:00:00Z",
        endsAt: status === "resolved" ? "2026-11-24T10:20:00Z" : "0001-01-01T00:00:00Z",
        generatorURL: "https://prometheus.example.com/graph?g0.expr=disk",
        fingerprint: "c0ffee",
      },
    ],
  };
}

describe.each(DIALECTS)("integrations on %s", (dialect) => {
  let service: RunningService;
  let dock: DockWithSecret;
  let sandbox: ReturnType<typeof sandboxOf>;
  let person: number;

  beforeAll(async () => {
    // Not about the pace: Telegram's limits off, so no case waits out a chat's one message a second.
    service = await startService(
      dialect,
      { AUTH_FAILURES_PER_MINUTE: "0", DOCK_RATE_BURST: "0" },
      { pace: "unpaced" },
    );
    dock = await service.app.docks.create(1, { name: "Ops", link: null, description: null });
    sandbox = sandboxOf(service);
    person = await sandbox.person("Ada");
    await service.subscriptions.subscribe(dock.id, person, "private");
  });
  afterAll(async () => service?.close());

  const post = async (
    path: string,
    body: string | object,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; body: Json }> => {
    const response = await fetch(`${service.url}${path}`, {
      method: "POST",
      headers: {
        ...(typeof body === "string" ? {} : { "Content-Type": "application/json" }),
        ...headers,
      },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text === "" ? null : JSON.parse(text) };
  };
  const auth = () => ({ Authorization: basic(dock.id, dock.secretKey) });
  const status = async (id: string): Promise<Json> => {
    const response = await fetch(`${service.url}/messages/${id}`, { headers: auth() });
    return ((await response.json()) as Json).message;
  };
  const delivered = (id: string, what: string, done: (m: Json) => boolean = (m) => m.counts.sent === 1) =>
    waitFor(what, async () => {
      const message = await status(id);
      return done(message) ? message : undefined;
    });
  const lastShown = async () => (await sandbox.botMessages(person)).at(-1);

  it("an Alertmanager group fires, then its resolution replaces the same message, and a new firing is a new message", async () => {
    const fired = await post("/webhook/alertmanager", alertGroup("firing"), auth());
    expect(fired.status).toBe(202);
    expect(fired.body).toMatchObject({ ok: true, subscribers: 1, format: "alertmanager" });
    const firing = await delivered(fired.body.message_id, "the firing alert delivered");
    expect(firing.key).toMatch(/^alertmanager:/);
    expect(firing.options.priority).toBe("urgent");
    const shown = await lastShown();
    expect(shown.text).toContain("DiskFull");
    expect(shown.text).toContain("Disk almost full on db-1");
    expect(shown.reply_markup.inline_keyboard.flat().map((b: Json) => b.url)).toContain(
      "https://prometheus.example.com/graph?g0.expr=disk",
    );

    const resolved = await post("/webhook/alertmanager", alertGroup("resolved"), auth());
    expect(resolved.status).toBe(202);
    expect(resolved.body).toMatchObject({ message_id: fired.body.message_id, replaced: true, revision: 2 });
    const after = await delivered(
      fired.body.message_id,
      "the resolution edited in",
      (m) => m.changes.edits.edited === 1,
    );
    // Resolved: the key is let go, so the next firing is a new message (Telegram notifies of those).
    expect(after.key).toBeNull();
    const messages = await sandbox.botMessages(person);
    const edited = messages.find((m: Json) => m.message_id === shown.message_id);
    expect(edited.text).toMatch(/resolved/i);
    expect(edited.edit_date).toBeDefined();

    const again = await post("/webhook/alertmanager", alertGroup("firing"), auth());
    expect(again.status).toBe(202);
    expect(again.body.message_id).not.toBe(fired.body.message_id);
    expect(again.body.replaced).toBeUndefined();
    await delivered(again.body.message_id, "the new firing delivered");
    // Clean up the live key for the tests below.
    await post("/webhook/alertmanager", alertGroup("resolved"), auth());
  });

  it("plain /webhook detects a tool's payload; a body it cannot read names the formats that exist", async () => {
    const detected = await post("/webhook", alertGroup("firing", "detected"), auth());
    expect(detected.status).toBe(202);
    expect(detected.body.format).toBe("alertmanager");
    await post("/webhook", alertGroup("resolved", "detected"), auth());

    const unknown = await post("/webhook", { message: "hello", level: 3 }, auth());
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.code).toBe("unknown_format");
    for (const name of [
      "alertmanager",
      "grafana",
      "github",
      "gitlab",
      "uptime-kuma",
      "apprise",
      "slack",
      "ntfy",
    ]) {
      expect(unknown.body.error.message).toContain(name);
    }
    expect(unknown.body.error.message).toContain('{"msg"');

    const ordinary = await post("/webhook", { msg: "still a plain message" }, auth());
    expect(ordinary.status).toBe(202);
    expect(ordinary.body.format).toBeUndefined();
  });

  it("a wrong format name, a payload that is not the format, and bad JSON are clear 400s that store nothing", async () => {
    const wrong = await post("/webhook/nagios", { x: 1 }, auth());
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.code).toBe("unknown_format");
    expect(wrong.body.error.message).toContain("alertmanager");

    const notAlertmanager = await post("/webhook/alertmanager", { alerts: "many" }, auth());
    expect(notAlertmanager.status).toBe(400);
    expect(notAlertmanager.body.error.code).toBe("invalid_payload");
    expect(notAlertmanager.body.error.message).toContain("alerts");

    const broken = await post("/webhook/grafana", "{not json", {
      ...auth(),
      "Content-Type": "application/json",
    });
    expect(broken.status).toBe(400);
    expect(broken.body.error.code).toBe("invalid_json");
    const unauthenticated = await post("/webhook/alertmanager", alertGroup("firing"));
    expect(unauthenticated.status).toBe(401);
  });

  it("query parameters in the URL the user configured override what the format derived", async () => {
    const sent = await post(
      "/webhook/alertmanager?priority=low&tags=ops",
      alertGroup("firing", "quiet"),
      auth(),
    );
    expect(sent.status).toBe(202);
    const message = await delivered(sent.body.message_id, "the quiet alert delivered");
    expect(message.options.priority).toBe("low");
    expect(message.options.tags).toEqual(["ops"]);
    await post("/webhook/alertmanager", alertGroup("resolved", "quiet"), auth());
  });

  describe("GitHub: the Dock ID in the URL, the body signed with the secret key", () => {
    const push = {
      ref: "refs/heads/main",
      before: "0".repeat(40),
      after: "a".repeat(40),
      compare: "https://github.com/octo/app/compare/000000...aaaaaa",
      repository: { full_name: "octo/app", html_url: "https://github.com/octo/app" },
      pusher: { name: "octocat" },
      sender: { login: "octocat" },
      commits: [
        {
          id: "a".repeat(40),
          message: "Fix the build\n\nLonger text",
          author: { name: "Octo Cat" },
          url: "https://github.com/octo/app/commit/aaaa",
        },
      ],
    };
    const sign = (body: string, secret: string) =>
      `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;

    it("a signed push is delivered; a wrong or missing signature is 401 and stores nothing", async () => {
      const body = JSON.stringify(push);
      const headers = { "Content-Type": "application/json", "X-GitHub-Event": "push" };
      const signed = await post(`/webhook/github/${dock.id}`, body, {
        ...headers,
        "X-Hub-Signature-256": sign(body, dock.secretKey),
      });
      expect(signed.status).toBe(202);
      await delivered(signed.body.message_id, "the push delivered");
      expect((await lastShown()).text).toContain("Fix the build");

      const forged = await post(`/webhook/github/${dock.id}`, body, {
        ...headers,
        "X-Hub-Signature-256": sign(body, "dnsk_not-the-key"),
      });
      expect(forged.status).toBe(401);
      const tampered = await post(`/webhook/github/${dock.id}`, body.replace("Fix", "Break"), {
        ...headers,
        "X-Hub-Signature-256": sign(body, dock.secretKey),
      });
      expect(tampered.status).toBe(401);
      const unsigned = await post(`/webhook/github/${dock.id}`, body, headers);
      expect(unsigned.status).toBe(401);
      const otherDock = await post("/webhook/github/AnotherDockId123456789", body, {
        ...headers,
        "X-Hub-Signature-256": sign(body, dock.secretKey),
      });
      expect(otherDock.status).toBe(401);
    });

    it("a signed delivery posted again answers the first's 202 and is not delivered again, whatever X-GitHub-Delivery says", async () => {
      const title = `Replayed once on ${dialect}`;
      const body = JSON.stringify({
        ...push,
        after: "b".repeat(40),
        commits: [{ ...push.commits[0], id: "b".repeat(40), message: title }],
      });
      const send = (delivery: string, extra: Record<string, string> = {}) =>
        fetch(`${service.url}/webhook/github/${dock.id}`, {
          method: "POST",
          body,
          headers: {
            "Content-Type": "application/json",
            "X-GitHub-Event": "push",
            "X-GitHub-Delivery": delivery,
            "X-Hub-Signature-256": sign(body, dock.secretKey),
            ...extra,
          },
        });
      const delivery = "72d3162e-cc78-11e3-81ab-4c9367dc0958";
      const first = await send(delivery);
      expect(first.status).toBe(202);
      expect(first.headers.get("idempotent-replayed")).toBeNull();
      const answer = (await first.json()) as Json;
      await delivered(answer.message_id, "the push delivered");
      // GitHub's Redeliver (the same delivery), then a replay by someone who saw the request, who
      // can change the headers GitHub does not sign.
      for (const [again, extra] of [
        [delivery, {}],
        ["0b989ba4-242f-11e5-81e1-c7b6966d2516", {}],
        ["0b989ba4-242f-11e5-81e1-c7b6966d2517", { "Idempotency-Key": "something-new" }],
      ] as const) {
        const replay = await send(again, extra);
        expect(replay.status).toBe(202);
        expect(replay.headers.get("idempotent-replayed")).toBe("true");
        expect(await replay.json()).toEqual(answer);
      }
      const stored = await service.db.kysely
        .selectFrom("messages")
        .select("id")
        .where("dock_id", "=", dock.id)
        .where("text", "like", `%${title}%`)
        .execute();
      expect(stored.map((row) => row.id)).toEqual([answer.message_id]);
      const shown = (await sandbox.botMessages(person)).filter((m: Json) => m.text.includes(title));
      expect(shown).toHaveLength(1);
    });

    it("GitHub's ping is answered and stores nothing; GitHub's form content type works too", async () => {
      const body = JSON.stringify({
        zen: "Keep it logically awesome.",
        hook_id: 1,
        repository: push.repository,
      });
      const ping = await post(`/webhook/github/${dock.id}`, body, {
        "Content-Type": "application/json",
        "X-GitHub-Event": "ping",
        "X-Hub-Signature-256": sign(body, dock.secretKey),
      });
      expect(ping.status).toBe(200);
      expect(ping.body).toMatchObject({ ok: true, skipped: true, format: "github" });

      const form = `payload=${encodeURIComponent(JSON.stringify(push))}`;
      const sent = await post(`/webhook/github/${dock.id}`, form, {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-GitHub-Event": "push",
        "X-Hub-Signature-256": sign(form, dock.secretKey),
      });
      expect(sent.status).toBe(202);
    });
  });

  it("GitLab authenticates with X-Gitlab-Token (the secret key)", async () => {
    const mergeRequest = {
      object_kind: "merge_request",
      user: { name: "Ada", username: "ada" },
      project: { path_with_namespace: "group/app", web_url: "https://gitlab.example.com/group/app" },
      object_attributes: {
        iid: 7,
        title: "Add integrations",
        action: "open",
        state: "opened",
        url: "https://gitlab.example.com/group/app/-/merge_requests/7",
      },
    };
    const headers = { "X-Gitlab-Event": "Merge Request Hook" };
    const right = await post(`/webhook/gitlab/${dock.id}`, mergeRequest, {
      ...headers,
      "X-Gitlab-Token": dock.secretKey,
    });
    expect(right.status).toBe(202);
    await delivered(right.body.message_id, "the merge request delivered");
    expect((await lastShown()).text).toContain("Add integrations");
    const wrong = await post(`/webhook/gitlab/${dock.id}`, mergeRequest, {
      ...headers,
      "X-Gitlab-Token": "nope",
    });
    expect(wrong.status).toBe(401);
  });

  describe("hook URLs", () => {
    it("a hook token sends with nothing but its URL; rotating it ends the old URL; it never reaches the logs", async () => {
      const token = (await service.app.docks.rotateHookToken(dock.id)) as string;
      expect(token).toMatch(/^dnhk_[A-Za-z0-9]+$/);
      const plain = await post(`/hook/${token}`, "Backup finished", {
        "Content-Type": "text/plain",
        Title: "Backup",
      });
      expect(plain.status).toBe(202);
      await delivered(plain.body.message_id, "the hook's message delivered");
      expect((await lastShown()).text).toBe("Ops\nBackup\nBackup finished");

      const slack = await post(`/hook/${token}/slack`, {
        text: "*Deploy* done <https://ci.example.com/1|logs>",
      });
      expect(slack.status).toBe(202);
      await delivered(slack.body.message_id, "the Slack-style message delivered");
      const shown = await lastShown();
      expect(shown.text).toContain("Deploy done logs");
      expect(shown.entities).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ type: "text_link", url: "https://ci.example.com/1" }),
        ]),
      );

      const kuma = await post(`/hook/${token}`, {
        heartbeat: { status: 0, msg: "timeout of 48000ms exceeded", time: "2026-11-24 10:00:00" },
        monitor: { id: 3, name: "Website", url: "https://www.example.com", type: "http" },
        msg: "[Website] [🔴 Down] timeout of 48000ms exceeded",
      });
      expect(kuma.status).toBe(202);
      expect(kuma.body.format).toBe("uptime-kuma");

      const rotated = await service.app.docks.rotateHookToken(dock.id);
      expect(rotated).not.toBe(token);
      const old = await post(`/hook/${token}`, "still there?", { "Content-Type": "text/plain" });
      expect(old.status).toBe(401);
      await service.app.docks.revokeHookToken(dock.id);
      const revoked = await post(`/hook/${rotated}`, "and now?", { "Content-Type": "text/plain" });
      expect(revoked.status).toBe(401);

      const logs = service.logs.text;
      expect(logs).toContain("/hook/<redacted>");
      expect(logs).not.toContain(token);
      expect(logs).not.toContain(rotated as string);
      expect(logs).not.toContain(dock.secretKey);
    });
  });

  it("what a newcomer gets wrong gets an answer that says what to do", async () => {
    const token = (await service.app.docks.rotateHookToken(dock.id)) as string;
    // ntfy's `curl -d 'text'` is a form of one nameless field: the text itself, never a Slack body.
    const text = await post(`/hook/${token}`, "text", {
      "Content-Type": "application/x-www-form-urlencoded",
    });
    expect(text.status).toBe(202);
    expect(text.body.format).toBeUndefined();
    await delivered(text.body.message_id, "the form text delivered");
    expect((await lastShown()).text).toBe("Ops\ntext");
    // `curl -T file` PUTs, as ntfy takes it; other methods are 405 with what to use.
    const put = await fetch(`${service.url}/hook/${token}`, { method: "PUT", body: "from a file" });
    expect(put.status).toBe(202);
    const opened = await fetch(`${service.url}/hook/${token}`);
    expect(opened.status).toBe(405);
    expect(opened.headers.get("allow")).toBe("POST, PUT");
    expect((await fetch(`${service.url}/webhook/alertmanager`)).status).toBe(405);
    // JSON labelled as text is read as the JSON it is.
    const labelled = await post("/webhook/alertmanager", JSON.stringify(alertGroup("firing", "labelled")), {
      ...auth(),
      "Content-Type": "text/plain",
    });
    expect(labelled.status).toBe(202);
    await post("/webhook/alertmanager", alertGroup("resolved", "labelled"), auth());
    // A misspelt format names the ones that exist.
    const misspelt = await post("/webhook?format=alert-manager", alertGroup("firing"), auth());
    expect(misspelt.status).toBe(400);
    expect(misspelt.body.error.code).toBe("unknown_format");
    expect(misspelt.body.error.message).toContain('"alert-manager"');
    // The secret key where the hook token goes: said so, and never logged.
    const leaked = await post(`/hook/${dock.secretKey}`, "hi", { "Content-Type": "text/plain" });
    expect(leaked.status).toBe(401);
    expect(leaked.body.error.message).toMatch(/secret key, not a hook token/);
    expect(service.logs.text).not.toContain(dock.secretKey);
    // GitHub without a Secret set sends no signature: the answer says to set it.
    const unsigned = await post(`/webhook/github/${dock.id}`, { zen: "x" }, { "X-GitHub-Event": "ping" });
    expect(unsigned.status).toBe(401);
    expect(unsigned.body.error.message).toMatch(/Secret/);
    await service.app.docks.revokeHookToken(dock.id);
  });

  describe("after review", () => {
    it("our own signed event, replayed as a GitHub delivery, is no payload", async () => {
      const t = 1_764_000_000;
      const event = JSON.stringify({ type: "message.delivered", message: { id: "x" } });
      const v1 = createHmac("sha256", dock.secretKey).update(`${t}.${event}`).digest("hex");
      const replayed = await post(`/webhook/template/${dock.id}`, `${t}.${event}`, {
        "Content-Type": "text/plain",
        "X-Hub-Signature-256": `sha256=${v1}`,
      });
      expect(replayed.status).toBe(400);
      expect(replayed.body.error.code).toBe("invalid_payload");
    });

    it("a percent-encoded hook path is masked in the logs too", async () => {
      const token = (await service.app.docks.rotateHookToken(dock.id)) as string;
      const encoded = `/%68ook/${token.replace("dnhk_", "%64nhk_")}`;
      const sent = await post(encoded, "encoded", { "Content-Type": "text/plain" });
      expect(sent.status).toBe(202);
      expect(service.logs.text).not.toContain(token.slice(5));
      await service.app.docks.revokeHookToken(dock.id);
    });

    it("a form body stays a message unless it is Apprise's, or the Dock reads bodies as a format", async () => {
      const form = { ...auth(), "Content-Type": "application/x-www-form-urlencoded" };
      const text = await post("/webhook", "text=Backup done", form);
      expect(text.status).toBe(202);
      expect(text.body.format).toBeUndefined();
      await delivered(text.body.message_id, "the form delivered as text");
      expect((await lastShown()).text).toBe("Ops\ntext=Backup done");
      const apprise = await post("/webhook", "version=1.0&title=Nightly&message=Done&type=success", form);
      expect(apprise.body.format).toBe("apprise");

      await service.app.docks.updateIntegrations(dock.id, {
        inboundFormat: "template",
        template: { text: "form says {{ a }}" },
      });
      const templated = await post("/webhook", "a=b", form);
      expect(templated.status).toBe(202);
      expect(templated.body.format).toBe("template");
      await service.app.docks.updateIntegrations(dock.id, { inboundFormat: null });
    });

    it("HTML a template writes wrongly is the template's 422, not the sender's 400", async () => {
      await service.app.docks.updateIntegrations(dock.id, {
        template: { text: "<u>{{ a }}", format: "html" },
      });
      const sent = await post("/webhook/template", { a: 1 }, auth());
      expect(sent.status).toBe(422);
      expect(sent.body.error.code).toBe("template_failed");
      expect(sent.body.error.fields[0].field).toBe("template.text");
      await service.app.docks.updateIntegrations(dock.id, { template: null });
    });

    it("Basic credentials on /webhook/<format>/<dock_id> must be that Dock's", async () => {
      const other = await service.app.docks.create(1, { name: "Other", link: null, description: null });
      const crossed = await post(
        `/webhook/alertmanager/${other.id}`,
        alertGroup("firing", "crossed"),
        auth(),
      );
      expect(crossed.status).toBe(401);
      const own = await post(`/webhook/alertmanager/${dock.id}`, alertGroup("firing", "own"), auth());
      expect(own.status).toBe(202);
      await post("/webhook/alertmanager", alertGroup("resolved", "own"), auth());
    });

    it("a payload bigger than a message's limit is taken at the integration doors", async () => {
      const big = alertGroup("firing", "big");
      big.alerts = Array.from({ length: 300 }, (_, i) => ({
        ...big.alerts[0],
        labels: { ...big.alerts[0]?.labels, instance: `db-${i}.example.com` },
        fingerprint: `f${i}`,
      })) as typeof big.alerts;
      const body = JSON.stringify(big);
      expect(body.length).toBeGreaterThan(70 * 1024);
      const sent = await post("/webhook/alertmanager", body, {
        ...auth(),
        "Content-Type": "application/json",
      });
      expect(sent.status).toBe(202);
      const message = await delivered(sent.body.message_id, "the big group delivered");
      expect(message.deliveries[0].telegram_message_ids).toHaveLength(1);
      await post("/webhook/alertmanager", alertGroup("resolved", "big"), auth());
    });

    it("a template that takes long spends the Dock's rendering time: then 429 with Retry-After", async () => {
      // A Dock of its own: this one's rendering time is spent.
      const slow = await service.app.docks.create(1, { name: "Slow", link: null, description: null });
      await service.app.docks.updateIntegrations(slow.id, {
        template: {
          text: "{% for a in payload.items %}{% for b in payload.items %}{% for c in payload.items %}{% endfor %}{% endfor %}{% endfor %}",
        },
      });
      const items = Array.from({ length: 1000 }, (_, i) => i);
      let limited: { status: number; body: Json; retryAfter: string | null } | undefined;
      for (let i = 0; i < 60 && limited === undefined; i++) {
        const response = await fetch(`${service.url}/webhook/template`, {
          method: "POST",
          headers: { Authorization: basic(slow.id, slow.secretKey), "Content-Type": "application/json" },
          body: JSON.stringify({ items }),
        });
        const answer = {
          status: response.status,
          body: await response.json(),
          retryAfter: response.headers.get("retry-after"),
        };
        if (answer.status === 429) limited = answer;
        else expect(answer.status).toBe(422);
      }
      expect(limited?.body.error.code).toBe("rate_limited");
      expect(Number(limited?.retryAfter)).toBeGreaterThan(0);
    });
  });

  describe("the Dock's template", () => {
    it("turns any JSON into the message; with none saved it is a clear 409; a render error is a 422 naming the field", async () => {
      const none = await post("/webhook/template", { anything: 1 }, auth());
      expect(none.status).toBe(409);
      expect(none.body.error.code).toBe("no_template");

      await service.app.docks.updateIntegrations(dock.id, {
        template: {
          title: "{{ service | upcase }}",
          text: "{{ status }}: {{ detail }}",
          key: "svc-{{ service }}",
          priority: "{% if status == 'down' %}high{% endif %}",
          tags: "{% if status == 'down' %}warning{% endif %}",
        },
      });
      const sent = await post(
        "/webhook/template",
        { service: "billing", status: "down", detail: "<b>500s</b>" },
        auth(),
      );
      expect(sent.status).toBe(202);
      expect(sent.body.format).toBe("template");
      const message = await delivered(sent.body.message_id, "the templated message delivered");
      expect(message.key).toBe("svc-billing");
      expect(message.options).toMatchObject({ title: "BILLING", priority: "high", tags: ["warning"] });
      expect((await lastShown()).text).toBe("❗ Ops\n⚠️ BILLING\ndown: <b>500s</b>");

      await service.app.docks.updateIntegrations(dock.id, {
        template: { text: "{{ payload | nosuchfilter }}" },
      });
      const failed = await post("/webhook/template", { a: 1 }, auth());
      expect(failed.status).toBe(422);
      expect(failed.body.error.code).toBe("template_failed");

      await service.app.docks.updateIntegrations(dock.id, { template: { text: "{{ missing }}" } });
      const empty = await post("/webhook/template", { a: 1 }, auth());
      expect(empty.status).toBe(422);
      expect(empty.body.error.code).toBe("template_failed");
      expect(empty.body.error.fields[0].field).toBe("template.text");
    });

    it("the Dock's inbound format reads bodies without msg on /webhook and its hook URL", async () => {
      await service.app.docks.updateIntegrations(dock.id, {
        inboundFormat: "template",
        template: { text: "{{ event }} by {{ who }}" },
      });
      const sent = await post("/webhook", { event: "login", who: "ada" }, auth());
      expect(sent.status).toBe(202);
      expect(sent.body.format).toBe("template");
      await delivered(sent.body.message_id, "the default-format message delivered");
      expect((await lastShown()).text).toBe("Ops\nlogin by ada");
      // A message of our own is still one.
      const ours = await post("/webhook", { msg: "plain" }, auth());
      expect(ours.body.format).toBeUndefined();
      await service.app.docks.updateIntegrations(dock.id, { inboundFormat: null });
    });
  });
});
