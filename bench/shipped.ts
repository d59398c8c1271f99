import pkg from "../package.json" with { type: "json" };

/** `npm start`'s command: `[NAME=value …] exec node <options> dist/cli.js serve`. */
const START = /^((?:\w+=\S* )*)exec node (.*?) ?dist\/cli\.js serve/.exec(pkg.scripts.start);

/**
 * The Node options the service ships with: those `npm start` gives it (`exec node <options>
 * dist/cli.js serve`), which the benches use unless told otherwise, so that they measure what runs.
 */
export const SHIPPED_NODE_OPTIONS = (START?.[2] ?? "").split(" ").filter((option) => option !== "");

/**
 * The environment `npm start` sets for the process (`MALLOC_ARENA_MAX=2 exec node …`): read by
 * glibc as the process starts, so it must be there before Node runs; the benches set it too.
 */
export const SHIPPED_ENV: Record<string, string> = Object.fromEntries(
  (START?.[1] ?? "")
    .split(" ")
    .filter((pair) => pair.includes("="))
    .map((pair) => [pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1)]),
);

/** `--service-node-options` of a bench: the shipped options when absent, none when "". */
export function serviceNodeOptions(flag: string | undefined): string[] {
  return flag === undefined ? SHIPPED_NODE_OPTIONS : flag.split(" ").filter((option) => option !== "");
}
