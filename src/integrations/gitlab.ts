import {
  commitLines,
  count,
  escapedClip,
  excerpt,
  firstLine,
  htmlMessage,
  type PushCommit,
} from "./github.ts";
import type { Conversion, InboundFormat } from "./inbound.ts";
import { header, isRecord, linkButton, PayloadError, TEXT_BUDGET } from "./inbound.ts";

/*
 * GitLab's project and group webhooks: the event is the body's `object_kind` (the X-Gitlab-Event
 * header names it too). Pushes read like GitHub's (the commit list is github.ts's), merge requests
 * and issues as sentences, pipelines only once they have finished; comments and every other event
 * as a short summary with a button to the page.
 */

/** A payload's scalar as text ("" for anything else), with what no message may hold taken out. */
function text(value: unknown): string {
  if (typeof value === "string") return value.toWellFormed().replaceAll("\u0000", "");
  return typeof value === "number" || typeof value === "boolean" ? String(value) : "";
}

/** A nested object, or an empty one, so that `field(x).name` never throws. */
function field(value: unknown): Record<string, unknown> {
  return isRecord(value) ? value : {};
}

type Payload = Record<string, unknown>;

const NO_COMMIT = /^0{40}$/;
const SHA = /^[0-9a-f]{40}$/i;

/** The project's page plus a path: "https://gitlab.example.com/group/app" + "/-/tags/v1". */
function projectPage(body: Payload, path: string): string | undefined {
  const web = text(field(body.project).web_url).replace(/\/+$/, "");
  return web === "" ? undefined : `${web}${path}`;
}

/** A ref's name as a URL path: each segment escaped, the slashes of `feature/x` kept. */
const refPath = (name: string) => name.split("/").map(encodeURIComponent).join("/");

/** Who did it: the user object's name (merge requests, issues), else push's user_name. */
function actor(body: Payload): string {
  const user = field(body.user);
  return escapedClip(
    text(user.name) || text(body.user_name) || text(user.username) || text(body.user_username) || "Someone",
    60,
    true,
  );
}

function push(title: string, body: Payload): Conversion {
  const ref = text(body.ref);
  const isTag = body.object_kind === "tag_push" || ref.startsWith("refs/tags/");
  const name = ref.replace(/^refs\/(heads|tags)\//, "") || "?";
  const what = `${isTag ? "tag" : "branch"} <b>${escapedClip(name, 100, true)}</b>`;
  const before = text(body.before);
  const after = text(body.after);
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
      id: text(c.id),
      title: text(c.title) || firstLine(text(c.message)),
      author: text(field(c.author).name),
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
  const item = field(body.object_attributes);
  const action = text(item.action);
  const done =
    (Object.hasOwn(DONE, action) ? DONE[action] : undefined) ??
    (action.replaceAll("_", " ") || text(item.state) || "updated");
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
  const iid = text(item.iid);
  const heading = `${iid === "" ? "" : `${kind === "merge request" ? "!" : "#"}${iid} `}${text(item.title)}`;
  const noun = escapedClip(kind, 40, true);
  const lines = [
    `${mark}${actor(body)} ${escapedClip(done, 60, true)} ${noun} <b>${escapedClip(heading, 250, true)}</b>`,
  ];
  if (kind === "merge request") {
    const from = text(item.source_branch);
    const into = text(item.target_branch);
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
  const run = field(body.object_attributes);
  const status = text(run.status);
  const outcome = Object.hasOwn(FINISHED, status) ? FINISHED[status] : undefined;
  if (outcome === undefined)
    return { kind: "skip", reason: `pipeline ${status || "event"}: only finished pipelines are shown.` };
  const id = text(run.id);
  const ref = text(run.ref);
  const lines = [
    `${outcome.mark} Pipeline${id === "" ? "" : ` #${escapedClip(id, 20)}`} ${outcome.words}${
      ref === "" ? "" : ` on <b>${escapedClip(ref, 100, true)}</b>`
    }`,
  ];
  const commit = field(body.commit);
  const commitTitle = text(commit.title) || firstLine(text(commit.message));
  const author = text(field(commit.author).name);
  if (commitTitle !== "")
    lines.push(escapedClip(`${commitTitle}${author === "" ? "" : ` — ${author}`}`, 200, true));
  const failed = (Array.isArray(body.builds) ? body.builds : [])
    .filter(isRecord)
    .filter((job) => job.status === "failed" && job.allow_failure !== true)
    .map((job) => text(job.name))
    .filter((name) => name !== "");
  if (failed.length > 0) lines.push(`Failed: ${escapedClip(failed.join(", "), 300, true)}`);
  if (typeof run.duration === "number" && run.duration > 0) lines.push(`Took ${duration(run.duration)}`);
  const url =
    text(run.url) || (id === "" ? "" : (projectPage(body, `/-/pipelines/${encodeURIComponent(id)}`) ?? ""));
  return htmlMessage(title, lines, [linkButton("Pipeline", url)], outcome.high ? "high" : undefined);
}

/** What a comment is on: "merge request !1 Title", "issue #17 test", "commit cfe32cf". */
function noteTarget(body: Payload, type: string): string {
  switch (type) {
    case "MergeRequest": {
      const mr = field(body.merge_request);
      return `merge request !${text(mr.iid)} ${text(mr.title)}`;
    }
    case "Issue": {
      const issue = field(body.issue);
      return `issue #${text(issue.iid)} ${text(issue.title)}`;
    }
    case "Commit":
      return `commit ${text(field(body.commit).id).slice(0, 7)}`;
    case "Snippet":
      return `snippet ${text(field(body.snippet).title)}`;
    default:
      return type.toLowerCase() || "something";
  }
}

function note(title: string, body: Payload): Conversion {
  const comment = field(body.object_attributes);
  const target = noteTarget(body, text(comment.noteable_type));
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
  const item = field(body.object_attributes);
  const action = text(item.action) || text(body.action) || text(body.status) || text(body.event_name);
  const line = [kind.replaceAll("_", " "), action.replaceAll("_", " "), `in ${title}`]
    .filter((part) => part.trim() !== "")
    .join(" ");
  const user = field(body.user);
  const by = text(user.name) || text(body.user_name);
  return htmlMessage(
    title,
    [escapedClip(by === "" ? line : `${line} by ${by}`, 400, true)],
    [linkButton("Open", text(item.url) || text(body.url) || projectPage(body, ""))],
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
    const kind = text(body.object_kind) || eventOfHeader(header(inbound, "x-gitlab-event"));
    if (kind === "")
      throw new PayloadError("object_kind is missing, and no X-Gitlab-Event header names the event");
    const project = field(body.project);
    const title =
      text(project.path_with_namespace) || text(project.name) || text(body.project_name) || "GitLab";
    switch (kind) {
      case "push":
      case "tag_push":
        return push(title, body);
      case "merge_request":
        return workItem(title, body, "merge request");
      case "issue":
        return workItem(title, body, "issue");
      case "work_item":
        return workItem(title, body, text(field(body.object_attributes).type).toLowerCase() || "work item");
      case "pipeline":
        return pipeline(title, body);
      case "note":
        return note(title, body);
      default:
        return summary(title, kind, body);
    }
  },
};
