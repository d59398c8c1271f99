import { hash } from "node:crypto";
import type { DockCredentials } from "./credentials.ts";

/** How long a key found right is remembered: what another instance's change may take to be seen. */
export const VERIFIED_KEY_TTL_MS = 5000;
/** Bounded, however many Docks send: past it, the oldest entry goes first. */
const MAX_ENTRIES = 10_000;

/**
 * The Docks whose secret key or hook token this instance found right in the last few seconds, by a
 * hash of what was presented (the secret itself is not kept). A hint, never proof: a send door
 * that finds its secret here skips the lookup before reading the body, and has the secret checked
 * where the message is stored, in the batch's transaction, as /ping's key is
 * (store/accept-batch.ts) — so a rotated key or hook token, or a deleted Dock, is refused at once
 * on every instance. What the hint may hold stale for up to VERIFIED_KEY_TTL_MS, when another
 * instance changed it, is what decides how a body is read (the Dock's inbound format); this
 * instance's own changes forget the Dock at once (DockRepository).
 */
export class VerifiedKeys {
  readonly #entries = new Map<string, { dock: DockCredentials; until: number }>();
  readonly #now: () => number;
  #generation = 0;

  constructor(now: () => number = () => performance.now()) {
    this.#now = now;
  }

  /** The Dock, when this is its secret key and it was found right lately (its principal: none). */
  key(dockId: string, secretKey: string): DockCredentials | undefined {
    return this.#get(slotOf("key", `${dockId}\n${secretKey}`));
  }

  /** The Dock, when this is its hook token and it was found right lately (its principal: the hook). */
  hook(token: string): DockCredentials | undefined {
    return this.#get(slotOf("hook", token));
  }

  /**
   * Moves with every `forget`: a lookup reads it before it reads the row, and remembers what it
   * found only if it has not moved since — a row read before a change committed on this instance
   * is never remembered after it.
   */
  get generation(): number {
    return this.#generation;
  }

  /** Remembers a key found right by a lookup that began at `generation`. */
  rememberKey(secretKey: string, dock: DockCredentials, generation: number): void {
    if (dock.principal === undefined && generation === this.#generation)
      this.#set(slotOf("key", `${dock.id}\n${secretKey}`), dock);
  }

  /** Remembers a hook token found right by a lookup that began at `generation`. */
  rememberHook(token: string, dock: DockCredentials, generation: number): void {
    if (dock.principal?.kind === "hook" && generation === this.#generation)
      this.#set(slotOf("hook", token), dock);
  }

  /** Every secret remembered for the Dock (its key, hook token, settings or existence changed). */
  forget(dockId: string): void {
    this.#generation++;
    for (const [slot, entry] of this.#entries) if (entry.dock.id === dockId) this.#entries.delete(slot);
  }

  #get(slot: string): DockCredentials | undefined {
    const entry = this.#entries.get(slot);
    if (entry === undefined) return undefined;
    if (entry.until <= this.#now()) {
      this.#entries.delete(slot);
      return undefined;
    }
    return entry.dock;
  }

  #set(slot: string, dock: DockCredentials): void {
    this.#entries.delete(slot);
    if (this.#entries.size >= MAX_ENTRIES) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
    this.#entries.set(slot, { dock, until: this.#now() + VERIFIED_KEY_TTL_MS });
  }
}

function slotOf(kind: "key" | "hook", presented: string): string {
  return hash("sha256", `${kind}\n${presented}`, "base64");
}
