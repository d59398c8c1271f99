import type { Priority } from "../domain/message-options.ts";
import { isButtonUrl } from "../domain/telegram-format.ts";
import {
  buttonRows,
  type Conversion,
  clip,
  escapedClip,
  escapeHtml,
  fieldsOf,
  header,
  type InboundFormat,
  isRecord,
  linkButton,
  PayloadError,
  TEXT_BUDGET,
  textOf,
} from "./inbound.ts";
import { GITHUB_SECRET_PLACEHOLDER, jsonSample } from "./settings.ts";

/*
 * GitHub's repository and organization webhooks: the event is named by the X-GitHub-Event header,
 * the body is the event's payload. Pushes, pull requests, issues, releases and finished CI runs
 * read as sentences with a button to the page; any other event is a one-line summary, never an
 * error (a hook subscribed to "everything" must not fail). No keys: GitHub events are news, not
 * states that change in place. The commit list is shared with GitLab's pushes (gitlab.ts).
 */

/** A link when Telegram takes the URL (and it is not absurdly long), else just the text. */
function linkOrText(html: string, url: unknown): string {
  const href = typeof url === "string" ? url.trim() : "";
  return href.length <= 500 && /^https?:/i.test(href) && isButtonUrl(href)
    ? `<a href="${escapeHtml(href)}">${html}</a>`
    : html;
}

/** A commit as a push lists it. */
export interface PushCommit {
  id: string;
  /** The message's first line. */
  title: string;
  author: string;
  url: unknown;
}

/** At most this many commits are listed; the rest are counted. */
const MAX_COMMITS = 10;

/**
 * The commits of a push, one line each (`abc1234 Fix the build — Ada`, the hash linking to the
 * commit), as many as fit in `room` units, then "… and N more" (N counting `total`, which may be
 * more than the payload lists).
 */
export function commitLines(commits: PushCommit[], total: number, room: number): string[] {
  const lines: string[] = [];
  let used = 0;
  const more = (n: number) => `… and ${n} more`;
  for (const commit of commits.slice(0, MAX_COMMITS)) {
    const sha = /^[0-9a-f]{7,64}$/i.test(commit.id) ? commit.id.slice(0, 7) : "";
    const hash = sha === "" ? "" : `${linkOrText(sha, commit.url)} `;
    const author = commit.author === "" ? "" : ` — ${escapedClip(commit.author, 60, true)}`;
    const line = `${hash}${escapedClip(commit.title, 120, true)}${author}`;
    // Room for this line and for the "… and N more" after it.
    if (used + line.length + 1 + 40 > room) break;
    lines.push(line);
    used += line.length + 1;
  }
  const left = Math.max(total, commits.length) - lines.length;
  if (left > 0) lines.push(more(left));
  return lines;
}

/** A commit message's first line. */
export function firstLine(message: string): string {
  return message.trimStart().split("\n", 1)[0] ?? "";
}

/** A body of Markdown text (an issue's, a release's notes) shown as plain text, clipped. */
export function excerpt(body: unknown, max: number): string {
  const source = textOf(body)
    .replace(/\r\n?/g, "\n")
    .replace(/\n{3,}/g, "\n\n");
  return source.trim() === "" ? "" : escapedClip(source, max);
}

/** "Codertocat", from a user object (login), a pusher (name) or a commit author (name). */
function who(value: unknown): string {
  const person = fieldsOf(value);
  return textOf(person.login) || textOf(person.name) || textOf(person.username);
}

/**
 * Sentences for the actions GitHub names in snake_case whose plain form reads badly; `{}` is what
 * was acted on ("pull request #2 Title"). The others read as "opened {}", "labeled {}".
 */
const SENTENCES: Record<string, string> = {
  synchronize: "pushed to {}",
  ready_for_review: "marked {} as ready for review",
  converted_to_draft: "converted {} to a draft",
  review_requested: "requested a review on {}",
  review_request_removed: "removed a review request from {}",
  auto_merge_enabled: "enabled auto-merge on {}",
  auto_merge_disabled: "disabled auto-merge on {}",
  enqueued: "added {} to the merge queue",
  dequeued: "removed {} from the merge queue",
};

