import type { FastifyBaseLogger } from "fastify";
import { type DockStamps, STAMP_PARTS, type StampPart } from "../../store/dock-stamps.ts";
import { logDatabaseFailure } from "../../store/faults.ts";
import type { SessionRepository } from "../../store/sessions.ts";
import { ApiError } from "../errors.ts";
import type { DockEvent } from "./schemas.ts";

/** Where a stream's events go: the response body of one `GET /console/api/stream`. */
export interface StreamSink {
  write(chunk: string): void;
  end(): void;
  /** Bytes written that its browser has not taken yet. */
  unread(): number;
  /** Ends it at once, whatever is unread (its browser stopped reading). */
  abort(): void;
}

/** An open stream, as its route holds it: `close` when the browser goes (safe to call twice). */
export interface OpenStream {
  close(): void;
}

/** What the Owners page shows, as a stamp, and who may see it (store/owners.ts `liveStamp`). */
export interface OwnersStamp {
  liveStamp(): Promise<{ stamp: string; admins: ReadonlySet<number> }>;
}

export interface LiveHubOptions {
  stamps: DockStamps;
  /** Without it, nobody hears `owners`. */
  owners?: OwnersStamp;
  sessions: SessionRepository;
  log: FastifyBaseLogger;
  /** How often the shared ticker reads the stamps (ms). */
  tickMs?: number;
  /** A stream that said nothing for this long gets a comment, so proxies keep it open (ms). */
  keepaliveMs?: number;
  /** Streams one session may hold open at once. */
  maxPerSession?: number;
  /**
   * What a stream may hold that its browser has not read (bytes): past it, the stream ends rather
   * than keep everything said to a browser that stopped reading (a frozen window, a stalled
   * connection). One that comes back opens it again and reads everything on `hello`.
   */
  maxUnreadBytes?: number;
  now?: () => number;
}

interface Stream extends OpenStream {
  ownerId: number;
  session: string;
  sink: StreamSink;
  lastWrite: number;
}

interface Owner {
  streams: Set<Stream>;
  /** Each Dock's stamp as last seen; null until the first read (under way in `priming`). */
  docks: Map<string, string> | null;
  priming: Promise<void> | null;
}

/** What the browser's EventSource waits before it reconnects (ms), sent first. */
const RECONNECT_MS = 3000;

/**
 * The console's live updates: every open stream (`GET /console/api/stream`, Server-Sent Events)
 * of this process, and ONE ticker for all of them. Each tick reads, in one query, a stamp of every
 * Dock of every person with a stream open — the Docks they own and those shared with them
 * (DockStamps: counts and times kept in the database, so changes made by other instances and by
 * the dispatcher anywhere are seen) — and, in one more, which of their sessions are still on. A
 * stream hears `dock` when a stamp of its person's Docks changed, `docks` when the set of their
 * Docks did (one made, deleted, shared with them or no longer), `owners` (administrators only) when who may
 * sign in did, and `signed_out` (then the end) when its session ended. Nothing runs while no stream
 * is open.
 *
 * A person's first stream reads the stamps before saying `hello`, on which the console reads
 * everything (again: its pages may have read before the stream opened): whatever changes after
 * that read is told, so nothing falls between. `hello` is said again to every stream when the
 * database is back after an outage.
 */
export class LiveHub {
  readonly #o: Required<Omit<LiveHubOptions, "now" | "owners">> &
    Pick<LiveHubOptions, "owners"> & { now: () => number };
  readonly #owners = new Map<number, Owner>();
  /** Open streams per session (by the hash of its token). */
  readonly #sessions = new Map<string, number>();
  #timer: NodeJS.Timeout | null = null;
  /** The Owners page's stamp as last read; null until a stream opens (and again after the last). */
  #ownersStamp: string | null = null;
  #ticking = false;
  #failing = false;
  #closed = false;

