#!/usr/bin/env node
// The `dock-notify` command. It runs the compiled service (dist/, made by `npm run build`) when it
// is there, as an installed package or a container has it, and the TypeScript sources otherwise
// (a checkout before its first build), which needs Node.js 24's type stripping.
import { existsSync } from "node:fs";

const [major] = process.versions.node.split(".").map(Number);
if (major < 24) {
  console.error(
    `dock-notify: Node.js 24 or newer is required (this is ${process.version}); run it through npm (npx dock-notify …) so the project's Node is used`,
  );
  process.exit(2);
}
const compiled = new URL("../dist/cli.js", import.meta.url);
const { runCli } = await import(existsSync(compiled) ? compiled.href : "../src/cli.ts");
process.exitCode = await runCli(process.argv.slice(2));
