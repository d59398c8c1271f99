import type { FastifyBaseLogger } from "fastify";
import type { Leadership } from "../store/db.ts";
import { logDatabaseFailure } from "../store/faults.ts";

/** How often a standby instance checks whether the leader is gone (and a leader that it still leads). */
const CAMPAIGN_MS = 5000;
/**
 * Taking up the work failed (the database refused) where no other instance contends: the next try
 * after this long, doubling to the cap. Where others contend, the next try is the next campaign.
 */
const LEAD_RETRY_FIRST_MS = 500;
const LEAD_RETRY_MAX_MS = 30_000;

export interface CampaignOptions {
  /** The database's leadership (store/db.ts): the sole process on SQLite, an advisory lock on PostgreSQL. */
  leadership: Leadership;
  log: FastifyBaseLogger;
  /**
   * Takes up the work, now that this instance leads. A throw (the database refused) gives the
   * leadership back and tries again later: leading without working would stall every instance.
   */
  lead(): Promise<void>;
  /** Leadership was lost without being given back (the session failed): stop working at once. */
  lost(): void;
  /** What another instance announced (`Db.announce`), heard while leading. */
  announced(payload: string): void;
  /**
   * Whether other instances share the database, after each campaign (true when the database
   * could not tell), and at once when one joins while this one leads (Pacer.othersAlive).
   */
  others?(alive: boolean): void;
}

/**
 * Becoming and staying the one leader among the instances sharing a database: campaign at start
 * and every CAMPAIGN_MS while standing by, check the session while leading, and step down when
 * stopping. Which database it is does not matter here (see Leadership).
 */
export class Campaign {
  readonly #o: CampaignOptions;
  #running = false;
  #timer: NodeJS.Timeout | null = null;
  #retry: NodeJS.Timeout | null = null;
  /** Taking up the work failed this many times in a row. */
  #failures = 0;

  constructor(options: CampaignOptions) {
    this.#o = options;
  }

  get leading(): boolean {
    return this.#running && this.#o.leadership.isLeader;
  }

  async start(): Promise<void> {
    this.#running = true;
    await this.#campaign();
    // A retry already scheduled (after a failed take-over) is the next attempt.
    this.#timer = setInterval(() => {
      if (this.#retry === null) void this.#campaign();
    }, CAMPAIGN_MS);
    this.#timer.unref();
  }

  /** Stops campaigning; `release` then gives the leadership back, once the work has stopped. */
  async stop(): Promise<void> {
    this.#running = false;
    if (this.#timer) clearInterval(this.#timer);
    if (this.#retry) clearTimeout(this.#retry);
    this.#retry = null;
  }

  /** Gives the leadership back, and stops being one of the instances; call once the work has stopped. */
  async release(): Promise<void> {
    await this.#o.leadership.release();
    await this.#o.leadership.leave();
  }

  /**
   * Tells `others` whether other instances share the database (see CampaignOptions.others). The
   * leadership shares a look under way with a second caller (Leadership.others).
   */
  async #countOthers(): Promise<void> {
    const { others } = this.#o;
    if (others === undefined) return;
    const alive = await this.#o.leadership.others(() => others(true)).catch(() => undefined);
    if (this.#running) others(alive ?? true);
  }

  /**
   * Standing by: become the leader when the lock is free (at start, or when the leader is gone).
   * Leading: check that the lock's session still answers, or step down.
   */
  async #campaign(): Promise<void> {
    const { leadership } = this.#o;
    if (!this.#running) return;
    const lost = (error: Error) => {
      // It comes back by itself (the next attempt); an operator wants to know, not be paged.
      this.#o.log.warn({ reason: error.message }, "lost the dispatcher lock; standing by");
      this.#o.lost();
    };
    // Not awaited: a database slow to answer must not hold up the leader's check of its session
    // (a leader cut off must step down within the timeout) nor the campaign at start.
    void this.#countOthers();
    if (leadership.isLeader) {
      await leadership.heartbeat(lost);
      return;
    }
    let acquired: boolean;
    try {
      acquired = await leadership.tryAcquire((payload) => this.#o.announced(payload), lost);
    } catch (error) {
      logDatabaseFailure(this.#o.log, error, "could not contend for the dispatcher lock");
      return;
    }
    if (!acquired) return;
    if (!this.#running) {
      // Won while stopping: let the others have it at once.
      await leadership.release();
      return;
    }
    try {
      await this.#o.lead();
      this.#failures = 0;
    } catch (error) {
      this.#failures++;
      const delay = leadership.contended
        ? CAMPAIGN_MS
        : Math.min(LEAD_RETRY_MAX_MS, LEAD_RETRY_FIRST_MS * 2 ** (this.#failures - 1));
      logDatabaseFailure(this.#o.log, error, "could not take up dispatching; trying again", {
        retryInMs: delay,
      });
      // Leading without working would stall every instance: give way (another may take over).
      await leadership.release();
      if (!this.#running || leadership.contended) return;
      if (this.#retry) clearTimeout(this.#retry);
      this.#retry = setTimeout(() => {
        this.#retry = null;
        void this.#campaign();
      }, delay);
      this.#retry.unref();
    }
  }
}
