import { can, type DockAction, type DockRole } from "./dock-roles.ts";

/**
 * Who decides who joins a private Dock (issue 37): approves or declines its join requests, and is
 * never refused the Dock by its ID (they may subscribe themselves, or a group they administer,
 * with it). Asked in one place — this file — by the bot and the console alike: whoever's role on
 * the Dock may manage its subscribers (its owner, its co-owners who are owners or approvers:
 * domain/dock-roles.ts).
 */

/** What the answer depends on: the Dock as the store loaded it. */
export interface DecidingDock {
  id: string;
}

/** Who has which role on a Dock (store/co-owners.ts). */
export interface DockTeam {
  roleOnDock(dockId: string, userId: number): Promise<DockRole | null>;
  whoMay(dockId: string, action: DockAction): Promise<number[]>;
}

/** The action whose role decides: managing who receives the Dock. */
const DECIDING: DockAction = "manage_subscribers";

/** Whether `userId` may decide the Dock's join requests (and join it without a link). */
export async function mayDecide(team: DockTeam, dock: DecidingDock, userId: number): Promise<boolean> {
  return can(await team.roleOnDock(dock.id, userId), DECIDING);
}

/** Everyone `mayDecide` lets decide (the Dock's owner first): each gets its join requests in the bot. */
export function deciders(team: DockTeam, dock: DecidingDock): Promise<number[]> {
  return team.whoMay(dock.id, DECIDING);
}
