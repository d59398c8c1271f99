import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { gatherOptions, prepareContent, readOptions } from "../../../src/domain/message-options.ts";
import { renderNotification } from "../../../src/domain/render.ts";
import { entityProblems, parseHtml } from "../../../src/domain/telegram-format.ts";
import { gitlab } from "../../../src/integrations/gitlab.ts";
import {
  type Conversion,
  ENTITY_BUDGET,
  type Inbound,
  type Notification,
  PayloadError,
  TEXT_BUDGET,
} from "../../../src/integrations/inbound.ts";

// biome-ignore lint/suspicious/noExplicitAny: fixtures are edited freely to make each case.
type Json = any;

const fixture = (name: string): Json =>
  JSON.parse(readFileSync(new URL(`../../fixtures/integrations/gitlab/${name}`, import.meta.url), "utf8"));

const inbound = (body: unknown, event?: string): Inbound => ({
  body,
  text: JSON.stringify(body),
  mediaType: "application/json",
  headers: event === undefined ? {} : { "x-gitlab-event": event },
});

const conversion = async (body: unknown, event?: string): Promise<Conversion> =>
  gitlab.convert(inbound(body, event));

async function convert(body: unknown, event?: string): Promise<Notification> {
  const result = await conversion(body, event);
  if (result.kind !== "notify") throw new Error(`skipped: ${result.reason}`);
  return result.notification;
}

/** The notification as the service stores and sends it: options read as a sender's, one Telegram message. */
async function sent(notification: Notification) {
  const { msg } = notification;
  expect(msg.length).toBeLessThanOrEqual(TEXT_BUDGET);
  expect(msg.isWellFormed() && !msg.includes("\u0000") && msg.trim() !== "").toBe(true);
  expect(parseHtml(msg).entities.length).toBeLessThanOrEqual(ENTITY_BUDGET);
  const options = readOptions(gatherOptions(notification.options as Record<string, unknown>));
  const parts = renderNotification({ name: "Ops", link: null }, msg, await prepareContent(msg, options));
  expect(parts).toHaveLength(1);
  const [part] = parts;
  expect(entityProblems(part?.text ?? "", part?.entities ?? [])).toEqual([]);
  return part;
}

