import { useState } from "react";
import { useAnnounce } from "./announce.tsx";
import { api, type InviteAnswer, type OwnersAnswer, type OwnerView } from "./api.ts";
import { copyText } from "./clipboard.ts";
import type { Guarded } from "./dock/actions.ts";
import { useLiveRead, useOwnersVersion } from "./live.tsx";

function ownerName(owner: OwnerView): string {
  const name = [owner.first_name, owner.username ? `@${owner.username}` : null].filter(Boolean).join(" ");
  return name || `Telegram user ${owner.id}`;
}

const day = (at: number) => new Date(at).toLocaleDateString();

/**
 * For administrators: who may sign in and own Docks (and, on a closed instance, who is let in only
 * as a co-owner of Docks shared with them: their Docks' owners manage that), invitations into the bot (single-use, shown
 * once), and removing an owner (their sessions end at once; their Docks keep sending). Read again
 * whenever the live stream says who may sign in changed (another administrator, the CLI, an
 * invitation used in the bot).
 */
export function OwnersPage({
  guarded,
  selfId,
  anyone,
}: {
  guarded: Guarded;
  selfId: number;
  anyone: boolean;
}) {
  const announce = useAnnounce();
  const read = useLiveRead(() => guarded(() => api<OwnersAnswer>("GET", "/owners")), useOwnersVersion());
  const data = read.value;
  // An action's failure, shown until the next action; a failed read shows until a read succeeds.
  const [actionError, setError] = useState<string | null>(null);
  const error = actionError ?? (read.error === null ? null : (read.error as Error).message);
  const [fresh, setFresh] = useState<InviteAnswer | null>(null);
  const [busy, setBusy] = useState(false);

  const act = async (call: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await call();
      read.set(await guarded(() => api<OwnersAnswer>("GET", "/owners")));
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };

  const invite = () =>
    act(async () => {
      const made = await guarded(() => api<InviteAnswer>("POST", "/owners/invites"));
      setFresh(made);
      announce("Invitation link made: copy it and send it to the new owner.");
    });

  const withdraw = (id: string) =>
    act(async () => {
      await guarded(() => api("DELETE", `/owners/invites/${encodeURIComponent(id)}`));
      if (fresh?.invite.id === id) setFresh(null);
      announce("Invitation withdrawn.");
    });

  const remove = (owner: OwnerView) =>
    act(async () => {
      const who = ownerName(owner);
      const note =
        owner.docks > 0
          ? ` Their ${owner.docks === 1 ? "Dock keeps" : `${owner.docks} Docks keep`} sending (dock-notify docks transfer --all --from ${owner.id} --to <another> gives them to someone else).`
          : "";
      if (!window.confirm(`Remove ${who}? They are signed out at once and can no longer sign in.${note}`))
        return;
      await guarded(() => api("DELETE", `/owners/${owner.id}`));
      announce(`${who} removed.`);
    });

  const setRole = (owner: OwnerView, role: "admin" | "owner") =>
    act(async () => {
      await guarded(() => api("PUT", `/owners/${owner.id}/role`, { role }));
      announce(`${ownerName(owner)} is now ${role === "admin" ? "an administrator" : "an owner"}.`);
    });

  // The last administrator can be neither made an owner nor removed: no button that always fails.
  const admins = data?.owners.filter((owner) => owner.role === "admin").length ?? 0;
  const changeable = (owner: OwnerView) => !(owner.role === "admin" && admins <= 1);

  const copy = async (link: string) => {
    announce(
      (await copyText(link)) ? "Invitation link copied." : "Could not copy: select the link and copy it.",
    );
  };

  return (
    <section className="panel" aria-labelledby="owners-title">
      <h1 id="owners-title">Owners</h1>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {anyone ? (
        <p className="muted">
          Anyone with Telegram may sign in here and create Docks (<code>OWNERS=*</code>): there is nobody to
          invite or remove. Set <code>OWNERS</code> to administrators' Telegram IDs, or unset it with a real
          bot, to choose who may.
        </p>
      ) : (
        <>
          <p className="muted">
            Owners sign in here and create Docks. Invite someone with a link: they open it in Telegram and
            press <strong>Yes</strong>, then sign in. Each link works once, for 7 days.
          </p>
          <p>
            <button type="button" className="primary" onClick={invite} disabled={busy}>
              Invite an owner
            </button>
          </p>
        </>
      )}
      {fresh && (
        <div className="note" role="status">
          <p>
            <label htmlFor="invite-link">Invitation link (shown once; send it to one person):</label>
          </p>
          <input id="invite-link" readOnly value={fresh.link} onFocus={(e) => e.currentTarget.select()} />
          <div className="actions">
            <button type="button" onClick={() => copy(fresh.link)}>
              Copy link
            </button>
          </div>
        </div>
      )}
      {data && data.invites.length > 0 && (
        <>
          <h2>Open invitations</h2>
          <ul className="subscribers">
            {data.invites.map((invite) => (
              <li key={invite.id}>
                <span>
                  Made {day(invite.created_at)}, works until {day(invite.expires_at)}
                </span>
                <button
                  type="button"
                  className="secondary"
                  onClick={() => withdraw(invite.id)}
                  disabled={busy}
                >
                  Withdraw<span className="offscreen"> the invitation made {day(invite.created_at)}</span>
                </button>
              </li>
            ))}
          </ul>
        </>
      )}
      <h2>Who may sign in</h2>
      {!data && !error && <p className="muted">Loading…</p>}
      {data && (
        <div className="table-scroll">
          <table className="owners">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Telegram ID</th>
                <th scope="col">Role</th>
                <th scope="col">Docks</th>
                <th scope="col">
                  <span className="offscreen">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {data.owners.map((owner) => (
                <tr key={owner.id}>
                  <td>
                    {ownerName(owner)}
                    {owner.id === selfId && <span className="muted"> (you)</span>}
                  </td>
                  <td>{owner.id}</td>
                  <td>
                    {owner.role === "admin" ? "Administrator" : owner.role === "owner" ? "Owner" : "Co-owner"}
                  </td>
                  <td>
                    {owner.docks === 1 ? "1 Dock" : `${owner.docks} Docks`}
                    {owner.source === "co_owner" && " shared"}
                  </td>
                  <td>
                    {owner.source === "config" ? (
                      <span className="muted small">named by OWNERS</span>
                    ) : owner.source === "co_owner" ? (
                      <span className="muted small">let in for the Docks shared with them</span>
                    ) : !changeable(owner) ? (
                      <span className="muted small">the only administrator</span>
                    ) : anyone ? null : (
                      <span className="actions">
                        <button
                          type="button"
                          className="secondary"
                          onClick={() => setRole(owner, owner.role === "admin" ? "owner" : "admin")}
                          disabled={busy}
                        >
                          {owner.role === "admin" ? "Make owner" : "Make administrator"}
                          <span className="offscreen"> {ownerName(owner)}</span>
                        </button>
                        <button
                          type="button"
                          className="secondary"
                          onClick={() => remove(owner)}
                          disabled={busy}
                        >
                          Remove<span className="offscreen"> {ownerName(owner)}</span>
                        </button>
                      </span>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
