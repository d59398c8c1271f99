import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";

/** The compiled service (dist/, built by the global setup): what ships, and quicker to start. */
const CLI = join(import.meta.dirname, "..", "..", "dist", "cli.js");

/**
 * `dock-notify serve` as a child process (so a test can kill it), resolved once it listens, with
 * its URL and every log line it writes (`logs`, filled as they come). Its stderr goes to the test's.
 */
export async function startChildService(
  env: Record<string, string>,
): Promise<{ child: ChildProcess; url: string; logs: string[] }> {
  const child = spawn(process.execPath, [CLI, "serve"], {
    env: { ...process.env, PORT: "0", LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const logs: string[] = [];
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  return new Promise((resolve, reject) => {
    lines.on("line", (line) => {
      logs.push(line);
      let entry: { msg?: string; port?: number } = {};
      try {
        entry = JSON.parse(line);
      } catch {
        return; // not a log line (something printed by a dependency)
      }
      if (entry.msg?.startsWith("Dock Notify is ready")) {
        resolve({ child, url: `http://127.0.0.1:${entry.port}`, logs });
      }
    });
    lines.on("close", () => reject(new Error("the service exited before it was ready")));
  });
}
