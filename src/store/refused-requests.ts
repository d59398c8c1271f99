import type { Db } from "./db.ts";

/** The refused requests a Dock keeps: its newest, the older ones pruned as new ones are written. */
export const REFUSED_PER_DOCK = 100;

/** A repeat of a refusal within this long of the row's latest adds to its count. */
export const REPEAT_WINDOW_MS = 60_000;

/** How often the refusals noted are written, together. */
const FLUSH_MS = 1000;

/** Distinct refusals waiting to be written, at most; past it, new ones are dropped until the write. */
const MAX_PENDING = 1000;

/** Distinct refusals of one Dock waiting to be written, at most (a flood of varied ones is cut). */
const MAX_PENDING_PER_DOCK = 20;

/** What a request's credentials were found to be when it was refused. */
export type RefusedCredentials = "right" | "wrong" | "unverified";

/** One refused request, as the send door noted it (nothing of it is a secret or the payload). */
export interface RefusalNote {
  dockId: string;
  at: number;
  /** The route's pattern (`/ping`, `/hook/{token}`). */
  door: string;
  format: string | null;
  status: number;
  code: string;
  message: string;
  credentials: RefusedCredentials;
}

/** A row of the ring, as the console shows it: a note's fields, and when and how often it came. */
export interface RefusedRequest extends Omit<RefusalNote, "dockId" | "at"> {
  id: number;
  firstAt: number;
  lastAt: number;
  count: number;
}

interface Pending extends RefusalNote {
  firstAt: number;
  count: number;
}

/**
 * A Dock's recent refused requests (migration 0021), for its console: "why didn't it arrive?".
 *
 * `note` is what a send door calls when it refuses a request, on the request's path: it only counts
 * the refusal in memory — the same work whether or not the Dock named exists, so a refusal's
 * timing tells a stranger nothing (docs/benchmarks.md, bench:timing). Every second the refusals
 * noted are written in one transaction, off every request's path: refusals alike (same Dock, door,
 * format, code, message) are one row with a count, those of Docks that do not exist are dropped,
 * and each Dock keeps its newest REFUSED_PER_DOCK. A flood of refusals is thus a few writes a
 * second whatever its rate, and what waits in memory is bounded (MAX_PENDING).
 *
 * The rows are in the database, not in the process: behind a load balancer every instance's
 * refusals are in the one list.
 */
