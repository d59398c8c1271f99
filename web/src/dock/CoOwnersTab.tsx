import { useId, useState } from "react";
import { useAnnounce } from "../announce.tsx";
import type { CoOwnerInviteAnswer, CoOwnersAnswer, CoOwnerView, Dock, DockRole } from "../api.ts";
import { useDockVersion, useLiveRead } from "../live.tsx";
import type { CardActions } from "./actions.ts";
import { ReadError } from "./ReadError.tsx";
import { may } from "./roles.ts";

/** The roles a co-owner may be given, and what each lets them do. */
export const ROLES: { role: DockRole; label: string; does: string }[] = [
  {
    role: "owner",
    label: "Owner",
    does: "everything, including deleting the Dock and managing its co-owners",
  },
  { role: "editor", label: "Editor", does: "settings, integrations, templates, credentials and sending" },
  { role: "approver", label: "Approver", does: "who receives it: the subscribers" },
  { role: "viewer", label: "Viewer", does: "the message history and activity" },
];

const LABEL = Object.fromEntries(ROLES.map((r) => [r.role, r.label])) as Record<DockRole, string>;

function personName(person: { id: number; first_name: string | null; username: string | null }): string {
  const name = [person.first_name, person.username ? `@${person.username}` : null].filter(Boolean).join(" ");
  return name || `Telegram user ${person.id}`;
}

const day = (at: number) => new Date(at).toLocaleDateString();

/**
 * Who shares the Dock, and with which role: its own owner, then the co-owners. Everyone on it sees
 * the team; its owners invite others through a single-use link into the bot (shown once, 7 days),
 * withdraw an invitation, change a role or remove someone, and anyone may leave. Read again
 * whenever the Dock's audit log moves (every change of the team is written there).
 */
export function CoOwnersTab({ dock, actions, selfId }: { dock: Dock; actions: CardActions; selfId: number }) {
  const id = useId();
  const announce = useAnnounce();
  const version = useDockVersion(dock.id, ["audit"]);
  const read = useLiveRead(() => actions.call<CoOwnersAnswer>("GET", "/co-owners"), `${dock.id} ${version}`);
  const team = read.value;
  const manages = may(dock, "manage_co_owners");
  const [role, setRole] = useState<DockRole>("viewer");
  const [fresh, setFresh] = useState<CoOwnerInviteAnswer | null>(null);

  const reread = async () => read.set(await actions.call<CoOwnersAnswer>("GET", "/co-owners"));

  const invite = (event: React.FormEvent) => {
    event.preventDefault();
    void actions.act(async () => {
      const made = await actions.call<CoOwnerInviteAnswer>("POST", "/co-owners/invites", { role });
      setFresh(made);
      await reread();
      announce(`Invitation link made for ${LABEL[role].toLowerCase()}: copy it and send it to one person.`);
    });
  };

  const withdraw = (inviteId: string) =>
    actions.act(async () => {
      await actions.call("DELETE", `/co-owners/invites/${encodeURIComponent(inviteId)}`);
      if (fresh?.invite.id === inviteId) setFresh(null);
      await reread();
      announce("Invitation withdrawn.");
    }, false);

  const changeRole = (member: CoOwnerView, to: DockRole) =>
    actions.act(async () => {
      await actions.call("PUT", `/co-owners/${member.id}/role`, { role: to });
      await reread();
      announce(`${personName(member)} is now ${LABEL[to].toLowerCase()}.`);
    }, false);

  const remove = (member: CoOwnerView) =>
    actions.act(
      async () => {
        const leaving = member.id === selfId;
        const question = leaving
          ? `Leave “${dock.name}”? You no longer see it; one of its owners can invite you again.`
          : `Remove ${personName(member)} from “${dock.name}”? They no longer see it.`;
        if (!window.confirm(question)) return;
        await actions.call("DELETE", `/co-owners/${member.id}`);
        announce(leaving ? `You left “${dock.name}”.` : `${personName(member)} removed.`);
        // Leaving, the Dock is no longer the person's: its page goes (the live stream says so too).
        if (!leaving) await reread();
      },
      !(member.id === selfId),
    );

  return (
    <section aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Co-owners</h2>
      <p className="muted small">
        Share this Dock with your team, each with a role.{" "}
        {ROLES.map((r) => `${r.label}: ${r.does}.`).join(" ")}
      </p>
      <ReadError error={read.error} />
      {manages && (
        <form className="credential-form" onSubmit={invite}>
          <label>
            Role for the new co-owner
            <select value={role} onChange={(e) => setRole(e.target.value as DockRole)}>
              {ROLES.map((r) => (
                <option key={r.role} value={r.role}>
                  {r.label}
                </option>
              ))}
            </select>
          </label>
          <button type="submit" className="primary">
            Invite a co-owner
          </button>
        </form>
      )}
      {fresh && (
        <div className="note" role="status">
          <p>
            <label htmlFor={`${id}-link`}>
              Invitation link as {LABEL[fresh.invite.role].toLowerCase()} (shown once; send it to one person,
              who opens it in Telegram and presses Yes; it works for 7 days):
            </label>
          </p>
          <input id={`${id}-link`} readOnly value={fresh.link} onFocus={(e) => e.currentTarget.select()} />
          <div className="actions">
            <button type="button" onClick={() => actions.copy(fresh.link, "Invitation link")}>
              Copy link
            </button>
          </div>
        </div>
      )}
      {team && team.invites.length > 0 && (
        <>
          <h3>Open invitations</h3>
          <ul className="subscribers">
            {team.invites.map((invite) => (
              <li key={invite.id}>
                <span>
                  As {LABEL[invite.role].toLowerCase()}, made {day(invite.created_at)}, works until{" "}
                  {day(invite.expires_at)}
                </span>
                {manages && (
                  <button type="button" className="secondary" onClick={() => withdraw(invite.id)}>
                    Withdraw<span className="offscreen"> the invitation made {day(invite.created_at)}</span>
                  </button>
                )}
              </li>
            ))}
          </ul>
        </>
      )}
      <h3>Team</h3>
      {!team && !read.error && <p className="muted">Loading…</p>}
      {team && (
        <ul className="subscribers" data-testid="co-owners">
          {team.co_owners.map((member) => (
            <li key={member.id}>
              <span>
                {personName(member)}
                {member.id === selfId && <span className="muted"> (you)</span>}
                {" · "}
                {member.owns_dock ? "Owner (owns the Dock)" : LABEL[member.role]}
              </span>
              {!member.owns_dock && (manages || member.id === selfId) && (
                <span className="actions">
                  {manages && (
                    <label>
                      <span className="offscreen">Role of {personName(member)}</span>
                      <select
                        value={member.role}
                        onChange={(e) => changeRole(member, e.target.value as DockRole)}
                      >
                        {ROLES.map((r) => (
                          <option key={r.role} value={r.role}>
                            {r.label}
                          </option>
                        ))}
                      </select>
                    </label>
                  )}
                  <button type="button" className="secondary" onClick={() => remove(member)}>
                    {member.id === selfId ? "Leave this Dock" : "Remove"}
                    {member.id !== selfId && <span className="offscreen"> {personName(member)}</span>}
                  </button>
                </span>
              )}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
