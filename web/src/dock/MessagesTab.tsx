import { type FormEvent, useEffect, useId, useRef, useState } from "react";
import { api, type Dock, type MessageListAnswer, type MessageReport } from "../api.ts";
import { useDockVersion } from "../live.tsx";
import { dockHref } from "../route.ts";
import type { CardActions, Guarded } from "./actions.ts";
import {
  CopyLine,
  MessageBody,
  MessageChanges,
  MessageOptions,
  StateCounts,
  worthALine,
} from "./MessageParts.tsx";
import { ReadError } from "./ReadError.tsx";
import { When } from "./When.tsx";

/** Messages per page. */
const PAGE = 20;
/** The most a live refresh reads again at once (the service's own limit per page). */
const REFRESH_MAX = 100;

const STATE_FILTERS = [
  { value: "", label: "All messages" },
  { value: "failed", label: "Failed (some copy failed)" },
  { value: "pending", label: "Still being sent" },
  { value: "delivered", label: "Delivered to everyone" },
  { value: "no_subscribers", label: "Sent to nobody" },
] as const;

interface Pages {
  messages: MessageReport[];
  /** The service's cursor for the next older page; null: none. */
  nextBefore: string | null;
}

/**
 * The pages after a refresh that read the newest `answer`: the older messages read before (by
 * Older messages) stay below it, unless the refresh no longer reaches them (then the answer's
 * own cursor continues from it).
 */
function refreshed(old: Pages | null, answer: MessageListAnswer): Pages {
  const fresh = new Set(answer.messages.map((m) => m.id));
  const lowest = answer.messages.at(-1)?.id;
  const at = old && lowest !== undefined ? old.messages.findIndex((m) => m.id === lowest) : -1;
  const rest = old && at >= 0 ? old.messages.slice(at + 1).filter((m) => !fresh.has(m.id)) : [];
  if (rest.length === 0) return { messages: answer.messages, nextBefore: answer.next_before };
  return { messages: [...answer.messages, ...rest], nextBefore: old?.nextBefore ?? answer.next_before };
}

interface Query {
  q: string;
  state: string;
}

function listPath(dockId: string, query: Query, limit: number, before?: string | null): string {
  const params = new URLSearchParams({ limit: String(limit) });
  if (before !== undefined && before !== null) params.set("before", String(before));
  if (query.q) params.set("q", query.q);
  if (query.state) params.set("state", query.state);
  return `/docks/${dockId}/messages?${params}`;
}

/**
 * The Dock's message history, newest first: searched by text or key, filtered by how delivery went,
 * a page at a time. Each message opens its delivery detail. The first pages follow the live stream.
 */
