/**
 * How many sends the dispatcher keeps in flight. To reach Telegram's rate it needs the rate times
 * Telegram's answer time in flight (Little's law): 16 do for 30/s with real round trips of
 * 50–150 ms, but paid broadcast at 1000/s needs 100–300. Too many, though, is a crash's worth of
 * sends that go out twice (each in flight may be sent again after a restart) and a queue at the
 * database. So the limit follows Telegram's answer time, measured call by call — not the
 * database's part: when the database is what is slow, more in flight would only queue there — as
 * the rate × that time × HEADROOM, never below `floor` nor above `cap` (DELIVERY_CONCURRENCY), and
 * never above the rate itself (each send holds one of the bot's places in a second's window).
 */
export class InFlightLimit {
  readonly #rate: number;
  readonly #floor: number;
  readonly #cap: number;
  /** Telegram's answer time, ms: a moving average (0 until the first call ended). */
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

  /** A Telegram call answered (or failed) after `ms`. */
  observe(ms: number): void {
    this.#meanMs = this.#meanMs === 0 ? ms : this.#meanMs + WEIGHT * (ms - this.#meanMs);
  }

  /** Sends that may be in flight now. */
  get value(): number {
    const needed = Math.ceil(((this.#rate * this.#meanMs) / 1000) * HEADROOM);
    return Math.min(this.#cap, Math.max(this.#floor, Math.min(needed, Math.ceil(this.#rate))));
  }
}

/** Room for sends that take longer than the average, and for the average to catch up. */
const HEADROOM = 1.5;
/** Each new time's weight in the average: it follows a change within a few dozen sends. */
const WEIGHT = 0.1;
/** In flight whatever the measured time: what the dispatcher always had. */
const FLOOR = 16;
