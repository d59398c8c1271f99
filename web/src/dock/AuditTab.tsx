import { useEffect, useId, useState } from "react";
import type { AuditAnswer, AuditEntryView, Dock } from "../api.ts";
import { useDockVersion } from "../live.tsx";
import type { CardActions } from "./actions.ts";
import { ReadError } from "./ReadError.tsx";
import { When } from "./When.tsx";

/** Entries per page. */
const PAGE = 50;

/** The names of the people and the titles of the groups the entries read so far name. */
type People = Pick<AuditAnswer, "people" | "groups">;

function named(id: unknown, { people, groups }: People): string {
  if (typeof id !== "number") return "someone";
  // A group's chat id is below zero: it is no person.
  if (id < 0) {
    const title = groups[String(id)];
    return title ? `the group “${title}”` : `the group ${id}`;
  }
  const person = people[String(id)];
  const name = [person?.first_name, person?.username ? `@${person.username}` : null]
    .filter(Boolean)
    .join(" ");
  return name || `Telegram user ${id}`;
}

/** Who can subscribe (a Dock's visibility), as the log says it. */
const VISIBILITY_NAMES: Record<string, string> = {
  open: "anyone with the Dock ID",
  invite: "invite links only",
  approval: "anyone may ask, each approved",
};

/** An invite link as an entry names it. */
const inviteName = (name: unknown) =>
  typeof name === "string" && name ? `the invite link “${name}”` : "an invite link";

/** Who did it: a person, the operator's command line, or the service itself. */
function who(entry: AuditEntryView): string {
  if (entry.actor === null) return entry.detail.via === "cli" ? "The operator (command line)" : "Dock Notify";
  const { id, first_name, username } = entry.actor;
  return [first_name, username ? `@${username}` : null].filter(Boolean).join(" ") || `Telegram user ${id}`;
}

const FIELD_NAMES: Record<string, string> = {
  name: "name",
  link: "link",
  description: "description",
  callback_url: "callback URL",
  inbound_format: "default format",
  template: "template",
};

/** What was done, in words (an action this console does not know is shown by its name). */
function what(entry: AuditEntryView, people: People): string {
  const d = entry.detail;
  switch (entry.action) {
    case "dock_created":
      // Who could subscribe from the start (entries written before it was recorded have none).
      return d.visibility === undefined || d.visibility === "open"
        ? "created the Dock"
        : `created the Dock (who can subscribe: ${VISIBILITY_NAMES[String(d.visibility)] ?? d.visibility})`;
    case "settings_changed":
      return `changed the ${String(d.fields ?? "")
        .split(",")
        .map((field) => FIELD_NAMES[field] ?? field)
        .join(", ")}`;
    case "owner_changed":
      return `gave the Dock to ${named(d.to, people)}`;
    case "sandbox_taken_over":
      return `took the Dock over from the sandbox's ${named(d.from, people)}; ${Number(d.subscriptions_dropped)} sandbox subscription${Number(d.subscriptions_dropped) === 1 ? " was" : "s were"} not carried over`;
    case "secret_key_rotated":
      return "rotated the secret key";
    case "signing_secret_rotated":
      return "rotated the signing secret";
    case "hook_token_rotated":
      return "made a new hook URL";
    case "hook_token_revoked":
      return "removed the hook URL";
    case "credential_created":
      return `made the ${d.scope} credential “${d.name}”`;
    case "credential_revoked":
      return `revoked the ${d.scope} credential “${d.name}”`;
    case "test_message_sent":
      return "sent a test message";
    case "message_edited":
      return `edited the text of message ${d.message_id} in every chat (revision ${d.revision})`;
    case "message_deleted":
      return `deleted message ${d.message_id} from every chat`;
    case "visibility_changed":
      return `changed who can subscribe: ${VISIBILITY_NAMES[String(d.to)] ?? d.to} (was ${VISIBILITY_NAMES[String(d.from)] ?? d.from})`;
    case "invite_created":
      return `made ${inviteName(d.name)}`;
    case "invite_revoked":
      return `revoked ${inviteName(d.name)}`;
    case "request_approved":
      return `approved the request of ${named(d.chat_id, people)}`;
    case "request_declined":
      return `declined the request of ${named(d.chat_id, people)}`;
    case "subscriber_removed":
      return `removed ${named(d.chat_id, people)}`;
    case "subscriber_banned":
      return `banned ${named(d.chat_id, people)}`;
    case "subscriber_unbanned":
      return `unbanned ${named(d.chat_id, people)}`;
    case "co_owner_invited":
      return `invited a co-owner as ${d.role}`;
    case "co_owner_invite_withdrawn":
      return "withdrew a co-owner invitation";
    case "co_owner_added":
      return `joined as ${d.role}${d.invited_by == null ? "" : `, invited by ${named(d.invited_by, people)}`}`;
    case "co_owner_removed":
      return entry.actor?.id === d.user
        ? `left (was ${d.role})`
        : `removed ${named(d.user, people)} (${d.role})`;
    case "co_owner_role_changed":
      return `made ${named(d.user, people)} ${d.to} (was ${d.from})`;
    default:
      return [
        entry.action.replaceAll("_", " "),
        ...Object.entries(d)
          .filter(([name]) => name !== "via")
          .map(([name, value]) => `${name}: ${value}`),
      ].join(" · ");
  }
}

