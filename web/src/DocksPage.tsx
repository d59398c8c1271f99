import { useCallback, useEffect, useRef, useState } from "react";
import { useAnnounce } from "./announce.tsx";
import { api, type Dock, type DockAnswer, type DockListAnswer, ServiceError } from "./api.ts";
import { type DockFieldValues, DockForm } from "./DockForm.tsx";
import { DockCard } from "./dock-card/DockCard.tsx";

const EMPTY: DockFieldValues = { name: "", link: "", description: "", callback_url: "" };

/** "Create a new Dock" and a card for each of the owner's Docks, newest first. */
export function DocksPage({ onSessionLost }: { onSessionLost: () => void }) {
  const [docks, setDocks] = useState<Dock[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [formKey, setFormKey] = useState(0);
  const [created, setCreated] = useState<string | null>(null);
  const announce = useAnnounce();

  /** Runs a call; a lost session sends the person back to sign-in instead of showing an error. */
  const guarded = useCallback(
    async <T,>(call: () => Promise<T>): Promise<T> => {
      try {
        return await call();
      } catch (e) {
        if (e instanceof ServiceError && e.code === "not_signed_in") onSessionLost();
        throw e;
      }
    },
    [onSessionLost],
  );

  useEffect(() => {
    guarded(() => api<DockListAnswer>("GET", "/docks")).then(
      (answer) => setDocks(answer.docks),
      (e: Error) => setError(e.message),
    );
  }, [guarded]);

  const create = async (values: DockFieldValues) => {
    const { dock } = await guarded(() => api<DockAnswer>("POST", "/docks", values));
    setDocks((current) => [dock, ...(current ?? [])]);
    setCreated(dock.id);
    setFormKey((k) => k + 1);
    announce(`Dock “${dock.name}” created.`);
  };

  const replace = (dock: Dock) =>
    setDocks((current) => current?.map((d) => (d.id === dock.id ? dock : d)) ?? null);
  const listHeading = useRef<HTMLHeadingElement>(null);
  const remove = (id: string, hadFocus: boolean) => {
    setDocks((current) => current?.filter((d) => d.id !== id) ?? null);
    // The focused card is gone: the list's heading takes the focus, not the page's body.
    if (hadFocus) listHeading.current?.focus();
  };

  return (
    <>
      <section className="panel" aria-labelledby="create-title">
        <h1 id="create-title">Create a new Dock</h1>
        <p className="muted">
          A Dock is the address your application sends notifications to. Everybody subscribed to it receives
          them from the bot.
        </p>
        <DockForm key={formKey} initial={EMPTY} submitLabel="Create" onSubmit={create} />
      </section>
      <section aria-labelledby="docks-title">
        <h2 id="docks-title" ref={listHeading} tabIndex={-1}>
          Your Docks
        </h2>
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        {docks === null && !error && <p className="muted">Loading…</p>}
        {docks?.length === 0 && <p className="muted">No Docks yet: create your first one above.</p>}
        {docks?.map((dock) => (
          <DockCard
            key={dock.id}
            dock={dock}
            focusOnMount={dock.id === created}
            guarded={guarded}
            onChanged={replace}
            onDeleted={remove}
          />
        ))}
      </section>
    </>
  );
}
