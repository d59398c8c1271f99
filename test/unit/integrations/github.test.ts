import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { gatherOptions, prepareContent, readOptions } from "../../../src/domain/message-options.ts";
import { renderNotification } from "../../../src/domain/render.ts";
import { entityProblems, parseHtml } from "../../../src/domain/telegram-format.ts";
import { github } from "../../../src/integrations/github.ts";
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
  JSON.parse(readFileSync(new URL(`../../fixtures/integrations/github/${name}`, import.meta.url), "utf8"));

const inbound = (event: string | undefined, body: unknown): Inbound => ({
  body,
  text: JSON.stringify(body),
  mediaType: "application/json",
  headers: event === undefined ? {} : { "x-github-event": event },
});

const conversion = async (event: string | undefined, body: unknown): Promise<Conversion> =>
  github.convert(inbound(event, body));

async function convert(event: string, body: unknown): Promise<Notification> {
  const result = await conversion(event, body);
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
    const notification = await convert("push", fixture("push-new-branch.json"));
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
    const notification = await convert("push", pushOf(3));
    expect(notification.msg).toBe(
      [
        "⬆️ Codertocat pushed 3 commits to <b>main</b>",
        '<a href="https://github.com/Codertocat/Hello-World/commit/0">0000000</a> Change 0 — Codertocat',
        '<a href="https://github.com/Codertocat/Hello-World/commit/1">0000001</a> Change 1 — Codertocat',
        '<a href="https://github.com/Codertocat/Hello-World/commit/2">0000002</a> Change 2 — Codertocat',
      ].join("\n"),
    );
    expect((await convert("push", { ...pushOf(1), forced: true })).msg).toMatch(
      /^⬆️ Codertocat force-pushed 1 commit to <b>main<\/b>\n/,
    );
  });

  it("a deleted tag says so, with a button to the repository", async () => {
    const notification = await convert("push", fixture("push-tag-deleted.json"));
    expect(notification.msg).toBe("🗑 Codertocat deleted tag <b>simple-tag</b>");
    expect(notification.options.buttons).toEqual([
      [{ text: "Repository", url: "https://github.com/Codertocat/Hello-World" }],
    ]);
    await sent(notification);
  });

  it("a push of 500 commits lists ten and counts the rest", async () => {
    const notification = await convert(
      "push",
      pushOf(500, (i) => `${"&<".repeat(200)} ${i}\n${"x".repeat(5000)}`),
    );
    expect(notification.msg.split("\n")).toHaveLength(12);
    expect(notification.msg.endsWith("\n… and 490 more")).toBe(true);
    await sent(notification);
  });

  it("a pull request opened shows its number, title, branches and description", async () => {
    const notification = await convert("pull_request", fixture("pull_request-opened.json"));
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
    expect((await convert("pull_request", closed)).msg.split("\n")[0]).toBe(
      "🔴 Codertocat closed pull request <b>#2 Update the README with new information.</b>",
    );
    closed.pull_request.merged = true;
    expect((await convert("pull_request", closed)).msg.split("\n")[0]).toBe(
      "🟣 Codertocat merged pull request <b>#2 Update the README with new information.</b>",
    );
    const review = { ...closed, action: "review_requested" };
    expect((await convert("pull_request", review)).msg.split("\n")[0]).toBe(
      "Codertocat requested a review on pull request <b>#2 Update the README with new information.</b>",
    );
    const ready = { ...closed, action: "ready_for_review" };
    expect((await convert("pull_request", ready)).msg.split("\n")[0]).toBe(
      "Codertocat marked pull request <b>#2 Update the README with new information.</b> as ready for review",
    );
    const inherited = { ...closed, action: "toString" };
    expect((await convert("pull_request", inherited)).msg.split("\n")[0]).toBe(
      "Codertocat toString pull request <b>#2 Update the README with new information.</b>",
    );
  });

  it("an issue opened shows its number, title and text", async () => {
    const notification = await convert("issues", fixture("issues-opened.json"));
    expect(notification.msg).toBe(
      [
        "🟢 Codertocat opened issue <b>#1 Spelling error in the README file</b>",
        "It looks like you accidently spelled 'commit' with two 't's.",
      ].join("\n"),
    );
    await sent(notification);
    const closed = { ...fixture("issues-opened.json"), action: "closed" };
    expect((await convert("issues", closed)).msg).toBe(
      "🟣 Codertocat closed issue <b>#1 Spelling error in the README file</b>",
    );
  });

  it("a release is shown once, when published; its created and released events are skipped", async () => {
    const notification = await convert("release", fixture("release-published.json"));
    expect(notification.msg).toBe("🏷 Codertocat published release <b>0.0.1</b>");
    expect(notification.options.buttons).toEqual([
      [{ text: "Release", url: "https://github.com/Codertocat/Hello-World/releases/tag/0.0.1" }],
    ]);
    const named = fixture("release-published.json");
    named.release.name = "Spring";
    named.release.body = "## What's new\n\n* <b>faster</b> & smaller";
    named.release.prerelease = true;
    expect((await convert("release", named)).msg).toBe(
      "🏷 Codertocat published release <b>Spring (0.0.1)</b> (pre-release)\n## What's new\n\n* &lt;b&gt;faster&lt;/b&gt; &amp; smaller",
    );
    expect(await conversion("release", fixture("release-created.json"))).toEqual({
      kind: "skip",
      reason: "release created: a release is shown once, when it is published.",
    });
  });

  it("a finished workflow run says how it ended, on which branch, for which commit", async () => {
    const notification = await convert("workflow_run", fixture("workflow_run-completed.json"));
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
    const notification = await convert("workflow_run", failed);
    expect(notification.msg.split("\n")[0]).toBe("❌ CI failed on <b>master</b>");
    expect(notification.options.priority).toBe("high");
    failed.workflow_run.conclusion = "skipped";
    expect((await convert("workflow_run", failed)).options.priority).toBe("low");
  });

  it("a workflow run that has only been requested, or is in progress, is skipped", async () => {
    expect(await conversion("workflow_run", fixture("workflow_run-requested.json"))).toEqual({
      kind: "skip",
      reason: "workflow run requested: only finished runs are shown.",
    });
    const running = { ...fixture("workflow_run-requested.json"), action: "in_progress" };
    expect((await conversion("workflow_run", running)).kind).toBe("skip");
  });

  it("a finished check suite says how it ended, with a button to the commit's checks", async () => {
    const notification = await convert("check_suite", fixture("check_suite-completed.json"));
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
    expect((await conversion("check_suite", requested)).kind).toBe("skip");
  });

  it("GitHub's ping is skipped: the hook works", async () => {
    expect(await conversion("ping", fixture("ping.json"))).toEqual({
      kind: "skip",
      reason: "GitHub's ping: the hook works.",
    });
  });

  it("any other event is a one-line summary with a button to the repository, never an error", async () => {
    const notification = await convert("star", fixture("star-created.json"));
    expect(notification.msg).toBe("star created in Codertocat/Hello-World by Codertocat");
    expect(notification.options).toEqual({
      format: "html",
      title: "Codertocat/Hello-World",
      buttons: [[{ text: "Repository", url: "https://github.com/Codertocat/Hello-World" }]],
    });
    const bare = await convert("security_advisory", { action: "published" });
    expect(bare.msg).toBe("security advisory published");
    expect(bare.options.title).toBe("GitHub");
    await sent(bare);
  });

  it("payload text is escaped: tags, ampersands, emoji and right-to-left text arrive as written", async () => {
    const body = fixture("pull_request-opened.json");
    body.pull_request.title = "<b>Fix</b> & ship 🚀 שלום";
    body.pull_request.body = '<a href="https://evil.example">click</a> &amp;';
    body.sender.login = "<i>mallory</i>";
    const notification = await convert("pull_request", body);
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
    const notification = await convert("issues", body);
    expect(notification.options.title?.length).toBeLessThanOrEqual(250);
    await sent(notification);
  });

  it("URLs Telegram refuses are left out: no button, and commit hashes without links", async () => {
    const body = pushOf(2);
    body.compare = "http://localhost:3000/compare/a...b";
    body.commits[0].url = "http://github/commit/0";
    const notification = await convert("push", body);
    expect(notification.options.buttons).toBeUndefined();
    expect(notification.msg.split("\n")[1]).toBe("0000000 Change 0 — Codertocat");
    await sent(notification);
  });

  it("fields of the wrong type or missing are left out, not an error; a push without its ref is no push", async () => {
    const notification = await convert("push", {
      ref: "refs/heads/main",
      commits: "x",
      pusher: null,
      repository: [],
    });
    expect(notification.msg).toBe("⬆️ Someone pushed 0 commits to <b>main</b>");
    const refusal = await conversion("push", { foo: 1 }).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(PayloadError);
    expect((refusal as PayloadError).message).toBe("a push names its ref (refs/heads/…)");
    expect(notification.options.title).toBe("GitHub");
    await sent(notification);
    await sent(await convert("pull_request", { pull_request: { number: "x", title: null } }));
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
      const refusal = await conversion(event, body).catch((error: unknown) => error);
      expect(refusal).toBeInstanceOf(PayloadError);
      expect((refusal as PayloadError).message).toBe(message);
    }
  });

  it("is detected by the X-GitHub-Event header alone", () => {
    expect(github.detect(inbound("push", { msg: "anything" }))).toBe(true);
    expect(github.detect(inbound(undefined, fixture("push-new-branch.json")))).toBe(false);
  });
});
