import { describe, expect, it } from "vitest";
import { parseHtml } from "../../../src/domain/telegram-format.ts";
import { gitlab } from "../../../src/integrations/gitlab.ts";
import { formatHarness, sent } from "./harness.ts";

const { fixture, inbound, conversion, convert, refusal } = formatHarness(gitlab, "x-gitlab-event");

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
    expect(await refusal(body)).toBe("object_kind is missing, and no X-Gitlab-Event header names the event");
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
    await refusal("push");
  });

  it("is detected by its header, or by object_kind beside a project", () => {
    expect(gitlab.detect(inbound({}, "Push Hook"))).toBe(true);
    expect(gitlab.detect(inbound(fixture("pipeline.json")))).toBe(true);
    expect(gitlab.detect(inbound({ object_kind: "push" }))).toBe(false);
  });
});