export function MessagesTab({
  dock,
  guarded,
  actions,
}: {
  dock: Dock;
  guarded: Guarded;
  actions: CardActions;
}) {
  const id = useId();
  const version = useDockVersion(dock.id);
  const [draft, setDraft] = useState<Query>({ q: "", state: "" });
  const [query, setQuery] = useState<Query>({ q: "", state: "" });
  const [pages, setPages] = useState<Pages | null>(null);
  const [readError, setReadError] = useState<unknown>(null);
  const [loadingMore, setLoadingMore] = useState(false);
  const heading = useRef<HTMLHeadingElement>(null);
  // Goes up with every new search: an answer for an earlier one is dropped.
  const searchNumber = useRef(0);
  const loaded = useRef(0);
  loaded.current = pages?.messages.length ?? 0;
  const filtered = query.q !== "" || query.state !== "";
  // A search's results are read again when asked, not at every change of the Dock: a search may
  // read every message of the Dock that does not match, and a busy Dock changes every second.
  const [searchedAt, setSearchedAt] = useState(version);
  const readVersion = filtered ? searchedAt : version;
  const changedSinceSearch = filtered && searchedAt !== version;

  // The pages shown, read again whenever the Dock changes (new messages, delivery states): as
  // many as are shown, up to the service's page limit; older ones read before stay below.
  // biome-ignore lint/correctness/useExhaustiveDependencies: `readVersion` is the live stream's "read again".
  useEffect(() => {
    let current = true;
    const limit = Math.min(REFRESH_MAX, Math.max(PAGE, loaded.current));
    guarded(() => api<MessageListAnswer>("GET", listPath(dock.id, query, limit))).then(
      (answer) => {
        if (!current) return;
        setReadError(null);
        setPages((old) => refreshed(old, answer));
      },
      (e: unknown) => current && setReadError(e),
    );
    return () => {
      current = false;
    };
  }, [dock.id, query, readVersion, guarded]);

  const more = () =>
    actions.act(async () => {
      const mine = searchNumber.current;
      const before = pages?.nextBefore ?? null;
      setLoadingMore(true);
      try {
        const answer = await guarded(() =>
          api<MessageListAnswer>("GET", listPath(dock.id, query, PAGE, before)),
        );
        if (mine !== searchNumber.current) return;
        setPages((old) => {
          const shown = old?.messages ?? [];
          const seen = new Set(shown.map((m) => m.id));
          return {
            messages: [...shown, ...answer.messages.filter((m) => !seen.has(m.id))],
            nextBefore: answer.next_before,
          };
        });
        // The button goes with the last page: the focus goes to the section's heading, not the page's body.
        if (answer.next_before === null) heading.current?.focus();
      } finally {
        setLoadingMore(false);
      }
    });

  const search = (event: FormEvent) => {
    event.preventDefault();
    searchNumber.current += 1;
    setPages(null);
    setSearchedAt(version);
    setQuery({ q: draft.q.trim(), state: draft.state });
  };
  const messages = pages?.messages ?? null;
  const nextBefore = pages?.nextBefore ?? null;

  return (
    <section aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`} ref={heading} tabIndex={-1}>
        Messages
      </h2>
      <search>
        <form className="search" aria-label="Search messages" onSubmit={search}>
          <div className="field">
            <label htmlFor={`${id}-q`}>Text or key</label>
            <input
              id={`${id}-q`}
              type="search"
              value={draft.q}
              maxLength={200}
              onChange={(e) => setDraft({ ...draft, q: e.target.value })}
            />
          </div>
          <div className="field">
            <label htmlFor={`${id}-state`}>Delivery</label>
            <select
              id={`${id}-state`}
              value={draft.state}
              onChange={(e) => setDraft({ ...draft, state: e.target.value })}
            >
              {STATE_FILTERS.map((f) => (
                <option key={f.value} value={f.value}>
                  {f.label}
                </option>
              ))}
            </select>
          </div>
          <button type="submit">Search</button>
        </form>
      </search>
      <ReadError error={readError} />
      {changedSinceSearch && (
        <p className="small search-stale" role="status">
          Messages came or changed since this search.{" "}
          <button type="button" onClick={() => setSearchedAt(version)}>
            Search again
          </button>
        </p>
      )}
      {messages === null && !readError && <p className="muted">Loading…</p>}
      {messages?.length === 0 && (
        <p className="muted">
          {filtered ? "No message matches." : "No messages yet: send a test message from Send."}
        </p>
      )}
      {messages && messages.length > 0 && (
        <ol className="messages" aria-label={`Messages of ${dock.name}`}>
          {messages.map((m) => (
            <li key={m.id}>
              <MessageBody message={m} />
              <MessageOptions options={m.options} />
              <p className="small">
                <When at={m.created_at} /> <StateCounts message={m} />{" "}
                <span className="message-id">
                  <span className="muted">ID </span>
                  <code>{m.id}</code>
                </span>{" "}
                <a href={dockHref(dock.id, "messages", m.id)}>
                  Delivery details<span className="offscreen"> of message {m.id}</span>
                </a>
              </p>
              <MessageChanges message={m} />
              {m.deliveries.some(worthALine) && (
                <ul className="small copies" aria-label="Copies">
                  {m.deliveries.filter(worthALine).map((d) => (
                    <CopyLine key={d.chat_id} delivery={d} messageDeleted={m.deleted_at !== null} />
                  ))}
                </ul>
              )}
            </li>
          ))}
        </ol>
      )}
      {nextBefore !== null && messages && messages.length > 0 && (
        <button type="button" onClick={more} disabled={loadingMore}>
          Older messages
        </button>
      )}
    </section>
  );
}
