/**
 * A message's copies that have no delivery row, added to its counts by state. A message is fanned
 * out after it is accepted (migration 0004): until then every subscriber's copy is still to come
 * (`queued`); after, a subscriber without a copy left before the dispatcher got to the message
 * (`gone`). `waiting`: the message's send fan-out is still queued — read it before the deliveries,
 * since the fan-out deletes that row and makes the deliveries in one commit, so that order never
 * misses both.
 */
export function addUncreatedCopies(
  counts: Partial<Record<"queued" | "gone", number>>,
  subscribers: number,
  created: number,
  waiting: boolean,
): void {
  const missing = subscribers - created;
  if (missing <= 0) return;
  const state = waiting ? "queued" : "gone";
  counts[state] = (counts[state] ?? 0) + missing;
}
