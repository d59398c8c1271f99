/**
 * Builds what the service runs: the console (web/ → web/dist, Vite) and the service (src/ →
 * dist/, scripts/build-server.ts), side by side. `npm run build` always builds; `npm start` runs it
 * with `--if-stale` first, which skips both when the last build was made from the sources as they
 * are now (a start then takes ~2 s instead of ~10 s of building).
 *
 * "As they are now" is a hash of the sources' contents, not their times: a file restored to what it
 * was, a checkout of another branch or a file copied with its old time all count. The stamp
 * (.build-stamp.json, beside package.json, never published) records that hash and a hash of what
 * the build made (dist/cli.js, which names every chunk by its content, and web/dist/index.html,
 * which names every asset so), so a build of one half alone (`npm run build:server`, the console
 * built by the test suite) is seen too.
 *
 *   node scripts/build.ts [--if-stale]
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { promisify } from "node:util";

const ROOT = join(import.meta.dirname, "..");
const STAMP = join(ROOT, ".build-stamp.json");

/** What the build reads: every file below these (the console's own output excepted). */
const SOURCES = ["src", "web", "scripts", "package.json", "package-lock.json", "tsconfig.json"];
const NOT_SOURCES = [join(ROOT, "web", "dist"), join(ROOT, "web", "node_modules")];

/** What the build makes, hashed into the stamp. */
const OUTPUTS = [join(ROOT, "dist", "cli.js"), join(ROOT, "web", "dist", "index.html")];

interface Stamp {
  sources: string;
  outputs: string;
}

/** Every file below `path` (or `path` itself when it is a file), the console's output excepted. */
function files(path: string): string[] {
  if (!existsSync(path)) return [];
  if (statSync(path).isFile()) return [path];
  return readdirSync(path, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
    .filter((file) => !NOT_SOURCES.some((folder) => file.startsWith(folder + sep)));
}

/** A hash of the sources' names and contents (about 250 files: a few tens of milliseconds). */
export function sourcesHash(): string {
  const hash = createHash("sha256");
  const all = SOURCES.flatMap((name) => files(join(ROOT, name))).sort();
  for (const file of all) {
    hash.update(relative(ROOT, file)).update("\0").update(readFileSync(file)).update("\0");
  }
  return hash.digest("hex");
}

/** A hash of the build's outputs; null when one is missing. */
function outputsHash(): string | null {
  const hash = createHash("sha256");
  for (const file of OUTPUTS) {
    if (!existsSync(file)) return null;
    hash.update(readFileSync(file)).update("\0");
  }
  return hash.digest("hex");
}

/** Whether the build on disk was made from the sources as they are now. */
export function buildIsCurrent(): boolean {
  let stamp: Stamp;
  try {
    stamp = JSON.parse(readFileSync(STAMP, "utf8")) as Stamp;
  } catch {
    return false;
  }
  return stamp.outputs === outputsHash() && stamp.sources === sourcesHash();
}

/** Builds the console and the service (unless `ifStale` and the build is current). */
export async function build(options: { ifStale?: boolean } = {}): Promise<"built" | "current"> {
  if (options.ifStale && buildIsCurrent()) return "current";
  // Read before building: a source edited during the build makes the next start build again.
  const sources = sourcesHash();
  rmSync(STAMP, { force: true });
  const server = promisify(execFile)(process.execPath, [join(ROOT, "scripts", "build-server.ts")]);
  await Promise.all([server, buildConsole()]);
  const outputs = outputsHash();
  if (outputs === null)
    throw new Error(`the build made no ${OUTPUTS.map((f) => relative(ROOT, f)).join(" or ")}`);
  writeFileSync(STAMP, `${JSON.stringify({ sources, outputs } satisfies Stamp)}\n`);
  return "built";
}

async function buildConsole(): Promise<void> {
  // Vitest (the test suite's global setup) sets NODE_ENV=test, which would make Vite bundle
  // React's development build.
  const nodeEnv = process.env.NODE_ENV;
  process.env.NODE_ENV = "production";
  try {
    // Loaded only to build: a start with a current build spares its half second.
    const { build: viteBuild } = await import("vite");
    await viteBuild({ configFile: join(ROOT, "web", "vite.config.ts"), logLevel: "warn" });
  } finally {
    if (nodeEnv === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = nodeEnv;
  }
}

if (import.meta.main) {
  const started = performance.now();
  const outcome = await build({ ifStale: process.argv.includes("--if-stale") });
  console.error(
    outcome === "current"
      ? "dock-notify: the build is current (no source changed since it was made): not building"
      : `dock-notify: built the console and the service in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
}
