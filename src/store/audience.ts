import type { Visibility } from "../domain/audience.ts";
import type { AuditSink } from "../domain/audit.ts";
import type { DockRepository } from "./docks.ts";

export interface AudienceOptions {
  docks: DockRepository;
  /** Where every action is recorded once done (store/audit.ts's DockAudit, once wired). */
  audit: AuditSink;
}

/**
 * What a Dock's owner does to its audience (issue 37) — who may subscribe, invite links, join
 * requests, removing and banning — as one set of actions, whichever face they come through (the
 * console, the bot's buttons, the CLI): each is done in the store, then recorded in the audit log.
 * `actor` is the Telegram user who acted; null for the operator's CLI.
 */
export class Audience {
  readonly #o: AudienceOptions;

  constructor(options: AudienceOptions) {
    this.#o = options;
  }

  /** Who may subscribe to the Dock; true when it changed. Nobody subscribed is dropped. */
  async setVisibility(dockId: string, visibility: Visibility, actor: number | null): Promise<boolean> {
    const from = await this.#o.docks.setVisibility(dockId, visibility);
    if (from === null) return false;
    await this.#o.audit.record({
      dockId,
      actor,
      action: "visibility_changed",
      detail: { from, to: visibility },
    });
    return true;
  }
}
