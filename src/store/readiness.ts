import type { Db } from "./db.ts";
import { storageFault } from "./faults.ts";

/** What the database said when asked to take a write: fine, not there, or there but refusing writes. */
export type DatabaseCheck =
  | { state: "ok" }
  | { state: "unreachable"; reason: string }
  /** It answers, but cannot store anything: a full disk, a read-only file, a standby (`cause` names it). */
  | { state: "not_writable"; cause: string; reason: string };

/** How long one answer is reused: a flood of probes costs one write a second, no more. */
const REUSE_MS = 1000;
/** A batch of messages that could not be written this recently makes the database not writable. */
const RECENT_FAULT_MS = 30_000;

/**
 * Asks the database whether the service could store a message now, by rewriting one row of
 * `write_probes`: `select 1` also answers on a full disk, a read-only file or a PostgreSQL standby,
 * where every send would fail. One probe at a time; its answer serves every caller for a second.
 * Messages that could not be stored lately (Db.lastStorageFault) count too, until some are again.
 */
export class DatabaseProbe {
  readonly #db: Db;
  readonly #now: () => number;
  #last: { answered: number | null; answer: Promise<DatabaseCheck> } | null = null;

  constructor(db: Db, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
  }

  check(): Promise<DatabaseCheck> {
    // Messages could not be stored, and none has been since: not ready, though a probe's one
    // small row may still fit (a full disk leaves room here and there, in the WAL file).
    const fault = this.#db.lastStorageFault();
    if (fault !== null && this.#now() - fault.at < RECENT_FAULT_MS) {
      return Promise.resolve({
        state: "not_writable",
        cause: fault.cause,
        reason: "the last batch of messages could not be stored",
      });
    }
    const last = this.#last;
    if (last !== null && (last.answered === null || this.#now() - last.answered < REUSE_MS)) {
      return last.answer;
    }
    const entry: { answered: number | null; answer: Promise<DatabaseCheck> } = {
      answered: null,
      answer: this.#probe(this.#now()),
    };
    void entry.answer.then(() => {
      entry.answered = this.#now();
    });
    this.#last = entry;
    return entry.answer;
  }

  async #probe(now: number): Promise<DatabaseCheck> {
    try {
      await this.#db.kysely
        .insertInto("write_probes")
        .values({ id: 1, probed_at: now })
        .onConflict((conflict) => conflict.column("id").doUpdateSet({ probed_at: now }))
        .execute();
      return { state: "ok" };
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      const cause = storageFault(error);
      return cause === null ? { state: "unreachable", reason } : { state: "not_writable", cause, reason };
    }
  }
}
