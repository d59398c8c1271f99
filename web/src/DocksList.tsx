import { useEffect, useId, useMemo, useRef, useState } from "react";
import { api, type DockListAnswer, type DockSummary, type MessageReport } from "./api.ts";
import type { Guarded } from "./dock/actions.ts";
import { When } from "./dock/When.tsx";
import { useListVersion, useLiveRead } from "./live.tsx";
import { count } from "./plural.ts";
import { dockHref } from "./route.ts";
import { SandboxOffer } from "./SandboxOffer.tsx";

/** A message's overall state, for a one-word summary of the latest one. */
function overallState(states: MessageReport["states"]): string {
  const n = (s: keyof MessageReport["states"]) => states[s] ?? 0;
  const copies = n("queued") + n("sending") + n("sent") + n("failed") + n("gone");
  // Accepted when nobody had subscribed: nothing is waiting (Activity counts it accepted, not sent).
  if (copies === 0) return "sent to nobody";
  if (n("queued") + n("sending") > 0) return "sending";
  if (n("failed") + n("gone") === 0) return "delivered";
  return n("sent") > 0 ? "partly failed" : "failed";
}

/** The state's class: how it is coloured. */
const stateClass = (state: string) =>
  state === "delivered"
    ? "state-sent"
    : state.includes("failed")
      ? "state-failed"
      : state === "sending"
        ? "state-queued"
        : "state-none";

/**
 * The person's Docks (their own, and those shared with them, marked with their role), one line each with what matters at a glance: subscribers, the latest message
 * and where it stands, and the week's numbers. Filtered as one types; each line opens the Dock.
 */
export function DocksList({
  guarded,
  mayCreate,
  admin,
}: {
  guarded: Guarded;
  mayCreate: boolean;
  /** An administrator: offered the sandbox's Docks once a real bot runs (SandboxOffer). */
  admin: boolean;
}) {
  const [filter, setFilter] = useState("");
  const version = useListVersion();
  const filterId = useId();
  const heading = useRef<HTMLHeadingElement>(null);
  const read = useLiveRead(
    async () => (await guarded(() => api<DockListAnswer>("GET", "/docks"))).docks,
    version,
  );
  const docks = read.value;
  const error = read.error && docks === null ? (read.error as Error).message : null;

  // A Dock was deleted on its page and the person sent here: the list's heading takes the focus.
  useEffect(() => {
    if (sessionStorage.getItem("dn-focus-list") === null) return;
    sessionStorage.removeItem("dn-focus-list");
    heading.current?.focus();
  }, []);

  const shown = useMemo(() => {
    const query = filter.trim();
    const words = query.toLowerCase().split(/\s+/).filter(Boolean);
    if (!docks || words.length === 0) return docks;
    return docks.filter((d) => {
      const haystack = `${d.name} ${d.description ?? ""} ${d.link ?? ""}`.toLowerCase();
      // An ID matches by any part of 4 characters or more, whatever their case (as typed from a
      // screen); fewer would match random IDs by chance.
      const inId = words.length === 1 && query.length >= 4 && d.id.toLowerCase().includes(words[0] as string);
      return words.every((w) => haystack.includes(w)) || inId;
    });
  }, [docks, filter]);

  const totals = useMemo(() => {
    const all = docks ?? [];
    return {
      subscribers: all.reduce((sum, d) => sum + d.stats.subscribers, 0),
      accepted: all.reduce((sum, d) => sum + d.stats.accepted_7d, 0),
      failed: all.reduce((sum, d) => sum + d.stats.failed_7d, 0),
    };
  }, [docks]);

  return (
    <section aria-labelledby="docks-title">
      <div className="page-head">
        <h1 id="docks-title" ref={heading} tabIndex={-1}>
          Your Docks
        </h1>
        {mayCreate && (
          <a className="button primary" href="#/new">
            New Dock
          </a>
        )}
      </div>
      {admin && <SandboxOffer guarded={guarded} />}
      {!mayCreate && (
        <p className="muted small">
          These Docks are shared with you. To create Docks of your own, ask this Dock Notify's administrator
          for an invitation.
        </p>
      )}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {docks === null && !error && <p className="muted">Loading…</p>}
      {docks?.length === 0 && mayCreate && (
        <div className="panel empty">
          <p>
            A Dock is the address your application sends notifications to; everybody subscribed to it receives
            them from the bot.
          </p>
          <a className="button primary" href="#/new">
            Create your first Dock
          </a>
        </div>
      )}
      {docks && docks.length > 0 && (
        <>
          <h2 className="offscreen">The last 7 days, all Docks</h2>
          <dl className="headline">
            <div>
              <dt>Docks</dt>
              <dd>{docks.length}</dd>
            </div>
            <div>
              <dt>Subscribers</dt>
              <dd>{totals.subscribers}</dd>
            </div>
            <div>
              <dt>Messages, 7 days</dt>
              <dd>{totals.accepted}</dd>
            </div>
            <div>
              <dt>Failed, 7 days</dt>
              <dd className={totals.failed > 0 ? "state-failed" : undefined}>{totals.failed}</dd>
            </div>
          </dl>
          <div className="field filter">
            <label htmlFor={filterId}>Filter Docks</label>
            <input
              id={filterId}
              type="search"
              value={filter}
              placeholder="Name, description, link or ID"
              onChange={(e) => setFilter(e.target.value)}
              aria-describedby={`${filterId}-count`}
            />
            <small id={`${filterId}-count`} className="muted" aria-live="polite">
              {shown?.length === docks.length
                ? count(docks.length, "Dock")
                : `${shown?.length ?? 0} of ${count(docks.length, "Dock")}`}
            </small>
          </div>
          <ul className="dock-list" aria-label="Docks">
            {shown?.map((dock) => (
              <DockLine key={dock.id} dock={dock} />
            ))}
          </ul>
          {shown?.length === 0 && <p className="muted">No Dock matches “{filter}”.</p>}
        </>
      )}
    </section>
  );
}

function DockLine({ dock }: { dock: DockSummary }) {
  const last = dock.stats.last_message;
  const state = last && overallState(last.states);
  return (
    <li className="dock-line">
      <a className="dock-line-name" href={dockHref(dock.id)}>
        {dock.name}
      </a>
      {dock.role !== "owner" && (
        <span className="dock-line-role small muted">shared with you as {dock.role}</span>
      )}
      {dock.description && <span className="dock-line-description muted small">{dock.description}</span>}
      <span className="dock-line-facts small">
        <span>
          {count(dock.stats.subscribers, "subscriber")}
          {dock.pending_requests > 0 && (
            <span className="state state-queued">
              {dock.pending_requests} join request{dock.pending_requests === 1 ? "" : "s"}
            </span>
          )}
        </span>
        <span>
          {dock.stats.accepted_7d} message{dock.stats.accepted_7d === 1 ? "" : "s"} in 7 days
          {dock.stats.failed_7d > 0 && (
            <span className="state state-failed">{dock.stats.failed_7d} failed</span>
          )}
        </span>
      </span>
      <span className="dock-line-last small">
        {last ? (
          <>
            <span className={`state ${stateClass(state as string)}`}>{state}</span>
            <When at={last.created_at} relative />
            <span className="dock-line-preview">
              <span className="offscreen">Last message: </span>
              {last.preview}
            </span>
          </>
        ) : (
          <span className="muted">No messages yet</span>
        )}
      </span>
    </li>
  );
}
