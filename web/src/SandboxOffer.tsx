import { useEffect, useId, useState } from "react";
import { useAnnounce } from "./announce.tsx";
import { api, type OkAnswer, type SandboxDocksAnswer, type SandboxDockView } from "./api.ts";
import type { Guarded } from "./dock/actions.ts";
import { count } from "./plural.ts";

/**
 * Going live (issue 38): on a real bot, an administrator is offered the Docks made while the
 * sandbox played Telegram (they belong to the sandbox's person, whom nobody is here). One button
 * takes them over, another leaves them for good. Their sandbox subscriptions are not carried over,
 * and the offer says so before anyone presses anything.
 */
export function SandboxOffer({ guarded }: { guarded: Guarded }) {
  const id = useId();
  const announce = useAnnounce();
  const [docks, setDocks] = useState<SandboxDockView[] | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [taken, setTaken] = useState<number | null>(null);

  useEffect(() => {
    guarded(() => api<SandboxDocksAnswer>("GET", "/sandbox-docks")).then(
      (answer) => setDocks(answer.docks),
      // Only an offer: the list below works without it.
      () => setDocks([]),
    );
  }, [guarded]);

  const act = async (call: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await call();
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const takeOver = () =>
    act(async () => {
      const answer = await guarded(() => api<SandboxDocksAnswer>("POST", "/sandbox-docks/take-over", {}));
      setDocks([]);
      setTaken(answer.docks.length);
      announce(`You took over ${count(answer.docks.length, "Dock")} from the sandbox.`);
    });
  const dismiss = () =>
    act(async () => {
      await guarded(() => api<OkAnswer>("POST", "/sandbox-docks/dismiss", {}));
      setDocks([]);
      announce("The sandbox's Docks stay where they are; you will not be asked again.");
    });

  if (taken !== null)
    return (
      <p className="panel sandbox-offer">
        {count(taken, "Dock")} from the sandbox {taken === 1 ? "is" : "are"} yours now, with no subscribers
        yet: share {taken === 1 ? "its" : "each one's"} subscribe link with the people who should receive it.
      </p>
    );
  if (docks === null || docks.length === 0) return null;
  return (
    <section className="panel sandbox-offer" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Docks from the sandbox</h2>
      <p>
        While you tried Dock Notify with its Telegram sandbox, {count(docks.length, "Dock")}{" "}
        {docks.length === 1 ? "was" : "were"} made for the sandbox's person, whom nobody is on this bot. Take{" "}
        {docks.length === 1 ? "it" : "them"} over to keep {docks.length === 1 ? "its" : "their"} names, secret
        keys, credentials, settings and history.
      </p>
      <p>
        <strong>Sandbox subscriptions are not carried over:</strong> the sandbox's chats do not exist on
        Telegram, so each Dock starts here with no subscribers (and no co-owners).
      </p>
      <ul>
        {docks.map((dock) => (
          <li key={dock.id}>
            {dock.name}{" "}
            <span className="muted small">
              · {count(dock.subscribers, "sandbox subscription")} · <code>{dock.id}</code>
            </span>
          </li>
        ))}
      </ul>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <div className="actions">
        <button type="button" className="primary" disabled={busy} onClick={takeOver}>
          {docks.length === 1 ? "Take it over" : `Take all ${docks.length} over`}
        </button>
        <button type="button" className="secondary" disabled={busy} onClick={dismiss}>
          Leave them, don't ask again
        </button>
      </div>
    </section>
  );
}
