import { execFile } from "node:child_process";
import { existsSync, symlinkSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { promisify } from "node:util";

const ROOT = join(import.meta.dirname, "..", "..");

/**
 * A clone of this repository's HEAD (committed work only) at `folder`, as a newcomer gets it:
 * nothing built. Its node_modules is this checkout's, through a symlink: an `npm ci` in it took
 * 82 s on the 2-core machine, and what the tests of a clone look at (what `npm pack` and
 * `npm start` build) does not depend on how the dependencies got there.
 */
export async function freshClone(folder: string): Promise<string> {
  await promisify(execFile)("git", ["clone", "--quiet", ROOT, folder]);
  symlinkSync(join(ROOT, "node_modules"), join(folder, "node_modules"), "dir");
  for (const built of ["dist", join("web", "dist"), ".build-stamp.json"]) {
    if (existsSync(join(folder, built))) throw new Error(`a fresh clone has ${built}: is it committed?`);
  }
  return folder;
}

/** An environment whose `node` (npm's, and `#!/usr/bin/env node`'s) is `nodeBin`'s. */
export function withNode(env: NodeJS.ProcessEnv, nodeBin: string): NodeJS.ProcessEnv {
  return { ...env, PATH: `${dirname(nodeBin)}${delimiter}${process.env.PATH ?? ""}` };
}
