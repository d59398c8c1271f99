import { useAnnounce } from "./announce.tsx";
import { api, type DockAnswer } from "./api.ts";
import { type DockFieldValues, DockForm } from "./DockForm.tsx";
import type { Guarded } from "./dock/actions.ts";
import { navigate } from "./navigation.ts";
import { dockHref } from "./route.ts";

const EMPTY: DockFieldValues = { name: "", link: "", description: "", callback_url: "", visibility: "open" };

/** "New Dock": the form; once created, the Dock's page, where subscribing and sending start. */
export function NewDockPage({ guarded }: { guarded: Guarded }) {
  const announce = useAnnounce();
  const create = async (values: DockFieldValues) => {
    const { dock } = await guarded(() => api<DockAnswer>("POST", "/docks", values));
    announce(`Dock “${dock.name}” created.`);
    navigate(dockHref(dock.id));
  };
  return (
    <section className="panel" aria-labelledby="create-title">
      <p className="breadcrumb small">
        <a href="#/">Docks</a> <span aria-hidden="true">›</span>
      </p>
      <h1 id="create-title">Create a new Dock</h1>
      <p className="muted">
        A Dock is the address your application sends notifications to. Everybody subscribed to it receives
        them from the bot.
      </p>
      <DockForm
        initial={EMPTY}
        submitLabel="Create"
        onSubmit={create}
        focusFirst
        onCancel={() => navigate("#/")}
      />
    </section>
  );
}
