import { conflict } from "./errors.ts";

/** One Bot API update: its id plus exactly one payload field (`message`, `callback_query`, …). */
export interface Update {
  update_id: number;
  [kind: string]: unknown;
}

/** Update kinds a bot receives when it has not chosen (Telegram leaves these three out). */
const OPT_IN_ONLY = new Set(["chat_member", "message_reaction", "message_reaction_count"]);

/** Pending updates kept at most; older ones are dropped first (Telegram drops them after 24 h). */
const MAX_PENDING = 10_000;

/** The queue as the built-in sandbox's state file keeps it (persistence.ts). */
export interface UpdateQueueState {
  nextUpdateId: number;
  pending: Update[];
  /** The kinds the bot asked for; null = Telegram's default. */
  allowedUpdates: string[] | null;
}

interface Waiter {
  limit: number;
  finish: (updates: Update[]) => void;
  fail: (error: Error) => void;
}

/**
 * The bot's pending updates, read with getUpdates (long polling) or pushed to a webhook. An update
 * stays until the bot confirms it by asking with a higher `offset`, as on Telegram.
 */
export class UpdateQueue {
  #nextId = 1;
  #pending: Update[] = [];
  #allowed: Set<string> | null = null;
  #waiter: Waiter | null = null;
  #listeners: (() => void)[] = [];
  #changeListeners: (() => void)[] = [];

  /** Queues an update unless the bot's `allowed_updates` leave its kind out. */
  push(kind: string, payload: unknown): Update | undefined {
    const allowed = this.#allowed === null ? !OPT_IN_ONLY.has(kind) : this.#allowed.has(kind);
    if (!allowed) return undefined;
    const update: Update = { update_id: this.#nextId++, [kind]: payload };
    this.#pending.push(update);
    if (this.#pending.length > MAX_PENDING) this.#pending.splice(0, this.#pending.length - MAX_PENDING);
    const waiter = this.#waiter;
    if (waiter) {
      this.#waiter = null;
      waiter.finish(this.#pending.slice(0, waiter.limit));
    }
    for (const listener of this.#listeners) listener();
    this.#changed();
    return update;
  }

  /** Calls `listener` after every queued update (the webhook sender waits on it). */
  onPush(listener: () => void): void {
    this.#listeners.push(listener);
  }

  /** Calls `listener` after anything a restart should keep changed: queued, confirmed, dropped, kinds. */
  onChange(listener: () => void): void {
    this.#changeListeners.push(listener);
  }

  #changed(): void {
    for (const listener of this.#changeListeners) listener();
  }

  /** Sets the kinds to queue from now on; an empty list means Telegram's default. */
  setAllowed(kinds: string[] | undefined): void {
    if (kinds === undefined) return;
    const before = this.allowed;
    this.#allowed = kinds.length === 0 ? null : new Set(kinds);
    if (JSON.stringify(before) !== JSON.stringify(this.allowed)) this.#changed();
  }

  get allowed(): string[] | undefined {
    return this.#allowed === null ? undefined : [...this.#allowed];
  }

  get pendingCount(): number {
    return this.#pending.length;
  }

  peek(): Update | undefined {
    return this.#pending[0];
  }

  /**
   * Forgets updates the bot has seen: those below `offset`; a negative offset keeps only the last
   * `-offset` updates.
   */
  confirm(offset: number): void {
    const before = this.#pending.length;
    if (offset < 0) this.#pending = this.#pending.slice(offset);
    else if (offset > 0) this.#pending = this.#pending.filter((update) => update.update_id >= offset);
    if (this.#pending.length !== before) this.#changed();
  }

  drop(): void {
    if (this.#pending.length === 0) return;
    this.#pending = [];
    this.#changed();
  }

  /** The pending updates, the next update_id and the kinds asked for, for the state file. */
  snapshot(): UpdateQueueState {
    return { nextUpdateId: this.#nextId, pending: [...this.#pending], allowedUpdates: this.allowed ?? null };
  }

  /** Takes over a snapshot (at start, before any bot polls). */
  restore(state: UpdateQueueState): void {
    this.#pending = state.pending.slice(-MAX_PENDING);
    this.#nextId = Math.max(state.nextUpdateId, (this.#pending.at(-1)?.update_id ?? 0) + 1);
    this.#allowed = state.allowedUpdates === null ? null : new Set(state.allowedUpdates);
  }

  /**
   * getUpdates: answers at once when updates are pending, otherwise waits up to `timeoutSeconds`
   * for the first one. A second poll ends the first with Telegram's 409, so two bot instances on
   * one token notice each other. `cancel` ends the wait quietly (the client went away).
   */
  poll(offset: number, limit: number, timeoutSeconds: number, cancel: AbortSignal): Promise<Update[]> {
    this.confirm(offset);
    const ready = this.#pending.slice(0, limit);
    if (ready.length > 0 || timeoutSeconds === 0 || cancel.aborted) return Promise.resolve(ready);
    this.#waiter?.fail(
      conflict("terminated by other getUpdates request; make sure that only one bot instance is running"),
    );
    return new Promise((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        cancel.removeEventListener("abort", onCancel);
        if (this.#waiter === waiter) this.#waiter = null;
      };
      const waiter: Waiter = {
        limit,
        finish: (updates) => {
          done();
          resolve(updates);
        },
        fail: (error) => {
          done();
          reject(error);
        },
      };
      const onCancel = () => waiter.finish([]);
      const timer = setTimeout(() => waiter.finish([]), timeoutSeconds * 1000);
      cancel.addEventListener("abort", onCancel);
      this.#waiter = waiter;
    });
  }
}
