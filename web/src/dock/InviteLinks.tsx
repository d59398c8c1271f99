import { type FormEvent, useId, useState } from "react";
import { useAnnounce } from "../announce.tsx";
import type { Dock, InviteLinkAnswer, InviteLinkListAnswer, InviteLinkView } from "../api.ts";
import { useDockVersion, useLiveRead } from "../live.tsx";
import { onlyOnThisComputer } from "../local-address.ts";
import type { CardActions } from "./actions.ts";
import { ReadError } from "./ReadError.tsx";
import { When } from "./When.tsx";

/** How long a new link works: the form's choices, in milliseconds (null: for ever). */
const EXPIRIES: { label: string; ms: number | null }[] = [
  { label: "Never", ms: null },
  { label: "1 hour", ms: 60 * 60 * 1000 },
  { label: "1 day", ms: 24 * 60 * 60 * 1000 },
  { label: "7 days", ms: 7 * 24 * 60 * 60 * 1000 },
  { label: "30 days", ms: 30 * 24 * 60 * 60 * 1000 },
];

const STATE_TEXT: Record<InviteLinkView["state"], string> = {
  active: "works",
  expired: "expired",
  used_up: "used up",
  revoked: "revoked",
};

/** A link as a list names it: its name, or when it was made. */
export function inviteLabel(link: { name: string | null; created_at?: number }): string {
  if (link.name) return link.name;
  return link.created_at === undefined
    ? "an invite link"
    : `Link of ${new Date(link.created_at).toLocaleDateString()}`;
}

/** A link's QR code, with what it leads to when only this computer can open it. */
function QrCode({ link, svg }: { link: InviteLinkView; svg: string }) {
  return (
    <figure>
      <img
        className="qr"
        src={`data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`}
        alt={`QR code of the invite link “${inviteLabel(link)}”: scan it with a phone's camera to open Telegram`}
        width={200}
        height={200}
      />
      {onlyOnThisComputer(link.link) && (
        <figcaption className="small muted">
          This code leads to {new URL(link.link).host}, which only this computer reaches: start the service
          with <code>PUBLIC_URL</code> set to an address others can reach to share it.
        </figcaption>
      )}
    </figure>
  );
}

/**
 * The Dock's invite links, modelled on Telegram's: made with a name, a use limit, an expiry and
 * whether joining asks the owner; copied, shown as a QR code, listed with their uses, revoked
 * (who joined through one stays subscribed). Follows the live stream: a use shows at once.
 */
