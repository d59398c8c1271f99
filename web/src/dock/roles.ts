import type { Dock, DockAction } from "../api.ts";

/**
 * A Dock as a role that manages its credentials sees it (its owners and editors): its secrets and
 * the commands written with them are there. The sections that show or change them take this.
 */
export type SecretDock = Dock & {
  secret_key: string;
  signing_secret: string;
  examples: NonNullable<Dock["examples"]>;
};

/** The Dock with its secrets, or null when the signed-in person's role does not see them. */
export function secretDock(dock: Dock): SecretDock | null {
  return dock.secret_key !== null && dock.signing_secret !== null && dock.examples !== null
    ? (dock as SecretDock)
    : null;
}

/** Whether the signed-in person's role on the Dock allows `action` (the service says, in `may`). */
export function may(dock: Pick<Dock, "may">, action: DockAction): boolean {
  return dock.may.includes(action);
}
