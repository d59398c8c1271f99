import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Config } from "./config.ts";

/**
 * Where `serve` writes the URL it answers at, in DATA_DIR: the CLI is another process, started
 * without the service's PORT (`PORT=3000 npm start`, then `npm run cli -- docks create …`), and
 * would otherwise print commands for port 8080.
 */
const FILE_NAME = "public-url";

/**
 * PUBLIC_URL as the service really answers: with `PORT=0` (any free port) and no PUBLIC_URL, the
 * default names port 0 until the server listens; then the port it was given.
 */
export function servedUrl(config: Config, port: number): string {
  const url = new URL(config.publicUrl);
  if (url.port !== "0") return config.publicUrl;
  url.port = String(port);
  return url.toString().replace(/\/+$/, "");
}

/**
 * Records the URL the service answers at for the CLI (see FILE_NAME). Written whole or not at
 * all (a CLI reading meanwhile never sees half of it); a data directory that cannot be written
 * (PostgreSQL with ENCRYPTION_KEY needs none) only costs the CLI this hint, so the error is returned
 * for a debug line, never thrown.
 */
export function recordServedUrl(dataDir: string, url: string): Error | null {
  const path = join(dataDir, FILE_NAME);
  const temporary = `${path}.${process.pid}`;
  try {
    writeFileSync(temporary, `${url}\n`, { mode: 0o644 });
    renameSync(temporary, path);
    return null;
  } catch (error) {
    return error as Error;
  }
}

/**
 * The configuration as the CLI uses it: when its own environment names neither PUBLIC_URL nor
 * PORT, the URLs it prints (curl commands, hook URLs) are those of the service that last ran with
 * this DATA_DIR, if one did. An explicit PUBLIC_URL or PORT always wins.
 */
export function withServedUrl(config: Config, env: Record<string, string | undefined>): Config {
  const given = (name: string) => (env[name]?.trim() ?? "") !== "";
  if (given("PUBLIC_URL") || given("PORT")) return config;
  let recorded: string;
  try {
    recorded = readFileSync(join(config.dataDir, FILE_NAME), "utf8").trim();
  } catch {
    return config;
  }
  // Only an http(s) URL is taken: the file is ours, but a hand-edited one must not become a command.
  try {
    const url = new URL(recorded);
    if (url.protocol !== "http:" && url.protocol !== "https:") return config;
  } catch {
    return config;
  }
  return { ...config, publicUrl: recorded.replace(/\/+$/, "") };
}
