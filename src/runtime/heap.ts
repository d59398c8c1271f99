/**
 * Gives memory back to the system once the service is idle.
 *
 * V8's young generation grows to its largest size (two 16 MB semi-spaces) while the service starts
 * and under load, and keeps it: V8 shrinks it only during a garbage collection that aims to reduce
 * memory, and an idle process runs none. So a service that has started, or has come through a busy
 * hour, sits idle with ~30 MB more resident than it needs. One full collection when the process is
 * idle hands that back (V8 releases the pages in the background within moments): 173 → 140 MB idle,
 * for a pause of ~60 ms when nobody is waiting (see docs/benchmarks.md, bench:memory). A "last
 * resort" collection would save 3 MB more but pauses four times as long and throws away compiled
 * code the next requests would need again. The checks cost nothing measurable.
 */

import { type EventLoopUtilization, performance } from "node:perf_hooks";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { FastifyBaseLogger } from "fastify";

/** The first check, a few seconds after the service is ready (start-up is done by then). */
const FIRST_CHECK_MS = 5_000;
const CHECK_MS = 30_000;
/** Idle: the event loop was busy less than this share of the time since the last check. */
export const IDLE_UTILIZATION = 0.02;
/** Worth a collection: resident memory this much above what the last one left (MB). */
export const GROWTH_MB = 16;

/** Whether to collect now: idle, and grown since the last collection (or none yet). */
export function shouldCompact(sample: {
  utilization: number;
  rssMb: number;
  rssAfterLastMb: number | null;
}): boolean {
  if (sample.utilization >= IDLE_UTILIZATION) return false;
  return sample.rssAfterLastMb === null || sample.rssMb - sample.rssAfterLastMb >= GROWTH_MB;
}

type Gc = (options: { type: "major"; execution: "sync" }) => void;

/**
 * V8's own collector, as `--expose-gc` would give it, without asking operators for the flag: the
 * flag set now is read by the next context created, which hands `gc` over. The flag is the
 * process's: a worker thread or `vm` context made later has a global `gc` too (nothing here runs
 * code it does not own, so that gives nobody anything).
 */
function collector(): Gc {
  setFlagsFromString("--expose-gc");
  const gc: unknown = runInNewContext("gc");
  if (typeof gc !== "function") throw new Error("V8 gave no gc function");
  return gc as Gc;
}

const mb = (bytes: number) => Math.round(bytes / 2 ** 20);

/** Watches the event loop and collects when the service has gone idle with memory to give back. */
export class HeapTidier {
  readonly #log: FastifyBaseLogger;
  #timer: NodeJS.Timeout | null = null;
  #rssAfterLastMb: number | null = null;
  /** A collection ran at the last check: what it left is measured at this one (see above). */
  #collected = false;
  #utilization: EventLoopUtilization = performance.eventLoopUtilization();
  #gc: Gc | null = null;

  constructor(log: FastifyBaseLogger) {
    this.#log = log;
  }

  start(): void {
    this.#utilization = performance.eventLoopUtilization();
    this.#schedule(FIRST_CHECK_MS);
  }

  stop(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }

  #schedule(delay: number): void {
    this.#timer = setTimeout(() => this.#check(), delay);
    // Never what keeps the process alive.
    this.#timer.unref();
  }

  #check(): void {
    const now = performance.eventLoopUtilization();
    const utilization = performance.eventLoopUtilization(now, this.#utilization).utilization;
    this.#utilization = now;
    const rssMb = mb(process.memoryUsage.rss());
    if (this.#collected) {
      this.#collected = false;
      this.#rssAfterLastMb = rssMb;
    }
    if (shouldCompact({ utilization, rssMb, rssAfterLastMb: this.#rssAfterLastMb })) {
      const started = performance.now();
      try {
        this.#gc ??= collector();
        this.#gc({ type: "major", execution: "sync" });
      } catch (error) {
        // Another Node.js may not hand the collector over: memory stays as V8 keeps it, nothing else.
        this.#log.warn(
          { reason: (error as Error).message },
          "cannot give idle memory back; not trying again",
        );
        return;
      }
      this.#collected = true;
      this.#log.debug(
        { ms: Math.round(performance.now() - started), rssBeforeMb: rssMb },
        "gave idle memory back",
      );
      // What the collection itself did is not the service's load.
      this.#utilization = performance.eventLoopUtilization();
    }
    this.#schedule(CHECK_MS);
  }
}
