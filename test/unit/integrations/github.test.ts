import { describe, expect, it } from "vitest";
import { parseHtml } from "../../../src/domain/telegram-format.ts";
import { github } from "../../../src/integrations/github.ts";
import { formatHarness, sent } from "./harness.ts";

const { fixture, inbound, conversion, convert, refusal } = formatHarness(github, "x-github-event");

/** A push to main of `n` commits, built on the fixture's new branch. */
function pushOf(n: number, message = (i: number) => `Change ${i}\n\nWhy it changed`) {
  const body = fixture("push-new-branch.json");
  body.created = false;
  body.before = "6113728f27ae82c7b1a177c8d03f9e96e0adf246";
  body.ref = "refs/heads/main";
  body.compare = "https://github.com/Codertocat/Hello-World/compare/6113728f27ae...0d1a26e67d8f";
  body.commits = Array.from({ length: n }, (_, i) => ({
    ...body.head_commit,
    id: `${String(i).padStart(7, "0")}${"a".repeat(33)}`,
    message: message(i),
    url: `https://github.com/Codertocat/Hello-World/commit/${i}`,
  }));
  return body;
}

describe("GitHub", () => {
  it("a new branch's push names the branch and lists its commit, linked", async () => {
    const notification = await convert(fixture("push-new-branch.json"), "push");
    expect(notification.msg).toBe(
      [
        "🌱 Codertocat created branch <b>master</b> with 1 commit",
        '<a href="https://github.com/Codertocat/Hello-World/commit/6113728f27ae82c7b1a177c8d03f9e96e0adf246">6113728</a> Initial commit — Codertocat',
      ].join("\n"),
    );
    expect(notification.options).toEqual({
      format: "html",
      title: "Codertocat/Hello-World",
      buttons: [
        [
          {
            text: "Compare",
            url: "https://github.com/Codertocat/Hello-World/commit/6113728f27ae82c7b1a177c8d03f9e96e0adf246",
          },
        ],
      ],
    });
    expect(notification.key).toBeUndefined();
    const part = await sent(notification);
    expect(part?.text).toBe(
      "Ops\nCodertocat/Hello-World\n🌱 Codertocat created branch master with 1 commit\n6113728 Initial commit — Codertocat",
    );
  });

  it("a push lists each commit's first line and author; a forced push says so", async () => {
    const notification = await convert(pushOf(3), "push");
    expect(notification.msg).toBe(
      [
        "⬆️ Codertocat pushed 3 commits to <b>main</b>",
        '<a href="https://github.com/Codertocat/Hello-World/commit/0">0000000</a> Change 0 — Codertocat',
        '<a href="https://github.com/Codertocat/Hello-World/commit/1">0000001</a> Change 1 — Codertocat',
        '<a href="https://github.com/Codertocat/Hello-World/commit/2">0000002</a> Change 2 — Codertocat',
      ].join("\n"),
    );
    expect((await convert({ ...pushOf(1), forced: true }, "push")).msg).toMatch(
      /^⬆️ Codertocat force-pushed 1 commit to <b>main<\/b>\n/,
    );
  });

  it("a deleted tag says so, with a button to the repository", async () => {
    const notification = await convert(fixture("push-tag-deleted.json"), "push");
    expect(notification.msg).toBe("🗑 Codertocat deleted tag <b>simple-tag</b>");
    expect(notification.options.buttons).toEqual([
      [{ text: "Repository", url: "https://github.com/Codertocat/Hello-World" }],
    ]);
    await sent(notification);
  });

  it("a push of 500 commits lists ten and counts the rest", async () => {
    const notification = await convert(
      pushOf(500, (i) => `${"&<".repeat(200)} ${i}\n${"x".repeat(5000)}`),
      "push",
    );
    expect(notification.msg.split("\n")).toHaveLength(12);
    expect(notification.msg.endsWith("\n… and 490 more")).toBe(true);
    await sent(notification);
  });

  it("a pull request opened shows its number, title, branches and description", async () => {
    const notification = await convert(fixture("pull_request-opened.json"), "pull_request");
    expect(notification.msg).toBe(
      [
        "🟢 Codertocat opened pull request <b>#2 Update the README with new information.</b>",
        "changes → master",
        "This is a pretty simple change that we need to pull into master.",
      ].join("\n"),
    );
    expect(notification.options.buttons).toEqual([
      [{ text: "Pull request", url: "https://github.com/Codertocat/Hello-World/pull/2" }],
    ]);
    await sent(notification);
  });

  it("a pull request closed unmerged is closed; closed and merged is merged", async () => {
    const closed = fixture("pull_request-closed.json");
    expect((await convert(closed, "pull_request")).msg.split("\n")[0]).toBe(
      "🔴 Codertocat closed pull request <b>#2 Update the README with new information.</b>",
    );
    closed.pull_request.merged = true;
    expect((await convert(closed, "pull_request")).msg.split("\n")[0]).toBe(
      "🟣 Codertocat merged pull request <b>#2 Update the README with new information.</b>",
    );
    const review = { ...closed, action: "review_requested" };
    expect((await convert(review, "pull_request")).msg.split("\n")[0]).toBe(
      "Codertocat requested a review on pull request <b>#2 Update the README with new information.</b>",
    );
    const ready = { ...closed, action: "ready_for_review" };
    expect((await convert(ready, "pull_request")).msg.split("\n")[0]).toBe(
      "Codertocat marked pull request <b>#2 Update the README with new information.</b> as ready for review",
    );
    const inherited = { ...closed, action: "toString" };
    expect((await convert(inherited, "pull_request")).msg.split("\n")[0]).toBe(
      "Codertocat toString pull request <b>#2 Update the README with new information.</b>",
    );
  });

  it("an issue opened shows its number, title and text", async () => {
    const notification = await convert(fixture("issues-opened.json"), "issues");
    expect(notification.msg).toBe(
      [
        "🟢 Codertocat opened issue <b>#1 Spelling error in the README file</b>",
        "It looks like you accidently spelled 'commit' with two 't's.",
      ].join("\n"),
    );
    await sent(notification);
    const closed = { ...fixture("issues-opened.json"), action: "closed" };
    expect((await convert(closed, "issues")).msg).toBe(
      "🟣 Codertocat closed issue <b>#1 Spelling error in the README file</b>",
    );
  });

  it("a release is shown once, when published; its created and released events are skipped", async () => {
    const notification = await convert(fixture("release-published.json"), "release");
    expect(notification.msg).toBe("🏷 Codertocat published release <b>0.0.1</b>");
    expect(notification.options.buttons).toEqual([
      [{ text: "Release", url: "https://github.com/Codertocat/Hello-World/releases/tag/0.0.1" }],
    ]);
    const named = fixture("release-published.json");
    named.release.name = "Spring";
    named.release.body = "## What's new\n\n* <b>faster</b> & smaller";
    named.release.prerelease = true;
    expect((await convert(named, "release")).msg).toBe(
      "🏷 Codertocat published release <b>Spring (0.0.1)</b> (pre-release)\n## What's new\n\n* &lt;b&gt;faster&lt;/b&gt; &amp; smaller",
    );
    expect(await conversion(fixture("release-created.json"), "release")).toEqual({
      kind: "skip",
      reason: "release created: a release is shown once, when it is published.",
    });
  });

  it("a finished workflow run says how it ended, on which branch, for which commit", async () => {
    const notification = await convert(fixture("workflow_run-completed.json"), "workflow_run");
    expect(notification.msg).toBe(
      [
        "✅ test succeeded on <b>master</b>",
        "ci(action): update actions/setup-node digest to 8c91899",
        "Run #163 · repository dispatch · Codertocat",
      ].join("\n"),
    );
    expect(notification.options).toEqual({
      format: "html",
      title: "octo-org/octo-repo",
      buttons: [[{ text: "Run", url: "https://github.com/octo-org/octo-repo/actions/runs/289782451" }]],
    });
    await sent(notification);
  });

  it("a failed workflow run is high priority; a skipped one is quiet", async () => {
    const failed = fixture("workflow_run-completed.json");
    failed.workflow_run.conclusion = "failure";
    failed.workflow_run.name = "CI";
    const notification = await convert(failed, "workflow_run");
    expect(notification.msg.split("\n")[0]).toBe("❌ CI failed on <b>master</b>");
    expect(notification.options.priority).toBe("high");
    failed.workflow_run.conclusion = "skipped";
    expect((await convert(failed, "workflow_run")).options.priority).toBe("low");
  });

  it("a workflow run that has only been requested, or is in progress, is skipped", async () => {
    expect(await conversion(fixture("workflow_run-requested.json"), "workflow_run")).toEqual({
      kind: "skip",
      reason: "workflow run requested: only finished runs are shown.",
    });
    const running = { ...fixture("workflow_run-requested.json"), action: "in_progress" };
    expect((await conversion(running, "workflow_run")).kind).toBe("skip");
  });

  it("a finished check suite says how it ended, with a button to the commit's checks", async () => {
    const notification = await convert(fixture("check_suite-completed.json"), "check_suite");
    expect(notification.msg).toBe("✅ octocoders-linter succeeded on <b>changes</b>\nUpdate README.md");
    expect(notification.options.buttons).toEqual([
      [
        {
          text: "Checks",
          url: "https://github.com/Codertocat/Hello-World/commit/ec26c3e57ca3a959ca5aad62de7213c562f8c821/checks",
        },
      ],
    ]);
    const requested = { ...fixture("check_suite-completed.json"), action: "requested" };
    expect((await conversion(requested, "check_suite")).kind).toBe("skip");
  });

  it("GitHub's ping is skipped: the hook works", async () => {
    expect(await conversion(fixture("ping.json"), "ping")).toEqual({
      kind: "skip",
      reason: "GitHub's ping: the hook works.",
    });
  });

  it("any other event is a one-line summary with a button to the repository, never an error", async () => {
    const notification = await convert(fixture("star-created.json"), "star");
    expect(notification.msg).toBe("star created in Codertocat/Hello-World by Codertocat");
    expect(notification.options).toEqual({
      format: "html",
      title: "Codertocat/Hello-World",
      buttons: [[{ text: "Repository", url: "https://github.com/Codertocat/Hello-World" }]],
    });
    const bare = await convert({ action: "published" }, "security_advisory");
    expect(bare.msg).toBe("security advisory published");
    expect(bare.options.title).toBe("GitHub");
    await sent(bare);
  });

  it("payload text is escaped: tags, ampersands, emoji and right-to-left text arrive as written", async () => {
    const body = fixture("pull_request-opened.json");
    body.pull_request.title = "<b>Fix</b> & ship 🚀 שלום";
    body.pull_request.body = '<a href="https://evil.example">click</a> &amp;';
    body.sender.login = "<i>mallory</i>";
    const notification = await convert(body, "pull_request");
    const parsed = parseHtml(notification.msg);
    expect(parsed.text).toBe(
      [
        "🟢 <i>mallory</i> opened pull request #2 <b>Fix</b> & ship 🚀 שלום",
        "changes → master",
        '<a href="https://evil.example">click</a> &amp;',
      ].join("\n"),
    );
    const heading = "#2 <b>Fix</b> & ship 🚀 שלום";
    expect(parsed.entities).toEqual([
      { type: "bold", offset: parsed.text.indexOf(heading), length: heading.length },
    ]);
    await sent(notification);
  });

  it("a megabyte of issue text is cut to fit", async () => {
    const body = fixture("issues-opened.json");
    body.issue.body = '"&'.repeat(500_000);
    body.issue.title = "t".repeat(1_000_000);
    body.repository.full_name = "r".repeat(1000);
    const notification = await convert(body, "issues");
    expect(notification.options.title?.length).toBeLessThanOrEqual(250);
    await sent(notification);
  });

  it("URLs Telegram refuses are left out: no button, and commit hashes without links", async () => {
    const body = pushOf(2);
    body.compare = "http://localhost:3000/compare/a...b";
    body.commits[0].url = "http://github/commit/0";
    const notification = await convert(body, "push");
    expect(notification.options.buttons).toBeUndefined();
    expect(notification.msg.split("\n")[1]).toBe("0000000 Change 0 — Codertocat");
    await sent(notification);
  });

  it("fields of the wrong type or missing are left out, not an error; a push without its ref is no push", async () => {
    const notification = await convert(
      {
        ref: "refs/heads/main",
        commits: "x",
        pusher: null,
        repository: [],
      },
      "push",
    );
    expect(notification.msg).toBe("⬆️ Someone pushed 0 commits to <b>main</b>");
    expect(await refusal({ foo: 1 }, "push")).toBe("a push names its ref (refs/heads/…)");
    expect(notification.options.title).toBe("GitHub");
    await sent(notification);
    await sent(await convert({ pull_request: { number: "x", title: null } }, "pull_request"));
  });

  it("a body without the event header, or that is not an object, is refused", async () => {
    for (const [event, body, message] of [
      [
        undefined,
        fixture("ping.json"),
        "the X-GitHub-Event header is missing (GitHub sends it with every event)",
      ],
      ["push", [1, 2], "the body must be a JSON object"],
    ] as const) {
      expect(await refusal(body, event)).toBe(message);
    }
  });

  it("is detected by the X-GitHub-Event header alone", () => {
    expect(github.detect(inbound({ msg: "anything" }, "push"))).toBe(true);
    expect(github.detect(inbound(fixture("push-new-branch.json")))).toBe(false);
  });
});
