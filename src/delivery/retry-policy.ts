/**
 * Exponential backoff with jitter: about 1 s, 2 s, 4 s … capped at 5 minutes, each drawn between
 * half and all of that, so that many deliveries failing together do not retry together.
 */
export function backoffMs(attempts: number, random: () => number = Math.random): number {
  const ceiling = Math.min(5 * 60_000, 1000 * 2 ** Math.max(0, attempts - 1));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}
