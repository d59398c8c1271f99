#!/usr/bin/env node
// The `dock-notify` command. It runs the compiled service (dist/, made by `npm run build`) when it is
// there and at least as new as the sources beside it, and the TypeScript sources otherwise (a
// checkout before its first build, or edited since), which needs Node.js 24's type stripping.
import { existsSync, readdirSync, statSync } from "node:fs";

const [major] = process.versions.node.split(".").map(Number);
if (major < 24) {
  console.error(
    `dock-notify: Node.js 24 or newer is required (this is ${process.version}); run it through npm (npx dock-notify …) so the project's Node is used`,
  );
  process.exit(2);
}

const compiled = new URL("../dist/cli.js", import.meta.url);
const sources = new URL("../src/", import.meta.url);

/** Whether a source file changed after dist/ was built (a few milliseconds: ~150 files). */
function stale() {
  if (!existsSync(sources)) return false;
  const built = statSync(compiled).mtimeMs;
  return readdirSync(sources, { recursive: true }).some(
    (name) => statSync(new URL(name, sources)).mtimeMs > built,
  );
}

let entry = "../src/cli.ts";
if (existsSync(compiled)) {
  if (stale())
    console.error("dock-notify: dist/ is older than src/, so the sources run (npm run build compiles them)");
  else entry = compiled.href;
}
const { runCli } = await import(entry);
process.exitCode = await runCli(process.argv.slice(2));
