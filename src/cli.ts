// The `dock-notify` command's entry point (dist/cli.js once built); the command line itself is in
// src/cli/.
import { runCli } from "./cli/index.ts";

export { type CliIo, runCli } from "./cli/index.ts";

if (import.meta.main) process.exitCode = await runCli(process.argv.slice(2));