export function InviteLinks({ dock, actions }: { dock: Dock; actions: CardActions }) {
  const id = useId();
  const announce = useAnnounce();
  const version = useDockVersion(dock.id, ["subscribers", "audience"]);
  const read = useLiveRead(
    async () => (await actions.call<InviteLinkListAnswer>("GET", "/invites")).invites,
    `${dock.id} ${version}`,
  );
  const links = read.value;
  const [name, setName] = useState("");
  const [uses, setUses] = useState("");
  const [expiry, setExpiry] = useState(0);
  const [approval, setApproval] = useState(dock.visibility === "approval");
  /** The QR code shown, and for which link. */
  const [qr, setQr] = useState<{ id: string; svg: string } | null>(null);
  const [made, setMade] = useState<InviteLinkView | null>(null);

  const create = (event: FormEvent) => {
    event.preventDefault();
    void actions.act(async () => {
      const ms = EXPIRIES[expiry]?.ms ?? null;
      const answer = await actions.call<InviteLinkAnswer>("POST", "/invites", {
        name,
        usage_limit: uses.trim() === "" ? null : Number(uses),
        expires_at: ms === null ? null : Date.now() + ms,
        approval,
      });
      read.set((current) => [answer.invite, ...(current ?? []).filter((l) => l.id !== answer.invite.id)]);
      setMade(answer.invite);
      setQr({ id: answer.invite.id, svg: answer.qr_svg });
      setName("");
      setUses("");
      announce(`Invite link “${inviteLabel(answer.invite)}” made: copy it or show its QR code.`);
    }, true);
  };

  const toggleQr = (link: InviteLinkView) =>
    actions.act(async () => {
      if (qr?.id === link.id) {
        setQr(null);
        return;
      }
      const answer = await actions.call<InviteLinkAnswer>("GET", `/invites/${link.id}`);
      setQr({ id: link.id, svg: answer.qr_svg });
    }, false);

  const revoke = (link: InviteLinkView) =>
    actions.act(async () => {
      const sure = window.confirm(
        `Revoke “${inviteLabel(link)}”? Nobody can join through it any more; who already did stays subscribed.`,
      );
      if (!sure) return;
      await actions.call("DELETE", `/invites/${link.id}`);
      read.set(
        (current) =>
          current?.map((l) => (l.id === link.id ? { ...l, state: "revoked", revoked_at: Date.now() } : l)) ??
          null,
      );
      if (made?.id === link.id) setMade(null);
      announce(`Invite link “${inviteLabel(link)}” revoked.`);
    }, false);

  return (
    <section aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Invite links</h2>
      <p className="muted small">
        {dock.visibility === "invite"
          ? "This Dock is private: only an invite link lets someone subscribe (the Dock ID alone is refused)."
          : dock.visibility === "approval"
            ? "Anyone with the Dock ID or a link may ask to join; you approve each request."
            : "Anyone with the Dock ID may subscribe; a link also tells you who came through it."}{" "}
        Whoever opens a link in Telegram answers <strong>Yes</strong> to join, or to ask you if the link needs
        your approval.
      </p>
      <form className="invite-form" onSubmit={create} aria-labelledby={`${id}-new`}>
        <h3 id={`${id}-new`}>New invite link</h3>
        <label>
          Link name <span className="muted small">(optional)</span>
          <input value={name} maxLength={32} onChange={(e) => setName(e.target.value)} />
        </label>
        <label>
          Uses <span className="muted small">(blank: no limit)</span>
          <input
            type="number"
            inputMode="numeric"
            min={1}
            max={99999}
            value={uses}
            onChange={(e) => setUses(e.target.value)}
          />
        </label>
        <label>
          Expires after
          <select value={expiry} onChange={(e) => setExpiry(Number(e.target.value))}>
            {EXPIRIES.map((choice, i) => (
              <option key={choice.label} value={i}>
                {choice.label}
              </option>
            ))}
          </select>
        </label>
        <label className="check">
          <input
            type="checkbox"
            checked={approval || dock.visibility === "approval"}
            disabled={dock.visibility === "approval"}
            onChange={(e) => setApproval(e.target.checked)}
          />
          I approve each join
        </label>
        <button type="submit" className="secondary">
          Create invite link
        </button>
      </form>
      {made !== null && (
        <section className="new-key" aria-labelledby={`${id}-made`}>
          <p id={`${id}-made`}>
            <strong>The invite link “{inviteLabel(made)}”.</strong> Send it to whoever should{" "}
            {made.approval ? "ask to join" : "subscribe"}.
          </p>
          <code data-testid="new-invite-link">{made.link}</code>
          <button type="button" className="primary" onClick={() => actions.copy(made.link, "Invite link")}>
            Copy invite link
          </button>
        </section>
      )}
      <ReadError error={read.error} />
      {links !== null && links.length === 0 && <p className="muted small">No invite links yet.</p>}
      {links !== null && links.length > 0 && (
        <ul className="subscribers invite-links" data-testid="invite-links">
          {links.map((link) => (
            <li key={link.id}>
              <span>
                <strong>{inviteLabel(link)}</strong>
                <span className={`state ${link.state === "active" ? "state-sent" : "state-none"}`}>
                  {STATE_TEXT[link.state]}
                </span>
                <span className="small muted">
                  {" "}
                  · {link.uses}
                  {link.usage_limit === null ? "" : ` of ${link.usage_limit}`} joined
                  {link.approval && " · joins need your approval"}
                  {link.expires_at !== null && (
                    <>
                      {" "}
                      · {link.state === "expired" ? "expired" : "expires"} <When at={link.expires_at} />
                    </>
                  )}
                  {link.creator?.name && ` · made by ${link.creator.name}`}
                </span>
              </span>
              <span className="actions">
                {link.state === "active" && (
                  <>
                    <button type="button" onClick={() => actions.copy(link.link, "Invite link")}>
                      Copy<span className="offscreen"> {inviteLabel(link)}</span>
                    </button>
                    <button type="button" aria-expanded={qr?.id === link.id} onClick={() => toggleQr(link)}>
                      QR code<span className="offscreen"> of {inviteLabel(link)}</span>
                    </button>
                  </>
                )}
                {link.state !== "revoked" && (
                  <button type="button" className="secondary" onClick={() => revoke(link)}>
                    Revoke<span className="offscreen"> {inviteLabel(link)}</span>
                  </button>
                )}
              </span>
              {qr?.id === link.id && <QrCode link={link} svg={qr.svg} />}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
