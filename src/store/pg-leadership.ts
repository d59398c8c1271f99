import pg from "pg";

/** The NOTIFY channel on which every instance announces accepted messages to the leader. */
export const ACCEPTED_CHANNEL = "dock_notify_accepted";

/**
 * One active dispatcher among several instances sharing a PostgreSQL database. Telegram's limits
 * are per bot, so exactly one paced sender is the right shape; the others stand by. Leadership is a
 * session-level advisory lock held on a dedicated connection: if the leader's process dies, its
 * connection closes and the lock is free at once — no home-made consensus. The same connection
 * LISTENs for new messages accepted by any instance, so the leader wakes without polling.
 */
export class PgLeadership {
  readonly #url: string;
  readonly #key: string;
  readonly #channel: string;
  #client: pg.Client | null = null;
  #leader = false;

  constructor(url: string, name: string) {
    this.#url = url;
    this.#key = `dock-notify:${name}`;
    this.#channel = ACCEPTED_CHANNEL;
  }

  get isLeader(): boolean {
    return this.#leader;
  }

  /** Tries to become the leader; true when this instance holds the lock (now or already). */
  async tryAcquire(onNotify: (payload: string) => void, onLost: (error: Error) => void): Promise<boolean> {
    if (this.#leader) return true;
    const client = new pg.Client({ connectionString: this.#url, keepAlive: true });
    client.on("error", (error) => {
      // Only the current leader's connection matters; a late error from an old one is ignored.
      if (client !== this.#client) return;
      // The connection (and with it the lock) is gone: stop acting as the leader at once.
      this.#leader = false;
      this.#client = null;
      onLost(error);
    });
    try {
      await client.connect();
      const { rows } = await client.query<{ locked: boolean }>(
        "select pg_try_advisory_lock(hashtext($1)) as locked",
        [this.#key],
      );
      if (!rows[0]?.locked) {
        await client.end();
        return false;
      }
      client.on("notification", (message) => onNotify(message.payload ?? ""));
      await client.query(`listen ${this.#channel}`);
    } catch (error) {
      // Ending the session also frees the lock if it was taken: never hold it half set up.
      await client.end().catch(() => undefined);
      throw error;
    }
    this.#client = client;
    this.#leader = true;
    return true;
  }

  async release(): Promise<void> {
    const client = this.#client;
    this.#client = null;
    this.#leader = false;
    // Closing the session releases the advisory lock and the LISTEN.
    await client?.end().catch(() => undefined);
  }
}
