const threadCpuUsage = (process as { threadCpuUsage?: () => { user: number; system: number } })
  .threadCpuUsage;

/** Whether threadClock counts CPU time (Node.js 23.9 and later), not wall time. */
export const CPU_CLOCK = typeof threadCpuUsage === "function";

/**
 * The calling thread's CPU time so far, in ms — what the payload thread's deadlines and a
 * template's render budget count, so that a machine busy with other work delays a job rather than
 * failing it — or the wall clock where Node.js cannot tell a thread's CPU time.
 */
export const threadClock: () => number = CPU_CLOCK
  ? () => {
      const { user, system } = (threadCpuUsage as () => { user: number; system: number }).call(process);
      return (user + system) / 1000;
    }
  : () => performance.now();
