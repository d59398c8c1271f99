/**
 * Who decides who joins a private Dock (issue 37): approves or declines its join requests, and is
 * never refused the Dock by its ID (they may subscribe themselves, or a group they administer,
 * with it). Asked in one place — this file — by the bot and the console alike. Today that is the
 * Dock's owner; co-owners with the `approver` role join them here.
 */

/** What the answer depends on: the Dock as the store loaded it. */
export interface DecidingDock {
  ownerId: number;
}

/** Whether `userId` may decide the Dock's join requests (and join it without a link). */
export function mayDecide(dock: DecidingDock, userId: number): boolean {
  return dock.ownerId === userId;
}

/** Everyone `mayDecide` lets decide: each gets the Dock's join requests in the bot. */
export function deciders(dock: DecidingDock): number[] {
  return [dock.ownerId];
}