interface Pages {
  entries: AuditEntryView[];
  /** The service's cursor for the next older page; null: none. */
  nextBefore: number | null;
}

/**
 * The pages after a refresh that read the newest `answer`: older entries read before stay below it
 * (an entry never changes), and their cursor goes on from them.
 */
function refreshed(old: Pages | null, answer: AuditAnswer): Pages {
  const lowest = answer.entries.at(-1)?.id;
  const rest = old && lowest !== undefined ? old.entries.filter((e) => e.id < lowest) : [];
  if (old === null || rest.length === 0 || answer.next_before === null)
    return { entries: answer.entries, nextBefore: answer.next_before };
  return { entries: [...answer.entries, ...rest], nextBefore: old.nextBefore };
}

/**
 * The Dock's audit log: who did what to it and when, newest first, a page at a time. The first page
 * follows the live stream; older pages read with "Older entries" stay below it.
 */
export function AuditTab({ dock, actions }: { dock: Dock; actions: CardActions }) {
  const id = useId();
  const version = useDockVersion(dock.id, ["audit"]);
  const [pages, setPages] = useState<Pages | null>(null);
  const [people, setPeople] = useState<People>({ people: {}, groups: {} });
  const [readError, setReadError] = useState<unknown>(null);

  // biome-ignore lint/correctness/useExhaustiveDependencies: `version` is the live stream's "read again".
  useEffect(() => {
    let current = true;
    actions.call<AuditAnswer>("GET", `/audit?limit=${PAGE}`).then(
      (answer) => {
        if (!current) return;
        setReadError(null);
        setPages((old) => refreshed(old, answer));
        setPeople((old) => ({
          people: { ...old.people, ...answer.people },
          groups: { ...old.groups, ...answer.groups },
        }));
      },
      (e: unknown) => current && setReadError(e),
    );
    return () => {
      current = false;
    };
  }, [dock.id, version]);

  const more = () =>
    actions.act(async () => {
      const before = pages?.nextBefore;
      if (before == null) return;
      const answer = await actions.call<AuditAnswer>("GET", `/audit?limit=${PAGE}&before=${before}`);
      setPages((old) => ({
        entries: [...(old?.entries ?? []), ...answer.entries.filter((e) => e.id < before)],
        nextBefore: answer.next_before,
      }));
      setPeople((old) => ({
        people: { ...old.people, ...answer.people },
        groups: { ...old.groups, ...answer.groups },
      }));
    });

  const entries = pages?.entries ?? null;
  const nextBefore = pages?.nextBefore ?? null;

  return (
    <section aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Audit log</h2>
      <p className="muted small">
        Who changed this Dock, its secrets, its subscribers, its team and its messages, and when. It never
        holds a secret, and is kept as long as the messages are (<code>RETENTION_DAYS</code>).
      </p>
      <ReadError error={readError} />
      {entries === null && !readError && <p className="muted">Loading…</p>}
      {entries?.length === 0 && <p className="muted small">Nothing yet.</p>}
      {entries && entries.length > 0 && (
        <div className="table-scroll">
          <table className="owners" data-testid="audit">
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Who</th>
                <th scope="col">What</th>
              </tr>
            </thead>
            <tbody>
              {entries.map((entry) => (
                <tr key={entry.id}>
                  <td>
                    <When at={entry.at} relative />
                  </td>
                  <td>{who(entry)}</td>
                  <td>{what(entry, people)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {nextBefore !== null && (
        <p>
          <button type="button" className="secondary" onClick={more}>
            Older entries
          </button>
        </p>
      )}
    </section>
  );
}