  constructor(options: LiveHubOptions) {
    this.#o = {
      tickMs: 1000,
      keepaliveMs: 15_000,
      maxPerSession: 5,
      maxUnreadBytes: 64 * 1024,
      now: Date.now,
      ...options,
    };
  }

  /**
   * Opens a stream for a person's session (the hash of its token): reads their Docks' stamps if no
   * stream of theirs did, then says `hello`. `too_many_streams` past the session's allowance.
   */
  async open(ownerId: number, session: string, sink: StreamSink): Promise<OpenStream> {
    if (this.#closed) throw new ApiError("not_ready");
    const held = this.#sessions.get(session) ?? 0;
    if (held >= this.#o.maxPerSession) throw new ApiError("too_many_streams");
    // Counted at once: several opened at the same moment cannot all slip under the allowance.
    this.#sessions.set(session, held + 1);
    let owner = this.#owners.get(ownerId);
    if (owner === undefined) {
      owner = { streams: new Set(), docks: null, priming: null };
      this.#owners.set(ownerId, owner);
    }
    const stream: Stream = {
      ownerId,
      session,
      sink,
      lastWrite: this.#o.now(),
      close: () => this.#leave(stream),
    };
    // Held by the owner from now on, so that the owner outlives a stream that fails to start.
    owner.streams.add(stream);
    try {
      await this.#prime(ownerId, owner);
      // Read before `hello` like the Docks' stamps: a change after the page's read is told.
      if (this.#ownersStamp === null) await this.#readOwners();
    } catch (error) {
      this.#leave(stream, false);
      throw error;
    }
    if (!owner.streams.has(stream)) return stream;
    this.#write(stream, `retry: ${RECONNECT_MS}\n\n${event("hello", {})}`);
    this.#timer ??= setInterval(() => void this.tick(), this.#o.tickMs).unref();
    return stream;
  }

  /** What is open: streams, people watched, sessions, and whether the ticker runs (for tests). */
  watching(): { streams: number; owners: number; sessions: number; ticking: boolean } {
    let streams = 0;
    for (const owner of this.#owners.values()) streams += owner.streams.size;
    return {
      streams,
      owners: this.#owners.size,
      sessions: this.#sessions.size,
      ticking: this.#timer !== null,
    };
  }

  /** Ends every stream and stops the ticker (the service is stopping); later opens are refused. */
  close(): void {
    this.#closed = true;
    for (const owner of [...this.#owners.values()]) {
      for (const stream of [...owner.streams]) this.#leave(stream);
    }
  }

  /** One look at the database for every stream open (the ticker's; a test may call it too). */
  async tick(): Promise<void> {
    if (this.#ticking) return;
    this.#ticking = true;
    try {
      await this.#endSignedOut();
      const watched = [...this.#owners].filter(([, owner]) => owner.docks !== null).map(([id]) => id);
      const stamps = await this.#o.stamps.of(watched);
      const byOwner = new Map<number, Map<string, string>>(watched.map((id) => [id, new Map()]));
      for (const dock of stamps) byOwner.get(dock.personId)?.set(dock.id, dock.stamp);
      for (const [ownerId, docks] of byOwner) {
        const owner = this.#owners.get(ownerId);
        if (owner?.docks == null) continue;
        const before = owner.docks;
        owner.docks = docks;
        if (before.size !== docks.size || [...docks.keys()].some((id) => !before.has(id))) {
          this.#tell(owner, event("docks", {}));
        }
        for (const [id, stamp] of docks) {
          const was = before.get(id);
          if (was !== undefined && was !== stamp)
            this.#tell(owner, event("dock", { id, changed: changedParts(was, stamp) } satisfies DockEvent));
        }
      }
      await this.#readOwners();
      if (this.#failing) {
        this.#o.log.info("the console's live stream reads the database again");
        // Reads the pages made while it was away failed, and nothing else would tell them to try
        // again: `hello` has every page read everything.
        for (const owner of this.#owners.values()) this.#tell(owner, event("hello", {}));
      }
      this.#failing = false;
    } catch (error) {
      // The database is away: the streams stay open and hear of the changes once it is back.
      if (!this.#failing)
        logDatabaseFailure(this.#o.log, error, "the console's live stream cannot read the database");
      this.#failing = true;
    } finally {
      this.#ticking = false;
    }
    this.#keepAlive();
  }

  /** Reads the Owners page's stamp; when it moved, tells the administrators watching. */
  async #readOwners(): Promise<void> {
    if (this.#o.owners === undefined) return;
    const { stamp, admins } = await this.#o.owners.liveStamp();
    const was = this.#ownersStamp;
    this.#ownersStamp = stamp;
    if (was === null || was === stamp) return;
    for (const [id, owner] of this.#owners) if (admins.has(id)) this.#tell(owner, event("owners", {}));
  }

  /** Reads the person's stamps once, shared by their streams opening at the same moment. */
  async #prime(ownerId: number, owner: Owner): Promise<void> {
    if (owner.docks !== null) return;
    owner.priming ??= (async () => {
      try {
        const stamps = await this.#o.stamps.of([ownerId]);
        owner.docks = new Map(stamps.map((dock) => [dock.id, dock.stamp]));
      } finally {
        owner.priming = null;
      }
    })();
    await owner.priming;
  }

  /** Streams whose session was signed out, revoked or has expired: told so, and ended. */
  async #endSignedOut(): Promise<void> {
    const sessions = [...this.#sessions.keys()];
    if (sessions.length === 0) return;
    const open = await this.#o.sessions.stillOpen(sessions);
    for (const owner of [...this.#owners.values()]) {
      for (const stream of [...owner.streams]) {
        if (open.has(stream.session)) continue;
        this.#write(stream, event("signed_out", {}));
        this.#leave(stream);
      }
    }
  }

  #keepAlive(): void {
    const now = this.#o.now();
    for (const owner of this.#owners.values()) {
      for (const stream of owner.streams) {
        if (now - stream.lastWrite >= this.#o.keepaliveMs) this.#write(stream, ": keepalive\n\n");
      }
    }
  }

  #tell(owner: Owner, chunk: string): void {
    for (const stream of owner.streams) this.#write(stream, chunk);
  }

  #write(stream: Stream, chunk: string): void {
    if (stream.sink.unread() > this.#o.maxUnreadBytes) {
      this.#leave(stream, false);
      stream.sink.abort();
      return;
    }
    stream.lastWrite = this.#o.now();
    stream.sink.write(chunk);
  }

  /** Forgets a stream (ending its response unless it is already gone); stops the ticker after the last. */
  #leave(stream: Stream, end = true): void {
    const owner = this.#owners.get(stream.ownerId);
    if (owner === undefined || !owner.streams.delete(stream)) return;
    if (owner.streams.size === 0) this.#owners.delete(stream.ownerId);
    const held = (this.#sessions.get(stream.session) ?? 1) - 1;
    if (held > 0) this.#sessions.set(stream.session, held);
    else this.#sessions.delete(stream.session);
    if (end) stream.sink.end();
    if (this.#owners.size === 0 && this.#timer !== null) {
      clearInterval(this.#timer);
      this.#timer = null;
      this.#ownersStamp = null;
    }
  }
}

/** One Server-Sent Event: its name and JSON data. */
/** Which parts of a Dock moved between two of its stamps (dock-stamps.ts), in STAMP_PARTS order. */
function changedParts(was: string, now: string): StampPart[] {
  const before = was.split("/");
  const after = now.split("/");
  return STAMP_PARTS.filter((_, i) => before[i] !== after[i]);
}

function event(name: string, data: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
}
