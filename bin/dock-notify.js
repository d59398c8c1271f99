#!/usr/bin/env node
// The `dock-notify` command. It runs the compiled service (dist/, made by `npm run build`) when it is
// there and at least as new as the sources beside it, and the TypeScript sources otherwise (a
// checkout before its first build, or edited since), which needs Node.js 24's type stripping.
// The compiled service runs on Node.js 22 too (from 22.16), where node:sqlite says once per thread
// that it is experimental.
import { existsSync, readdirSync, statSync } from "node:fs";

const [major, minor] = process.versions.node.split(".").map(Number);
// The compiled service runs on Node.js 24, and on 22 from 22.16 (node:sqlite's backup(),
// columns() and isTransaction came then); the TypeScript sources need 24.
if (major < 22 || (major === 22 && minor < 16)) {
  // In a checkout the project brings its own Node.js 24 (the `node` devDependency), which npm
  // scripts and npx put first on the PATH; an installed package has only the system's.
  const checkout = existsSync(new URL("../node_modules/node/package.json", import.meta.url));
  console.error(
    checkout
      ? `dock-notify: Node.js 24 is required (this is ${process.version}); run it through npm (npx dock-notify …) so the project's own Node.js 24 is used`
      : `dock-notify: Node.js 24 LTS (or 22.16 or newer) is required, and this is ${process.version}. Install Node.js 24 (https://nodejs.org/en/download, or \`nvm install 24\`), then run dock-notify again`,
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
if (entry === "../src/cli.ts" && major < 24) {
  console.error(
    `dock-notify: the TypeScript sources need Node.js 24 (this is ${process.version}): build them first (npm run build) or run it through npm (npx dock-notify …)`,
  );
  process.exit(2);
}
const { runCli } = await import(entry);
process.exitCode = await runCli(process.argv.slice(2));
