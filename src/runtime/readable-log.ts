import type { DestinationStream } from "pino";
import type { Config } from "./config.ts";

/**
 * Whether standard output is read by a person: LOG_FORMAT=pretty, or `auto` on a terminal. Then
 * `serve` prints its banner and the logs are readable lines; otherwise (a pipe, a file, a
 * container's log collector) they stay JSON lines, for machines.
 */
export function forPeople(
  format: Config["logFormat"],
  stdout: { isTTY?: boolean } = process.stdout,
): boolean {
  return format === "pretty" || (format === "auto" && stdout.isTTY === true);
}

const LEVELS: Record<number, string> = {
  10: "TRACE",
  20: "DEBUG",
  30: "INFO",
  40: "WARN",
  50: "ERROR",
  60: "FATAL",
};

/** Fields every line has, or that a person does not need (the request's id is for correlating JSON). */
const LEFT_OUT = new Set(["level", "time", "pid", "hostname", "msg", "reqId"]);

/**
 * Control characters (an escape sequence in a logged name or URL could drive the terminal:
 * recolour, retitle or hide lines) shown as `\u001b`, as JSON shows them; pino's JSON had them
 * escaped, reading it undid that.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it escapes.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;
function printable(text: string): string {
  return text.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** A field's value as `name=value`: bare when it reads unambiguously, else as JSON. */
function field(name: string, value: unknown): string {
  if (typeof value === "string") return `${name}=${/^[^\s"=]+$/.test(value) ? value : JSON.stringify(value)}`;
  return `${name}=${JSON.stringify(value)}`;
}

/** An error's stack, indented under its line: the one part of an error worth reading whole. */
function stackOf(entry: Record<string, unknown>): string {
  for (const name of ["err", "error"]) {
    const stack = (entry[name] as { stack?: unknown } | undefined)?.stack;
    if (typeof stack === "string") {
      return stack
        .split("\n")
        .map((line) => `\n    ${printable(line)}`)
        .join("");
    }
  }
  return "";
}

/**
 * One JSON log line as a person reads it: `14:02:03 INFO  message name=value …`, a request as
 * `14:02:03 INFO  POST /ping → 202 3.1 ms …`. It formats what pino wrote, after redaction: nothing
 * hidden there shows here. A line that is not a JSON object is passed on as it is (made printable).
 */
export function readableLine(json: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json);
  } catch {
    return printable(json);
  }
  if (typeof entry !== "object" || entry === null) return printable(json);
  const time = new Date(typeof entry.time === "number" ? entry.time : Date.now()).toTimeString().slice(0, 8);
  const level = (LEVELS[entry.level as number] ?? String(entry.level)).padEnd(5);
  const parts = [time, level];
  const skip = new Set(LEFT_OUT);
  // A request's line (log.ts, RequestLog) reads as the request itself.
  if (entry.msg === "request" || entry.msg === "request failed") {
    if (entry.msg === "request failed") parts.push("request failed:");
    parts.push(`${entry.method} ${entry.url} → ${entry.status} ${entry.ms} ms`);
    for (const name of ["method", "url", "status", "ms"]) skip.add(name);
  } else parts.push(String(entry.msg ?? ""));
  for (const [name, value] of Object.entries(entry)) {
    if (skip.has(name) || value === undefined) continue;
    if ((name === "err" || name === "error") && typeof value === "object" && value !== null) {
      const { stack: _stack, ...rest } = value as Record<string, unknown>;
      parts.push(field(name, rest));
    } else parts.push(field(name, value));
  }
  return `${printable(parts.join(" "))}${stackOf(entry)}`;
}

/** A pino destination that writes each line to `out` as `readableLine` makes it. */
export function readableLogs(out: DestinationStream): DestinationStream {
  return {
    write(chunk: string) {
      const lines = chunk.split("\n").filter((line) => line !== "");
      out.write(lines.map((line) => `${readableLine(line)}\n`).join(""));
    },
  };
}
