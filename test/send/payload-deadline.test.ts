import { fork } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { describe, expect, it } from "vitest";
import { WALL_FACTOR } from "../../src/http/payload-thread.ts";

// biome-ignore lint/suspicious/noExplicitAny: the child's messages are JSON.
type Json = any;

const CHILD = fileURLToPath(new URL("../fixtures/payload-thread-child.ts", import.meta.url));

/**
 * A job's deadline counts the thread's CPU time, not the wall clock (issue 36): on a machine whose
 * cores are taken by other work a job waits for CPU, and a wall-clock deadline refused legitimate
 * payloads there. The starved machine is played by stopping the whole process (it sends itself
 * SIGSTOP the moment its job is in the thread) for longer than the deadline, then letting it go on
 * (SIGCONT): the wall clock runs, the thread gets no CPU — what a machine loaded many times over
 * does to it, made certain.
 */
async function starved(
  deadlineMs: number,
  size: number,
  stopMs: number,
  kind: "markdown" | "template" = "markdown",
): Promise<Json> {
  const child = fork(CHILD, [String(deadlineMs), String(size), kind], { stdio: "inherit" });
  try {
    const messages: Json[] = [];
    const result = new Promise<Json>((resolve, reject) => {
      child.on("message", (message: Json) => {
        messages.push(message);
        if (message === "stopping") setTimeout(() => child.kill("SIGCONT"), stopMs);
        else resolve(message);
      });
      child.on("exit", (code) => reject(new Error(`the child exited (${code}) before it answered`)));
    });
    const answer = await result;
    // The job was running when the process stopped: its answer came after the stop.
    expect(messages[0]).toBe("stopping");
    expect(answer.wallMs).toBeGreaterThan(stopMs);
    return answer;
  } finally {
    child.kill("SIGCONT");
    if (child.exitCode === null && child.signalCode === null) await once(child, "exit");
  }
}

// Node tells a thread's CPU time from 24.6 on (Worker.cpuUsage); before, deadlines are wall time.
describe.skipIf(typeof (Worker.prototype as { cpuUsage?: unknown }).cpuUsage !== "function")(
  "a payload job's deadline is the thread's CPU time",
  () => {
    it("a text that needs less CPU than its deadline is read, though the machine held it up for longer than the deadline", async () => {
      // 50,000 characters of `**_`: 30–80 ms of CPU on a quiet machine, a small part of the 1 s
      // deadline (beside `stress-ng`, 150,000 characters' few hundred ms did not fit in the rest
      // of the wall-clock ceiling); the process is stopped 2.5 s with the job in the thread.
      const answer = await starved(1000, 50_000, 2500);
      expect(answer).toMatchObject({ outcome: "read" });
      expect(answer.length).toBeGreaterThan(0);
    }, 60_000);

    it("a template's own render limit (LiquidJS's 100 ms) counts the thread's CPU time too", async () => {
      // 250 loops over 80 items, warm: 15–40 ms of CPU; the process is stopped 1.2 s in the render
      // (more than the render limit, less than the job's 2 s wall-clock ceiling).
      const answer = await starved(0, 250, 1200, "template");
      expect(answer).toEqual({ outcome: "read", wallMs: expect.any(Number) });
    }, 60_000);

    it(`the wall clock still ends a job at ${WALL_FACTOR} times its deadline, whatever CPU it got`, async () => {
      // 30,000 characters: about 30 ms of CPU, a tenth of the deadline; stopped past the ceiling.
      const answer = await starved(300, 30_000, 300 * WALL_FACTOR + 1000);
      expect(answer).toMatchObject({ outcome: "stopped" });
      expect(answer.message).toMatch(/took too long to read as Markdown: stopped after 300 ms\./);
    }, 60_000);
  },
);
