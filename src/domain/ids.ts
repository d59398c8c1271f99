import { randomFillSync } from "node:crypto";

/** Random bytes drawn in bulk: one system call serves many IDs (IDs are made on the hot path). */
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

function randomByte(): number {
  if (poolOffset === pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  return pool[poolOffset++] as number;
}

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/**
 * A uniformly random string over [0-9A-Za-z] carrying at least `bits` bits of entropy.
 * Rejection sampling keeps every character equally likely (no modulo bias).
 */
export function randomBase62(bits: number): string {
  const length = Math.ceil(bits / Math.log2(ALPHABET.length));
  let out = "";
  while (out.length < length) {
    const byte = randomByte();
    if (byte < 248) out += ALPHABET[byte % 62];
  }
  return out;
}

/**
 * `length` base62 characters taken from `bytes` (a hash, say) the way randomBase62 takes random
 * ones: bytes of 248 and above are skipped, so every character is equally likely. 64 bytes give
 * ~62 characters; asking for more than the bytes can give throws.
 */
export function base62Of(bytes: Uint8Array, length: number): string {
  let out = "";
  for (const byte of bytes) {
    if (out.length === length) break;
    if (byte < 248) out += ALPHABET[byte % 62];
  }
  if (out.length < length)
    throw new Error(`base62Of: ${bytes.length} bytes do not give ${length} characters`);
  return out;
}

/** Dock IDs: 22 characters (131 bits), fit Telegram's `start=` payload `[A-Za-z0-9_-]{1,64}`. */
export function newDockId(): string {
  return randomBase62(128);
}

export const DOCK_ID_PATTERN = /^[A-Za-z0-9]{22}$/;

export const MESSAGE_ID_PATTERN = /^msg_[A-Za-z0-9]{22}$/;

const BASE36 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";

/**
 * Message IDs are returned to clients and used in `GET /messages/<id>`: `msg_`, then 9 characters
 * of the creation time in milliseconds (base 36, so they sort the same byte-wise and under any
 * collation: digits, then upper-case letters), then 13 random characters (77 bits).
 *
 * Time first, so new IDs land at the end of every index that holds them (the messages' primary
 * key, the deliveries' message index): an insert touches the same few pages as the one before it
 * instead of a random page each, which keeps every commit's write small as the tables grow.
 */
export function newMessageId(now: number = Date.now()): string {
  let time = "";
  for (let rest = Math.floor(now), i = 0; i < 9; i++, rest = Math.floor(rest / 36)) {
    time = BASE36[rest % 36] + time;
  }
  return `msg_${time}${randomBase62(76)}`;
}

/**
 * The creation time `newMessageId` wrote into an ID, in milliseconds; undefined for an ID it did
 * not make. The random IDs of before 2026-11-21 may decode to any time: read a message's
 * `created_at` where it can be had, and this only for an ID whose message is gone.
 */
export function messageIdTime(id: string): number | undefined {
  const time = /^msg_([0-9A-Z]{9})/.exec(id)?.[1];
  return time === undefined ? undefined : Number.parseInt(time, 36);
}
