/**
 * Polls `check` until it returns a value other than undefined/false, or fails after `timeoutMs`
 * with `what` in the message. Tests wait for outcomes this way, never with fixed sleeps.
 */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 30_000,
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value as T;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${String(last)})` : ""}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
