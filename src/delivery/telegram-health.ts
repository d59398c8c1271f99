/** Telegram failing this many sends in a row, with none answered between, is down (not one chat's trouble). */
export const DOWN_AFTER_FAILURES = 3;
/** While Telegram is down, one send at a time probes it: first after this long, then doubling to the cap. */
export const PROBE_FIRST_MS = 250;
export const PROBE_MAX_MS = 1000;

/**
 * Telegram as the dispatcher sees it: `up` while it answers (even with an error about one
 * message), `down` after DOWN_AFTER_FAILURES sends in a row failed for Telegram's own reasons
 * (unreachable, no answer, `5xx`).
 */
export interface TelegramStatus {
  state: "up" | "down";
  /** Since when (ms since the epoch). */
  since: number;
  /** The last failure, while down. */
  reason?: string;
}

/**
 * The circuit breaker in front of Telegram. While it is up, every send goes; once it is down,
 * one send at a time (a probe) finds out whether it is back, at growing intervals up to
 * PROBE_MAX_MS. Pure: the dispatcher reports each send's fate and asks when the next may go.
 */
export class TelegramHealth {
  readonly #now: () => number;
  #status: TelegramStatus;
  /** Sends failed in a row for Telegram's reasons, and when the first of them failed. */
  #failures = 0;
  #outageStart = 0;
  /** While down: when the next probe may go, the delay after that, and whether one is under way. */
  #probeAt = 0;
  #probeDelay = PROBE_FIRST_MS;
  #probing = false;

  constructor(now: () => number) {
    this.#now = now;
    this.#status = { state: "up", since: now() };
  }

  status(): TelegramStatus {
    return { ...this.#status };
  }

  get down(): boolean {
    return this.#status.state === "down";
  }

  /**
   * While down: ms until a probe may go (0: now), or null while one is under way. Up: always 0.
   */
  probeWait(): number | null {
    if (!this.down) return 0;
    if (this.#probing) return null;
    return Math.max(0, this.#probeAt - this.#now());
  }

  /** A probe starts (the send that goes while Telegram is down). */
  probeStarted(): void {
    this.#probing = true;
  }

  /**
   * A probe ended. One that got no answer either way (the database failed around it) is tried
   * again after the current delay.
   */
  probeEnded(): void {
    this.#probing = false;
    if (this.down && this.#probeAt <= this.#now()) this.#probeAt = this.#now() + this.#probeDelay;
  }

  /**
   * Telegram answered (with a message or an error about it). When this ends an outage, returns
   * it: since when sends had been failing (`failingSince`, earlier than `downSince` by the
   * failures it took to call it down) — deliveries that waited since then may go at once.
   */
  answered(): { failingSince: number; downSince: number } | null {
    this.#failures = 0;
    this.#probeDelay = PROBE_FIRST_MS;
    if (this.#status.state === "up") return null;
    const outage = { failingSince: this.#outageStart, downSince: this.#status.since };
    this.#status = { state: "up", since: this.#now() };
    return outage;
  }

  /** A send failed for Telegram's own reasons. True when this one made Telegram count as down. */
  failed(reason: string): boolean {
    const now = this.#now();
    if (this.#failures === 0) this.#outageStart = now;
    this.#failures++;
    if (this.#status.state === "down") {
      // A probe failed: the next one waits longer.
      this.#probeDelay = Math.min(PROBE_MAX_MS, this.#probeDelay * 2);
      this.#probeAt = now + this.#probeDelay;
      this.#status.reason = reason;
      return false;
    }
    if (this.#failures < DOWN_AFTER_FAILURES) return false;
    this.#status = { state: "down", since: now, reason };
    this.#probeDelay = PROBE_FIRST_MS;
    this.#probeAt = now + this.#probeDelay;
    return true;
  }
}
