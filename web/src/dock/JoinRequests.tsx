import { useId } from "react";
import { useAnnounce } from "../announce.tsx";
import type { Dock, JoinRequestAnswer, JoinRequestListAnswer, JoinRequestView } from "../api.ts";
import { useDockVersion, useLiveRead } from "../live.tsx";
import type { CardActions } from "./actions.ts";
import { chatLabel } from "./chat-name.ts";
import { inviteLabel } from "./InviteLinks.tsx";
import { ReadError } from "./ReadError.tsx";
import { When } from "./When.tsx";

/** Who asks, as the queue names them: the person, or the group with its size and the admin who asked. */
function asker(request: JoinRequestView): string {
  const chat = chatLabel(request);
  if (request.chat_type === "private") return chat;
  const members =
    request.member_count === null
      ? ""
      : `, ${request.member_count} member${request.member_count === 1 ? "" : "s"}`;
  return `${chat} (group${members})`;
}

/**
 * The Dock's join requests, live: who asks (a group with its member count and the admin who
 * asked), through which link, and until when it waits; Approve, Decline, or Decline and ban.
 * The same requests come to the owner in Telegram with Approve / Decline: whichever is pressed
 * first decides, and both show it.
 */
export function JoinRequests({ dock, actions }: { dock: Dock; actions: CardActions }) {
  const id = useId();
  const announce = useAnnounce();
  const version = useDockVersion(dock.id, ["audience"]);
  const read = useLiveRead(
    async () => (await actions.call<JoinRequestListAnswer>("GET", "/requests")).requests,
    `${dock.id} ${version}`,
  );
  const requests = read.value;
  // A Dock that takes no requests and has none waiting shows nothing here.
  if (dock.visibility !== "approval" && (requests === null || requests.length === 0) && !read.error)
    return null;

  const decide = (request: JoinRequestView, decision: "approve" | "decline", ban = false) =>
    actions.act(async () => {
      const who = asker(request);
      if (
        ban &&
        !window.confirm(`Decline ${who} and ban them? They cannot ask to join again until unbanned.`)
      )
        return;
      try {
        await actions.call<JoinRequestAnswer>(
          "POST",
          `/requests/${request.id}/${decision}`,
          decision === "decline" ? { ban } : undefined,
        );
      } finally {
        // Gone from the queue whatever happened: decided here, or already elsewhere (the error says).
        read.set((current) => current?.filter((r) => r.id !== request.id) ?? null);
      }
      announce(
        decision === "approve"
          ? `${who} approved: subscribed.`
          : `${who} declined${ban ? " and banned" : ""}.`,
      );
    }, false);

  return (
    <section aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>
        Join requests: <span data-testid="request-count">{requests?.length ?? dock.pending_requests}</span>
      </h2>
      <p className="muted small">
        Each request also comes to you in Telegram with <strong>Approve</strong> and <strong>Decline</strong>:
        the first decision counts, here or there. Unanswered requests expire.
      </p>
      <ReadError error={read.error} />
      {requests?.length === 0 && <p className="muted small">No requests waiting.</p>}
      {requests && requests.length > 0 && (
        <ul className="subscribers join-requests" data-testid="join-requests">
          {requests.map((request) => (
            <li key={request.id}>
              <span>
                <strong>{asker(request)}</strong>
                <span className="small muted">
                  {request.chat_type !== "private" &&
                    ` · asked by ${request.requested_by.name ?? "an admin"}`}
                  {request.invite && ` · through “${inviteLabel(request.invite)}”`} · asked{" "}
                  <When at={request.created_at} relative /> · expires <When at={request.expires_at} />
                </span>
              </span>
              <span className="actions">
                <button type="button" className="primary" onClick={() => decide(request, "approve")}>
                  Approve<span className="offscreen"> {asker(request)}</span>
                </button>
                <button type="button" className="secondary" onClick={() => decide(request, "decline")}>
                  Decline<span className="offscreen"> {asker(request)}</span>
                </button>
                <button type="button" className="danger" onClick={() => decide(request, "decline", true)}>
                  Decline and ban<span className="offscreen"> {asker(request)}</span>
                </button>
              </span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
