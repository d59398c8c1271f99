/**
 * How many sends the dispatcher keeps in flight. Each holds its place from its claim to its
 * settle — Telegram's round trip and the database's two writes — so to reach Telegram's rate the
 * dispatcher needs the rate times that time in flight (Little's law): 16 do for 30/s with real
 * round trips of 50–150 ms, but paid broadcast at 1000/s needs 100–300. Too many, though, is a
 * crash's worth of sends that go out twice (each in flight may be sent again after a restart) and
 * a queue at the database's pool. So the limit follows the time sends take, measured as they end:
 * the rate × that time × HEADROOM, never below `floor` nor above `cap` (DELIVERY_CONCURRENCY).
 */
export class InFlightLimit {
  readonly #rate: number;
  readonly #floor: number;
  readonly #cap: number;
  /** A send's time from claim to settle, ms: a moving average (0 until the first one ended). */
  #meanMs = 0;

  constructor(options: {
    /** Sends per second the bot may make (TELEGRAM_RATE_LIMIT). */
    rate: number;
    /** The most in flight, however slow sends get (DELIVERY_CONCURRENCY). */
    cap: number;
    /** The fewest, whatever the rate (at most `cap`). */
    floor?: number;
  }) {
    this.#rate = options.rate;
    this.#cap = Math.max(1, options.cap);
    this.#floor = Math.min(this.#cap, Math.max(1, options.floor ?? FLOOR));
  }

  /** A send ended after `ms` in flight. */
  observe(ms: number): void {
    this.#meanMs = this.#meanMs === 0 ? ms : this.#meanMs + WEIGHT * (ms - this.#meanMs);
  }

  /** Sends that may be in flight now. */
  get value(): number {
    const needed = Math.ceil(((this.#rate * this.#meanMs) / 1000) * HEADROOM);
    return Math.min(this.#cap, Math.max(this.#floor, needed));
  }
}

/** Room for sends that take longer than the average, and for the average to catch up. */
const HEADROOM = 1.5;
/** Each new time's weight in the average: it follows a change within a few dozen sends. */
const WEIGHT = 0.1;
/** In flight whatever the measured time: what the dispatcher always had. */
const FLOOR = 16;
