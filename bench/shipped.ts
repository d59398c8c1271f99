import pkg from "../package.json" with { type: "json" };

/**
 * The Node options the service ships with: those `npm start` gives it (`exec node <options>
 * dist/cli.js serve`), which the benches use unless told otherwise, so that they measure what runs.
 */
export const SHIPPED_NODE_OPTIONS = (/\bnode (.*?) ?dist\/cli\.js serve/.exec(pkg.scripts.start)?.[1] ?? "")
  .split(" ")
  .filter((option) => option !== "");

/** `--service-node-options` of a bench: the shipped options when absent, none when "". */
export function serviceNodeOptions(flag: string | undefined): string[] {
  return flag === undefined ? SHIPPED_NODE_OPTIONS : flag.split(" ").filter((option) => option !== "");
}
