import type { FastifyRequest } from "fastify";
import { can, type DockAction, type DockRole } from "../../domain/dock-roles.ts";
import { DOCK_ID_PATTERN } from "../../domain/ids.ts";
import type { CoOwnerRepository } from "../../store/co-owners.ts";
import type { DockRepository, DockWithSecret } from "../../store/docks.ts";
import { ApiError } from "../errors.ts";
import type { SignedIn } from "../session.ts";

/** A Dock a signed-in person may act on, with their role on it. */
export interface DockAccess {
  dock: DockWithSecret;
  role: DockRole;
}

/** Asks, for a request of the console, "may the signed-in person do `action` to Dock `id`?" */
export type DockAccessCheck = (
  request: FastifyRequest,
  id: string,
  action: DockAction,
) => Promise<DockAccess>;

/**
 * The one authorisation of every console route on a Dock (issue 37): the Dock and the signed-in
 * person's role on it (its own owner's, or a co-owner's), when that role allows the action.
 * Someone with no role on the Dock gets `404` exactly as for a Dock that does not exist; someone
 * whose role does not allow the action gets `403 insufficient_role`.
 */
export function dockAccess(docks: DockRepository, coOwners: CoOwnerRepository): DockAccessCheck {
  return async (request, id, action) => {
    const userId = (request.signedIn as SignedIn).user.id;
    const dock = DOCK_ID_PATTERN.test(id) ? await docks.get(id) : undefined;
    const role =
      dock === undefined
        ? null
        : dock.ownerId === userId
          ? "owner"
          : await coOwners.roleOnDock(dock.id, userId);
    if (dock === undefined || role === null) throw new ApiError("not_found", "No such Dock.");
    if (!can(role, action)) throw new ApiError("insufficient_role");
    return { dock, role };
  };
}
