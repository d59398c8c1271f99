/**
 * Compiles the service (src/ → dist/) to plain JavaScript, which is what `npm start`, the
 * `dock-notify` command and the container run: Node then never loads its TypeScript stripper,
 * which costs about 15 MB in each of the process's threads (see docs/benchmarks.md, bench:memory).
 * Files that are not TypeScript (the sandbox's chat page) are copied beside the code that reads them.
 *
 *   npm run build:server
 */
import { execFileSync } from "node:child_process";
import { cpSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

const root = join(import.meta.dirname, "..");
const dist = join(root, "dist");

rmSync(dist, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
execFileSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json")], { stdio: "inherit" });
cpSync(join(root, "src"), dist, {
  recursive: true,
  filter: (source) => !source.endsWith(".ts"),
});
