import { badRequest } from "./errors.ts";

/**
 * The parameters of one Bot API call. Telegram accepts the same call as JSON, as a form or in the
 * query string, where every value is a string and objects arrive JSON-encoded; this reads a
 * parameter the same way whichever form it came in.
 */
export class Params {
  readonly #raw: Record<string, unknown>;

  constructor(raw: Record<string, unknown>) {
    this.#raw = raw;
  }

  has(name: string): boolean {
    const value = this.#raw[name];
    return value !== undefined && value !== null && value !== "";
  }

  string(name: string): string | undefined {
    const value = this.#raw[name];
    if (value === undefined || value === null) return undefined;
    if (typeof value === "string") return value;
    if (typeof value === "number" || typeof value === "boolean") return String(value);
    return JSON.stringify(value);
  }

  /** A whole number; `invalid` is the description to answer with when it is not one. */
  integer(name: string, invalid = `invalid ${name} specified`): number | undefined {
    const value = this.#raw[name];
    if (value === undefined || value === null || value === "") return undefined;
    const number = typeof value === "number" ? value : typeof value === "string" ? Number(value.trim()) : NaN;
    if (!Number.isSafeInteger(number)) throw badRequest(invalid);
    return number;
  }

  boolean(name: string): boolean {
    const value = this.#raw[name];
    if (typeof value === "boolean") return value;
    if (typeof value === "number") return value !== 0;
    if (typeof value === "string") return ["true", "1", "yes", "on"].includes(value.trim().toLowerCase());
    return false;
  }

  /** An object or array parameter, JSON-decoded when it came as a string. */
  json(name: string, invalid: string): unknown {
    const value = this.#raw[name];
    if (value === undefined || value === null || value === "") return undefined;
    if (typeof value !== "string") return value;
    try {
      return JSON.parse(value);
    } catch {
      throw badRequest(invalid);
    }
  }
}
