import { hash } from "node:crypto";
import type { DockCredentials } from "./credentials.ts";

/** How long a key found right is remembered: what another instance's change may take to be seen. */
export const VERIFIED_KEY_TTL_MS = 5000;
/** Bounded, however many Docks send: past it, the oldest entry goes first. */
const MAX_ENTRIES = 10_000;

/**
 * The Docks whose secret key this instance found right in the last few seconds, by a hash of the
 * Dock ID and key (the key itself is not kept). A hint, never proof: a send door that finds its
 * key here skips the lookup before reading the body, and has the key checked where the message is
 * stored, in the batch's transaction, as /ping's is (store/accept-batch.ts) — so a rotated key or
 * a deleted Dock is refused at once on every instance. What the hint may hold stale for up to
 * VERIFIED_KEY_TTL_MS, when another instance changed it, is what decides how a body is read (the
 * Dock's inbound format); this instance's own changes forget the Dock at once (DockRepository).
 */
export class VerifiedKeys {
  readonly #entries = new Map<string, { dock: DockCredentials; until: number }>();
  readonly #now: () => number;

  constructor(now: () => number = () => performance.now()) {
    this.#now = now;
  }

  static #slot(dockId: string, secretKey: string): string {
    return hash("sha256", `${dockId}\n${secretKey}`, "base64");
  }

  /** The Dock, when this key opened it lately; its principal is the secret key's (none). */
  get(dockId: string, secretKey: string): DockCredentials | undefined {
    const slot = VerifiedKeys.#slot(dockId, secretKey);
    const entry = this.#entries.get(slot);
    if (entry === undefined) return undefined;
    if (entry.until <= this.#now()) {
      this.#entries.delete(slot);
      return undefined;
    }
    return entry.dock;
  }

  remember(secretKey: string, dock: DockCredentials): void {
    if (dock.principal !== undefined) return; // only the secret key itself
    const slot = VerifiedKeys.#slot(dock.id, secretKey);
    this.#entries.delete(slot);
    if (this.#entries.size >= MAX_ENTRIES) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
    this.#entries.set(slot, { dock, until: this.#now() + VERIFIED_KEY_TTL_MS });
  }

  /** Every key remembered for the Dock (its key, settings or existence changed). */
  forget(dockId: string): void {
    for (const [slot, entry] of this.#entries) if (entry.dock.id === dockId) this.#entries.delete(slot);
  }
}
