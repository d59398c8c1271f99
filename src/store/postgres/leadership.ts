import pg from "pg";
import type { Leadership } from "../db.ts";

/** The NOTIFY channel on which every instance announces accepted messages to the leader. */
export const ACCEPTED_CHANNEL = "dock_notify_accepted";

/** The leadership session as `pg_stat_activity` shows it: enough to find it again, and only it. */
interface Session {
  pid: number;
  backendStart: string;
}

/**
 * One active dispatcher among several instances sharing a PostgreSQL database. Telegram's limits
 * are per bot, so exactly one paced sender is the right shape; the others stand by. Leadership is a
 * session-level advisory lock held on a dedicated connection: if the leader's process dies, its
 * connection closes and the lock is free at once — no home-made consensus. The same connection
 * LISTENs for new messages accepted by any instance, so the leader wakes without polling.
 *
 * A connection can also fail without closing (a network that drops packets, a server that stops
 * answering): `heartbeat` asks the session to answer within the timeout, and a leader whose session
 * does not steps down at once. The server keeps such a session (and the lock) until it notices the
 * client is gone: the session's TCP keepalives are short so that it notices within seconds, and
 * when this instance campaigns again it ends its own old session itself if it is still there.
 */
export class PgLeadership implements Leadership {
  readonly contended = true;
  readonly #url: string;
  readonly #key: string;
  readonly #channel: string;
  readonly #timeoutMs: number;
  #client: pg.Client | null = null;
  #leader = false;
  /** The session that held the lock before this instance lost it without closing it. */
  #abandoned: Session | null = null;
  #session: Session | null = null;

  /** `timeoutMs`: how long connecting and each statement may take (DATABASE_TIMEOUT_SECONDS). */
  constructor(url: string, name: string, timeoutMs = 5000) {
    this.#url = url;
    this.#key = `dock-notify:${name}`;
    this.#channel = ACCEPTED_CHANNEL;
    this.#timeoutMs = timeoutMs;
  }

  get isLeader(): boolean {
    return this.#leader;
  }

  #connect(): pg.Client {
    return new pg.Client({
      connectionString: this.#url,
      keepAlive: true,
      connectionTimeoutMillis: this.#timeoutMs,
      query_timeout: this.#timeoutMs,
      application_name: "dock-notify dispatcher",
      // The server drops this session (and frees the lock) within ~10 s of the network going
      // silent, instead of after the operating system's default of two hours.
      options: "-c tcp_keepalives_idle=5 -c tcp_keepalives_interval=2 -c tcp_keepalives_count=3",
    });
  }

  /** Tries to become the leader; true when this instance holds the lock (now or already). */
  async tryAcquire(onNotify: (payload: string) => void, onLost: (error: Error) => void): Promise<boolean> {
    if (this.#leader) return true;
    const client = this.#connect();
    client.on("error", (error) => {
      // Only the current leader's connection matters; a late error from an old one is ignored.
      if (client !== this.#client) return;
      this.#lose(onLost, error);
    });
    try {
      await client.connect();
      await this.#endAbandoned(client);
      const { rows } = await client.query<{ locked: boolean; pid: number; started: string }>(
        `select pg_try_advisory_lock(hashtext($1)) as locked, pg_backend_pid() as pid,
                (select extract(epoch from backend_start)::text from pg_stat_activity
                  where pid = pg_backend_pid()) as started`,
        [this.#key],
      );
      const row = rows[0];
      if (!row?.locked) {
        await client.end();
        return false;
      }
      client.on("notification", (message) => onNotify(message.payload ?? ""));
      await client.query(`listen ${this.#channel}`);
      this.#session = { pid: row.pid, backendStart: row.started };
    } catch (error) {
      // Ending the session also frees the lock if it was taken: never hold it half set up.
      await client.end().catch(() => undefined);
      throw error;
    }
    this.#client = client;
    this.#leader = true;
    return true;
  }

  /**
   * The leader's session answers within the timeout, or this instance steps down (`onLost`): a
   * leader that cannot reach the database cannot record what it sends, and another instance,
   * which can, should take over once the server lets the lock go.
   */
  async heartbeat(onLost: (error: Error) => void): Promise<void> {
    const client = this.#client;
    if (!this.#leader || client === null) return;
    try {
      await client.query("select 1");
    } catch (error) {
      if (client !== this.#client) return;
      this.#lose(onLost, error as Error);
    }
  }

  #lose(onLost: (error: Error) => void, error: Error): void {
    const client = this.#client;
    // The connection (and with it, sooner or later, the lock) is gone: stop acting as the leader at once.
    this.#leader = false;
    this.#client = null;
    // The server may not know yet: remember the session, to end it when we can.
    this.#abandoned = this.#session;
    this.#session = null;
    void client?.end().catch(() => undefined);
    onLost(error);
  }

  /**
   * Ends this instance's previous leadership session if the server still keeps it (it would hold
   * the lock until it notices the connection is dead). A pid is reused by later sessions: the
   * session's start time (as seconds since the epoch, whatever the session's time zone) tells them
   * apart.
   */
  async #endAbandoned(client: pg.Client): Promise<void> {
    const abandoned = this.#abandoned;
    if (abandoned === null) return;
    await client.query(
      `select pg_terminate_backend(pid) from pg_stat_activity
        where pid = $1 and extract(epoch from backend_start) = $2::numeric and pid <> pg_backend_pid()`,
      [abandoned.pid, abandoned.backendStart],
    );
    this.#abandoned = null;
  }

  async release(): Promise<void> {
    const client = this.#client;
    this.#client = null;
    this.#leader = false;
    this.#session = null;
    // Closing the session releases the advisory lock and the LISTEN.
    await client?.end().catch(() => undefined);
  }
}
