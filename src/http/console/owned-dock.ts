import type { FastifyRequest } from "fastify";
import { DOCK_ID_PATTERN } from "../../domain/ids.ts";
import type { DockRepository, DockWithSecret } from "../../store/docks.ts";
import { ApiError } from "../errors.ts";
import type { SignedIn } from "../session.ts";

/**
 * The check every route on a Dock starts with, in one place: the signed-in person's Dock, or
 * `404` — the same answer for a Dock that is someone else's as for one that does not exist.
 */
export function ownedDocks(docks: DockRepository) {
  return async (request: FastifyRequest, id: string): Promise<DockWithSecret> => {
    const dock = DOCK_ID_PATTERN.test(id) ? await docks.get(id) : undefined;
    if (!dock || dock.ownerId !== (request.signedIn as SignedIn).user.id)
      throw new ApiError("not_found", "No such Dock.");
    return dock;
  };
}
