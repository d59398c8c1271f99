/**
 * Loaded into each server the benches start (`node --import`): answers on the IPC channel with the
 * process's own figures, which /proc cannot tell. "memory": the main thread's process.memoryUsage().
 * "threads": that, the main thread's V8 heap statistics and those of every worker thread alive (the
 * SQLite, checkpoint and payload threads), each named by its module, from worker.getHeapStatistics()
 * — so a bench can say in which isolate memory grows; and the main thread's young generation
 * (new space) committed, which V8 grows and shrinks with the allocation rate. Plain JavaScript, so that it does not load
 * Node's TypeScript stripper into the process it measures.
 */
import { createRequire, syncBuiltinESMExports } from "node:module";
import { getHeapSnapshot, getHeapSpaceStatistics, getHeapStatistics } from "node:v8";

const require = createRequire(import.meta.url);
const threads = require("node:worker_threads");

/** Every worker thread started and not yet exited, with the module it runs. */
const alive = new Map();
const Original = threads.Worker;
class Worker extends Original {
  constructor(filename, options) {
    super(filename, options);
    const name = String(filename)
      .replace(/^.*\/(dist|src)\//, "")
      .replace(/\.[jt]s$/, "");
    alive.set(this, name);
    this.once("exit", () => alive.delete(this));
  }
}
threads.Worker = Worker;
// `import { Worker } from "node:worker_threads"` in the service sees the wrapped class too.
syncBuiltinESMExports();

const heapOf = (stats) => ({
  used: stats.used_heap_size,
  total: stats.total_heap_size,
  external: stats.external_memory ?? 0,
  malloced: stats.malloced_memory,
});

/** Reads a heap snapshot to its end and drops it: V8 runs a full collection before it writes one. */
async function collected(snapshot) {
  for await (const _ of await snapshot) {
    // nothing kept
  }
}

process.on("message", async (message) => {
  // "live": each thread's V8 heap used once a full collection has run in it (by taking a heap
  // snapshot, which collects first): what is alive, apart from garbage not yet collected. Pauses
  // each thread for as long as its snapshot takes; the benches ask only once their load is over.
  if (message === "live") {
    await collected(getHeapSnapshot());
    const workers = await Promise.all(
      [...alive].map(async ([worker, name]) => {
        try {
          await collected(worker.getHeapSnapshot());
          return { name, ...heapOf(await worker.getHeapStatistics()) };
        } catch {
          return { name, used: 0, total: 0, external: 0, malloced: 0 };
        }
      }),
    );
    process.send?.({ live: [{ name: "main", ...heapOf(getHeapStatistics()) }, ...workers] });
  }
  if (message === "memory") process.send?.(process.memoryUsage());
  if (message === "threads") {
    const workers = await Promise.all(
      [...alive].map(async ([worker, name]) => {
        try {
          return { name, ...heapOf(await worker.getHeapStatistics()) };
        } catch {
          return { name, used: 0, total: 0, external: 0, malloced: 0 }; // it ended meanwhile
        }
      }),
    );
    // The main thread's young generation (semi-spaces and its large objects) apart from the rest.
    const young = getHeapSpaceStatistics()
      .filter((space) => space.space_name === "new_space" || space.space_name === "new_large_object_space")
      .reduce((n, space) => n + space.space_size, 0);
    process.send?.({
      usage: process.memoryUsage(),
      young,
      threads: [{ name: "main", ...heapOf(getHeapStatistics()) }, ...workers],
    });
  }
});
