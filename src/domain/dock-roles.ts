/**
 * A person's role on one Dock (issue 37). The Dock's own owner (who created it, or was given it
 * with `docks update --owner`) is its `owner`; co-owners, invited by a link into the bot, hold
 * any of the four. Roles are not a ladder: an `editor` runs the Dock's plumbing, an `approver` its
 * audience, and neither does the other's work.
 */
export type DockRole = "owner" | "editor" | "approver" | "viewer";

/** The roles, from the most to the least a role may do: what a form offers, in its order. */
export const DOCK_ROLES: readonly DockRole[] = ["owner", "editor", "approver", "viewer"];

/**
 * What a person may do with a Dock, as the console API and the console ask it:
 * - `read`: the Dock's page, its activity, its message history, its co-owners and its audit log;
 * - `edit_settings`: its fields, its integrations and template;
 * - `manage_credentials`: see, rotate and revoke its secret key, signing secret, hook token and
 *   named credentials (whoever sees the secret key can send, edit and delete anyway);
 * - `send`: the test message;
 * - `manage_subscribers`: see and remove its subscribers (and, with issue 37's audience, decide
 *   join requests and hand out invite links);
 * - `manage_co_owners`: invite co-owners, change their roles, remove them;
 * - `delete_dock`.
 */
export type DockAction =
  | "read"
  | "edit_settings"
  | "manage_credentials"
  | "send"
  | "manage_subscribers"
  | "manage_co_owners"
  | "delete_dock";

/** Every action, in the order the console's `may` lists them. */
export const DOCK_ACTIONS: readonly DockAction[] = [
  "read",
  "edit_settings",
  "manage_credentials",
  "send",
  "manage_subscribers",
  "manage_co_owners",
  "delete_dock",
];

const ALLOWED: Record<DockRole, ReadonlySet<DockAction>> = {
  owner: new Set(DOCK_ACTIONS),
  editor: new Set(["read", "edit_settings", "manage_credentials", "send"]),
  approver: new Set(["read", "manage_subscribers"]),
  viewer: new Set(["read"]),
};

/** Whether a role allows an action; `null` (no role on the Dock) allows nothing. */
export function can(role: DockRole | null, action: DockAction): boolean {
  return role !== null && ALLOWED[role].has(action);
}

/** The actions a role allows, in DOCK_ACTIONS' order (the console shows and hides by them). */
export function allowedActions(role: DockRole): DockAction[] {
  return DOCK_ACTIONS.filter((action) => ALLOWED[role].has(action));
}

/** The roles that allow an action (who is asked to decide a join request: `manage_subscribers`). */
export function rolesThatMay(action: DockAction): DockRole[] {
  return DOCK_ROLES.filter((role) => ALLOWED[role].has(action));
}

/** Whether `value` names a role (a form's, an option's). */
export function isDockRole(value: unknown): value is DockRole {
  return typeof value === "string" && (DOCK_ROLES as readonly string[]).includes(value);
}
