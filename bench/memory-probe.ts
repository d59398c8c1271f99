/**
 * Loaded into each server bench:memory starts (`node --import`): answers "memory" on the IPC
 * channel with the process's own figures, which /proc cannot tell (the V8 heap of its main thread).
 */
process.on("message", (message) => {
  if (message === "memory") process.send?.(process.memoryUsage());
});
