import pg from "pg";
import type { Leadership } from "../db.ts";

/** The NOTIFY channel on which every instance announces accepted messages to the leader. */
export const ACCEPTED_CHANNEL = "dock_notify_accepted";

/**
 * What an instance announces on ACCEPTED_CHANNEL when it becomes a member, followed by the key of
 * what it leads (a bot's dispatcher: the bot's id, which is public): never a Dock ID.
 */
const MEMBER_JOINED = "@member:";

/**
 * Membership's advisory locks, in the two-integer key space: "do" (0x646f, beside the message
 * locks' "dn") and the hash of what the instances lead (`hashtext` of the leadership's key, so
 * instances of another bot on the same database are not counted). Held shared, on a session of
 * its own, by every instance while it runs.
 */
const MEMBER_CLASS = 0x646f;

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
  /** This instance's membership session (see others), while it holds the lock. */
  #member: pg.Client | null = null;
  /** Its server process: the notification of this instance's own joining is not news. */
  #memberPid: number | null = null;
  /** A membership session this instance lost without closing it: ended at the next join (see #endAbandoned). */
  #abandonedMember: Session | null = null;
  #memberSession: Session | null = null;

  /** A look under way (others): a second caller shares it, never opens a second session. */
  #looking: Promise<boolean | undefined> | null = null;
  #onJoined: (() => void) | null = null;
  #left = false;

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

  #connect(name = "dock-notify dispatcher"): pg.Client {
    return new pg.Client({
      connectionString: this.#url,
      keepAlive: true,
      connectionTimeoutMillis: this.#timeoutMs,
      query_timeout: this.#timeoutMs,
      application_name: name,
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
      client.on("notification", (message) => {
        const payload = message.payload ?? "";
        if (!payload.startsWith(MEMBER_JOINED)) onNotify(payload);
        // Another instance of this leadership's (this instance's own joining is no news).
        else if (payload === `${MEMBER_JOINED}${this.#key}` && message.processId !== this.#memberPid)
          this.#onJoined?.();
      });
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

  /**
   * Whether other instances run on this database: each holds MEMBER_LOCK shared on a session of
   * its own while it runs, so the server says who is there — a process that dies loses its
   * session, and with it its share, at once (or, for a network gone silent, when the keepalives
   * give up, ~10 s). The first call (and any after this instance's session failed) takes the
   * share and announces it, so that a leader keeps places back for the newcomer's bot replies
   * before they can come (Pacer.othersAlive). Undefined when the database does not answer.
   */
  others(onJoined: () => void): Promise<boolean | undefined> {
    this.#onJoined = onJoined;
    this.#looking ??= this.#look().finally(() => {
      this.#looking = null;
    });
    return this.#looking;
  }

  async #look(): Promise<boolean | undefined> {
    // A session that failed since the last look (the server ended it, the network dropped it) is
    // replaced at once: one try with the session held, one with a new one.
    for (let attempt = 0; attempt < 2 && !this.#left; attempt++) {
      const held = this.#member;
      try {
        const member = held ?? (await this.#join());
        // objid is an oid: the key's hash (an int4) as the unsigned number the server shows.
        const { rows } = await member.query<{ holders: number }>(
          `select count(*)::int as holders from pg_locks
            where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database())
              and classid = $1 and objid::bigint = (hashtext($2)::bigint & 4294967295) and objsubid = 2 and granted`,
          [MEMBER_CLASS, this.#key],
        );
        return (rows[0]?.holders ?? 0) > 1;
      } catch {
        const member = this.#member;
        // The server may keep its session (and share) until it notices: ended at the next join,
        // or this instance would count itself as another.
        if (member !== null && this.#memberSession !== null) this.#abandonedMember = this.#memberSession;
        this.#member = null;
        this.#memberPid = null;
        this.#memberSession = null;
        void member?.end().catch(() => undefined);
        // A new session that failed: the database does not answer; say so now.
        if (held === null) return undefined;
      }
    }
    return undefined;
  }

  async #join(): Promise<pg.Client> {
    const member = this.#connect("dock-notify member");
    // A session that fails is noticed at the next call (its query fails): nothing to do now.
    member.on("error", () => undefined);
    let session: Session;
    try {
      await member.connect();
      const abandoned = this.#abandonedMember;
      if (abandoned !== null) {
        await member.query(
          `select pg_terminate_backend(pid) from pg_stat_activity
            where pid = $1 and extract(epoch from backend_start) = $2::numeric and pid <> pg_backend_pid()`,
          [abandoned.pid, abandoned.backendStart],
        );
        this.#abandonedMember = null;
      }
      const { rows } = await member.query<{ pid: number; started: string }>(
        `select pg_advisory_lock_shared($1, hashtext($2)), pg_backend_pid() as pid,
                (select extract(epoch from backend_start)::text from pg_stat_activity
                  where pid = pg_backend_pid()) as started`,
        [MEMBER_CLASS, this.#key],
      );
      const row = rows[0];
      if (row === undefined) throw new Error("the membership lock's query answered no row");
      session = { pid: row.pid, backendStart: row.started };
      // Stopping meanwhile: no joining to announce.
      if (this.#left) throw new Error("left");
      // Known before the announcement: its echo on the leader's session can come before the
      // NOTIFY's own answer, and must be recognised as this instance's.
      this.#memberPid = session.pid;
      await member.query("select pg_notify($1, $2)", [this.#channel, `${MEMBER_JOINED}${this.#key}`]);
    } catch (error) {
      if (this.#member === null) this.#memberPid = null;
      await member.end().catch(() => undefined);
      throw error;
    }
    if (this.#left) {
      this.#memberPid = null;
      await member.end().catch(() => undefined);
      throw new Error("left");
    }
    this.#member = member;
    this.#memberSession = session;
    return member;
  }

  async leave(): Promise<void> {
    this.#left = true;
    // Not waiting for a look under way (a database that does not answer would hold the stop): a
    // session it opens after this is closed by #join, which sees #left.
    const member = this.#member;
    this.#member = null;
    this.#memberPid = null;
    this.#memberSession = null;
    // Closing the session gives the share back.
    await member?.end().catch(() => undefined);
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
