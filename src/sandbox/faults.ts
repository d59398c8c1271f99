/**
 * Failures a test can ask for, to see how a client copes: `server_error` answers a 5xx envelope,
 * `timeout` never answers (the connection is dropped after `hang_seconds`), `slow` answers as
 * usual but only after `hang_seconds` (the call takes effect then), `forbidden` answers 403 "bot
 * was blocked by the user" for one chat without the person having blocked anyone.
 */
export type FaultKind = "server_error" | "timeout" | "slow" | "forbidden";

/** One armed fault, as the control API shows it. */
export interface Fault {
  id: number;
  kind: FaultKind;
  /** Bot API methods it applies to (lower case); null = every method but getUpdates. */
  methods: string[] | null;
  /** Only calls for this chat; required for `forbidden`. */
  chat_id: number | null;
  /** Calls it still fails; null = until removed (then `rate` decides). */
  remaining: number | null;
  /** Share of matching calls that fail, 0–1. */
  rate: number;
  /** HTTP status of a `server_error` (500–599). */
  status: number;
  /** How long a `timeout` holds the call before dropping the connection, a `slow` one before answering. */
  hang_seconds: number;
}

const KINDS: FaultKind[] = ["server_error", "timeout", "slow", "forbidden"];

/** Thrown by `Faults.add` for a request the control API must refuse with 400. */
export class FaultSpecError extends Error {
  override name = "FaultSpecError";
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The armed faults; each Bot API call asks `match` whether it should fail and how. */
export class Faults {
  #next = 1;
  #faults: Fault[] = [];
  readonly #random: () => number;

  constructor(random: () => number = Math.random) {
    this.#random = random;
  }

  /** Validates a fault as the control API received it and arms it. */
  add(spec: unknown): Fault {
    if (!isRecord(spec)) throw new FaultSpecError("the body must be a JSON object");
    const kind = spec.kind;
    if (typeof kind !== "string" || !KINDS.includes(kind as FaultKind)) {
      throw new FaultSpecError(`kind must be one of ${KINDS.join(", ")}`);
    }
    const methods = spec.methods;
    if (methods !== undefined && (!Array.isArray(methods) || !methods.every((m) => typeof m === "string"))) {
      throw new FaultSpecError("methods must be an array of Bot API method names");
    }
    const chatId = spec.chat_id;
    if (chatId !== undefined && !Number.isSafeInteger(chatId))
      throw new FaultSpecError("chat_id must be an integer");
    if (kind === "forbidden" && chatId === undefined)
      throw new FaultSpecError("a forbidden fault needs chat_id");
    const count = spec.count;
    if (count !== undefined && (!Number.isSafeInteger(count) || (count as number) < 1)) {
      throw new FaultSpecError("count must be a whole number of at least 1");
    }
    const rate = spec.rate ?? 1;
    if (typeof rate !== "number" || !(rate > 0 && rate <= 1))
      throw new FaultSpecError("rate must be a number in (0, 1]");
    if (count === undefined && spec.rate === undefined) {
      throw new FaultSpecError("give count (fail the next N calls) or rate (fail that share of calls)");
    }
    const status = spec.status ?? 500;
    if (!Number.isInteger(status) || (status as number) < 500 || (status as number) > 599) {
      throw new FaultSpecError("status must be from 500 to 599");
    }
    const hang = spec.hang_seconds ?? 30;
    if (typeof hang !== "number" || !(hang > 0 && hang <= 600)) {
      throw new FaultSpecError("hang_seconds must be a number in (0, 600]");
    }
    const fault: Fault = {
      id: this.#next++,
      kind: kind as FaultKind,
      methods: methods === undefined ? null : (methods as string[]).map((m) => m.toLowerCase()),
      chat_id: (chatId as number | undefined) ?? null,
      remaining: (count as number | undefined) ?? null,
      rate,
      status: status as number,
      hang_seconds: hang,
    };
    this.#faults.push(fault);
    return fault;
  }

  list(): Fault[] {
    return this.#faults.map((fault) => ({ ...fault }));
  }

  clear(): void {
    this.#faults = [];
  }

  /** The fault this call runs into, if any; counts it against the fault's remaining calls. */
  match(method: string, chatId: number | undefined): Fault | undefined {
    for (const fault of this.#faults) {
      if (fault.methods === null ? method === "getupdates" : !fault.methods.includes(method)) continue;
      if (fault.chat_id !== null && fault.chat_id !== chatId) continue;
      if (fault.rate < 1 && this.#random() >= fault.rate) continue;
      if (fault.remaining !== null) {
        fault.remaining--;
        if (fault.remaining === 0) this.#faults = this.#faults.filter((f) => f !== fault);
      }
      return { ...fault };
    }
    return undefined;
  }
}
