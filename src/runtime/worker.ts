import type { TelegramTarget } from "../telegram/target.ts";

/**
 * A part of the service that runs in the background (the bot, the delivery dispatcher, retention).
 * It gets the Telegram target resolved to an address it can reach.
 */
export interface BackgroundWorker {
  readonly name: string;
  start(telegram: TelegramTarget): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A worker's "look for work now": runs `look` so that it never overlaps itself. A call while it
 * runs asks for one more look right after (however many calls came: what they wanted is found by
 * that one), and none is lost. Nothing runs while `enabled` says no (the worker stopped).
 */
export class Looks {
  readonly #look: () => Promise<void>;
  readonly #enabled: () => boolean;
  #running: Promise<void> | null = null;
  #again = false;

  constructor(look: () => Promise<void>, enabled: () => boolean) {
    this.#look = look;
    this.#enabled = enabled;
  }

  /** Looks now, or right after the look under way. */
  now(): void {
    if (!this.#enabled()) return;
    if (this.#running !== null) {
      this.#again = true;
      return;
    }
    this.#running = this.#look().finally(() => {
      this.#running = null;
      if (this.#again) {
        this.#again = false;
        this.now();
      }
    });
  }

  /** Whether a look is under way. */
  get busy(): boolean {
    return this.#running !== null;
  }

  /** Resolves once no look is under way (call after `enabled` turned false: none starts then). */
  async settled(): Promise<void> {
    while (this.#running !== null) await this.#running;
  }
}
