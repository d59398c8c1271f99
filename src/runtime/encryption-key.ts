import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ConfigError } from "./config.ts";

/**
 * The key that seals Dock secret keys at rest: ENCRYPTION_KEY when set, otherwise
 * `<DATA_DIR>/encryption.key`, generated (mode 0600) on first start. Several instances sharing
 * one PostgreSQL database must share this key, so they should set ENCRYPTION_KEY.
 */
export function loadEncryptionKey(
  configured: Buffer | null,
  dataDir: string,
): { key: Buffer; generated: boolean } {
  if (configured) return { key: configured, generated: false };
  const path = join(dataDir, "encryption.key");
  try {
    const key = Buffer.from(readFileSync(path, "utf8").trim(), "base64");
    if (key.length !== 32) throw new ConfigError(`${path} does not hold a 32-byte base64 key`);
    return { key, generated: false };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  // Only the service's user may look inside (the key, the database, the sandbox's people).
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const key = randomBytes(32);
  try {
    // "wx": if another process created it meanwhile, use theirs instead of overwriting.
    writeFileSync(path, `${key.toString("base64")}\n`, { mode: 0o600, flag: "wx" });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return loadEncryptionKey(null, dataDir);
    throw error;
  }
  return { key, generated: true };
}
