import { useState } from "react";
import { useAnnounce } from "../announce.tsx";
import { api, type Dock, type OkAnswer, ServiceError } from "../api.ts";
import { copyText } from "../clipboard.ts";
import type { SecretDock } from "./roles.ts";

/** Runs a call; a lost session sends the person back to sign-in (App's `guarded`). */
export type Guarded = <T>(call: () => Promise<T>) => Promise<T>;

/** What the parts of a Dock card do through the card. */
export interface CardActions {
  /**
   * Runs an action, its error shown in the card. `onDock` (default): a 404 means the Dock itself
   * is gone; false where a 404 is about something else (a subscriber).
   */
  act(call: () => Promise<void>, onDock?: boolean): Promise<void>;
  /** Copies `text` and says whether that worked; `what` names it ("Dock ID"). */
  copy(text: string, what: string): Promise<void>;
  /** Calls the console API on this Dock: `path` is relative to `/docks/{id}`. */
  call<T extends OkAnswer = OkAnswer>(method: string, path?: string, body?: unknown): Promise<T>;
}

/**
 * What a section that changes the Dock's settings or secrets gets: the Dock (as its owners and
 * editors see it, secrets included), its actions, and where its new state goes.
 */
export interface DockEditorProps {
  dock: SecretDock;
  actions: CardActions;
  onChanged: (dock: Dock) => void;
}

/**
 * The Dock page's error line, and what its actions share: an error shows on the page, and a 404
 * for the Dock means it was deleted elsewhere (another tab, the CLI): `onVanished` leaves the page.
 */
export function useCardActions(dock: Dock, guarded: Guarded, onVanished: () => void) {
  const announce = useAnnounce();
  const [error, setError] = useState<string | null>(null);

  /** True, and the page left, when `e` says the Dock no longer exists. */
  const vanished = (e: unknown) => {
    // The service's own answer for this Dock (not a proxy's 404 page during a deploy).
    if (!(e instanceof ServiceError && e.status === 404 && e.code === "not_found")) return false;
    onVanished();
    return true;
  };

  const act: CardActions["act"] = async (call, onDock = true) => {
    setError(null);
    try {
      await call();
    } catch (e) {
      if (!(onDock && vanished(e))) setError((e as Error).message);
    }
  };

  const actions: CardActions = {
    act,
    copy: (text, what) =>
      act(async () => {
        announce((await copyText(text)) ? `${what} copied.` : `Could not copy the ${what.toLowerCase()}.`);
      }),
    call: <T extends OkAnswer = OkAnswer>(method: string, path = "", body?: unknown) =>
      guarded(() => api<T>(method, `/docks/${dock.id}${path}`, body)),
  };

  return { error, actions };
}
