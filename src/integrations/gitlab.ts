import { commitLines, count, excerpt, firstLine, htmlMessage, type PushCommit } from "./github.ts";
import type { Conversion, InboundFormat } from "./inbound.ts";
import {
  escapedClip,
  fieldsOf,
  header,
  isRecord,
  linkButton,
  PayloadError,
  TEXT_BUDGET,
  textOf,
} from "./inbound.ts";
import { jsonSample, SEND_CREDENTIAL_PLACEHOLDER } from "./settings.ts";

/*
 * GitLab's project and group webhooks: the event is the body's `object_kind` (the X-Gitlab-Event
 * header names it too). Pushes read like GitHub's (the commit list is github.ts's), merge requests
 * and issues as sentences, pipelines only once they have finished; comments and every other event
 * as a short summary with a button to the page.
 */

type Payload = Record<string, unknown>;

const NO_COMMIT = /^0{40}$/;
const SHA = /^[0-9a-f]{40}$/i;

/** The project's page plus a path: "https://gitlab.example.com/group/app" + "/-/tags/v1". */
function projectPage(body: Payload, path: string): string | undefined {
  const web = textOf(fieldsOf(body.project).web_url).replace(/\/+$/, "");
  return web === "" ? undefined : `${web}${path}`;
}

/** A ref's name as a URL path: each segment escaped, the slashes of `feature/x` kept. */
const refPath = (name: string) => name.split("/").map(encodeURIComponent).join("/");

/** Who did it: the user object's name (merge requests, issues), else push's user_name. */
function actor(body: Payload): string {
  const user = fieldsOf(body.user);
  return escapedClip(
    textOf(user.name) ||
      textOf(body.user_name) ||
      textOf(user.username) ||
      textOf(body.user_username) ||
      "Someone",
    60,
    true,
  );
}