/** "opened pull request <b>#2 Title</b>", "marked pull request <b>#2 Title</b> as ready for review". */
function acted(action: string, what: string): string {
  const sentence = Object.hasOwn(SENTENCES, action) ? SENTENCES[action] : undefined;
  return sentence === undefined
    ? `${escapedClip(action.replaceAll("_", " "), 60, true)} ${what}`
    : sentence.replace("{}", what);
}

/** A message in Telegram HTML, sanitized as every message must be (no lone surrogates, no NUL). */
export function htmlMessage(
  title: string,
  lines: string[],
  buttons: ReturnType<typeof linkButton>[],
  priority?: Priority,
): Conversion {
  const rows = buttonRows(buttons);
  const msg = lines.filter((line) => line !== "").join("\n");
  return {
    kind: "notify",
    notification: {
      msg: textOf(msg),
      options: {
        format: "html",
        title: textOf(clip(title, 250, true)),
        ...(priority === undefined ? {} : { priority }),
        ...(rows === undefined ? {} : { buttons: rows }),
      },
    },
  };
}

/** How a finished run or check suite reads, by its conclusion. */
const CONCLUSIONS: Record<string, { mark: string; words: string; priority?: Priority }> = {
  success: { mark: "✅", words: "succeeded" },
  failure: { mark: "❌", words: "failed", priority: "high" },
  timed_out: { mark: "⏱", words: "timed out", priority: "high" },
  startup_failure: { mark: "❌", words: "failed to start", priority: "high" },
  cancelled: { mark: "⚪", words: "was cancelled" },
  action_required: { mark: "⚠️", words: "needs action" },
  // Skipped runs (path filters, conditions) are kept quiet: they happen all the time.
  skipped: { mark: "⏭", words: "was skipped", priority: "low" },
  neutral: { mark: "⚪", words: "finished" },
  stale: { mark: "⚪", words: "went stale" },
};

/** "✅ CI succeeded on main", the commit's title, the run's details, and a button to it. */
function finished(
  repo: string,
  name: string,
  conclusion: unknown,
  branch: string,
  details: string[],
  button: ReturnType<typeof linkButton>,
): Conversion {
  const word = textOf(conclusion);
  const outcome = (Object.hasOwn(CONCLUSIONS, word) ? CONCLUSIONS[word] : undefined) ?? {
    mark: "⚪",
    words: "completed",
  };
  const on = branch === "" ? "" : ` on <b>${escapedClip(branch, 100, true)}</b>`;
  const first = `${outcome.mark} ${escapedClip(name, 100, true)} ${outcome.words}${on}`;
  return htmlMessage(repo, [first, ...details], [button], outcome.priority);
}

type Payload = Record<string, unknown>;

