/**
 * Loaded into each server bench:memory starts (`node --import`): answers "memory" on the IPC
 * channel with the process's own figures, which /proc cannot tell (the V8 heap of its main thread).
 * Plain JavaScript, so that it does not load Node's TypeScript stripper into the process it measures.
 */
process.on("message", (message) => {
  if (message === "memory") process.send?.(process.memoryUsage());
});