export class RefusedRequests {
  readonly #db: Db;
  readonly #now: () => number;
  readonly #onError: (error: unknown) => void;
  #pending = new Map<string, Pending>();
  readonly #perDock = new Map<string, number>();
  #timer: NodeJS.Timeout | null = null;
  #writing: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(db: Db, options: { now?: () => number; onError?: (error: unknown) => void } = {}) {
    this.#db = db;
    this.#now = options.now ?? Date.now;
    this.#onError = options.onError ?? (() => {});
  }

  /** Counts a refusal, to be written with the others within a second. */
  note(refusal: Omit<RefusalNote, "at">): void {
    if (this.#closed) return;
    const key = `${refusal.dockId}\n${refusal.door}\n${refusal.format ?? ""}\n${refusal.code}\n${refusal.credentials}\n${refusal.message}`;
    const at = this.#now();
    const pending = this.#pending.get(key);
    if (pending !== undefined) {
      pending.count += 1;
      pending.at = at;
    } else {
      const ofDock = this.#perDock.get(refusal.dockId) ?? 0;
      if (this.#pending.size >= MAX_PENDING || ofDock >= MAX_PENDING_PER_DOCK) return;
      this.#perDock.set(refusal.dockId, ofDock + 1);
      this.#pending.set(key, { ...refusal, at, firstAt: at, count: 1 });
    }
    // Unreferenced: refusals waiting never keep a finished process alive (close writes them).
    this.#timer ??= setTimeout(() => void this.flush(), FLUSH_MS).unref();
  }

  /** Writes what was noted (and waits for a write under way); never throws. */
  async flush(): Promise<void> {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    const batch = [...this.#pending.values()];
    this.#pending = new Map();
    this.#perDock.clear();
    const previous = this.#writing;
    const writing = previous.then(() => (batch.length === 0 ? undefined : this.#write(batch)));
    this.#writing = writing.catch((error: unknown) => this.#onError(error));
    await this.#writing;
  }

  /** Writes what waits and takes no more (the service stops). */
  async close(): Promise<void> {
    this.#closed = true;
    await this.flush();
  }

  async #write(batch: Pending[]): Promise<void> {
    const dockIds = [...new Set(batch.map((refusal) => refusal.dockId))];
    await this.#db.kysely.transaction().execute(async (tx) => {
      const existing = new Set(
        (await tx.selectFrom("docks").select("id").where("id", "in", dockIds).execute()).map((row) => row.id),
      );
      const grown = new Set<string>();
      for (const refusal of batch) {
        if (!existing.has(refusal.dockId)) continue;
        let alike = tx
          .selectFrom("dock_refusals")
          .select("id")
          .where("dock_id", "=", refusal.dockId)
          .where("door", "=", refusal.door)
          .where("code", "=", refusal.code)
          .where("message", "=", refusal.message)
          .where("credentials", "=", refusal.credentials)
          .where("last_at", ">=", refusal.firstAt - REPEAT_WINDOW_MS);
        alike =
          refusal.format === null
            ? alike.where("format", "is", null)
            : alike.where("format", "=", refusal.format);
        const row = await alike.orderBy("id", "desc").limit(1).executeTakeFirst();
        if (row !== undefined) {
          await tx
            .updateTable("dock_refusals")
            .set((eb) => ({ count: eb("count", "+", refusal.count), last_at: refusal.at }))
            .where("id", "=", row.id)
            .execute();
          continue;
        }
        await tx
          .insertInto("dock_refusals")
          .values({
            dock_id: refusal.dockId,
            first_at: refusal.firstAt,
            last_at: refusal.at,
            count: refusal.count,
            door: refusal.door,
            format: refusal.format,
            status: refusal.status,
            code: refusal.code,
            message: refusal.message,
            credentials: refusal.credentials,
          })
          .execute();
        grown.add(refusal.dockId);
      }
      const written = [...new Set(batch.map((refusal) => refusal.dockId))].filter((id) => existing.has(id));
      if (written.length > 0) {
        // The live stream's `refused` part: always forward, even twice in a millisecond.
        const now = this.#now();
        await tx
          .updateTable("docks")
          .set((eb) => ({
            refused_at: eb
              .case()
              .when("refused_at", ">=", now)
              .then(eb("refused_at", "+", 1))
              .else(now)
              .end(),
          }))
          .where("id", "in", written)
          .execute();
      }
      for (const dockId of grown) {
        await tx
          .deleteFrom("dock_refusals")
          .where("dock_id", "=", dockId)
          .where("id", "<", (eb) =>
            eb
              .selectFrom("dock_refusals")
              .select("id")
              .where("dock_id", "=", dockId)
              .orderBy("id", "desc")
              .limit(1)
              .offset(REFUSED_PER_DOCK - 1),
          )
          .execute();
      }
    });
  }

  /** The Dock's refused requests, the latest refused first (at most REFUSED_PER_DOCK). */
  async recent(dockId: string): Promise<RefusedRequest[]> {
    const rows = await this.#db.kysely
      .selectFrom("dock_refusals")
      .selectAll()
      .where("dock_id", "=", dockId)
      .orderBy("last_at", "desc")
      .orderBy("id", "desc")
      .limit(REFUSED_PER_DOCK)
      .execute();
    return rows.map((row) => ({
      id: Number(row.id),
      firstAt: Number(row.first_at),
      lastAt: Number(row.last_at),
      count: Number(row.count),
      door: row.door,
      format: row.format,
      status: Number(row.status),
      code: row.code,
      message: row.message,
      credentials: row.credentials as RefusedCredentials,
    }));
  }
}