function push(repo: string, body: Payload): Conversion {
  if (typeof body.ref !== "string") throw new PayloadError("a push names its ref (refs/heads/…)");
  const ref = textOf(body.ref);
  const isTag = ref.startsWith("refs/tags/");
  const name = ref.replace(/^refs\/(heads|tags)\//, "");
  const what = `${isTag ? "tag" : "branch"} <b>${escapedClip(name || "?", 100, true)}</b>`;
  const pusher = escapedClip(who(body.pusher) || who(body.sender) || "Someone", 60, true);
  const commits: PushCommit[] = (Array.isArray(body.commits) ? body.commits : [])
    .filter(isRecord)
    .map((c) => ({
      id: textOf(c.id),
      title: firstLine(textOf(c.message)),
      author: who(c.author),
      url: c.url,
    }));
  const repository = fieldsOf(body.repository);
  if (body.deleted === true) {
    return htmlMessage(
      repo,
      [`🗑 ${pusher} deleted ${what}`],
      [linkButton("Repository", repository.html_url)],
    );
  }
  let first: string;
  if (isTag) first = `🏷 ${pusher} pushed ${what}`;
  else if (body.created === true)
    first = `🌱 ${pusher} created ${what}${commits.length > 0 ? ` with ${count(commits.length, "commit")}` : ""}`;
  else {
    const pushed = body.forced === true ? "force-pushed" : "pushed";
    first = `⬆️ ${pusher} ${pushed} ${count(commits.length, "commit")} to <b>${escapedClip(name || "?", 100, true)}</b>`;
  }
  const lines = isTag ? [] : commitLines(commits, commits.length, TEXT_BUDGET - first.length - 1);
  return htmlMessage(repo, [first, ...lines], [linkButton("Compare", body.compare)]);
}

/** "1 commit", "3 commits". */
export function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

/** Pull requests and issues: who did what to "#12 Title", and the text when it was opened. */
function discussion(repo: string, body: Payload, kind: "pull request" | "issue"): Conversion {
  const item = fieldsOf(kind === "pull request" ? body.pull_request : body.issue);
  const action = textOf(body.action);
  const merged = kind === "pull request" && action === "closed" && item.merged === true;
  const mark =
    action === "opened" || action === "reopened"
      ? "🟢 "
      : merged || (kind === "issue" && action === "closed")
        ? "🟣 "
        : action === "closed"
          ? "🔴 "
          : "";
  const actor = escapedClip(who(body.sender) || who(item.user) || "Someone", 60, true);
  const number = textOf(item.number);
  const heading = `${number === "" ? "" : `#${number} `}${textOf(item.title)}`;
  const what = `${kind} <b>${escapedClip(heading, 250, true)}</b>`;
  const lines = [`${mark}${actor} ${acted(merged ? "merged" : action || "updated", what)}`];
  if (kind === "pull request") {
    const from = textOf(fieldsOf(item.head).ref);
    const into = textOf(fieldsOf(item.base).ref);
    if (from !== "" && into !== "") lines.push(escapedClip(`${from} → ${into}`, 200, true));
  }
  if (action === "opened") lines.push(excerpt(item.body, 600));
  const label = kind === "pull request" ? "Pull request" : "Issue";
  return htmlMessage(repo, lines, [linkButton(label, item.html_url)]);
}

function release(repo: string, body: Payload): Conversion {
  const action = textOf(body.action);
  // GitHub sends created, published and released (or prereleased) for one release made public,
  // and created alone for a draft: published says it once.
  if (["created", "released", "prereleased"].includes(action))
    return { kind: "skip", reason: `release ${action}: a release is shown once, when it is published.` };
  const item = fieldsOf(body.release);
  const tag = textOf(item.tag_name);
  const name = textOf(item.name).trim();
  const called = name === "" || name === tag ? tag : `${name} (${tag})`;
  const actor = escapedClip(who(body.sender) || "Someone", 60, true);
  const what = `release <b>${escapedClip(called || "?", 250, true)}</b>`;
  const pre = item.prerelease === true ? " (pre-release)" : "";
  const lines = [`🏷 ${actor} ${acted(action || "updated", what)}${pre}`];
  if (action === "published") lines.push(excerpt(item.body, 1200));
  return htmlMessage(repo, lines, [linkButton("Release", item.html_url)]);
}

function workflowRun(repo: string, body: Payload): Conversion {
  const run = fieldsOf(body.workflow_run);
  const action = textOf(body.action);
  if (action !== "completed")
    return { kind: "skip", reason: `workflow run ${action}: only finished runs are shown.` };
  const name = textOf(run.name) || textOf(fieldsOf(body.workflow).name) || "Workflow";
  const commit = textOf(run.display_title) || firstLine(textOf(fieldsOf(run.head_commit).message));
  const number = textOf(run.run_number);
  const details = [
    number === "" ? "" : `Run #${escapedClip(number, 20)}`,
    escapedClip(textOf(run.event).replaceAll("_", " "), 60, true),
    escapedClip(who(run.triggering_actor) || who(run.actor) || who(body.sender), 60, true),
  ].filter((part) => part !== "");
  return finished(
    repo,
    name,
    run.conclusion,
    textOf(run.head_branch),
    [commit === "" ? "" : escapedClip(commit, 200, true), details.join(" · ")],
    linkButton("Run", run.html_url),
  );
}

function checkSuite(repo: string, body: Payload): Conversion {
  const suite = fieldsOf(body.check_suite);
  const action = textOf(body.action);
  if (action !== "completed")
    return { kind: "skip", reason: `check suite ${action}: only finished check suites are shown.` };
  const name = textOf(fieldsOf(suite.app).name) || "Checks";
  const sha = textOf(suite.head_sha);
  const repository = textOf(fieldsOf(body.repository).html_url);
  const checks =
    /^[0-9a-f]{40}$/i.test(sha) && repository !== "" ? `${repository}/commit/${sha}/checks` : undefined;
  const commit = firstLine(textOf(fieldsOf(suite.head_commit).message));
  return finished(
    repo,
    name,
    suite.conclusion,
    textOf(suite.head_branch),
    [commit === "" ? "" : escapedClip(commit, 200, true)],
    linkButton("Checks", checks),
  );
}

/** Any other event: "star created in octo/app by octocat", with a button to the repository. */
function summary(repo: string, event: string, body: Payload): Conversion {
  const action = textOf(body.action);
  const sender = who(body.sender);
  const line = [
    event.replaceAll("_", " "),
    action.replaceAll("_", " "),
    repo === "" ? "" : `in ${repo}`,
    sender === "" ? "" : `by ${sender}`,
  ]
    .filter((part) => part !== "")
    .join(" ");
  return htmlMessage(
    repo || "GitHub",
    [escapedClip(line, 400, true)],
    [linkButton("Repository", fieldsOf(body.repository).html_url)],
  );
}

/** GitHub's webhooks, the event named by the X-GitHub-Event header. */
export const github: InboundFormat = {
  name: "github",
  label: "GitHub",
  detect(inbound) {
    return (header(inbound, "x-github-event") ?? "").trim() !== "";
  },
  convert(inbound) {
    const event = (header(inbound, "x-github-event") ?? "").trim().toLowerCase();
    if (event === "")
      throw new PayloadError("the X-GitHub-Event header is missing (GitHub sends it with every event)");
    const { body } = inbound;
    if (!isRecord(body)) throw new PayloadError("the body must be a JSON object");
    if (event === "ping") return { kind: "skip", reason: "GitHub's ping: the hook works." };
    const repo = textOf(fieldsOf(body.repository).full_name) || textOf(fieldsOf(body.organization).login);
    const title = repo || "GitHub";
    switch (event) {
      case "push":
        return push(title, body);
      case "pull_request":
        return discussion(title, body, "pull request");
      case "issues":
        return discussion(title, body, "issue");
      case "release":
        return release(title, body);
      case "workflow_run":
        return workflowRun(title, body);
      case "check_suite":
        return checkSuite(title, body);
      default:
        return summary(repo, event, body);
    }
  },
  detectedWithMsg: true,
  authentication: "signature",
  settings: ({ base, dockId }) => ({
    tool: "GitHub",
    where: "Repository (or organisation) → Settings → Webhooks → Add webhook",
    text: [
      `Payload URL: ${base}/webhook/github/${dockId}`,
      "Content type: application/json",
      `Secret: ${GITHUB_SECRET_PLACEHOLDER}`,
      "Which events: the ones you want (push, pull requests, issues, releases, workflow runs…)",
    ].join("\n"),
    usesHookUrl: false,
  }),
  // Trimmed from test/fixtures/integrations/github/issues-opened.json.
  sample: jsonSample(
    {
      action: "opened",
      issue: {
        html_url: "https://github.com/Codertocat/Hello-World/issues/1",
        number: 1,
        title: "Spelling error in the README file",
        user: { login: "Codertocat" },
        state: "open",
        body: "It looks like you accidently spelled 'commit' with two 't's.",
      },
      repository: {
        full_name: "Codertocat/Hello-World",
        html_url: "https://github.com/Codertocat/Hello-World",
      },
      sender: { login: "Codertocat" },
    },
    { "X-GitHub-Event": "issues" },
  ),
};