function push(title: string, body: Payload): Conversion {
  const ref = textOf(body.ref);
  const isTag = body.object_kind === "tag_push" || ref.startsWith("refs/tags/");
  const name = ref.replace(/^refs\/(heads|tags)\//, "") || "?";
  const what = `${isTag ? "tag" : "branch"} <b>${escapedClip(name, 100, true)}</b>`;
  const before = textOf(body.before);
  const after = textOf(body.after);
  if (NO_COMMIT.test(after)) {
    return htmlMessage(
      title,
      [`🗑 ${actor(body)} deleted ${what}`],
      [linkButton("Project", projectPage(body, ""))],
    );
  }
  if (isTag) {
    return htmlMessage(
      title,
      [`🏷 ${actor(body)} pushed ${what}`],
      [linkButton("Tag", projectPage(body, `/-/tags/${encodeURIComponent(name)}`))],
    );
  }
  const commits: PushCommit[] = (Array.isArray(body.commits) ? body.commits : [])
    .filter(isRecord)
    .map((c) => ({
      id: textOf(c.id),
      title: textOf(c.title) || firstLine(textOf(c.message)),
      author: textOf(fieldsOf(c.author).name),
      url: c.url,
    }));
  // GitLab lists at most 20 commits; total_commits_count has them all.
  const total =
    typeof body.total_commits_count === "number" && body.total_commits_count > commits.length
      ? body.total_commits_count
      : commits.length;
  const created = NO_COMMIT.test(before);
  const first = created
    ? `🌱 ${actor(body)} created ${what}${total > 0 ? ` with ${count(total, "commit")}` : ""}`
    : `⬆️ ${actor(body)} pushed ${count(total, "commit")} to <b>${escapedClip(name, 100, true)}</b>`;
  const compare =
    !created && SHA.test(before) && SHA.test(after)
      ? projectPage(body, `/-/compare/${before}...${after}`)
      : projectPage(body, `/-/commits/${refPath(name)}`);
  return htmlMessage(
    title,
    [first, ...commitLines(commits, total, TEXT_BUDGET - first.length - 1)],
    [linkButton(created ? "Commits" : "Compare", compare)],
  );
}

/** GitLab's actions (open, close, merge, …) as the words of a sentence. */
const DONE: Record<string, string> = {
  open: "opened",
  close: "closed",
  reopen: "reopened",
  update: "updated",
  merge: "merged",
  approved: "approved",
  approval: "approved",
  unapproved: "unapproved",
  unapproval: "removed their approval of",
};

/**
 * Merge requests, issues and other work items (`kind`: "merge request", "issue", or a work item's
 * type from the payload, such as "task"): who did what to "!7 Title" or "#23 Title".
 */
function workItem(title: string, body: Payload, kind: string): Conversion {
  const item = fieldsOf(body.object_attributes);
  const action = textOf(item.action);
  const done =
    (Object.hasOwn(DONE, action) ? DONE[action] : undefined) ??
    (action.replaceAll("_", " ") || textOf(item.state) || "updated");
  const mark =
    action === "open" || action === "reopen"
      ? "🟢 "
      : action === "merge"
        ? "🟣 "
        : action === "close"
          ? kind === "merge request"
            ? "🔴 "
            : "🟣 "
          : "";
  const iid = textOf(item.iid);
  const heading = `${iid === "" ? "" : `${kind === "merge request" ? "!" : "#"}${iid} `}${textOf(item.title)}`;
  const noun = escapedClip(kind, 40, true);
  const lines = [
    `${mark}${actor(body)} ${escapedClip(done, 60, true)} ${noun} <b>${escapedClip(heading, 250, true)}</b>`,
  ];
  if (kind === "merge request") {
    const from = textOf(item.source_branch);
    const into = textOf(item.target_branch);
    if (from !== "" && into !== "") lines.push(escapedClip(`${from} → ${into}`, 200, true));
  }
  if (action === "open") lines.push(excerpt(item.description, 600));
  const label = kind === "merge request" ? "Merge request" : kind === "issue" ? "Issue" : "Open";
  return htmlMessage(title, lines, [linkButton(label, item.url)]);
}

/** How a finished pipeline reads, by its status; the others are not shown. */
const FINISHED: Record<string, { mark: string; words: string; high?: boolean }> = {
  success: { mark: "✅", words: "passed" },
  failed: { mark: "❌", words: "failed", high: true },
  canceled: { mark: "⚪", words: "was canceled" },
};

/** "1 min 3 s", "45 s". */
function duration(seconds: number): string {
  const whole = Math.round(seconds);
  const minutes = Math.floor(whole / 60);
  return minutes > 0 ? `${minutes} min ${whole % 60} s` : `${whole} s`;
}

function pipeline(title: string, body: Payload): Conversion {
  const run = fieldsOf(body.object_attributes);
  const status = textOf(run.status);
  const outcome = Object.hasOwn(FINISHED, status) ? FINISHED[status] : undefined;
  if (outcome === undefined)
    return { kind: "skip", reason: `pipeline ${status || "event"}: only finished pipelines are shown.` };
  const id = textOf(run.id);
  const ref = textOf(run.ref);
  const lines = [
    `${outcome.mark} Pipeline${id === "" ? "" : ` #${escapedClip(id, 20)}`} ${outcome.words}${
      ref === "" ? "" : ` on <b>${escapedClip(ref, 100, true)}</b>`
    }`,
  ];
  const commit = fieldsOf(body.commit);
  const commitTitle = textOf(commit.title) || firstLine(textOf(commit.message));
  const author = textOf(fieldsOf(commit.author).name);
  if (commitTitle !== "")
    lines.push(escapedClip(`${commitTitle}${author === "" ? "" : ` — ${author}`}`, 200, true));
  const failed = (Array.isArray(body.builds) ? body.builds : [])
    .filter(isRecord)
    .filter((job) => job.status === "failed" && job.allow_failure !== true)
    .map((job) => textOf(job.name))
    .filter((name) => name !== "");
  if (failed.length > 0) lines.push(`Failed: ${escapedClip(failed.join(", "), 300, true)}`);
  if (typeof run.duration === "number" && run.duration > 0) lines.push(`Took ${duration(run.duration)}`);
  const url =
    textOf(run.url) || (id === "" ? "" : (projectPage(body, `/-/pipelines/${encodeURIComponent(id)}`) ?? ""));
  return htmlMessage(title, lines, [linkButton("Pipeline", url)], outcome.high ? "high" : undefined);
}

/** What a comment is on: "merge request !1 Title", "issue #17 test", "commit cfe32cf". */
function noteTarget(body: Payload, type: string): string {
  switch (type) {
    case "MergeRequest": {
      const mr = fieldsOf(body.merge_request);
      return `merge request !${textOf(mr.iid)} ${textOf(mr.title)}`;
    }
    case "Issue": {
      const issue = fieldsOf(body.issue);
      return `issue #${textOf(issue.iid)} ${textOf(issue.title)}`;
    }
    case "Commit":
      return `commit ${textOf(fieldsOf(body.commit).id).slice(0, 7)}`;
    case "Snippet":
      return `snippet ${textOf(fieldsOf(body.snippet).title)}`;
    default:
      return type.toLowerCase() || "something";
  }
}

