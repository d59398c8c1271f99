import { useId } from "react";
import { api, type Dock, type RefusedAnswer, type RefusedRequestView } from "../api.ts";
import { useDockVersion, useLiveRead } from "../live.tsx";
import type { Guarded } from "./actions.ts";
import { ReadError } from "./ReadError.tsx";
import { When } from "./When.tsx";

/** What the request's credentials were found to be, in words. */
const CREDENTIALS: Record<RefusedRequestView["credentials"], string> = {
  right: "right",
  wrong: "wrong",
  unverified: "not checked",
};

/**
 * The Dock's recent refused requests — "why didn't it arrive?": each send door's 4xx that named
 * this Dock, with its door, format, error code and message, the latest first. Never a secret or a
 * payload. Follows the live stream.
 */
export function RefusedTab({ dock, guarded }: { dock: Dock; guarded: Guarded }) {
  const id = useId();
  const version = useDockVersion(dock.id, ["refused"]);
  const read = useLiveRead(
    async () => await guarded(() => api<RefusedAnswer>("GET", `/docks/${dock.id}/refused`)),
    `${dock.id} ${version}`,
  );
  const answer = read.value;

  return (
    <section aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Refused requests</h2>
      <p className="muted small">
        What was sent to this Dock and turned down, the latest first (its last {answer?.limit ?? 100}; repeats
        within a minute are counted on one line). A request whose credentials were <em>not checked</em> was
        refused before its key was: anyone who knows the Dock ID can cause one. Secrets and payloads are never
        kept.
      </p>
      <ReadError error={read.error} />
      {answer === null && !read.error && <p className="muted">Loading…</p>}
      {answer?.refused.length === 0 && (
        <p className="muted small">Nothing refused: every request sent to this Dock was accepted.</p>
      )}
      {answer && answer.refused.length > 0 && (
        <div className="table-scroll">
          <table className="owners" data-testid="refused">
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Door</th>
                <th scope="col">Format</th>
                <th scope="col">Error</th>
                <th scope="col">Credentials</th>
              </tr>
            </thead>
            <tbody>
              {answer.refused.map((row) => (
                <tr key={row.id}>
                  <td>
                    <When at={row.last_at} relative />
                    {row.count > 1 && <span className="muted small"> ×{row.count}</span>}
                  </td>
                  <td>
                    <code>{row.door}</code>
                  </td>
                  <td>{row.format ?? <span className="muted">—</span>}</td>
                  <td>
                    <code>
                      {row.status} {row.code}
                    </code>
                    <br />
                    <span className="small">{row.message}</span>
                  </td>
                  <td>{CREDENTIALS[row.credentials]}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
