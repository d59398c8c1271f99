#!/usr/bin/env node
// Dock Notify runs its TypeScript sources directly, which needs Node.js 24 (type stripping).
const [major] = process.versions.node.split(".").map(Number);
if (major < 24) {
  console.error(
    `dock-notify: Node.js 24 or newer is required (this is ${process.version}); run it through npm (npx dock-notify …) so the project's Node is used`,
  );
  process.exit(2);
}
const { runCli } = await import("../src/cli.ts");
process.exitCode = await runCli(process.argv.slice(2));