function note(title: string, body: Payload): Conversion {
  const comment = fieldsOf(body.object_attributes);
  const target = noteTarget(body, textOf(comment.noteable_type));
  return htmlMessage(
    title,
    [
      `💬 ${actor(body)} commented on <b>${escapedClip(target.trim(), 250, true)}</b>`,
      excerpt(comment.note, 800),
    ],
    [linkButton("Comment", comment.url)],
  );
}

/** Any other event: "release create in group/app by Ada", with a button to its page. */
function summary(title: string, kind: string, body: Payload): Conversion {
  const item = fieldsOf(body.object_attributes);
  const action = textOf(item.action) || textOf(body.action) || textOf(body.status) || textOf(body.event_name);
  const line = [kind.replaceAll("_", " "), action.replaceAll("_", " "), `in ${title}`]
    .filter((part) => part.trim() !== "")
    .join(" ");
  const user = fieldsOf(body.user);
  const by = textOf(user.name) || textOf(body.user_name);
  return htmlMessage(
    title,
    [escapedClip(by === "" ? line : `${line} by ${by}`, 400, true)],
    [linkButton("Open", textOf(item.url) || textOf(body.url) || projectPage(body, ""))],
  );
}

/** "Merge Request Hook" → "merge_request": the event when the body does not name it. */
function eventOfHeader(name: string | undefined): string {
  return (name ?? "")
    .trim()
    .toLowerCase()
    .replace(/ hook$/, "")
    .replace(/^confidential /, "")
    .replaceAll(" ", "_");
}

/** GitLab's webhooks: the event is the body's object_kind, or the X-Gitlab-Event header. */
export const gitlab: InboundFormat = {
  name: "gitlab",
  label: "GitLab",
  detect(inbound) {
    if ((header(inbound, "x-gitlab-event") ?? "").trim() !== "") return true;
    const { body } = inbound;
    return isRecord(body) && typeof body.object_kind === "string" && isRecord(body.project);
  },
  convert(inbound) {
    const { body } = inbound;
    if (!isRecord(body)) throw new PayloadError("the body must be a JSON object");
    const kind = textOf(body.object_kind) || eventOfHeader(header(inbound, "x-gitlab-event"));
    if (kind === "")
      throw new PayloadError("object_kind is missing, and no X-Gitlab-Event header names the event");
    const project = fieldsOf(body.project);
    const title =
      textOf(project.path_with_namespace) || textOf(project.name) || textOf(body.project_name) || "GitLab";
    switch (kind) {
      case "push":
      case "tag_push":
        return push(title, body);
      case "merge_request":
        return workItem(title, body, "merge request");
      case "issue":
        return workItem(title, body, "issue");
      case "work_item":
        return workItem(
          title,
          body,
          textOf(fieldsOf(body.object_attributes).type).toLowerCase() || "work item",
        );
      case "pipeline":
        return pipeline(title, body);
      case "note":
        return note(title, body);
      default:
        return summary(title, kind, body);
    }
  },
  detectedWithMsg: true,
  authentication: "token",
  settings: ({ base, dockId }) => ({
    tool: "GitLab",
    where: "Project → Settings → Webhooks → Add new webhook",
    text: [
      `URL: ${base}/webhook/gitlab/${dockId}`,
      `Secret token: ${SEND_CREDENTIAL_PLACEHOLDER}`,
      "Trigger: push, tag push, merge request, pipeline and issue events (any others are summarised)",
    ].join("\n"),
    usesHookUrl: false,
  }),
  // Trimmed from test/fixtures/integrations/gitlab/pipeline.json: its pipeline name, before_sha,
  // variables, source pipeline, merge request, commit, builds (an empty list here) and the user's and
  // project's other fields left out.
  sample: jsonSample(
    {
      object_kind: "pipeline",
      object_attributes: {
        id: 31,
        iid: 3,
        ref: "master",
        tag: false,
        sha: "bcbb5ec396a2c0f828686f14fac9b80b780504f2",
        source: "merge_request_event",
        status: "success",
        stages: ["build", "test", "deploy"],
        created_at: "2016-08-12 15:23:28 UTC",
        finished_at: "2016-08-12 15:26:29 UTC",
        duration: 63,
        url: "http://example.com/gitlab-org/gitlab-test/-/pipelines/31",
      },
      user: { name: "Administrator", username: "root" },
      project: {
        id: 1,
        name: "Gitlab Test",
        path_with_namespace: "gitlab-org/gitlab-test",
        web_url: "http://192.168.64.1:3005/gitlab-org/gitlab-test",
      },
      builds: [],
    },
    { "X-Gitlab-Event": "Pipeline Hook" },
  ),
};
