/**
 * Compiles the service (src/ → dist/) to plain JavaScript, which is what `npm start`, the
 * `dock-notify` command and the container run: Node then never loads its TypeScript stripper,
 * which costs about 15 MB in each of the process's threads (see docs/benchmarks.md, bench:memory).
 * Files that are not TypeScript (the sandbox's chat page) are copied beside the code that reads them.
 * The new build is made beside the old one and takes its place whole, so a service running from
 * dist/ meanwhile (it starts threads and reads pages later) never finds half a build.
 *
 *   npm run build:server
 */
import { execFileSync } from "node:child_process";
import { cpSync, renameSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

const root = join(import.meta.dirname, "..");
const dist = join(root, "dist");
const next = join(root, `.dist-${process.pid}`);
const old = join(root, `.dist-old-${process.pid}`);

try {
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  execFileSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json"), "--outDir", next], {
    stdio: "inherit",
  });
  cpSync(join(root, "src"), next, { recursive: true, filter: (source) => !source.endsWith(".ts") });
  // Two renames: the old build is out of the way for an instant, never half there.
  rmSync(old, { recursive: true, force: true });
  try {
    renameSync(dist, old);
  } catch {
    // No build yet.
  }
  renameSync(next, dist);
  rmSync(old, { recursive: true, force: true });
} finally {
  rmSync(next, { recursive: true, force: true });
}