describe("GitLab", () => {
  it("a push counts all its commits (GitLab lists at most 20) and links the comparison", async () => {
    const notification = await convert(fixture("push.json"), "Push Hook");
    expect(notification.msg).toBe(
      [
        "⬆️ John Smith pushed 4 commits to <b>master</b>",
        '<a href="http://example.com/mike/diaspora/commit/b6568db1bc1dcd7f8b4d5a946b0b91f9dacd7327">b6568db</a> Update Catalan translation to e38cb41. — Jordi Mallach',
        '<a href="http://example.com/mike/diaspora/commit/da1560886d4f094c3e6c9ef40349f7d38b5d27d7">da15608</a> fixed readme — GitLab dev user',
        "… and 2 more",
      ].join("\n"),
    );
    expect(notification.options).toEqual({
      format: "html",
      title: "mike/diaspora",
      buttons: [
        [
          {
            text: "Compare",
            url: "http://example.com/mike/diaspora/-/compare/95790bf891e76fee5e1747ab589903a6a1f80f22...da1560886d4f094c3e6c9ef40349f7d38b5d27d7",
          },
        ],
      ],
    });
    await sent(notification);
  });

  it("a new branch links its commits; a deleted branch says so", async () => {
    const created = { ...fixture("push.json"), before: "0".repeat(40), ref: "refs/heads/feature/a b" };
    const notification = await convert(created);
    expect(notification.msg.split("\n")[0]).toBe(
      "🌱 John Smith created branch <b>feature/a b</b> with 4 commits",
    );
    expect(notification.options.buttons).toEqual([
      [{ text: "Commits", url: "http://example.com/mike/diaspora/-/commits/feature/a%20b" }],
    ]);
    const deleted = { ...fixture("push.json"), after: "0".repeat(40), commits: [], total_commits_count: 0 };
    expect((await convert(deleted)).msg).toBe("🗑 John Smith deleted branch <b>master</b>");
  });

  it("a tag push names the tag, with a button to it", async () => {
    const notification = await convert(fixture("tag_push.json"), "Tag Push Hook");
    expect(notification.msg).toBe("🏷 John Smith pushed tag <b>v1.0.0</b>");
    expect(notification.options).toEqual({
      format: "html",
      title: "jsmith/example",
      buttons: [[{ text: "Tag", url: "http://example.com/jsmith/example/-/tags/v1.0.0" }]],
    });
    await sent(notification);
  });

  it("a merge request opened shows who, its number and title, and its branches", async () => {
    const notification = await convert(fixture("merge_request.json"), "Merge Request Hook");
    expect(notification.msg).toBe(
      "🟢 Administrator opened merge request <b>!1 MS-Viewport</b>\nms-viewport → master",
    );
    expect(notification.options).toEqual({
      format: "html",
      title: "gitlabhq/gitlab-test",
      buttons: [[{ text: "Merge request", url: "http://example.com/diaspora/merge_requests/1" }]],
    });
    await sent(notification);
    const merged = fixture("merge_request.json");
    merged.object_attributes.action = "merge";
    expect((await convert(merged)).msg.split("\n")[0]).toBe(
      "🟣 Administrator merged merge request <b>!1 MS-Viewport</b>",
    );
  });

  it("a finished pipeline says how it ended, for which commit, which jobs failed, and how long it took", async () => {
    const notification = await convert(fixture("pipeline.json"), "Pipeline Hook");
    expect(notification.msg).toBe(
      ["✅ Pipeline #31 passed on <b>master</b>", "test — User", "Failed: test-build", "Took 1 min 3 s"].join(
        "\n",
      ),
    );
    expect(notification.options).toEqual({
      format: "html",
      title: "gitlab-org/gitlab-test",
      buttons: [[{ text: "Pipeline", url: "http://example.com/gitlab-org/gitlab-test/-/pipelines/31" }]],
    });
    await sent(notification);
  });

  it("a failed pipeline is high priority; without its URL the button is built from the project's", async () => {
    const failed = fixture("pipeline.json");
    failed.object_attributes.status = "failed";
    delete failed.object_attributes.url;
    const notification = await convert(failed);
    expect(notification.msg.split("\n")[0]).toBe("❌ Pipeline #31 failed on <b>master</b>");
    expect(notification.options.priority).toBe("high");
    expect(notification.options.buttons).toEqual([
      [{ text: "Pipeline", url: "http://192.168.64.1:3005/gitlab-org/gitlab-test/-/pipelines/31" }],
    ]);
  });

  it.each(["running", "pending", "created", "manual", "skipped"])(
    "a %s pipeline is skipped",
    async (status) => {
      const body = fixture("pipeline.json");
      body.object_attributes.status = status;
      expect(await conversion(body)).toEqual({
        kind: "skip",
        reason: `pipeline ${status}: only finished pipelines are shown.`,
      });
    },
  );

  it("an issue opened shows its number, title and description", async () => {
    const notification = await convert(fixture("issue.json"), "Issue Hook");
    expect(notification.msg).toBe(
      "🟢 Administrator opened issue <b>#23 New API: create/update/delete file</b>\nCreate new API for manipulations with repository",
    );
    expect(notification.options.buttons).toEqual([
      [{ text: "Issue", url: "http://example.com/diaspora/issues/23" }],
    ]);
    await sent(notification);
  });

  it("a comment says what it is on and shows its text", async () => {
    const notification = await convert(fixture("note-issue.json"), "Note Hook");
    expect(notification.msg).toBe("💬 Administrator commented on <b>issue #17 test</b>\nHello world");
    expect(notification.options.buttons).toEqual([
      [{ text: "Comment", url: "http://example.com/gitlab-org/gitlab-test/issues/17#note_1241" }],
    ]);
    await sent(notification);
  });

  it("any other event is a one-line summary with a button to the project", async () => {
    const notification = await convert(fixture("feature_flag.json"), "Feature Flag Hook");
    expect(notification.msg).toBe("feature flag in gitlabhq/gitlab-test by Administrator");
    expect(notification.options.buttons).toEqual([
      [{ text: "Open", url: "http://example.com/gitlabhq/gitlab-test" }],
    ]);
    await sent(notification);
  });

  it("without object_kind, the X-Gitlab-Event header names the event", async () => {
    const { object_kind: _, ...body } = fixture("merge_request.json");
    expect((await convert(body, "Merge Request Hook")).msg).toMatch(/^🟢 Administrator opened merge request/);
    const refusal = await conversion(body).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(PayloadError);
    expect((refusal as PayloadError).message).toBe(
      "object_kind is missing, and no X-Gitlab-Event header names the event",
    );
  });

  it("a push of 500 commits with megabyte messages stays within one message", async () => {
    const body = fixture("push.json");
    body.commits = Array.from({ length: 20 }, (_, i) => ({
      ...body.commits[0],
      title: `<${"x".repeat(1_000_000)}`,
      author: { name: `&${i}`.repeat(1000) },
    }));
    body.total_commits_count = 500;
    const notification = await convert(body);
    expect(notification.msg.endsWith("… and 490 more")).toBe(true);
    await sent(notification);
  });

  it("payload text is escaped and values of the wrong type are left out", async () => {
    const body = fixture("merge_request.json");
    body.object_attributes.title = "<b>x</b> & 🚀 مرحبا";
    body.object_attributes.iid = { not: "a number" };
    body.user = "nobody";
    const notification = await convert(body);
    expect(parseHtml(notification.msg).text.split("\n")[0]).toBe(
      "🟢 Someone opened merge request <b>x</b> & 🚀 مرحبا",
    );
    await sent(notification);
    await sent(await convert({ object_kind: "pipeline", object_attributes: { status: "failed" } }));
    const task = {
      object_kind: "work_item",
      object_attributes: { type: "<Task>", action: "<x>", title: "t" },
    };
    expect((await convert(task)).msg).toBe("Someone &lt;x&gt; &lt;task&gt; <b>t</b>");
    await sent(await convert({ object_kind: "issue", object_attributes: null, project: 5 }));
  });

  it("a body that is not an object is refused", async () => {
    const refusal = await conversion("push").catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(PayloadError);
  });

  it("is detected by its header, or by object_kind beside a project", () => {
    expect(gitlab.detect(inbound({}, "Push Hook"))).toBe(true);
    expect(gitlab.detect(inbound(fixture("pipeline.json")))).toBe(true);
    expect(gitlab.detect(inbound({ object_kind: "push" }))).toBe(false);
  });
});
